"""LeakyRelu (ops/leaky_relu.py): LEAKY_RELU vs TFLM (slopes 0, small, > 1 and negative) through our
interpreter and the C kernel; ONNX LeakyRelu through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ops.leaky_relu import signed_quantize_multiplier


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "leaky_relu_", min_cases=3)


def test_negative_slope_gives_a_negative_multiplier():
    assert signed_quantize_multiplier(-0.25) == (-(1 << 30), -1)
    assert signed_quantize_multiplier(0.0) == (0, 0)


@pytest.mark.parametrize("alpha", [0.01, 0.2, 1.3])
def test_onnx_leaky_relu(alpha, tmp_path, portable_lib):
    m = model([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=alpha)], {"x": (1, 3, 4, 5)}, ["y"])
    calib = {"x": np.random.default_rng(6).uniform(-3, 3, (3, 1, 3, 4, 5)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.5)
