"""Quantized ONNX test models built with onnx.helper (the QDQ / QLinear recipes of
../shared/design/int8-fault-cases.md) and the two ways to run them: onnxruntime with graph
optimisations off (float simulation of QDQ), and ours (load_qdq -> passes -> quantize with the
model's parameters -> numpy int8 interpreter under a rounding mode)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from quantize import quantize
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.interpret import interpret
from toolchain.ir import Graph
from toolchain.ops.fixed_point import quantize_real
from toolchain.passes import run_passes

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32}


class ModelBuilder:
    """Initializers, nodes and typed graph inputs/outputs of one small model."""

    def __init__(self, opset: int = 21) -> None:
        self.opset, self.nodes, self.inits, self.inputs, self.outputs = opset, [], [], [], []

    def const(self, name: str, value, dtype=np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def input(self, name: str, shape, dtype=np.float32) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], list(shape)))
        return name

    def output(self, name: str, dtype=np.float32) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], None))

    def node(self, op: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"n{len(self.nodes)}_{op}", **attrs))
        return out

    def q(self, x: str, scale: float, zp: int, out: str, dtype=np.int8, **attrs) -> str:
        s, z = self.const(f"{out}_s", scale), self.const(f"{out}_z", zp, dtype)
        return self.node("QuantizeLinear", [x, s, z], out, **attrs)

    def dq(self, q: str, scale, zp, out: str, dtype=np.int8, **attrs) -> str:
        s, z = self.const(f"{out}_s", scale), self.const(f"{out}_z", zp, dtype)
        return self.node("DequantizeLinear", [q, s, z], out, **attrs)

    def model(self) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, "qdq_case", self.inputs, self.outputs, self.inits)
        domains = sorted({n.domain for n in self.nodes} - {""})  # ONNX IR: every node domain is imported
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset),
                                                *(helper.make_opsetid(d, 1) for d in domains)])
        m.ir_version = 7 if self.opset <= 15 else 10
        return m

    def save(self, path: Path) -> Path:
        onnx.save(self.model(), str(path))
        return path


def qlinear_matmul(a_shape, b, a_scale=1.0, b_scale=1.0, y_scale=1.0, opset=21, dtype=np.int8) -> ModelBuilder:
    """y = QLinearMatMul(a input, b constant), all zero points 0 (BL-01)."""
    m = ModelBuilder(opset)
    a = m.input("a", a_shape, dtype)
    ins = [a, m.const("as", a_scale), m.const("az", 0, dtype), m.const("b", b, dtype), m.const("bs", b_scale),
           m.const("bz", 0, dtype), m.const("ys", y_scale), m.const("yz", 0, dtype)]
    m.node("QLinearMatMul", ins, "y")
    m.output("y", dtype)
    return m


def qdq_matmul(a_shape, b, y_scale, opset=21) -> ModelBuilder:
    """x float -> Q/DQ (scale 1) -> MatMul(DQ(b int8)) -> Q(y_scale) -> DQ -> y float (BL-01, QDQ form)."""
    m = ModelBuilder(opset)
    x = m.input("x", a_shape)
    xd = m.dq(m.q(x, 1.0, 0, "xq"), 1.0, 0, "xd")
    w = m.dq(m.const("b", b, np.int8), 1.0, 0, "bd")
    y = m.node("MatMul", [xd, w], "yf")
    m.dq(m.q(y, y_scale, 0, "yq"), y_scale, 0, "y")
    m.output("y")
    return m


def qdq_binary(op: str, qa: tuple[float, int], qb: tuple[float, int], qy: tuple[float, int], shape=(4,),
               relu: bool = False, opset: int = 21, dtype=np.int8) -> ModelBuilder:
    """int8 inputs a, b -> DQ -> op -> [Relu] -> Q -> y int8 (BL-02, BL-26)."""
    m = ModelBuilder(opset)
    a = m.dq(m.input("a", shape, dtype), *qa, "ad", dtype)
    b = m.dq(m.input("b", shape, dtype), *qb, "bd", dtype)
    y = m.node(op, [a, b], "sum")
    if relu:
        y = m.node("Relu", [y], "relu")
    m.q(y, *qy, "y", dtype)
    m.output("y", dtype)
    return m


def qdq_unary(op: str, qx: tuple[float, int], shape=(6,), opset: int = 21, dtype=np.int8, **attrs) -> ModelBuilder:
    """x int8 -> DQ -> op (extra inputs from attrs `consts`) -> Q (same parameters) -> y int8 (BL-27)."""
    m = ModelBuilder(opset)
    consts = attrs.pop("consts", [])
    x = m.dq(m.input("x", shape, dtype), *qx, "xd", dtype)
    ins = [x] + [m.const(f"c{i}", v) for i, v in enumerate(consts)]
    m.q(m.node(op, ins, "f", **attrs), *qx, "y", dtype)
    m.output("y", dtype)
    return m


def qlinear_conv(x_shape, w, w_scale, x_q=(1.0, 0), y_q=(1.0, 0), bias=None, opset=21, **attrs) -> ModelBuilder:
    """y int8 = QLinearConv(x int8 input, w int8 constant (per-tensor or per-channel scale), bias int32)."""
    m = ModelBuilder(opset)
    ins = [m.input("x", x_shape, np.int8), m.const("xs", x_q[0]), m.const("xz", x_q[1], np.int8),
           m.const("w", w, np.int8), m.const("ws", w_scale), m.const("wz", np.zeros(np.shape(w_scale), np.int8), np.int8),
           m.const("ys", y_q[0]), m.const("yz", y_q[1], np.int8)]
    if bias is not None:
        ins.append(m.const("bias", bias, np.int32))
    m.node("QLinearConv", ins, "y", **attrs)
    m.output("y", np.int8)
    return m


def qdq_convnet(opset: int = 21, act=np.int8, wdt=np.int8, seed: int = 5) -> ModelBuilder:
    """x float -> Q/DQ -> Conv 3x3 (per-axis weights with a -128, int32 bias) -> Relu -> Q/DQ ->
    depthwise Conv (group 8, multiplier 2, stride 2, per-axis) -> Q/DQ -> y float. Per-axis needs
    opset >= 13: below that the weights are per-tensor. act / wdt: int8 or uint8 (zero points + 128)."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(opset)
    u, uw = (128 if act == np.uint8 else 0), (128 if wdt == np.uint8 else 0)
    per_axis = opset >= 13
    kw = {"axis": 0} if per_axis else {}
    xd = m.dq(m.q(m.input("x", (1, 3, 6, 5)), 0.02, u + 5, "xq", act), 0.02, u + 5, "xd", act)
    w = rng.integers(-128, 128, (8, 3, 3, 3)).astype(np.int16)
    w[0, 0, 0, 0] = -128
    ws = rng.uniform(0.001, 0.01, 8 if per_axis else 1).astype(np.float32)
    wd = m.dq(m.const("w", w + uw, wdt), ws, np.full(ws.shape, uw), "wd", wdt, **kw)
    bd = m.dq(m.const("b", rng.integers(-500, 500, 8), np.int32), np.float32(0.02) * ws if per_axis else
              np.float32(0.02) * ws[0], np.zeros(ws.shape if per_axis else (), np.int32), "bd", np.int32, **kw)
    y = m.node("Relu", [m.node("Conv", [xd, wd, bd], "c1", pads=[1, 1, 1, 1])], "r1")
    yd = m.dq(m.q(y, 0.03, u - 128, "c1q", act), 0.03, u - 128, "c1d", act)
    dw = rng.integers(-127, 128, (16, 1, 3, 3)).astype(np.int16)
    dws = rng.uniform(0.01, 0.05, 16 if per_axis else 1).astype(np.float32)
    dwd = m.dq(m.const("dw", dw + uw, wdt), dws, np.full(dws.shape, uw), "dwd", wdt, **kw)
    y2 = m.node("Conv", [yd, dwd], "c2", group=8, strides=[2, 2], pads=[1, 1, 1, 1])
    m.dq(m.q(y2, 0.05, u + 3, "c2q", act), 0.05, u + 3, "y", act)
    m.output("y")
    return m


