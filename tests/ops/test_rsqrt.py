"""Rsqrt (ops/rsqrt.py): TFLite RSQRT vs TFLM through our interpreter and the portable C kernel, with
every valid input value (zp_in..127) per case, scales from 1e-4 to 4, zero points -128 / 127 on both
sides, outputs that saturate; and the defined value 127 for inputs below the zero point, where TFLM
fails the invoke."""
import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import F32, I8, OP, Model, _one

from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ops.fixed_point import inv_sqrt_quantized_multiplier_exp
from toolchain.ops.rsqrt import INVALID_OUTPUT, rsqrt_params, rsqrt_s8


def _model(shape, s_in, z_in, s_out, z_out) -> bytes:
    m = Model()
    ti = m.tensor(shape, I8, F32(s_in), z_in)
    to = m.tensor(shape, I8, F32(s_out), z_out)
    return _one(m, OP.RSQRT, 0, None, [ti], to, [ti])


def _exhaustive(s_in, z_in, s_out, z_out, shape_hint=None):
    """Every input value TFLM accepts (z_in..127), tiled into an odd shape when shape_hint is given."""
    x = np.arange(z_in, 128, dtype=np.int64).astype(np.int8)
    if shape_hint is not None:
        n = int(np.prod(shape_hint))
        x = np.resize(x, n).reshape(shape_hint)
    return _model(x.shape, s_in, z_in, s_out, z_out), [x]


# (s_in, z_in, s_out, z_out): the largest output real is 1/sqrt(s_in) (at x = z_in + 1)
CASES = {
    "rsqrt_unit": (0.05, -128, 0.05, -128),
    "rsqrt_tiny_in": (1e-4, -128, 0.5, -128),          # 1/sqrt(1e-4) = 100: saturates at the top
    "rsqrt_tiny_in_fine_out": (1e-4, -128, 0.4, -128),
    "rsqrt_big_in": (4.0, -128, 0.002, -128),          # outputs 0.5 .. 0.031
    "rsqrt_big_in_zp_top": (4.0, -128, 0.004, 127),    # everything above the output zp saturates at 127
    "rsqrt_mid_zp_out_mid": (0.01, -128, 0.1, -30),
    "rsqrt_zp_in_mid": (0.02, -7, 0.05, 0),
    "rsqrt_zp_in_high": (0.3, 90, 0.01, -128),
    "rsqrt_zp_in_127": (0.1, 127, 0.1, 5),             # only x = 127 is valid: d = 0 gives 127
    "rsqrt_zp_out_127": (0.003, -128, 0.2, 127),
    "rsqrt_out_scale_small": (0.5, -128, 0.001, -128),  # 1/sqrt(0.5 d) / 0.001: saturates for small d
    "rsqrt_out_scale_large": (0.001, -50, 2.5, -100),
    "rsqrt_odd_shape": (0.07, -100, 0.03, -128),
}


def _cases():
    out = {name: _exhaustive(*q) for name, q in CASES.items()}
    out["rsqrt_odd_shape"] = _exhaustive(*CASES["rsqrt_odd_shape"], shape_hint=(1, 3, 7, 5))
    rng = np.random.default_rng(17)
    for k in range(6):  # random scales over six decades, random zero points
        s_in, s_out = (float(np.exp(rng.uniform(np.log(1e-4), np.log(4.0)))) for _ in range(2))
        z_in, z_out = int(rng.integers(-128, 100)), int(rng.integers(-128, 128))
        out[f"rsqrt_random{k}"] = _exhaustive(s_in, z_in, s_out, z_out)
    return out


def test_tflm_bit_exact(tmp_path, portable_lib):
    n = len(CASES) + 6
    assert check_tflm_and_c(run_tflm(_cases(), tmp_path), portable_lib, "rsqrt_", min_cases=n) == n


def test_values_not_just_agreement():
    """Independent of TFLM: rsqrt of real 0.25, 1, 4 with s = 0.01 and s_out = 1/64 is 2, 1, 0.5."""
    mult, shift = rsqrt_params(0.01, 1 / 64)
    x = np.array([25 - 128, 100 - 128, 127, -128], np.int8)
    got = rsqrt_s8(x, -128, -128, mult, shift).tolist()
    assert got[:2] == [2 * 64 - 128, 64 - 128]
    assert got[2] == round(64 / np.sqrt(2.55)) - 128    # x = 127: real 2.55
    assert got[3] == 127                                # d = 0: TFLM's maximum


def test_inv_sqrt_multiplier_is_close_to_the_real_value():
    x = np.arange(2, 5000)
    m, e = inv_sqrt_quantized_multiplier_exp(x)
    assert np.all(e <= 0)
    approx = m.astype(np.float64) * 2.0 ** (e - 31)
    np.testing.assert_allclose(approx, 1 / np.sqrt(x), rtol=2e-6)
    assert inv_sqrt_quantized_multiplier_exp(np.array([0, 1]))[0].tolist() == [2**31 - 1] * 2


@pytest.mark.parametrize("z_in", [0, 127, -127])
def test_inputs_below_the_zero_point_give_127_where_tflm_fails(z_in, tmp_path, portable_lib):
    """TFLM stops the invoke for x < zp_in ("Rsqrt is only defined for positive values"); we define
    those outputs as 127 in the interpreter and the C kernel alike, and keep the valid ones exact."""
    from _c_graph import run_graph_c

    x = np.arange(-128, 128, dtype=np.int64).astype(np.int8)
    model = _model(x.shape, 0.02, z_in, 0.05, -20)
    tflm = run_tflm({"rsqrt_invalid": (model, [x])}, tmp_path / "all")["rsqrt_invalid"][2]
    assert isinstance(tflm, str), "TFLM accepted inputs below the zero point"
    g = load_tflite(tmp_path / "all" / "rsqrt_invalid.tflite")
    feeds = {g.inputs[0]: x}
    ours, c_out = interpret(g, feeds)[g.outputs[0]], run_graph_c(portable_lib, g, feeds)[g.outputs[0]]
    np.testing.assert_array_equal(c_out, ours)
    assert np.all(ours[x < z_in] == INVALID_OUTPUT)
    valid = x[x >= z_in]
    want = run_tflm({"rsqrt_valid": (_model(valid.shape, 0.02, z_in, 0.05, -20), [valid])}, tmp_path / "ok")
    np.testing.assert_array_equal(ours[x >= z_in], want["rsqrt_valid"][2])
