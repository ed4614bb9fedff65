"""fold_constant_channels: int8 graph -> int8 graph where provably constant channels are not computed.

Runs on the quantized graph (toolchain.pipeline, after quantization, before lowering). A channel j of
an activation T that constant_channels proves to hold c at every element, for every input, is removed
from T when every reader can do without it:
- a Conv2D (groups 1) / FullyConnected reading T folds it into its int32 bias, exactly:
  bias[o] += sum over taps of w[o, tap, j] * (c - input_zp), then drops input channel j (its MACs are
  not done). Only when no window reaches the padding (padded taps hold the zero point, not c) or
  c == input_zp (then the term is 0 at every tap, padded or not). int32 sums wrap as TFLM's
  accumulator does, so the folded sum is the same int32 whatever the order.
- a DepthwiseConv2D (multiplier 1) or a per-channel unary op (pool, activation, Requantize, Mean over
  spatial axes) or a Reshape keeping the last axis drops channel j from its input and output when its
  output channel j is proven constant too and can itself be dropped (recursively).
The producer of T (a Conv2D with groups 1 or a FullyConnected) then drops output channel j: its
weights, bias and per-channel qparams lose row j. A graph output, an Add, a Concatenation, ... keeps
the channel. A channel count that was a multiple of 8 (4, 2) stays one (the fast DSP / Helium / NEON
kernels want multiples of 4 or 8), so a few droppable channels may stay. Every ISA kernel runs the
smaller layers unchanged.

graph.meta["macs_skipped"]: {node name: MACs no longer done} (the report's macs_skipped;
macs = the op's remaining MACs + these); graph.meta["channels_dropped"]: {activation: the channels
removed, original indices} (the float reference of such a tensor is sliced to match);
graph.meta["weights_dropped_bytes"]: (int8, int32) bytes of the model's parameters no longer stored
(the report's weights_skipped_bytes).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import Graph, Node, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ir.types import QuantParams
from toolchain.ops.registry import opdef
from toolchain.passes.constant_channels import LIVE, pad_exposed, tensor_constants, weights_oki

META_KEY = "macs_skipped"
BYTES_KEY = "weights_dropped_bytes"  # (int8 weight bytes, int32 bias bytes) of the source model no longer stored
DROPPED_KEY = "channels_dropped"  # {activation: its original channels removed} (profiler.numerics slices references)
ALIGN = 8  # the channel multiple kept (see _plan)
UNARY = frozenset({"Relu", "Clamp", "AveragePool2D", "MaxPool2D", "Requantize", "LeakyRelu", "Logistic", "Tanh",
                   "HardSwish", "HardSigmoid", "LookupTable", "Mean", "SiLU"})


def fold_constant_channels(graph: Graph) -> Graph:
    """The graph with provably constant channels folded into the next layers' biases and removed (module
    docstring); the same int8 outputs bit for bit. meta[META_KEY] adds the MACs skipped per node."""
    consts = tensor_constants(graph)
    drops = _plan(graph, consts)
    if not drops:
        return graph
    before = {n.name: opdef(n).cost(n, graph).macs for n in graph.nodes}
    tensors = dict(graph.tensors)
    nodes = []
    for node in graph.nodes:
        nodes.append(_rewrite(node, graph, consts, drops, tensors))
    for name, ch in drops.items():  # the activations lose their dropped channels
        t = graph.t(name)
        tensors[name] = replace(t, shape=(*t.shape[:-1], t.shape[-1] - len(ch)))
    out = graph.with_nodes(nodes, tensors)
    skipped = dict(graph.meta.get(META_KEY, {}))
    for n in out.nodes:
        d = before[n.name] - opdef(n).cost(n, out).macs
        if d:
            skipped[n.name] = skipped.get(n.name, 0) + int(d)
    dropped = {**graph.meta.get(DROPPED_KEY, {}), **drops}
    gone = [sum(g.t(i).nbytes for i in {i for n in g.nodes for i in n.inputs if i}
                if g.t(i).is_const and g.t(i).dtype.c == c) for g in (graph, out) for c in ("int8_t", "int32_t")]
    was = graph.meta.get(BYTES_KEY, (0, 0))
    return replace(out, meta={**out.meta, META_KEY: skipped, DROPPED_KEY: dropped,
                              BYTES_KEY: (was[0] + gone[0] - gone[2], was[1] + gone[1] - gone[3])})


# ---- which channels go --------------------------------------------------------------------------
def _plan(graph: Graph, consts: dict[str, np.ndarray]) -> dict[str, list[int]]:
    """{activation: sorted channels to remove} for the roots (Conv2D / FC outputs) and the chains of
    per-channel ops below them."""
    drops: dict[str, set[int]] = {}
    for node in graph.nodes:
        if node.op.value not in ("Conv2D", "FullyConnected") or weights_oki(node, graph) is None:
            continue
        y = node.outputs[0]
        cand = [j for j in np.flatnonzero(consts[y] != LIVE) if _droppable(graph, consts, y, int(j))]
        n = len(consts[y])
        g = next(a for a in (ALIGN, 4, 2, 1) if n % a == 0)
        # the ISA kernels want channel counts in multiples of 4 (DSP, Helium) or 8 (NEON): a count that was
        # one stays one, else a fast layer would fall back to a slow one; and at least g channels stay
        cand = cand[:min(len(cand) // g * g, n - g)]
        for j in cand:
            _mark(graph, y, int(j), drops)
    return {k: sorted(v) for k, v in drops.items() if v}


def _droppable(graph: Graph, consts: dict[str, np.ndarray], t: str, j: int) -> bool:
    if t in graph.outputs or consts[t][j] == LIVE:
        return False
    readers = graph.consumers(t)
    if not readers:
        return False
    for n in readers:
        kind = n.op.value
        if n.inputs[0] != t or t in n.inputs[1:]:
            return False
        if kind in ("Conv2D", "FullyConnected"):
            if weights_oki(n, graph) is None or \
                    (pad_exposed(n, graph) and consts[t][j] != graph.t(t).quant.zp):
                return False
        elif kind == "DepthwiseConv2D":
            if n.attrs.depth_multiplier != 1 or weights_oki(n, graph) is None or \
                    not _droppable(graph, consts, n.outputs[0], j):
                return False
        elif kind in UNARY or kind == "Reshape":
            y, x = graph.t(n.outputs[0]), graph.t(t)
            if len(n.outputs) != 1 or not y.shape or y.shape[-1] != x.shape[-1] or \
                    any(i and not graph.t(i).is_const for i in n.inputs[1:]) or \
                    (kind == "Mean" and len(x.shape) - 1 in n.attrs.axes) or \
                    not _droppable(graph, consts, n.outputs[0], j):
                return False
        else:
            return False
    return True


def _mark(graph: Graph, t: str, j: int, drops: dict[str, set[int]]) -> None:
    drops.setdefault(t, set()).add(j)
    for n in graph.consumers(t):
        if n.op.value not in ("Conv2D", "FullyConnected"):
            _mark(graph, n.outputs[0], j, drops)


# ---- the rewrite ---------------------------------------------------------------------------------
def _rewrite(node: Node, graph: Graph, consts: dict[str, np.ndarray], drops: dict[str, list[int]],
             tensors: dict[str, Tensor]) -> Node:
    kind = node.op.value
    x, y = node.inputs[0] if node.inputs else "", node.outputs[0]
    din, dout = drops.get(x, []), drops.get(y, [])
    if kind == "Reshape" and dout and node.attrs.shape[-1] > 0:  # the target shape names the last axis
        shape = node.attrs.shape
        return replace(node, attrs=replace(node.attrs, shape=(*shape[:-1], shape[-1] - len(dout))))
    if not din and not dout or kind not in ("Conv2D", "FullyConnected", "DepthwiseConv2D"):
        return node
    w_t, b_t = graph.t(node.inputs[1]), graph.t(node.inputs[2])
    w = np.asarray(w_t.data)
    b = np.asarray(b_t.data).astype(np.int64).reshape(-1)
    if kind == "DepthwiseConv2D":  # channel j in and out alike (multiplier 1)
        keep = _kept(w.shape[3], dout)
        w, b = w[..., keep], b[keep]
        wq, bq = _slice_q(w_t.quant, keep), _slice_q(b_t.quant, keep)
    else:
        cin_axis = 3 if kind == "Conv2D" else 1
        if din:  # fold the dropped constant inputs into the bias, then drop their weights
            zp = graph.t(x).quant.zp
            c = consts[x][din] - zp  # int64 [len(din)]
            wd = np.take(w, din, axis=cin_axis).astype(np.int64)
            b = b + (wd * c).reshape(w.shape[0], -1, len(din)).sum(axis=(1, 2)) if kind == "Conv2D" \
                else b + (wd * c).sum(axis=1)
            b = ((b + 2 ** 31) % 2 ** 32) - 2 ** 31  # int32 wrap, as the C accumulator
            w = np.take(w, _kept(w.shape[cin_axis], din), axis=cin_axis)
        keep = _kept(w.shape[0], dout)
        w, b = w[keep], b[keep]
        wq, bq = _slice_q(w_t.quant, keep), _slice_q(b_t.quant, keep)
    names = []
    for old, data, q in ((w_t, w, wq), (b_t, b.astype(b_t.data.dtype), bq)):
        name = fresh_name(tensors, old.name + "_cfold")
        tensors[name] = replace(old, name=name, shape=tuple(data.shape), data=np.ascontiguousarray(data), quant=q)
        names.append(name)
    return replace(node, inputs=(node.inputs[0], *names, *node.inputs[3:]))


def _kept(n: int, dropped: list[int]) -> list[int]:
    gone = set(dropped)
    return [i for i in range(n) if i not in gone]


def _slice_q(q: QuantParams | None, keep: list[int]) -> QuantParams | None:
    if q is None or len(q.scale) == 1:
        return q
    return QuantParams(tuple(q.scale[i] for i in keep),
                       tuple(q.zero_point[i] for i in keep) if len(q.zero_point) > 1 else q.zero_point, q.axis)
