"""Layers whose weights keep a zero point (quantize.given: w - zw beyond int8, one zero point for
all channels) run at the ISA kernels' speed, exactly: onnxruntime's U8U8 weights overflow int8 in
a handful of weights per tensor (MobileNetV2: 64 of 394,848), so

- the layer runs as it is on symmetric int8 weights w - zw (clipped to [-127, 127]: exact in every
  output channel whose w - zw all lie there; the ISA kernels take them), and
- a convolution or fully-connected layer then takes the overflowing parts of w - zw (beyond
  [-128, 127]) as extra weights over a few input channels appended to its input
  (quantize.zero_point_widen): the whole layer, still one node, where it has few output channels;
  else only its overflowing output channels run again that way, put back by ScatterChannels;
- a depthwise layer's other output channels (those with a weight beyond [-127, 127]) run again,
  alone, on int8 halves of w - zw over their input channels gathered twice, a regular convolution
  (quantize.zero_point_halves), and ScatterChannels puts them back, in place. Where these schemes do
  not fit int8 (w - zw = 255), the layer's overflowing channels run through the portable kernel with
  the zero point (filter_offset) instead, scattered back the same way.

Every output value is then computed by the exact int32 arithmetic sum (x - zx)(w - zw) + bias.
Conv2D (ungrouped), DepthwiseConv2D (multiplier 1) and FullyConnected; a depthwise layer (or one
with w - zw = 255) whose every channel overflows stays whole. Not here: taking the weights as the
model has them (quantize.given).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from quantize.zero_point_halves import halves_fix_nodes, rows_fix_nodes
from quantize.zero_point_widen import widen_fix_nodes, widen_node
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.gather import GatherAttrs
from toolchain.ops.registry import OpKind, opdef
from toolchain.ops.scatter_channels import ScatterChannelsAttrs

SPLIT_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED")


def _splittable(node: Node, graph: Graph) -> bool:
    if node.op.name not in SPLIT_OPS or len(node.inputs) < 2 or not graph.t(node.inputs[1]).is_const:
        return False
    q = graph.t(node.inputs[1]).quant
    if q is None or len(set(q.zero_point)) != 1 or q.zero_point[0] == 0:
        return False
    return (node.op.name != "CONV2D" or node.attrs.groups == 1) and \
        (node.op.name != "DEPTHWISE_CONV2D" or node.attrs.depth_multiplier == 1)


def _take(t: Tensor, name: str, idx: list[int], axis: int, data: np.ndarray | None = None) -> Tensor:
    """Output channels `idx` (along `axis`) of constant `t` (its per-channel qparams sliced too)."""
    q = t.quant
    if q is not None and q.is_per_channel:
        q = QuantParams(tuple(q.scale[i] for i in idx), tuple(q.zero_point[i] for i in idx), q.axis)
    d = np.take(t.data if data is None else data, idx, axis=axis)
    return Tensor(name, d.shape, t.dtype, q, np.ascontiguousarray(d))


def _offset_fix_nodes(node: Node, graph: Graph, tensors: dict[str, Tensor], idx: list[int], bias: str | None,
                      fix_y: str) -> list[Node]:
    """Output channels `idx` of `node` into `fix_y` by the portable kernel with the zero point
    (filter_offset): the fallback where the halves of quantize.zero_point_halves do not fit int8."""
    x, wname = node.inputs[0], node.inputs[1]
    w = graph.t(wname)
    fix_w = _take(w, fresh_name(tensors, f"{wname}__fix"), idx, opdef(node).weight_out_axis)
    tensors[fix_w.name] = fix_w
    ins, out = [x, fix_w.name, *([bias] if bias else [])], []
    if node.op.name == "DEPTHWISE_CONV2D":  # channel c reads input channel c only: gather those first
        xt = graph.t(x)
        ins[0] = fresh_name(tensors, f"{x}__fix")
        tensors[ins[0]] = replace(xt, name=ins[0], shape=(*xt.shape[:-1], len(idx)))
        out.append(Node(f"{node.name}__gather", OpKind.GATHER, (x,), (ins[0],),
                        GatherAttrs(3, tuple(idx), (len(idx),)), node.source))
    return [*out, replace(node, name=f"{node.name}__fix", inputs=tuple(ins), outputs=(fix_y,))]


def split_zero_point_channels(graph: Graph, depthwise_rows: bool = False) -> Graph:
    """The int8 graph with every layer that has a weight zero point rewritten as above (see the module
    docstring); unchanged when there is none. `depthwise_rows`: a depthwise layer's recomputed
    channels run as a depthwise layer over doubled input rows where that form applies
    (zero_point_halves.rows_fix_nodes: cheaper on Helium), else as the regular convolution of the
    halves; the same int32 sums either way."""
    nodes, tensors = [], dict(graph.tensors)
    for node in graph.nodes:
        if not _splittable(node, graph):
            nodes.append(node)
            continue
        x, wname, y = node.inputs[0], node.inputs[1], node.outputs[0]
        w, axis = graph.t(wname), opdef(node).weight_out_axis
        v = w.data.astype(np.int16) - w.quant.zero_point[0]
        over = np.moveaxis((v < -127) | (v > 127), axis, 0).reshape(v.shape[axis], -1).any(axis=1)
        wide = None if node.op.name == "DEPTHWISE_CONV2D" else widen_node(node, tensors, v, int(over.sum()))
        if wide:  # conv / FC: one node on the input widened by a few channels (or none)
            nodes.extend(wide)
            continue
        if over.all():
            nodes.append(node)
            continue
        qs = w.quant
        sym_q = QuantParams(qs.scale, (0,) * len(qs.scale), qs.axis)
        sym = Tensor(fresh_name(tensors, f"{wname}__sym"), w.shape, DType.INT8, sym_q,
                     np.clip(v, -127, 127).astype(np.int8))
        tensors[sym.name] = sym
        if not over.any():  # every w - zw within int8: symmetric weights, one node
            nodes.append(replace(node, inputs=(x, sym.name, *node.inputs[2:])))
            continue
        idx = [int(i) for i in np.flatnonzero(over)]
        main_y = fresh_name(tensors, f"{y}__main")
        tensors[main_y] = replace(graph.t(y), name=main_y)
        bias = None
        if len(node.inputs) > 2 and node.inputs[2]:
            b = _take(graph.t(node.inputs[2]), fresh_name(tensors, f"{node.inputs[2]}__fix"), idx, 0)
            tensors[b.name] = b
            bias = b.name
        fix_y = fresh_name(tensors, f"{y}__fix")
        yt = graph.t(y)
        tensors[fix_y] = replace(yt, name=fix_y, shape=(*yt.shape[:-1], len(idx)))
        isa_fix = ((rows_fix_nodes,) if depthwise_rows else ()) + (halves_fix_nodes,) \
            if node.op.name == "DEPTHWISE_CONV2D" else (widen_fix_nodes,)
        nodes.extend(next(filter(None, (f(node, tensors, v, idx, bias, fix_y) for f in isa_fix)), None)
                     or _offset_fix_nodes(node, graph, tensors, idx, bias, fix_y))
        nodes.append(replace(node, inputs=(x, sym.name, *node.inputs[2:]), outputs=(main_y,)))
        nodes.append(Node(f"{node.name}__scatter", OpKind.SCATTER_CHANNELS, (main_y, fix_y), (y,),
                          ScatterChannelsAttrs(tuple(idx)), node.source))
    return graph if len(nodes) == len(graph.nodes) and all(a is b for a, b in zip(nodes, graph.nodes)) \
        else graph.with_nodes(nodes, tensors)
