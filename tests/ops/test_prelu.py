"""PRelu (ops/prelu.py): PRELU vs TFLM (per-channel and broadcast slopes) through our interpreter and
the C kernel; ONNX PRelu with a per-channel slope [C,1,1] on an NHWC activation through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "prelu_", min_cases=3)


@pytest.mark.parametrize("slope_shape", [(5, 1, 1), (1,), (1, 5, 1, 1), (4, 3)])
def test_onnx_prelu(slope_shape, tmp_path, portable_lib):
    rng = np.random.default_rng(8)
    slope = rng.uniform(-0.3, 0.6, slope_shape).astype(np.float32)
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": (1, 5, 4, 3)}, ["y"], {"s": slope})
    calib = {"x": rng.uniform(-3, 3, (3, 1, 5, 4, 3)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.5)
