"""Tanh (ops/tanh.py, gemmlowp fixed point of ops/transcendental.py): TANH vs TFLM through our
interpreter and the C kernel; every int8 input against the float tanh; ONNX Tanh through our
quantizer (fixed output qparams 1/128, 0)."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ops.tanh import TANH_OUT, tanh_s8


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "tanh_", min_cases=3)


@pytest.mark.parametrize("scale, zp", [(0.004, -128), (0.03, 0), (0.1, 127), (0.5, 5)])
def test_every_input_within_one_lsb_of_the_float_tanh(scale, zp):
    x = np.arange(-128, 128, dtype=np.int8)
    y = tanh_s8(x, scale, zp).astype(np.float64)
    real = np.tanh((x.astype(np.float64) - zp) * scale)
    assert np.max(np.abs(y / 128 - np.clip(real, -1, 127 / 128))) <= 1 / 128 + 1e-9
    assert np.all(np.diff(y) >= 0)
    assert tanh_s8(np.array([zp], np.int8), scale, zp).tolist() == [0]


def test_onnx_tanh_has_fixed_output_qparams(tmp_path, portable_lib):
    m = model([helper.make_node("Tanh", ["x"], ["y"])], {"x": (2, 9)}, ["y"])
    calib = {"x": np.random.default_rng(4).uniform(-3, 3, (3, 2, 9)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).quant == TANH_OUT
