"""`rounding: onnx` in the portable C kernels (issue 4): the `_onnx` twins against the numpy interpreter
(bit for bit) and against onnxruntime's float simulation of QDQ models (at most 1 LSB).

- The integer helpers of c_templates/kernels/portable/ecc_fixed_point.h equal their numpy twins of
  toolchain/ops/fixed_point.py on random and edge values (one definition of the arithmetic).
- BL-01 and its tie neighbours (BL-12's grouped conv) pinned in C under both modes.
- Single-op float ONNX models quantized by onnxruntime's own quantizer (quantize_static, QDQ, the
  flow users arrive with) run through our QDQ frontend and the C kernels under `rounding: onnx`.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from _c_graph import run_graph_c
from _onnx_checks import model
from onnx import helper

sys.path.append(str(Path(__file__).resolve().parents[1] / "frontend"))
from _qdq_cases import (ModelBuilder, import_int8, on_grid, ort_run, qdq_binary, qdq_unary,  # noqa: E402
                        qlinear_conv, qlinear_matmul)

from toolchain.codegen.emit import TEMPLATE_DIR  # noqa: E402
from toolchain.data import quantize_inputs  # noqa: E402
from toolchain.interpret import interpret  # noqa: E402
from toolchain.ir import Graph  # noqa: E402
from toolchain.lower import select_kernels  # noqa: E402
from toolchain.ops.fixed_point import (INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier,  # noqa: E402
                                       multiply_by_quantized_multiplier_rne, rounding_divide)

pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(11)


def with_rounding(g: Graph, mode: str) -> Graph:
    return replace(g, meta={**g.meta, "rounding": mode})


# ---- the C helpers == their numpy twins -----------------------------------------------------------
SHIM = """#include "ecc_fixed_point.h"
void t_rne(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *y, int32_t n)
{ int32_t i; for (i = 0; i < n; ++i) y[i] = ecc_multiply_by_quantized_multiplier_rne(x[i], m[i], s[i]); }
void t_dbl(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *y, int32_t n)
{ int32_t i; for (i = 0; i < n; ++i) y[i] = ecc_multiply_by_quantized_multiplier(x[i], m[i], s[i]); }
void t_div(const int32_t *x, const int32_t *d, int32_t *y, int32_t n)
{ int32_t i; for (i = 0; i < n; ++i) y[i] = ecc_rounding_divide_rne(x[i], d[i]); }
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory, portable_lib):  # portable_lib: skips (or fails under CI) without gcc
    d = tmp_path_factory.mktemp("rne_shim")
    (d / "t.c").write_text(SHIM)
    cmd = ["gcc", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-std=c99",
           "-I", str(TEMPLATE_DIR / "kernels" / "portable"), str(d / "t.c"), "-o", str(d / "t.so")]
    subprocess.run(cmd, check=True, capture_output=True)
    return ctypes.CDLL(str(d / "t.so"))


def _call(fn, *arrays: np.ndarray) -> np.ndarray:
    arrs = [np.ascontiguousarray(a, np.int32) for a in arrays]
    out = np.zeros(len(arrs[0]), np.int32)
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrs], ctypes.c_void_p(out.ctypes.data), ctypes.c_int32(len(out)))
    return out


