"""Requantizing activations vs TFLM on every int8 input value: RELU / RELU6 whose output qparams differ
from the input's (ops/relu.py) and LEAKY_RELU with negative and positive slopes (ops/leaky_relu.py).

Each case is a single-op .tflite whose input holds all 256 int8 values; TFLM, our interpreter and the
portable C kernel must agree bit for bit. Beside the sweeps (scale ratios below and above 1, zero
points -128 and 127) the module holds cases chosen to separate the plausible arithmetic variants, each
asserting that it does separate them, so the test fails if we drift to the wrong one:
- RELU: the multiplier of the double ratio double(s_in) / double(s_out) (TFLM CalculateReluOpData),
  not of float32(s_in / s_out);
- LEAKY_RELU, negative alpha: TFLM rescales by the magnitude of the alpha multiplier and negates
  (micro/kernels/internal/reference/leaky_relu.h), not MBQM with the negative multiplier;
- LEAKY_RELU: both multipliers from double ratios of the float32 scales and alpha, as the installed
  TFLM computes (the 2021 leaky_relu_common.cc divides in float32; the interpreter's results decide).
"""
from __future__ import annotations

import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import I8, OP, OPT, Model, S, _one

from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.leaky_relu import leaky_relu_params, rescale_sign_magnitude, signed_quantize_multiplier

F = np.float32
ALL = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)
# (s_in, zp_in), (s_out, zp_out): ratios s_in / s_out below and above 1, zero points at both ends
QPARAMS = [((0.02, -128), (0.05, -90)), ((0.05, -90), (0.02, -128)), ((0.1, 127), (0.03, -128)),
           ((0.03, 127), (0.1, 127)), ((0.5, -128), (0.01, 127)), ((0.01, 127), (0.5, -128)),
           ((0.04, 0), (0.0401, 0)), ((0.007, 3), (0.7, -1))]
NEG_ALPHAS = [-0.01, -0.2, -0.5, -1.0, -1.7, -3.0]
POS_ALPHAS = [0.0, 0.01, 0.3, 1.0, 2.5]


def _act(code, q_in, q_out, alpha: float | None = None) -> tuple[bytes, list[np.ndarray]]:
    m = Model()
    ti, to = m.tensor(ALL.shape, I8, F(q_in[0]), q_in[1]), m.tensor(ALL.shape, I8, F(q_out[0]), q_out[1])
    if alpha is None:
        return _one(m, code, 0, None, [ti], to, [ti]), [ALL]
    o = S.LeakyReluOptionsT()
    o.alpha = alpha
    return _one(m, code, OPT.LeakyReluOptions, o, [ti], to, [ti]), [ALL]


def _relu_out(q_in, q_out, mult_shift) -> np.ndarray:
    """RELU on ALL with a given multiplier: the shape of TFLM ReluQuantized, for the separation checks."""
    y = rescale(ALL.astype(np.int64) - q_in[1], *mult_shift) + q_out[1]
    return np.clip(y, max(-128, q_out[1]), 127)


def relu_double_vs_float32_qparams() -> list[tuple]:
    """Scale pairs whose double and float32 ratios give different RELU outputs on some int8 value."""
    rng, out = np.random.default_rng(131), []
    while len(out) < 3:
        s_in, s_out = (float(F(np.exp(rng.uniform(-6, -1)))) for _ in range(2))
        q_in, q_out = (s_in, int(rng.integers(-128, 0))), (s_out, int(rng.integers(-128, 0)))
        a, b = quantize_multiplier(s_in / s_out), quantize_multiplier(float(F(s_in) / F(s_out)))
        if a != b and (_relu_out(q_in, q_out, a) != _relu_out(q_in, q_out, b)).any():
            out.append((q_in, q_out))
    return out


def leaky_float32_vs_double_qparams() -> list[tuple]:
    """(q_in, q_out, alpha) whose double and float32 identity or alpha ratios change some output."""
    rng, out = np.random.default_rng(517), []
    d = ALL.astype(np.int64).ravel()
    while len(out) < 4:
        s_in, s_out = (float(F(np.exp(rng.uniform(-6, -1)))) for _ in range(2))
        alpha = float(F(rng.choice([-1, 1]) * rng.uniform(0.05, 2)))
        z_in, z_out = int(rng.integers(-20, 20)), int(rng.integers(-20, 20))
        ours = _leaky(d - z_in, leaky_relu_params(s_in, s_out, alpha)) + z_out
        other = _leaky(d - z_in, _leaky_f32_params(s_in, s_out, alpha)) + z_out
        if (np.clip(ours, -128, 127) != np.clip(other, -128, 127)).any():
            out.append(((s_in, z_in), (s_out, z_out), alpha))
    return out


