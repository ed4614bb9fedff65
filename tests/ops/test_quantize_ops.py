"""Quantize / Dequantize / Requantize at graph edges (ops/quantize_ops.py): a float input quantized
inside the model, a float output, int8 -> int8 QUANTIZE; vs TFLM through our interpreter and the C
kernels (float buffers included)."""
import numpy as np
from _op_checks import check_tflm_and_c

from toolchain.ops.quantize_ops import dequantize_s8_f32, quantize_f32_s8


def test_tflm_bit_exact(tflm_cases, portable_lib):
    n = sum(check_tflm_and_c(tflm_cases, portable_lib, p) for p in ("quantize_f32_", "dequantize_", "requantize_"))
    assert n >= 3


def test_quantize_rounds_half_away_in_float32():
    s = 0.1
    x = np.array([0.05, -0.05, 0.15, -0.25, 1e9, -1e9, 0.0], np.float32)
    assert quantize_f32_s8(x, s, 3).tolist() == [4, 2, 5, 0, 127, -128, 3]
    # 0.45f / 0.1f is 4.5 in float32 (TFLM: 5) and 4.4999999 in double
    x, s = np.float32(0.45), np.float32(0.1)
    assert np.float32(x) / s == np.float32(4.5) and float(x) / float(s) < 4.5
    assert quantize_f32_s8(np.array([x, -x]), float(s), 0).tolist() == [5, -5]


def test_dequantize_is_the_double_product():
    q = np.arange(-128, 128, dtype=np.int8)
    want = (0.0627 * (q.astype(np.float64) + 5)).astype(np.float32)
    assert np.array_equal(dequantize_s8_f32(q, 0.0627, -5), want)