def test_c_rescale_equals_numpy(shim) -> None:
    n = 200_000
    edges = np.array([0, 1, -1, 2, -2, 3, -3, 7984, INT32_MAX, INT32_MIN, INT32_MIN + 1, 1 << 30, -(1 << 30)])
    x = np.concatenate([RNG.integers(INT32_MIN, INT32_MAX, n // 2, endpoint=True), RNG.integers(-40000, 40000, n // 2),
                        np.repeat(edges, 80)])
    m = np.concatenate([RNG.integers(1 << 30, INT32_MAX, len(x) - 2000, endpoint=True),   # QuantizeMultiplier range
                        RNG.integers(-INT32_MAX, 0, 1000), np.repeat([0, 1 << 30, INT32_MAX, -(1 << 30)], 250)])
    s = RNG.integers(-36, 36, len(x))                  # beyond [-31, 31]: both sides stay exact
    s[:64] = [-31, -32, 31, 32, 30, 0, -1, 1] * 8
    want = multiply_by_quantized_multiplier_rne(x, m, s)
    assert np.array_equal(_call(shim.t_rne, x, m, s), want)
    # ties: an exact half rounds to the even neighbour (both signs), never away
    tie_x = np.array([1, 3, 5, -1, -3, -5, 7984])
    tie = _call(shim.t_rne, tie_x, np.full(7, 1 << 30), np.full(7, -1))   # x / 4
    assert tie.tolist()[:6] == [0, 1, 1, 0, -1, -1]
    assert _call(shim.t_rne, [7984, 1], [1583594044, 1 << 30], [-9, -1]).tolist() == [11, 0]   # BL-01
    assert _call(shim.t_dbl, [7984, 1], [1583594044, 1 << 30], [-9, -1]).tolist() == [12, 1]
    keep = (s >= -31) & (s <= 30) & (m >= 0)           # the double rounding's domain
    assert np.array_equal(_call(shim.t_dbl, x[keep], m[keep], s[keep]),
                          multiply_by_quantized_multiplier(x[keep], m[keep], s[keep]))


def test_c_rounding_divide_equals_numpy(shim) -> None:
    num = np.concatenate([RNG.integers(-40000, 40000, 50_000), np.arange(-60, 61)])
    den = np.concatenate([RNG.integers(1, 300, 50_000), np.full(121, 4)])
    got = _call(shim.t_div, num, den)
    assert np.array_equal(got, rounding_divide(num, den, "onnx"))
    assert got[-121:][[58, 62, 54, 66]].tolist() == [0, 0, -2, 2]  # -2/4, 2/4, -6/4, 6/4: ties to even


# ---- BL-01 and tie neighbours in C, both modes ------------------------------------------------------
@pytest.mark.parametrize("mode, want", [("tflm", [12, 1]), ("onnx", [11, 0])])
def test_bl01_in_c(tmp_path: Path, portable_lib, mode: str, want: list[int]) -> None:
    got = []
    for name, (k, ys, a) in {"a": (63, np.float32(1 / 0.0014402703931141053), [127] * 62 + [110]),
                             "b": (1, 4.0, [1])}.items():
        g = with_rounding(import_int8(qlinear_matmul((1, k), np.ones((k, 1)), y_scale=ys).save(tmp_path / f"{name}.onnx")),
                          mode)
        feeds = {g.inputs[0]: np.array([a], np.int8)}
        c = run_graph_c(portable_lib, g, feeds)[g.outputs[0]]
        assert np.array_equal(c, interpret(g, feeds)[g.outputs[0]])
        assert {v.function for v in select_kernels(g, ["portable"]).values()} == \
            {"ecc_fully_connected_s8" + ("_onnx" if mode == "onnx" else "")}
        got.append(int(c.ravel()[0]))
    assert got == want


@pytest.mark.parametrize("mode, at_tie", [("tflm", [9, 19, 73, 99]), ("onnx", [8, 18, 72, 98])])
def test_bl12_grouped_conv_ties_in_c(tmp_path: Path, portable_lib, mode: str, at_tie: list[int]) -> None:
    w = np.array([[1, 2], [3, 4], [5, 6], [7, 8]]).reshape(4, 2, 1, 1)
    p = qlinear_conv((1, 4, 2, 2), w, 1.0, (1.0, 0), (2.0, 0), group=2).save(tmp_path / "g.onnx")
    g = with_rounding(import_int8(p), mode)
    feeds = {g.inputs[0]: np.arange(16, dtype=np.int8).reshape(1, 4, 2, 2)}
    c = run_graph_c(portable_lib, g, feeds)[g.outputs[0]]
    assert np.array_equal(c, interpret(g, feeds)[g.outputs[0]])
    assert c[0, :, 1, 1].tolist() == at_tie  # accumulators 17, 37, 145, 197 / 2: exact .5 ties
    assert c[0, :, 0, 0].tolist() == [4, 8, 56, 76]


# ---- ONNX single-op models, quantized by onnxruntime, in C under rounding: onnx --------------------
def _conv(name: str, cin: int, cout: int, k: int = 1, group: int = 1, **attrs) -> tuple[list, dict]:
    w = RNG.uniform(-1, 1, (cout, cin // group, k, k)).astype(np.float32)
    b = RNG.uniform(-0.5, 0.5, cout).astype(np.float32)
    return [helper.make_node("Conv", ["x", f"{name}_w", f"{name}_b"], [name], group=group, **attrs)], \
        {f"{name}_w": w, f"{name}_b": b}


def _after_conv(op: str, **attrs):
    def build():
        nodes, inits = _conv("c", 4, 6, 3, pads=[1, 1, 1, 1])
        return nodes + [helper.make_node(op, ["c"], ["y"], **attrs)], inits
    return build


def _binary(op: str, const_shape: tuple[int, ...] | None):
    def build():
        nodes, inits = _conv("c", 4, 6)
        if const_shape is None:  # two branches of different scales
            n2, i2 = _conv("d", 4, 6, 3, pads=[1, 1, 1, 1])
            return nodes + n2 + [helper.make_node(op, ["c", "d"], ["y"])], {**inits, **i2}
        inits["k"] = (RNG.uniform(0.3, 2.0, const_shape) * RNG.choice([-1, 1], const_shape)).astype(np.float32)
        return nodes + [helper.make_node(op, ["c", "k"], ["y"])], inits
    return build


def _conv_only(**attrs):
    def build():
        a = dict(attrs)  # the case may be built more than once
        return _conv("y", 4, a.pop("cout", 6), a.pop("k", 3), **a)
    return build


def _conv_relu():
    nodes, inits = _conv("c", 4, 5)
    return nodes + [helper.make_node("Relu", ["c"], ["y"])], inits


def _concat():
    nodes, inits = _conv("c", 4, 3)
    n2, i2 = _conv("d", 4, 5, 3, pads=[1, 1, 1, 1])
    return nodes + n2 + [helper.make_node("Concat", ["c", "d"], ["y"], axis=1)], {**inits, **i2}


def _gemm():
    w = RNG.uniform(-1, 1, (7, 4 * 6 * 5)).astype(np.float32)
    return [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1)], \
        {"w": w, "b": RNG.uniform(-1, 1, 7).astype(np.float32)}


CASES = {
    "conv3x3_pad": _conv_only(pads=[1, 1, 1, 1]),
    "conv_stride2_dilated": _conv_only(strides=[2, 2], dilations=[2, 2], pads=[0, 1, 1, 0]),
    "conv_grouped": _conv_only(group=2, cout=6),
    "depthwise_mult2": _conv_only(group=4, cout=8, pads=[1, 1, 1, 1]),
    "conv1x1_relu": _conv_relu,
    "gemm": _gemm,
    "add_branches": _binary("Add", None),
    "add_const_broadcast": _binary("Add", (6, 1, 1)),
    "mul_const": _binary("Mul", (6, 1, 1)),
    "concat_scales": _concat,
    "avgpool_pad_counted": _after_conv("AveragePool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                       count_include_pad=1),
    "avgpool_2x2": _after_conv("AveragePool", kernel_shape=[2, 2], strides=[2, 2]),
    "global_avgpool": _after_conv("GlobalAveragePool"),
    "maxpool": _after_conv("MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
    "leaky_relu": _after_conv("LeakyRelu", alpha=0.1),
}
X_SHAPE = (1, 4, 6, 5)


def _ort_quantized(tmp_path: Path, name: str, per_channel: bool) -> tuple[Path, list[dict]]:
    """The case's float model through onnxruntime.quantization.quantize_static (QDQ, int8), and the
    float samples it was calibrated on."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    nodes, inits = CASES[name]()
    f32 = tmp_path / f"{name}.onnx"
    onnx.save(model(nodes, {"x": X_SHAPE}, ["y"], inits, opset=13), str(f32))
    samples = [{"x": RNG.uniform(-2, 2, X_SHAPE).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(samples)

        def get_next(self):
            return next(self.it, None)

    q = tmp_path / f"{name}_qdq.onnx"
    quantize_static(str(f32), str(q), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return q, samples


# kernels with an `_onnx` twin: under rounding onnx their plain (TFLM) function must never be chosen
TWINNED = {"conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "add", "add_broadcast", "sub", "mul",
           "prelu", "concat", "mean", "leaky_relu", "requant", "quantize"}
SUBSET = ["conv3x3_pad", "depthwise_mult2", "gemm", "add_branches", "concat_scales", "avgpool_pad_counted",
          "global_avgpool", "leaky_relu"]
SLOW_ONLY = [c for c in CASES if c not in SUBSET]


@pytest.mark.parametrize("name", SUBSET + SLOW_ONLY)
def test_ort_quantized_single_op_in_c(tmp_path: Path, portable_lib, name: str) -> None:
    if name in SLOW_ONLY and os.environ.get("EDGECC_SLOW") != "1":
        pytest.skip("EDGECC_SLOW=1: the full sweep")
    path, samples = _ort_quantized(tmp_path, name, per_channel=name != "gemm")
    g = with_rounding(import_int8(path), "onnx")
    ops = {v.function for v in select_kernels(g, ["portable"]).values()}
    assert not any(f.endswith("_s8") and f.removesuffix("_s8").split("ecc_")[1] in TWINNED for f in ops), ops
    worst, exact, total = 0, 0, 0
    for feeds in samples:
        ins = quantize_inputs(feeds, g)             # ORT's input QuantizeLinear: ties to even
        c = run_graph_c(portable_lib, g, ins)[g.outputs[0]]
        assert np.array_equal(c, interpret(g, ins)[g.outputs[0]]), "C differs from the interpreter"
        ref = on_grid(ort_run(path, feeds)[0], g).reshape(c.shape)
        d = np.abs(c.astype(int) - ref)
        worst, exact, total = max(worst, int(d.max())), exact + int((d == 0).sum()), total + d.size
    print(f"{name}: max {worst} LSB vs onnxruntime, {exact / total:.4f} exact")
    assert worst <= 1, f"{name}: {worst} LSB from onnxruntime"



# ---- hand-built QDQ models: ops onnxruntime's quantizer leaves in float (Sub, ReduceMean, PRelu) ----
def _reduce_mean() -> ModelBuilder:
    m = ModelBuilder(13)
    x = m.dq(m.input("x", (1, 4, 6, 5), np.int8), 0.07, 5, "xd")
    m.q(m.node("ReduceMean", [x], "r", axes=[2, 3], keepdims=1), 0.013, -9, "y")
    m.output("y", np.int8)
    return m


def _prelu() -> ModelBuilder:
    m = ModelBuilder(13)
    x = m.dq(m.input("x", (1, 4, 3, 3), np.int8), 0.05, 7, "xd")
    slope = m.dq(m.const("slope_q", np.array([10, 37, -20, 80]).reshape(4, 1, 1), np.int8), 0.01, 0, "slope")
    m.q(m.node("PRelu", [x, slope], "p"), 0.04, -3, "y")
    m.output("y", np.int8)
    return m


HAND = {
    "sub": lambda: qdq_binary("Sub", (0.05, 3), (0.11, -7), (0.07, 2), shape=(1, 200)),
    "mul": lambda: qdq_binary("Mul", (0.05, 3), (0.11, -7), (0.02, 2), shape=(1, 200)),
    "add_relu": lambda: qdq_binary("Add", (0.052, 0), (0.099, 4), (0.049, -5), shape=(1, 200), relu=True),
    "leaky_relu": lambda: qdq_unary("LeakyRelu", (0.1, -20), shape=(1, 256), alpha=0.3),
    "clip": lambda: qdq_unary("Clip", (0.1, -20), shape=(1, 256), consts=[-1.05, 0.95]),
    "reduce_mean": _reduce_mean,
    "prelu": _prelu,
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_built_qdq_in_c(tmp_path: Path, portable_lib, name: str) -> None:
    path = HAND[name]().save(tmp_path / f"{name}.onnx")
    g = with_rounding(import_int8(path), "onnx")
    worst = 0
    for _ in range(6):
        feeds = {n: RNG.integers(-128, 128, i.type.tensor_type.shape.dim.__len__() and
                                 [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.int8)
                 for n, i in ((i.name, i) for i in onnx.load(str(path)).graph.input)}
        ins = dict(zip(g.inputs, (feeds[k] for k in g.inputs), strict=True))
        c = run_graph_c(portable_lib, g, ins)[g.outputs[0]]
        assert np.array_equal(c, interpret(g, ins)[g.outputs[0]]), "C differs from the interpreter"
        ref = on_grid(ort_run(path, feeds)[0], g).reshape(c.shape)
        worst = max(worst, int(np.abs(c.astype(int) - ref).max()))
    print(f"{name}: max {worst} LSB vs onnxruntime")
    assert worst <= 1


# ---- the graph edges: Quantize (float32 -> int8) and Requantize (int8 -> int8) ---------------------
@pytest.mark.parametrize("case", ["quantize", "requantize"])
def test_edges_in_c_both_modes(tmp_path: Path, portable_lib, case: str) -> None:
    from tflite_op_cases import quantize_float, unary

    from toolchain.frontend.tflite import load_tflite
    from toolchain.ops.fixed_point import quantize_real

    rng = np.random.default_rng(5)
    model_bytes, (x,) = quantize_float(rng, (1, 4, 5, 8)) if case == "quantize" else unary(rng, "requantize", (1, 300))
    if case == "quantize":   # exact ties at +-k.5 LSB, both signs, so the two modes must differ
        s = np.float32(0.0625)
        x = (np.arange(x.size).reshape(x.shape) % 21 - 10).astype(np.float32) * s / 2
    (tmp_path / "m.tflite").write_bytes(model_bytes)
    if case == "quantize":
        tflite = load_tflite(tmp_path / "m.tflite")
        qp = tflite.t(tflite.outputs[0]).quant
        x = x * np.float32(qp.s / 0.0625)
    outs = {}
    for mode in ("tflm", "onnx"):
        g = with_rounding(load_tflite(tmp_path / "m.tflite"), mode)
        feeds = {g.inputs[0]: x}
        c = run_graph_c(portable_lib, g, feeds)[g.outputs[0]]
        assert np.array_equal(c, interpret(g, feeds)[g.outputs[0]]), mode
        vs = select_kernels(g, ["portable"]).values()  # the onnx Requantize is ORT's table: the lut kernel
        assert all(v.name.endswith("_onnx") for v in vs) == (mode == "onnx"), [v.name for v in vs]
        outs[mode] = c
    if case == "quantize":
        qp = g.t(g.outputs[0]).quant
        assert np.array_equal(outs["onnx"], quantize_real(x, qp.s, qp.zp, "onnx"))  # ONNX QuantizeLinear
        assert np.count_nonzero(outs["onnx"] != outs["tflm"]) > 0                  # the ties, to even vs away
    assert np.abs(outs["onnx"].astype(int) - outs["tflm"]).max() <= 1