def matmul_integer(seed: int = 2) -> ModelBuilder:
    """x -> Q -> MatMulInteger(b int8, per-column) -> Cast -> Mul(x_scale * b_scale) -> Add(bias) -> Q/DQ."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(13)
    xq = m.q(m.input("x", (2, 6)), 0.05, 3, "xq")
    b = rng.integers(-128, 128, (6, 4))
    mi = m.node("MatMulInteger", [xq, m.const("b", b, np.int8), m.const("az", 3, np.int8),
                                  m.const("bz", np.zeros(4), np.int8)], "acc")
    mul = m.node("Mul", [m.node("Cast", [mi], "accf", to=TensorProto.FLOAT),
                         m.const("sc", 0.05 * rng.uniform(0.01, 0.02, 4))], "mul")
    add = m.node("Add", [mul, m.const("bias", rng.uniform(-1, 1, 4))], "add")
    m.dq(m.q(add, 0.04, -2, "yq"), 0.04, -2, "y")
    m.output("y")
    return m


def conv_integer(seed: int = 2) -> ModelBuilder:
    """x -> Q (uint8) -> ConvInteger(w uint8, zp 128) -> Cast -> Mul(scale) -> Q/DQ (uint8)."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(13)
    xq = m.q(m.input("x", (1, 2, 5, 5)), 0.05, 0, "xq", np.uint8)
    w = rng.integers(0, 256, (3, 2, 3, 3))
    ci = m.node("ConvInteger", [xq, m.const("w", w, np.uint8), m.const("xz", 0, np.uint8), m.const("wz", 128, np.uint8)],
                "acc", pads=[1, 1, 1, 1])
    mul = m.node("Mul", [m.node("Cast", [ci], "accf", to=TensorProto.FLOAT), m.const("sc", 0.05 * 0.01)], "mul")
    m.dq(m.q(mul, 0.05, 128, "yq", np.uint8), 0.05, 128, "y", np.uint8)
    m.output("y")
    return m


