"""Which channels of each int8 activation are provably constant, from weights, biases and qparams only.

Owns: `tensor_constants(graph) -> {tensor: int64 [C]}` (per channel of the last axis, the int8 value
every element of that channel holds for EVERY input, or LIVE). Never reads calibration data: a
channel is claimed only when the op's integer arithmetic (TFLite int8 spec, the same references the
interpreter runs) gives one value at every pixel whatever the graph inputs are.

The proofs, per op:
- Conv2D (groups 1), DepthwiseConv2D, FullyConnected with no weight zero point: the int32 accumulator
  of a channel lies in [lo, hi], the bias plus, per tap and input channel, the extremes of w * (x - zp)
  over the values x can hold: [-128, 127] for a live channel, c for a constant one, and also the
  input zero point (the term is then 0) when the window can reach the padding. Requantization and the
  activation clamp are monotone, so the output is constant iff lo and hi give the same int8 value (and
  neither leaves int32, where the C accumulator would wrap). All-zero weights are the common case.
- Channel-wise ops (pools, Add/Sub/Mul, activations, Requantize, Pad, Mean over spatial axes): each
  output channel reads only the same input channel, so the op's own int8 reference run on inputs
  holding the constants shows the exact output; a channel is constant when all its inputs are and
  the output holds one value at every pixel (padding with c != zero point shows up as a second value).
- Concatenation on the last axis, Reshape (channel j of the output maps to the input channels of the
  same flat positions): the constants move with their channels.
Everything else: LIVE.
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ir.types import DType
from toolchain.ops.common import filter_offset
from toolchain.ops.fixed_point import graph_rounding, requantize_weighted_s8, rounding_mode
from toolchain.ops.registry import opdef

LIVE = 999  # the mark of a channel that depends on the graph inputs (outside int8, as packing.LIVE)

CHANNELWISE = frozenset({"Add", "Sub", "Mul", "Maximum", "Minimum", "Clamp", "Relu", "LeakyRelu", "Logistic", "Tanh",
                         "HardSwish", "HardSigmoid", "LookupTable", "Requantize", "AveragePool2D", "MaxPool2D",
                         "Pad", "Mean", "SiLU"})


def live(c: int) -> np.ndarray:
    """All-LIVE int64 [c]."""
    return np.full(c, LIVE, np.int64)


def is_int8(graph: Graph, name: str) -> bool:
    t = graph.t(name)
    return t.dtype == DType.INT8 and t.quant is not None and not t.quant.is_per_channel


def tensor_constants(graph: Graph) -> dict[str, np.ndarray]:
    """Per activation tensor (graph inputs and node outputs), int64 [C] over its last axis: the int8
    value the channel holds at every element for every input, LIVE where that is not proven."""
    out: dict[str, np.ndarray] = {n: live(graph.t(n).shape[-1] if graph.t(n).shape else 1) for n in graph.inputs}
    with rounding_mode(graph_rounding(graph)):
        for node in graph.nodes:
            ys = [graph.t(o) for o in node.outputs]
            vec = None
            try:
                if len(ys) == 1 and all(is_int8(graph, o) for o in node.outputs) and ys[0].shape:
                    vec = _node_constants(node, graph, out)
            except (ValueError, KeyError, IndexError):  # an op form the proofs do not cover: claim nothing
                vec = None
            for y in ys:
                c = y.shape[-1] if y.shape else 1
                out[y.name] = vec if vec is not None and len(vec) == c else live(c)
    return out


def _in_const(graph: Graph, name: str, consts: dict[str, np.ndarray]) -> np.ndarray:
    t = graph.t(name)
    if name in consts:
        return consts[name]
    if t.is_const and t.shape:  # a constant tensor: channel j constant when uniform over the other axes
        d = np.asarray(t.data).reshape(-1, t.shape[-1]).astype(np.int64)
        return np.where((d == d[:1]).all(axis=0), d[0], LIVE)
    return live(t.shape[-1] if t.shape else 1)


def _node_constants(node: Node, graph: Graph, consts: dict[str, np.ndarray]) -> np.ndarray | None:
    kind = node.op.value
    if kind in ("Conv2D", "DepthwiseConv2D", "FullyConnected"):
        return weighted_constants(node, graph, consts)
    if kind in CHANNELWISE:
        return _channelwise(node, graph, consts)
    if kind == "Concatenation":
        rank = len(graph.t(node.outputs[0]).shape)
        q = graph.t(node.outputs[0]).quant
        if node.attrs.axis % rank != rank - 1 or any(graph.t(i).quant != q for i in node.inputs):
            return None  # another axis, or inputs rescaled to the output's grid: claim nothing
        return np.concatenate([_in_const(graph, i, consts) for i in node.inputs])
    if kind == "Reshape":
        x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
        if x.quant != y.quant or not x.shape:
            return None
        return reshape_constants(_in_const(graph, node.inputs[0], consts), y.shape[-1])
    return None


def reshape_constants(cin: np.ndarray, cout: int) -> np.ndarray | None:
    """Constants of a row-major reshape whose output last axis is `cout` (flat element f sits in input
    channel f % Cin and output channel f % cout); None when neither divides the other."""
    n = len(cin)
    if cout % n == 0:
        return cin[np.arange(cout) % n]
    if n % cout == 0:
        groups = cin.reshape(-1, cout)  # output channel k reads input channels k, k + cout, ...
        same = (groups == groups[:1]).all(axis=0) & (groups[0] != LIVE)
        return np.where(same, groups[0], LIVE)
    return None


def _channelwise(node: Node, graph: Graph, consts: dict[str, np.ndarray]) -> np.ndarray | None:
    y = graph.t(node.outputs[0])
    c = y.shape[-1]
    if node.op.value == "Mean" and len(graph.t(node.inputs[0]).shape) - 1 in node.attrs.axes:
        return None
    ins, ok = [], np.ones(c, bool)
    for name in node.inputs:
        if not name:
            ins.append(None)
            continue
        t = graph.t(name)
        if t.is_const and not (t.shape and t.shape[-1] in (1, c)):
            ins.append(t.data)  # e.g. Pad's paddings: not a channel-wise operand
            continue
        if not t.shape or t.shape[-1] not in (1, c):
            return None
        k = _in_const(graph, name, consts)
        kc = np.broadcast_to(k, (c,)) if len(k) == 1 else k
        ok &= kc != LIVE
        if t.is_const:
            ins.append(t.data)
        else:
            fill = np.where(k == LIVE, 0, k).astype(t.dtype.np)
            ins.append(np.broadcast_to(fill, t.shape).copy())
    if not ok.any():
        return live(c)
    r = np.asarray(opdef(node).reference_s8(node, graph, ins)[0]).reshape(-1, c).astype(np.int64)
    same = (r == r[:1]).all(axis=0) & ok
    return np.where(same, r[0], LIVE)


def pad_exposed(node: Node, graph: Graph) -> bool:
    """Whether some window of a Conv2D / DepthwiseConv2D reaches outside the input (reads the input
    zero point there): top/left padding, or windows running past the bottom/right edge."""
    if node.op.value == "FullyConnected":
        return False
    win = node.attrs.window
    h, w = graph.t(node.inputs[0]).shape[1:3]
    oh, ow = graph.t(node.outputs[0]).shape[1:3]
    need_h = (oh - 1) * win.stride[0] + (win.kernel[0] - 1) * win.dilation[0] + 1
    need_w = (ow - 1) * win.stride[1] + (win.kernel[1] - 1) * win.dilation[1] + 1
    return win.pads[0] > 0 or win.pads[1] > 0 or need_h > h or need_w > w


def weights_oki(node: Node, graph: Graph) -> np.ndarray | None:
    """A weighted node's int8 weights as int64 [O, taps, I] (O output channels; I the input
    channels one output channel reads: Cin, or 1 for depthwise), None for forms the proofs skip
    (grouped conv, weight zero point, no int8 weights, missing bias)."""
    if len(node.inputs) < 3 or not node.inputs[2] or filter_offset(node, graph) != 0:
        return None
    w = graph.t(node.inputs[1])
    if w.data is None or w.dtype != DType.INT8 or not is_int8(graph, node.inputs[0]):
        return None
    d = np.asarray(w.data).astype(np.int64)
    kind = node.op.value
    if kind == "Conv2D":
        if node.attrs.groups != 1:
            return None
        return d.reshape(d.shape[0], -1, d.shape[3])
    if kind == "DepthwiseConv2D":
        return d.reshape(-1, d.shape[3]).T[:, :, None]  # [1, KH, KW, C] -> [C, taps, 1]
    return d[:, None, :] if d.ndim == 2 else None


def weighted_constants(node: Node, graph: Graph, consts: dict[str, np.ndarray]) -> np.ndarray | None:
    """Conv2D / DepthwiseConv2D / FullyConnected: per output channel, the int8 value the bias-plus-
    accumulator bounds prove (module docstring), LIVE elsewhere; None when weights_oki skips the node."""
    w = weights_oki(node, graph)
    if w is None:
        return None
    from toolchain.ops import conv2d, depthwise_conv2d, fully_connected
    mod = {"Conv2D": conv2d, "DepthwiseConv2D": depthwise_conv2d, "FullyConnected": fully_connected}[node.op.value]
    k = mod.s8_kwargs(node, graph)
    zp = graph.t(node.inputs[0]).quant.zp
    cin = _in_const(graph, node.inputs[0], consts)
    o = w.shape[0]
    if node.op.value == "DepthwiseConv2D":
        cin = cin[np.arange(o) // node.attrs.depth_multiplier][:, None]  # [O, 1]: the channel each reads
    else:
        cin = np.broadcast_to(cin, (o, len(cin)))
    exposed = pad_exposed(node, graph)
    # per (o, i) the values x - zp can take: [vlo, vhi] (live: the int8 range; constant: c, and 0 with padding)
    vlo = np.where(cin == LIVE, -128 - zp, cin - zp)
    vhi = np.where(cin == LIVE, 127 - zp, cin - zp)
    if exposed:
        vlo, vhi = np.minimum(vlo, 0), np.maximum(vhi, 0)
    a, b = w * vlo[:, None, :], w * vhi[:, None, :]
    bias = np.asarray(graph.t(node.inputs[2]).data, np.int64).reshape(-1)
    lo = bias + np.minimum(a, b).sum(axis=(1, 2))
    hi = bias + np.maximum(a, b).sum(axis=(1, 2))
    fits = (lo >= -2 ** 31) & (hi < 2 ** 31)
    mult, shift = np.asarray(k["out_mult"], np.int64), np.asarray(k["out_shift"], np.int64)
    args = (mult, shift, k["output_offset"], k["act_min"], k["act_max"])
    ylo = requantize_weighted_s8(np.clip(lo, -2 ** 31, 2 ** 31 - 1), *args).astype(np.int64)
    yhi = requantize_weighted_s8(np.clip(hi, -2 ** 31, 2 ** 31 - 1), *args).astype(np.int64)
    return np.where(fits & (ylo == yhi), ylo, LIVE)
