"""Graph invariants, checked after every pass: each tensor has one producer, every node input
exists and is defined before use, shapes agree with the op's shape inference, outputs exist."""
from __future__ import annotations

from collections.abc import Callable

from toolchain.ir.graph import Graph, Node


def verify(graph: Graph, infer_shapes: Callable[[Node, Graph], list[tuple[int, ...]]], after: str = "") -> None:
    """Raise AssertionError naming the pass and the broken invariant. `infer_shapes` is the op
    registry's shape inference (passed in: the IR layer does not import the ops above it)."""
    where = f" after {after}" if after else ""
    defined = set(graph.inputs) | {n for n, t in graph.tensors.items() if t.is_const}
    for node in graph.nodes:
        for i in node.inputs:
            if i and i not in defined:
                raise AssertionError(f"graph invalid{where}: {node.name} reads {i!r} before it is defined")
        for o in node.outputs:
            if o in defined:
                raise AssertionError(f"graph invalid{where}: {o!r} has two producers")
            defined.add(o)
        shapes = infer_shapes(node, graph)
        got = [graph.t(o).shape for o in node.outputs]
        if [tuple(s) for s in shapes] != got:
            raise AssertionError(f"graph invalid{where}: {node.name} output shapes {got} != inferred {shapes}")
    for o in graph.outputs:
        if o not in defined:
            raise AssertionError(f"graph invalid{where}: output {o!r} is never produced")
