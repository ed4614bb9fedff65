"""Quantize / Dequantize / Requantize at graph edges (ops/quantize_ops.py): a float input quantized
inside the model, a float output, int8 -> int8 QUANTIZE; vs TFLM through our interpreter and the C
kernels (float buffers included)."""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from _op_checks import check_tflm_and_c

from toolchain.codegen.emit import template_env, write_kernel_headers
from toolchain.ops.fixed_point import rounding_mode
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


def test_dequantize_in_float32_equals_tflms_double_product():
    # TFLM: float(double(scale) * (q - zp)); for a float32 scale the single-precision product is the same
    # value (every int8 / int16 q, random float32 scales), so the C kernel needs no soft-float double
    rng = np.random.default_rng(0)
    for scale in [np.float32(0.0627), *rng.uniform(1e-6, 10, 200).astype(np.float32)]:
        for q, zp in ((np.arange(-128, 128, dtype=np.int8), -5), (np.arange(-32768, 32768, 7, dtype=np.int16), 0)):
            want = (float(scale) * (q.astype(np.float64) - zp)).astype(np.float32)
            assert np.array_equal(dequantize_s8_f32(q, float(scale), zp), want)
    # a scale that is no float32 (none in a real model): the float32 scale's product
    q = np.arange(-128, 128, dtype=np.int8)
    assert np.array_equal(dequantize_s8_f32(q, 0.0627, -5), np.float32(0.0627) * (q.astype(np.float32) + 5))


def _near_ties(scale: np.float32) -> np.ndarray:
    """float32 inputs whose float32 quotient by `scale` lands on or next to every half-integer in
    [-300, 300] (both signs, ties included), plus saturating, zero and huge values."""
    halves = (np.arange(-600, 601) / 2).astype(np.float32)
    x = halves * scale
    x = np.concatenate([np.nextafter(x, -np.inf), x, np.nextafter(x, np.inf)]).astype(np.float32)
    return np.concatenate([x, np.float32([0.0, -0.0, 1e30, -1e30, 3e38, -3e38])])


@pytest.mark.parametrize("onnx", [False, True], ids=["tflm", "onnx"])
def test_c_quantize_is_single_precision_and_bit_exact(portable_lib, onnx):
    """ecc_quantize_s8 (round half away) and its _onnx twin (ties to even) against the numpy twin on
    ~3,600 near-tie inputs per scale: the single-precision C (truncate, exact remainder) rounds as
    TFLM's float32 AffineQuantize / ONNX QuantizeLinear do."""
    fn = getattr(portable_lib, "ecc_quantize_s8_onnx" if onnx else "ecc_quantize_s8")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p]
    ties = 0
    for scale, zp in ((np.float32(0.1), 3), (np.float32(0.018658176), -14), (np.float32(1 / 255), -128),
                      (np.float32(7.25), 127)):
        x = _near_ties(scale)
        out = np.zeros(x.size, np.int8)
        assert fn(None, float(scale), zp, x.size, x.ctypes.data, out.ctypes.data) == 0
        with rounding_mode("onnx" if onnx else "tflm"), np.errstate(over="ignore", invalid="ignore"):
            want = quantize_f32_s8(x, float(scale), zp)
            ties += int(np.count_nonzero(np.abs(x / scale) % 1 == 0.5))
        assert np.array_equal(out, want), np.nonzero(out != want)[0][:10]
    assert ties > 1000  # the exact float32 ties were exercised, not only their neighbours


def test_c_dequantize_is_the_float32_product(portable_lib):
    fn = portable_lib.ecc_dequantize_s8
    fn.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p]
    q = np.arange(-128, 128, dtype=np.int8)
    for scale, zp in ((np.float32(0.0627), -5), (np.float32(0.00390625), -128), (np.float32(3.3e-5), 17)):
        out = np.zeros(q.size, np.float32)
        assert fn(None, float(scale), zp, q.size, q.ctypes.data, out.ctypes.data) == 0
        assert np.array_equal(out, dequantize_s8_f32(q, float(scale), zp))
        assert np.array_equal(out, (float(scale) * (q.astype(np.float64) - zp)).astype(np.float32))  # TFLM's


def test_float_edge_kernels_call_no_double_routine_on_the_m4(tmp_path):
    """Cortex-M4 (single-precision FPU): the float edge kernels compiled with the board's flags reference
    no soft-float double routine (__aeabi_d*: each costs tens of instructions per element)."""
    cc, nm = "arm-none-eabi-gcc", "arm-none-eabi-nm"
    if shutil.which(cc) is None or shutil.which(nm) is None:
        pytest.skip("arm-none-eabi-gcc not found")
    write_kernel_headers(tmp_path)
    flags = ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", "-O2", "-std=c99", "-pedantic",
             "-Wall", "-Wextra", "-Werror"]
    for name in ("quantize_s8", "dequantize_s8", "quantize_s16", "dequantize_s16"):
        src = tmp_path / f"{name}.c"
        src.write_text(template_env().get_template(f"kernels/portable/{name}.c.j2").render())
        obj = tmp_path / f"{name}.o"
        subprocess.run([cc, *flags, "-I", str(tmp_path), "-c", str(src), "-o", str(obj)], check=True)
        undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout.split()
        calls = [s for s in undefined if s.startswith("__aeabi_d")]
        assert not calls, f"{name}: {calls}"
