"""Fuse a Clamp (ONNX Relu / Clip) into the op that produces its input, as that op's `act`
range, when nothing else reads the unclamped value (TFLite fused_activation_function)."""
from __future__ import annotations

from dataclasses import replace

from toolchain.ir import Graph
from toolchain.ops.registry import OpKind

FUSABLE = {OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED, OpKind.ADD,
           OpKind.AVG_POOL2D, OpKind.MAX_POOL2D, OpKind.SUB, OpKind.MUL}


def fuse_activation(graph: Graph) -> Graph:
    """Absorb every fusable Clamp into its producer (ranges intersect when already fused)."""
    for clamp in [n for n in graph.nodes if n.op == OpKind.CLAMP]:
        prod = graph.producer(clamp.inputs[0])
        if prod is None or prod.op not in FUSABLE or len(graph.consumers(clamp.inputs[0])) != 1 \
                or clamp.inputs[0] in graph.outputs:
            continue
        lo, hi = prod.attrs.act
        act = (max(lo, clamp.attrs.lo), min(hi, clamp.attrs.hi))
        fused = replace(prod, attrs=replace(prod.attrs, act=act), outputs=clamp.outputs)
        nodes = [fused if n is prod else n for n in graph.nodes if n is not clamp]
        graph = graph.with_nodes(nodes)
    return graph
