"""Tiny helpers to build test graphs: float IR Graphs directly (`GraphBuilder`) or ONNX models
with onnx.helper (`onnx_model`, `load`), plus the comparisons the unit tests share
(`structure`, `assert_same_structure`, `assert_equivalent`, `run_ort`).

Shapes in GraphBuilder are IR shapes (NHWC activations, OHWI conv weights, [1,KH,KW,C*m]
depthwise weights, [O,K] dense weights). Output shapes come from each op's `infer_shapes`.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import toolchain.ops  # noqa: F401 - registers every op
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ops.add import AddAttrs
from toolchain.ops.batch_norm import BatchNormAttrs
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import NO_ACT, Window
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.depthwise_conv2d import DepthwiseConv2DAttrs
from toolchain.ops.fully_connected import FullyConnectedAttrs
from toolchain.ops.pool2d import Pool2DAttrs
from toolchain.ops.registry import OpKind, opdef
from toolchain.ops.shape_ops import ReshapeAttrs, TransposeAttrs
from toolchain.ops.softmax import SoftmaxAttrs

F32 = DType.FLOAT32


# ---- IR graphs ------------------------------------------------------------------------------
class GraphBuilder:
    """Accumulates tensors and nodes; every op helper returns the output tensor's name."""

    def __init__(self, name: str = "g", seed: int = 0) -> None:
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.rng = np.random.default_rng(seed)
        self._n = 0

    def _fresh(self, base: str) -> str:
        self._n += 1
        name = f"{base}{self._n}"
        assert name not in self.tensors
        return name

    # -- tensors ---------------------------------------------------------------------------
    def input(self, name: str, shape: Sequence[int], dtype: DType = F32) -> str:
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        self.inputs.append(name)
        return name

    def const(self, data: np.ndarray, name: str | None = None) -> str:
        name = name or self._fresh("c")
        arr = np.ascontiguousarray(data, dtype=np.float32)
        self.tensors[name] = Tensor(name, tuple(arr.shape), F32, None, arr)
        return name

    def rand(self, shape: Sequence[int], lo: float = -1.0, hi: float = 1.0, name: str | None = None) -> str:
        return self.const(self.rng.uniform(lo, hi, size=tuple(shape)).astype(np.float32), name)

    # -- nodes -----------------------------------------------------------------------------
    def node(self, op: OpKind, inputs: Sequence[str], attrs: Any, out: str | None = None,
             name: str | None = None) -> str:
        """Append a node; its output shape comes from the op's shape inference."""
        out = out or self._fresh(op.name.lower() + "_")
        node = Node(name or f"n_{out}", op, tuple(inputs), (out,), attrs)
        probe = Graph(self.name, (node,), self.tensors, tuple(self.inputs), ())
        (shape,) = opdef(node).infer_shapes(node, probe)
        self.tensors[out] = Tensor(out, tuple(int(s) for s in shape), self.tensors[inputs[0]].dtype)
        self.nodes.append(node)
        return out

    def conv(self, x: str, cout: int, k: int | tuple[int, int] = 3, *, stride=(1, 1), pads=(0, 0, 0, 0),
             dilation=(1, 1), groups: int = 1, act=NO_ACT, w: np.ndarray | None = None,
             b: np.ndarray | None = None, **kw) -> str:
        kh, kw_ = (k, k) if isinstance(k, int) else k
        cin = self.tensors[x].shape[3]
        wn = self.const(w) if w is not None else self.rand((cout, kh, kw_, cin // groups))
        bn = self.const(b) if b is not None else self.rand((cout,))
        win = Window((kh, kw_), tuple(stride), tuple(dilation), tuple(pads))
        return self.node(OpKind.CONV2D, [x, wn, bn], Conv2DAttrs(win, groups, act), **kw)

    def dwconv(self, x: str, k: int = 3, mult: int = 1, *, stride=(1, 1), pads=(0, 0, 0, 0), act=NO_ACT,
               **kw) -> str:
        cin = self.tensors[x].shape[3]
        wn, bn = self.rand((1, k, k, cin * mult)), self.rand((cin * mult,))
        win = Window((k, k), tuple(stride), (1, 1), tuple(pads))
        return self.node(OpKind.DEPTHWISE_CONV2D, [x, wn, bn], DepthwiseConv2DAttrs(win, mult, act), **kw)

    def fc(self, x: str, units: int, act=NO_ACT, **kw) -> str:
        k = self.tensors[x].shape[1]
        return self.node(OpKind.FULLY_CONNECTED, [x, self.rand((units, k)), self.rand((units,))],
                         FullyConnectedAttrs(act), **kw)

    def add(self, a: str, b: str, act=NO_ACT, **kw) -> str:
        return self.node(OpKind.ADD, [a, b], AddAttrs(act), **kw)

    def clamp(self, x: str, lo: float = 0.0, hi: float = math.inf, **kw) -> str:
        return self.node(OpKind.CLAMP, [x], ClampAttrs(float(lo), float(hi)), **kw)

    def relu(self, x: str, **kw) -> str:
        return self.clamp(x, 0.0, math.inf, **kw)

    def avgpool(self, x: str, k: int = 2, stride: int = 2, pads=(0, 0, 0, 0), act=NO_ACT, **kw) -> str:
        win = Window((k, k), (stride, stride), (1, 1), tuple(pads))
        return self.node(OpKind.AVG_POOL2D, [x], Pool2DAttrs(win, False, act), **kw)

    def maxpool(self, x: str, k: int = 2, stride: int = 2, pads=(0, 0, 0, 0), act=NO_ACT, **kw) -> str:
        win = Window((k, k), (stride, stride), (1, 1), tuple(pads))
        return self.node(OpKind.MAX_POOL2D, [x], Pool2DAttrs(win, False, act), **kw)

    def batchnorm(self, x: str, eps: float = 1e-5, **kw) -> str:
        c = self.tensors[x].shape[-1]
        gamma, beta = self.rand((c,), 0.5, 1.5), self.rand((c,))
        mean, var = self.rand((c,)), self.rand((c,), 0.5, 2.0)
        return self.node(OpKind.BATCH_NORM, [x, gamma, beta, mean, var], BatchNormAttrs(eps), **kw)

    def reshape(self, x: str, shape: Sequence[int], **kw) -> str:
        return self.node(OpKind.RESHAPE, [x], ReshapeAttrs(tuple(shape)), **kw)

    def transpose(self, x: str, perm: Sequence[int], **kw) -> str:
        return self.node(OpKind.TRANSPOSE, [x], TransposeAttrs(tuple(perm)), **kw)

    def softmax(self, x: str, beta: float = 1.0, **kw) -> str:
        return self.node(OpKind.SOFTMAX, [x], SoftmaxAttrs(beta), **kw)

    def build(self, *outputs: str) -> Graph:
        """The Graph with the given outputs (constants nobody reads are dropped)."""
        g = Graph(self.name, tuple(self.nodes), self.tensors, tuple(self.inputs), tuple(outputs))
        return g.with_nodes(g.nodes)


# ---- comparisons ----------------------------------------------------------------------------
def ops(graph: Graph) -> list[OpKind]:
    """Op kinds in execution order."""
    return [n.op for n in graph.nodes]


def structure(graph: Graph) -> tuple:
    """A name-free canonical form: per node (op, attrs, input refs, output shapes); graph input i
    is ("in", i), the j-th output of node k is ("node", k, j), a constant is ("const", shape)."""
    where: dict[str, tuple] = {n: ("in", i) for i, n in enumerate(graph.inputs)}
    rows = []
    for k, node in enumerate(graph.nodes):
        refs = []
        for i in node.inputs:
            if not i:
                refs.append(None)
            elif graph.t(i).is_const:
                refs.append(("const", graph.t(i).shape))
            else:
                refs.append(where[i])
        rows.append((node.op, node.attrs, tuple(refs), tuple(graph.t(o).shape for o in node.outputs)))
        for j, o in enumerate(node.outputs):
            where[o] = ("node", k, j)
    return tuple(rows), tuple(where[o] for o in graph.outputs)


def assert_same_structure(actual: Graph, expected: Graph, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Structural equality (ops, attrs, wiring, shapes) and equal constant data."""
    sa, se = structure(actual), structure(expected)
    assert sa == se, f"structure differs:\n actual   {sa}\n expected {se}"
    for na, ne in zip(actual.nodes, expected.nodes, strict=True):
        for ia, ie in zip(na.inputs, ne.inputs, strict=True):
            if ia and actual.t(ia).is_const:
                np.testing.assert_allclose(actual.t(ia).data, expected.t(ie).data, rtol=rtol, atol=atol,
                                           err_msg=f"constant {ia!r} of {na.name}")


def random_inputs(graph: Graph, seed: int = 0, scale: float = 2.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: (rng.standard_normal(graph.t(n).shape) * scale).astype(np.float32) for n in graph.inputs}


def outputs_in_order(graph: Graph, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    res = interpret(graph, feeds)
    return [res[o] for o in graph.outputs]


def assert_equivalent(before: Graph, after: Graph, seeds: Sequence[int] = (0, 1, 2), rtol: float = 1e-4,
                      atol: float = 1e-4) -> None:
    """interpret(before) == interpret(after) (allclose) on random inputs, outputs by position."""
    assert before.inputs == after.inputs
    for s in seeds:
        feeds = random_inputs(before, s)
        ya, yb = outputs_in_order(before, feeds), outputs_in_order(after, feeds)
        assert len(ya) == len(yb)
        for a, b in zip(ya, yb, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


# ---- ONNX models ----------------------------------------------------------------------------
def vi(name: str, shape: Sequence[int] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, None if shape is None else list(shape))


def onnx_model(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, Sequence[int]], outputs: Sequence[str],
               inits: Mapping[str, np.ndarray] | None = None, opset: int = 13) -> onnx.ModelProto:
    """A float ONNX model; inputs: name -> shape; outputs without shapes (ORT infers them)."""
    inits = inits or {}
    g = helper.make_graph(list(nodes), "test", [vi(n, s) for n, s in inputs.items()], [vi(o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(model: onnx.ModelProto, tmp_path: Path, name: str = "model.onnx") -> Path:
    path = Path(tmp_path) / name
    onnx.save(model, str(path))
    return path


def load(model: onnx.ModelProto, tmp_path: Path) -> Graph:
    """Save to tmp_path and read back with toolchain.frontend.onnx.load_onnx."""
    from toolchain.frontend.onnx import load_onnx

    return load_onnx(save(model, tmp_path))


def run_ort(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime with every graph optimisation disabled (the float oracle of the frontend)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(feeds))
