"""Logistic (ops/logistic.py, gemmlowp fixed point of ops/transcendental.py): LOGISTIC vs TFLM over
input scales from 0.002 to 3 through our interpreter and the C kernel; every int8 input of a few
scales against the float sigmoid; ONNX Sigmoid through our quantizer (fixed output qparams)."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ops.logistic import LOGISTIC_OUT, logistic_s8


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "logistic_", min_cases=3)


@pytest.mark.parametrize("scale, zp", [(0.004, -128), (0.05, 0), (0.1, 127), (0.7, -20)])
def test_every_input_within_one_lsb_of_the_float_sigmoid(scale, zp):
    x = np.arange(-128, 128, dtype=np.int8)
    y = logistic_s8(x, scale, zp).astype(np.float64)
    real = 1 / (1 + np.exp(-(x.astype(np.float64) - zp) * scale))
    assert np.max(np.abs((y + 128) / 256 - real)) <= 1 / 256 + 1e-9
    assert np.all(np.diff(y) >= 0)   # monotonic


def test_onnx_sigmoid_has_fixed_output_qparams(tmp_path, portable_lib):
    m = model([helper.make_node("Sigmoid", ["x"], ["y"])], {"x": (1, 3, 4, 5)}, ["y"])
    calib = {"x": np.random.default_rng(3).uniform(-6, 6, (3, 1, 3, 4, 5)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).quant == LOGISTIC_OUT
