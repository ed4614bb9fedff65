"""Cross-layer equalisation of the float graph before calibration (Nagel et al. 2019, "Data-Free
Quantization Through Weight Equalization and Bias Correction", ICCV, section 4.1).

For a pair layer1 -> layer2 where layer2 alone reads layer1's output, and layer1's fused activation
f satisfies f(x / s) = f(x) / s for every s > 0 (none, or ReLU: act (0, inf)), output channel i of
layer1 is divided by s_i (weights and bias) and input channel i of layer2 multiplied by s_i: the
float model computes the same function. With r1_i / r2_i the largest |weight| of that channel in
layer1 / layer2, s_i = sqrt(r1_i / r2_i) gives both channels the range sqrt(r1_i * r2_i), which
evens out per-channel weight ranges, chiefly in depthwise layers whose per-channel ranges differ by
orders of magnitude (MobileNet). ReLU6 (act (0, 6)) is skipped: min(x, 6) / s is not min(x / s, 6),
and a per-channel clip of 6 / s_i has no place in a per-tensor int8 activation. The scales are
applied in SWEEPS passes over the pairs in graph order (the paper iterates to convergence).

Used by quantize.auto, which keeps it only where the held-out output error says it pays.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import OpKind
from toolchain.ops.common import NO_ACT

SWEEPS = 4
# A channel that BatchNorm folding left nearly dead (largest weight ~1e-20) would get a scale of ~1e-10
# and its bias divided by it: the activation range of the whole tensor then grows to ~1e12 (measured on
# VWW, output SQNR 5 dB). Such channels (below DEAD x the layer's largest channel) keep scale 1, and
# every channel's total scale over the sweeps stays within [1 / S_BOUND, S_BOUND].
DEAD = 1e-3
S_BOUND = 16.0
RELU = (0.0, float("inf"))


def _out_axis(node: Node, graph: Graph) -> int | None:
    """The weight axis of layer1's output channels, or None when the node cannot be a layer1."""
    if node.op == OpKind.CONV2D and node.attrs.groups == 1:
        return 0
    if node.op == OpKind.DEPTHWISE_CONV2D and _depth_multiplier_one(node, graph):
        return 3
    return None


def _in_axis(node: Node, graph: Graph) -> int | None:
    """The weight axis of layer2's input channels, or None when the node cannot be a layer2."""
    if node.op == OpKind.CONV2D and node.attrs.groups == 1:
        return 3
    if node.op == OpKind.DEPTHWISE_CONV2D and _depth_multiplier_one(node, graph):
        return 3
    return None


def _depth_multiplier_one(node: Node, graph: Graph) -> bool:
    return graph.t(node.inputs[1]).shape[3] == graph.t(node.inputs[0]).shape[3]


def equalizable_pairs(graph: Graph) -> list[tuple[Node, Node]]:
    """(layer1, layer2) pairs the rescaling keeps exact (see the module docstring), in graph order."""
    readers: dict[str, list[Node]] = {}
    for n in graph.nodes:
        for i in n.inputs:
            if i:
                readers.setdefault(i, []).append(n)
    uses: dict[str, int] = {}
    for n in graph.nodes:
        for i in n.inputs[1:3]:
            if i:
                uses[i] = uses.get(i, 0) + 1
    pairs = []
    for n1 in graph.nodes:
        out = n1.outputs[0]
        nxt = readers.get(out, [])
        if _out_axis(n1, graph) is None or len(nxt) != 1 or out in graph.outputs:
            continue
        n2 = nxt[0]
        if _in_axis(n2, graph) is None or n2.inputs[0] != out or n1.attrs.act not in (NO_ACT, RELU):
            continue
        consts = [n1.inputs[1], n2.inputs[1]] + ([n1.inputs[2]] if len(n1.inputs) > 2 and n1.inputs[2] else [])
        if all(graph.t(c).is_const and uses.get(c) == 1 for c in consts):  # a shared weight would change elsewhere
            pairs.append((n1, n2))
    return pairs


def _channel_max(w: np.ndarray, axis: int) -> np.ndarray:
    return np.max(np.abs(np.moveaxis(w.astype(np.float64), axis, 0)).reshape(w.shape[axis], -1), axis=1)


def equalize(graph: Graph) -> Graph:
    """The float graph with every equalizable pair rescaled (module docstring); the graph itself
    when there is none. Node list and tensor names unchanged; only weight / bias data differ."""
    pairs = equalizable_pairs(graph)
    if not pairs:
        return graph
    data = {}
    total = {id(n1): np.ones(graph.t(n1.outputs[0]).shape[-1]) for n1, _ in pairs}

    def get(name: str) -> np.ndarray:
        return data.get(name, graph.t(name).data.astype(np.float64))

    for _ in range(SWEEPS):
        for n1, n2 in pairs:
            a1, a2 = _out_axis(n1, graph), _in_axis(n2, graph)
            w1, w2 = get(n1.inputs[1]), get(n2.inputs[1])
            r1, r2 = _channel_max(w1, a1), _channel_max(w2, a2)
            live = (r1 > DEAD * r1.max()) & (r2 > DEAD * r2.max())
            s = np.where(live, np.sqrt(r1 / np.where(live, r2, 1.0)), 1.0)
            prev = total[id(n1)]
            s = np.clip(prev * s, 1.0 / S_BOUND, S_BOUND) / prev
            total[id(n1)] = prev * s
            shape1, shape2 = [1] * w1.ndim, [1] * w2.ndim
            shape1[a1], shape2[a2] = -1, -1
            data[n1.inputs[1]] = w1 / s.reshape(shape1)
            data[n2.inputs[1]] = w2 * s.reshape(shape2)
            if len(n1.inputs) > 2 and n1.inputs[2]:
                data[n1.inputs[2]] = get(n1.inputs[2]) / s
    tensors = dict(graph.tensors)
    for name, arr in data.items():
        t = tensors[name]
        tensors[name] = replace(t, data=arr.astype(t.data.dtype))
    return graph.with_nodes(graph.nodes, tensors)
