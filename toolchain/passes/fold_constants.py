"""Evaluate nodes whose inputs are all constants (numpy reference) and keep the result as a constant."""
from __future__ import annotations

from toolchain.ir import Graph, Tensor
from toolchain.ops.registry import opdef


def fold_constants(graph: Graph) -> Graph:
    """Replace every all-constant node by constant tensors."""
    nodes, tensors = [], dict(graph.tensors)
    for node in graph.nodes:
        ins = [tensors[i] for i in node.inputs if i]
        if ins and all(t.is_const for t in ins) and not any(o in graph.outputs for o in node.outputs):
            outs = opdef(node).reference_f32(node, graph, [t.data for t in ins])
            for name, val in zip(node.outputs, outs, strict=True):
                old = tensors[name]
                tensors[name] = Tensor(name, old.shape, old.dtype, None, val.astype(old.dtype.np))
            continue
        nodes.append(node)
    return graph.with_nodes(nodes, tensors)
