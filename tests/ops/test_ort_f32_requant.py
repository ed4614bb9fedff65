"""onnxruntime's float32 requantization of Conv / depthwise / FC under `rounding: onnx`.

onnxruntime's integer kernels (the default session fuses a QDQ Conv / MatMul / Gemm into QLinearConv,
QLinearMatMul, QGemm) compute y = rint(fl32(fl32(acc) * S)) + zp with S = fl32(fl32(s_x * s_w) / s_y).
The float32 product can be an exact tie where the real product is not: acc 10113 x S 0.011717591f is
118.5 in float32 (118) and 118.500002 exactly (119). These tests pin that case in ORT itself, in the
interpreter and in the portable C, and check the C helper against its numpy twin on random values.
"""
from __future__ import annotations

import ctypes
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _c_graph import run_graph_c

sys.path.append(str(Path(__file__).resolve().parents[1] / "frontend"))
from _qdq_cases import import_int8, qlinear_conv  # noqa: E402

from toolchain.codegen.emit import TEMPLATE_DIR  # noqa: E402
from toolchain.interpret import interpret  # noqa: E402
from toolchain.ops.fixed_point import (f32_scale, multiply_by_quantized_multiplier_rne,  # noqa: E402
                                       quantize_multiplier, requantize_s8_f32)

ort = pytest.importorskip("onnxruntime")
S = np.float32(0.011717591)   # with acc 10113: float32 product 118.5 exactly, real product above it
RNG = np.random.default_rng(3)


def _ort_default(path: Path, feeds: dict) -> np.ndarray:
    """The default session (fused integer kernels), the runtime users deploy with."""
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_the_tie_case_in_numpy() -> None:
    m, s = quantize_multiplier(float(S))
    assert np.float32(f32_scale(m, s)) == S                       # exact round trip of a float32 scale
    assert int(multiply_by_quantized_multiplier_rne(10113, m, s)) == 119
    assert requantize_s8_f32(np.array([10113, -10113, 10112]), m, s, 0, -128, 127).tolist() == [118, -118, 118]
    assert requantize_s8_f32(np.array([10113]), m, s, 5, -128, 120).tolist() == [120]   # clamp after the offset


@pytest.fixture(scope="module")
def tie_conv(tmp_path_factory) -> Path:
    """QLinearConv 1x1, one channel, weight 1, bias 10000: acc = 10000 + x covers 10113 at x = 113."""
    path = tmp_path_factory.mktemp("tie") / "tie_conv.onnx"
    qlinear_conv((1, 1, 16, 16), np.ones((1, 1, 1, 1)), np.float32(1.0), x_q=(float(S), 0), y_q=(1.0, 0),
                 bias=np.array([10000])).save(path)
    return path


def _all_int8() -> np.ndarray:
    return np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)


def test_ort_rounds_the_float32_product(tie_conv: Path) -> None:
    y = _ort_default(tie_conv, {"x": _all_int8()}).reshape(-1)
    assert y[113 + 128] == 118                                     # ORT itself: float32 tie, to even
    acc = np.arange(-128, 128) + 10000
    want = np.rint((acc.astype(np.float32) * S)).astype(np.int64)
    assert y.astype(np.int64).tolist() == want.tolist()


def test_interpreter_and_portable_c_equal_ort(tie_conv: Path, portable_lib) -> None:
    g = import_int8(tie_conv)
    g = replace(g, meta={**g.meta, "rounding": "onnx"})
    x = _all_int8()
    want = _ort_default(tie_conv, {"x": x})
    feed = {g.inputs[0]: x.transpose(0, 2, 3, 1) if g.t(g.inputs[0]).shape[-1] == 1 else x}
    ours = interpret(g, feed)[g.outputs[0]]
    assert np.array_equal(ours.reshape(-1), want.reshape(-1))
    c = run_graph_c(portable_lib, g, feed)[g.outputs[0]]
    assert np.array_equal(c.reshape(-1), want.reshape(-1))


SHIM = """#include "ecc_fixed_point.h"
void t_f32(const int32_t *a, const int32_t *m, const int32_t *s, const int32_t *o, int8_t *y, int32_t n)
{ int32_t i; for (i = 0; i < n; ++i) y[i] = ecc_requantize_s8_f32(a[i], m[i], s[i], o[i], -128 + (o[i] & 3), 127); }
"""


def test_c_helper_equals_numpy(tmp_path: Path, portable_lib) -> None:
    (tmp_path / "t.c").write_text(SHIM)
    cmd = ["gcc", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-std=c99",
           "-I", str(TEMPLATE_DIR / "kernels" / "portable"), str(tmp_path / "t.c"), "-o", str(tmp_path / "t.so")]
    subprocess.run(cmd, check=True, capture_output=True)
    lib = ctypes.CDLL(str(tmp_path / "t.so"))
    n = 100_000
    scales = RNG.uniform(1e-5, 0.5, n).astype(np.float32)
    pairs = [quantize_multiplier(float(v)) for v in scales]
    m = np.array([p[0] for p in pairs] + [0, 1 << 30, 2**31 - 1], np.int32)   # 31-bit ones too: (float)mult rounds
    s = np.array([p[1] for p in pairs] + [0, -3, -20], np.int32)
    acc = np.concatenate([RNG.integers(-(1 << 24), 1 << 24, n), [5, 2**31 - 1, -(2**31)]]).astype(np.int32)
    acc[: n // 4] = (np.rint(RNG.integers(-300, 300, n // 4) / scales[: n // 4]) + RNG.integers(-2, 3, n // 4))
    off = RNG.integers(-128, 128, len(acc)).astype(np.int32)
    y = np.zeros(len(acc), np.int8)
    ptr = [ctypes.c_void_p(a.ctypes.data) for a in (acc, m, s, off, y)]
    lib.t_f32(*ptr, ctypes.c_int32(len(acc)))
    want = np.array([requantize_s8_f32(a, mm, ss, o, -128 + (o & 3), 127) for a, mm, ss, o in
                     zip(acc[-3000:], m[-3000:], s[-3000:], off[-3000:])], np.int8)
    assert np.array_equal(y[-3000:], want)
    lo = -128 + (off & 3)
    full = np.clip(np.rint(np.clip(acc.astype(np.float32) * f32_scale(m, s), lo - off, 127 - off)) + off, -128, 127)
    assert np.array_equal(y, full.astype(np.int8))
