"""Quantization the model already carries (ONNX QDQ / QLinear*): use it instead of calibrating.

Owns the given-parameters path of `quantize()`:
- activations: `given` maps IR tensor names to the model's per-tensor QuantParams; a graph input
  without its own entry takes the parameters of the view chain (Reshape / Transpose) it feeds;
- constants: `given_consts` maps the IR names of weight, bias and other constant operands to a
  Tensor holding the model's quantization (and, for int32 biases, its exact integers). The op's own
  `quantize_constants` hook runs first and decides the layout (which axis is the output channel);
  then the model's scales replace ours and the integers are recovered from the float weights
  (q = w / scale exactly: the float graph holds the dequantized weights), so weights are kept bit
  for bit, -128 included. Biases are kept as given when their scale is in_scale * w_scale, and
  re-rounded (ties to even) onto that scale otherwise.
Not here: reading the model (toolchain.frontend.onnx_qdq) and range observation (calibrate).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from toolchain.errors import UnsupportedModel
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.quantize_ops import QuantizeAttrs
from toolchain.ops.registry import OpKind, opdef

SCALE_RTOL = 1e-6  # given scale vs the scale an op forces / a bias needs: float32 rounding noise only
INT_TOL = 1e-3  # |w / scale - round(w / scale)| of a float weight that came from an integer


def same_qparams(a: QuantParams, b: QuantParams) -> bool:
    """Equal zero points and scales equal up to float32 rounding."""
    return (a.zero_point == b.zero_point and len(a.scale) == len(b.scale)
            and all(abs(x - y) <= SCALE_RTOL * max(abs(x), abs(y)) for x, y in zip(a.scale, b.scale)))


def _where(graph: Graph, node: Node | None = None) -> str:
    src = graph.meta.get("source", graph.name)
    return f"{src}: node {node.source or node.name} ({node.op.value})" if node else str(src)


def resolve_given(graph: Graph, given: Mapping[str, QuantParams]) -> dict[str, QuantParams]:
    """The entries of `given` that name tensors of `graph` (passes may have removed some), plus
    graph inputs that feed a chain of Reshape/Transpose whose end carries given parameters."""
    out = {k: v for k, v in given.items() if k in graph.tensors}
    for name in graph.inputs:
        cur = name
        while cur not in out:
            users = graph.consumers(cur)
            if len(users) != 1 or not (opdef(users[0]).is_view or users[0].op == OpKind.TRANSPOSE):
                break
            cur = users[0].outputs[0]
        if cur in out:
            out[name] = out[cur]
    return out


# Ops whose int8 kernel is a table computed for the output grid (HardSigmoid): the model's grid wins.
ANY_OUTPUT_GRID = frozenset({"HARD_SIGMOID"})


def given_output(node: Node, graph: Graph, given: QuantParams, forced: QuantParams) -> tuple[Graph, Node]:
    """The model gives `node`'s output another grid than the one its int8 op forces (`forced`):
    a table op takes the model's grid; any other op writes its own grid into a new tensor
    OUT__grid, and a REQUANTIZE onto the model's grid produces OUT. Exact against ORT (one rounding
    of the real value, ties to even, under `rounding: onnx`) when the forced grid holds the real
    output exactly: data movement, views, MaxPool / ReduceMax / Gather / Slice (the value is one of
    the input's); fixed-grid approximations (Softmax 1/256 -> ORT's 1/255) round twice.
    Returns the graph (both tensors quantized) and the node as it now stands."""
    out = node.outputs[0]
    if node.op.name in ANY_OUTPUT_GRID:
        return graph.with_tensor(replace(graph.t(out), dtype=DType.INT8, quant=given)), node
    mid = f"{out}__grid"
    while mid in graph.tensors:
        mid += "_"
    moved = replace(node, outputs=(mid, *node.outputs[1:]))
    rq = Node(f"{node.name}__requantize", OpKind.REQUANTIZE, (mid,), (out,), QuantizeAttrs(), node.source)
    nodes = []
    for n in graph.nodes:
        nodes.extend((moved, rq) if n is node else (n,))
    tensors = {**graph.tensors, mid: replace(graph.t(out), name=mid, dtype=DType.INT8, quant=forced),
               out: replace(graph.t(out), dtype=DType.INT8, quant=given)}
    return graph.with_nodes(nodes, tensors), moved


def apply_given_consts(node: Node, graph_f32: Graph, g: Graph, given_consts: Mapping[str, Tensor]) -> Graph:
    """Replace the constants `quantize_constants` just made for `node` by the model's own: int8
    weights with the given scales (integers recovered exactly), then int32 biases on the scale
    in_scale * w_scale. Raises UnsupportedModel for weights the model did not quantize."""
    consts = [i for i in node.inputs if i and g.t(i).is_const]
    weights = [i for i in consts if g.t(i).dtype == DType.INT8]
    for name in weights:
        if name not in given_consts:
            raise UnsupportedModel(f"{_where(g, node)}: weights {name!r} are float in a quantized model (no "
                                   "DequantizeLinear on them); quantize them in the model")
        src = g.meta.get("weight_sources", {}).get(name)
        g = g.with_tensor(given_weights(g.t(name), graph_f32.t(name).data, given_consts[name], _where(g, node),
                                        opdef(node).weight_zero_point, src))
    biases = [i for i in consts if g.t(i).dtype == DType.INT32]
    if biases and len(weights) == 1:
        x_qp, w_qp = g.t(node.inputs[0]).quant, g.t(weights[0]).quant
        for name in biases:
            g = g.with_tensor(given_bias(g.t(name), graph_f32.t(name).data, given_consts.get(name), x_qp.s, w_qp))
    return g


def given_weights(hooked: Tensor, w_f: np.ndarray, given: Tensor, where: str, zero_point_ok: bool = False,
                  source: str | None = None) -> Tensor:
    """int8 constant with the model's grid: weights (the op's hook made them per-channel: conv, FC)
    keep the model's scales on the hook's axis, symmetric, or with one zero point for every channel
    when the op takes one (`zero_point_ok`: OpDef.weight_zero_point, the kernels' filter_offset); other constant operands (element-wise ops:
    the hook made them per-tensor) keep the model's scale and zero point. Integers = w_f / scale + zp,
    which must be whole numbers in [-128, 127]. `source`: the weights as the file names them, with
    their zero point as written (graph.meta["weight_sources"]), for the error message."""
    qp = given.quant
    weights = hooked.quant is not None and hooked.quant.is_per_channel
    zps = set(qp.zero_point)
    if weights and zps != {0} and (len(zps) > 1 or not zero_point_ok):
        what = source or f"{hooked.name!r} zero point {qp.zero_point[0]}"
        raise UnsupportedModel(f"{where}: weights {what} with a zero point: this op's int8 kernels take symmetric "
                               "weights (one zero point for all channels only in Conv, depthwise Conv and fully "
                               "connected layers); quantize the weights symmetric")
    if not weights and qp.is_per_channel:
        raise UnsupportedModel(f"{where}: constant operand {hooked.name!r} quantized per axis (per-tensor only)")
    w = np.asarray(w_f, np.float64)
    if qp.is_per_channel:
        axis = hooked.quant.axis if hooked.quant is not None and hooked.quant.axis is not None else 0
        if len(qp.scale) != w.shape[axis]:
            raise UnsupportedModel(f"{where}: weights {hooked.name!r} have {len(qp.scale)} scales for "
                                   f"{w.shape[axis]} output channels (per-axis on another axis)")
        shape = [1] * w.ndim
        shape[axis] = -1
        scale = np.asarray(qp.scale, np.float64).reshape(shape)
        ir_qp = QuantParams(tuple(qp.scale), tuple(qp.zero_point), axis)
    else:  # per tensor: weights keep their zero point (filter_offset), other operands theirs
        scale = np.float64(qp.scale[0])
        ir_qp = QuantParams.per_tensor(qp.scale[0], qp.zero_point[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(scale != 0, w / scale, 0.0) + qp.zero_point[0]  # BL-18: 0-scale; one zero point (above)
    q = np.rint(r)
    if r.size and (np.max(np.abs(r - q)) > INT_TOL or q.min() < -128 or q.max() > 127):
        raise UnsupportedModel(f"{where}: weights {hooked.name!r} no longer match the model's int8 quantization "
                               "(changed by a pass, e.g. a folded BatchNorm or Gemm alpha)")
    return Tensor(hooked.name, hooked.shape, DType.INT8, ir_qp, q.astype(np.int8))


def given_bias(hooked: Tensor, b_f: np.ndarray, given: Tensor | None, in_scale: float, w_qp: QuantParams) -> Tensor:
    """int32 bias on the scale in_scale * w_scale[c]: the model's integers when its scale is that
    one (QLinearConv's implicit rule, what quantizers write), else the real bias re-rounded."""
    n = hooked.shape[0] if hooked.shape else 1
    w_scale = np.broadcast_to(np.asarray(w_qp.scale, np.float64), (n,))
    want = in_scale * w_scale
    if given is not None and given.data is not None:
        g_scale = np.broadcast_to(np.asarray(given.quant.scale, np.float64), (n,))
        ints = np.broadcast_to(np.asarray(given.data, np.int64).reshape(-1), (n,))
        if np.all(np.abs(g_scale - want) <= SCALE_RTOL * np.maximum(np.abs(g_scale), np.abs(want))):
            q = ints
        else:
            real = ints * g_scale
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(want != 0, np.rint(real / np.where(want != 0, want, 1.0)), 0)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(want != 0, np.rint(np.asarray(b_f, np.float64).reshape(-1) / np.where(want != 0, want, 1.0)), 0)
    q = np.clip(q, -(2**31), 2**31 - 1).astype(np.int32).reshape(hooked.shape)
    qp = QuantParams(tuple(float(s) for s in want), (0,) * n, 0)
    return Tensor(hooked.name, hooked.shape, DType.INT32, qp, q)


def weights_with_int8_min(graph: Graph) -> tuple[str, ...]:
    """Names of int8 weight constants holding -128 (outside TFLite's [-127, 127] weight range): kernel
    variants that pair products in 16-bit lanes must not take them (BL-04); portable ones may."""
    return tuple(sorted(n for n, t in graph.tensors.items()
                        if t.is_const and t.dtype == DType.INT8 and t.data.size and int(t.data.min()) == -128))