def _leaky_f32_params(s_in: float, s_out: float, alpha: float) -> tuple[int, int, int, int]:
    """The multipliers of float32 ratios, the arithmetic of the 2021 TFLM source (not of the installed TFLM)."""
    return (*quantize_multiplier(float(F(s_in) / F(s_out))),
            *signed_quantize_multiplier(float(F(s_in) * F(alpha) / F(s_out))))


def _leaky(d: np.ndarray, p: tuple[int, int, int, int]) -> np.ndarray:
    return np.where(d >= 0, rescale(d, p[0], p[1]), rescale_sign_magnitude(d, p[2], p[3]))


def _cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    out = {}
    for i, (qi, qo) in enumerate(QPARAMS):
        out[f"relu_{i}"] = _act(OP.RELU, qi, qo)
        out[f"relu6_{i}"] = _act(OP.RELU6, qi, qo)
    for i, (qi, qo) in enumerate(relu_double_vs_float32_qparams()):
        out[f"relu_ratio_{i}"] = _act(OP.RELU, qi, qo)
    for j, alpha in enumerate(NEG_ALPHAS + POS_ALPHAS):
        for i, (qi, qo) in enumerate(QPARAMS[j % 3::3]):
            out[f"leaky_{'neg' if alpha < 0 else 'pos'}_{j}_{i}"] = _act(OP.LEAKY_RELU, qi, qo, alpha)
        out[f"leaky_{'neg' if alpha < 0 else 'pos'}_{j}_same"] = _act(OP.LEAKY_RELU, (0.1, 3), (0.1, -5), alpha)
    for i, (qi, qo, alpha) in enumerate(leaky_float32_vs_double_qparams()):
        out[f"leaky_ratio_{i}"] = _act(OP.LEAKY_RELU, qi, qo, alpha)
    out["relun1_0"] = _act(OP.RELU_N1_TO_1, (0.05, 0), (0.01, 0))
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_requant_act"))


def _n_leaky(alphas: list[float], first: int) -> int:
    return sum(len(QPARAMS[j % 3::3]) + 1 for j in range(first, first + len(alphas)))


@pytest.mark.parametrize("prefix, n", [("relu_", len(QPARAMS) + 3), ("relu6_", len(QPARAMS)), ("relu_ratio_", 3),
                                       ("leaky_neg_", _n_leaky(NEG_ALPHAS, 0)),
                                       ("leaky_pos_", _n_leaky(POS_ALPHAS, len(NEG_ALPHAS))), ("leaky_ratio_", 4)])
def test_every_int8_value_bit_exact_with_tflm_and_c(cases, portable_lib, prefix, n):
    assert check_tflm_and_c(cases, portable_lib, prefix, min_cases=n) == n


def test_tflm_relu_is_not_the_float32_ratio(cases):
    """On the relu_ratio_ cases TFLM's output differs from what the float32 ratio would give."""
    for i, (q_in, q_out) in enumerate(relu_double_vs_float32_qparams()):
        f32 = _relu_out(q_in, q_out, quantize_multiplier(float(F(q_in[0]) / F(q_out[0]))))
        assert not np.array_equal(cases[f"relu_ratio_{i}"][2], f32.astype(np.int8)), i


def test_tflm_leaky_relu_is_not_the_float32_ratio(cases):
    """On the leaky_ratio_ cases TFLM's output differs from what float32 ratios would give."""
    d = ALL.astype(np.int64)
    for i, ((s_in, z_in), (s_out, z_out), alpha) in enumerate(leaky_float32_vs_double_qparams()):
        other = np.clip(_leaky(d - z_in, _leaky_f32_params(s_in, s_out, alpha)) + z_out, -128, 127).astype(np.int8)
        assert not np.array_equal(cases[f"leaky_ratio_{i}"][2], other), i


def test_negative_alpha_is_rescaled_by_magnitude_then_negated():
    """alpha -0.5 on equal scales: multiplier -2^30, shift 0, so every odd d < 0 is an exact tie of the
    high multiply; MBQM(d, -2^30) rounds -1.5 * -1 = 1.5 up to 2, TFLM's -MBQM(d, 2^30) = -(-1) = 1."""
    _, _, ma, sa = leaky_relu_params(0.1, 0.1, -0.5)
    assert (ma, sa) == (-(1 << 30), 0)
    d = np.arange(-131, 0)
    tflm_way, negative_mult = rescale_sign_magnitude(d, ma, sa), rescale(d, ma, sa)
    assert tflm_way[d == -3].tolist() == [1] and negative_mult[d == -3].tolist() == [2]
    assert np.count_nonzero(tflm_way != negative_mult) == np.count_nonzero(d % 2)
    assert np.array_equal(tflm_way, -rescale(d, -ma, sa))


def test_relu_n1_to_1_tflm_has_no_kernel(cases):
    """Why edgecc refuses RELU_N1_TO_1 (tests/ops/test_relu.py): TFLM fails the model too."""
    assert isinstance(cases["relun1_0"][2], str) and "TFLM" in cases["relun1_0"][2]
