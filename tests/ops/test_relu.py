"""Relu with requantization (ops/relu.py): generated RELU / RELU6 .tflite models whose output
quantization differs from the input's vs TFLM through our interpreter and the portable C kernel
(zero points -128 and 127, scale ratios above and below 1, a 6 beyond the int8 range); equal
qparams stay a Clamp; QUANTIZE int8 -> int8 edge cases; RELU_N1_TO_1 is refused (no TFLM kernel)."""
import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import I8, OP, Model, _i8, _one, _scale

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.registry import OpKind
from toolchain.ops.relu import IDENTITY, relu_params, relu_s8

OPS = {"relu": OP.RELU, "relu6": OP.RELU6, "relun1": OP.RELU_N1_TO_1, "requantize": OP.QUANTIZE}


def _case(op, shape, q_in, q_out, rng):
    x = _i8(rng, shape)
    x.flat[:256] = np.arange(-128, 128)[: min(256, x.size)]  # every int8 value where it fits
    m = Model()
    ti, to = m.tensor(shape, I8, *q_in), m.tensor(shape, I8, *q_out)
    return _one(m, OPS[op], 0, None, [ti], to, [ti]), [x]


QPARAMS = [((0.02, -128), (0.05, -90)), ((0.05, -90), (0.02, -128)), ((0.1, 127), (0.03, -128)),
           ((0.03, 0), (0.03, 5)), ((0.007, 3), (0.0071, 3)), ((0.5, -128), (0.01, 127)), ((0.01, 127), (0.5, -128))]


def _cases():
    rng = np.random.default_rng(23)
    out = {}
    for op in ("relu", "relu6", "requantize"):
        for i, (qi, qo) in enumerate(QPARAMS):
            out[f"{op}_{i}"] = _case(op, (1, 16, 17, 1), qi, qo, rng)
        for i in range(4):
            out[f"{op}_r{i}"] = _case(op, (1, 3, 5, 7), (_scale(rng, 0.005, 0.2), int(rng.integers(-128, 128))),
                                      (_scale(rng, 0.005, 0.2), int(rng.integers(-128, 128))), rng)
        out[f"{op}_same"] = _case(op, (2, 129), (0.04, -7), (0.04, -7), rng)
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_relu"))


@pytest.mark.parametrize("op", ["relu", "relu6", "requantize"])
def test_tflm_bit_exact(cases, portable_lib, op):
    assert check_tflm_and_c(cases, portable_lib, f"{op}_", min_cases=12) == 12


@pytest.mark.parametrize("op, kind", [("relu", OpKind.RELU), ("relu6", OpKind.RELU)])
def test_requantizing_relu_is_the_relu_op_and_same_qparams_a_clamp(cases, op, kind):
    assert [n.op for n in load_tflite(cases[f"{op}_0"][0]).nodes] == [kind]
    assert [n.op for n in load_tflite(cases[f"{op}_same"][0]).nodes] == [OpKind.CLAMP]


def test_relu_multiplier_is_the_double_ratio_of_the_float32_scales():
    """TFLM CalculateReluOpData: double(s_in) / double(s_out) (the float32 quotient gives another
    multiplier here; tests/ops/test_requantizing_activations.py shows TFLM's outputs tell them apart)."""
    f = np.float32
    from toolchain.ops.fixed_point import quantize_multiplier
    p = relu_params(0.1, 3, 0.3, -5, np.inf)
    assert p == (-3, -5, *quantize_multiplier(float(f(0.1)) / float(f(0.3))), -5, 127)
    assert p[2:4] != quantize_multiplier(float(f(0.1) / f(0.3)))
    # 124 / 3 = 41.33, but TFLM rounds twice: round(124 * 2/3) = 83, then round(83 / 2) = 42
    assert relu_s8(np.array([3, 2, -128, 126, 127], np.int8), p).tolist() == [-5, -5, -5, 41 - 5, 42 - 5]


def test_relu6_clamps_the_raw_input_in_its_own_quantization():
    """TFLM Relu6Quantized ignores the output qparams: [zp_in, zp_in + round(6 / s_in)], saturated."""
    assert relu_params(0.05, -128, 0.9, 7, 6.0) == (0, 0, *IDENTITY, -128, -8)
    assert relu_params(0.01, 0, 0.9, 7, 6.0)[4:] == (0, 127)
    x = np.arange(-128, 128, dtype=np.int8)
    assert np.array_equal(relu_s8(x, relu_params(0.05, -128, 0.9, 7, 6.0)), np.clip(x, -128, -8))


def test_relu_n1_to_1_is_refused(tmp_path):
    data, _ = _case("relun1", (1, 4), (0.05, 0), (0.01, 0), np.random.default_rng(0))
    (tmp_path / "m.tflite").write_bytes(data)
    with pytest.raises(UnsupportedModel, match="RELU_N1_TO_1 \\(TFLite Micro has no kernel"):
        load_tflite(tmp_path / "m.tflite")