def qlinear_chain(seed: int = 2) -> ModelBuilder:
    """int8 x -> QLinearConv -> MaxPool (int8) -> Reshape (int8) -> QLinearMatMul -> int8 y."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder(13)
    ins = [m.input("x", (1, 2, 4, 4), np.int8), m.const("xs", 0.1), m.const("xz", 1, np.int8),
           m.const("w", rng.integers(-127, 128, (4, 2, 3, 3)), np.int8), m.const("ws", 0.01), m.const("wz", 0, np.int8),
           m.const("ys", 0.05), m.const("yz", -3, np.int8)]
    m.node("QLinearConv", ins, "c", pads=[1, 1, 1, 1])
    m.node("MaxPool", ["c"], "mp", kernel_shape=[2, 2], strides=[2, 2])
    m.node("Reshape", ["mp", m.const("shp", [1, 16], np.int64)], "flat")
    ins = ["flat", m.const("as", 0.05), m.const("az", -3, np.int8), m.const("b", rng.integers(-127, 128, (16, 5)), np.int8),
           m.const("bs", 0.02), m.const("bz", 0, np.int8), m.const("ys2", 0.1), m.const("yz2", 7, np.int8)]
    m.node("QLinearMatMul", ins, "y")
    m.output("y", np.int8)
    return m


def qdq_avg_pool(x_q: tuple[float, int], y_q: tuple[float, int], **attrs) -> ModelBuilder:
    """x float [1,3,4,6] -> Q/DQ -> AveragePool -> Q/DQ (y_q) -> y float."""
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 3, 4, 6)), *x_q, "xq"), *x_q, "xd")
    ap = m.node("AveragePool", [xd], "ap", **attrs)
    m.dq(m.q(ap, *y_q, "apq"), *y_q, "y")
    m.output("y")
    return m


# ---- running ---------------------------------------------------------------------------------
def ort_run(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    src = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def import_int8(path: Path) -> Graph:
    """Our int8 graph of a quantized ONNX model (the model's own quantization, no calibration)."""
    m = load_qdq(path)
    return quantize(run_passes(m.graph), None, given=m.given, given_consts=m.given_consts)


def ours(path: Path, feeds: dict[str, np.ndarray], rounding: str = "tflm", graph: Graph | None = None) -> list[np.ndarray]:
    """Our int8 outputs for ONNX-typed feeds: int8 as is, uint8 - 128, float32 quantized as
    QuantizeLinear does in `rounding` (ties to even for onnx, away for tflm)."""
    g = graph or import_int8(path)
    ins = {}
    for name in g.inputs:
        v, qp = np.asarray(feeds[name]), g.t(name).quant
        ins[name] = (v.astype(np.int16) - 128).astype(np.int8) if v.dtype == np.uint8 else \
            v.astype(np.int8) if v.dtype == np.int8 else quantize_real(v, qp.s, qp.zp, rounding)
    env = interpret(replace(g, meta={**g.meta, "rounding": rounding}), ins)  # the mode travels with the graph
    return [env[o] for o in g.outputs]


def on_grid(ort_out: np.ndarray, g: Graph, i: int = 0) -> np.ndarray:
    """An ORT output as int8 on our output grid: float -> QuantizeLinear rule; uint8 -> - 128."""
    if ort_out.dtype == np.uint8:
        return (ort_out.astype(np.int16) - 128).astype(np.int8)
    if ort_out.dtype == np.int8:
        return ort_out
    qp = g.t(g.outputs[i]).quant
    return quantize_real(ort_out, qp.s, qp.zp, "onnx")
