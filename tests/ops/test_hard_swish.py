"""HardSwish (ops/hard_swish.py, TFLite's int16 arithmetic): HARD_SWISH vs TFLM through our
interpreter and the C kernel; every int8 input close to the float hard-swish; TFLM's refusal of an
output scale below s_in / 128; ONNX HardSwish through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ops.hard_swish import hard_swish_params, hard_swish_s8


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "hard_swish_", min_cases=3)


@pytest.mark.parametrize("s_in, z_in, s_out, z_out", [(0.05, 0, 0.04, -100), (0.1, -128, 0.08, -120),
                                                      (0.02, 127, 0.02, -128), (0.3, 10, 0.2, -110)])
def test_every_input_close_to_the_float_hard_swish(s_in, z_in, s_out, z_out):
    x = np.arange(-128, 128, dtype=np.int8)
    y = hard_swish_s8(x, hard_swish_params(s_in, z_in, s_out, z_out)).astype(np.float64)
    r = (x.astype(np.float64) - z_in) * s_in
    real = r * np.clip(r + 3, 0, 6) / 6
    want = np.clip(np.round(real / s_out) + z_out, -128, 127)
    assert np.max(np.abs(y - want)) <= 1


def test_output_scale_too_small_is_refused():
    with pytest.raises(ValueError, match="exponent"):
        hard_swish_params(1.0, 0, 1.0 / 256, 0)


def test_onnx_hard_swish(tmp_path, portable_lib):
    m = model([helper.make_node("HardSwish", ["x"], ["y"])], {"x": (1, 5, 3, 7)}, ["y"], opset=14)
    calib = {"x": np.random.default_rng(5).uniform(-5, 5, (3, 1, 5, 3, 7)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.5)
