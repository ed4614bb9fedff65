"""Remove layout transposes that do no work: compose back-to-back Transposes (the NCHW input of
a model that starts with its own NHWC->NCHW Transpose folds away), drop identities, and turn a
Transpose that only moves size-1 axes into a Reshape (a view: no copy, no kernel)."""
from __future__ import annotations

from dataclasses import replace

from toolchain.ir import Graph
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import ReshapeAttrs


def _moves_only_unit_axes(shape: tuple[int, ...], perm: tuple[int, ...]) -> bool:
    big = [p for p in perm if shape[p] != 1]
    return big == sorted(big)


def simplify_transpose(graph: Graph) -> Graph:
    """Compose, drop or turn into Reshape every Transpose that allows it."""
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            if node.op != OpKind.TRANSPOSE:
                continue
            src = graph.t(node.inputs[0])
            prod = graph.producer(node.inputs[0])
            if prod is not None and prod.op == OpKind.TRANSPOSE and len(graph.consumers(prod.outputs[0])) == 1 \
                    and prod.outputs[0] not in graph.outputs:
                perm = tuple(prod.attrs.perm[p] for p in node.attrs.perm)
                merged = replace(node, inputs=prod.inputs, attrs=replace(node.attrs, perm=perm))
                graph = graph.with_nodes([merged if n is node else n for n in graph.nodes if n is not prod])
                changed = True
                break
            if _moves_only_unit_axes(src.shape, node.attrs.perm):
                shape = graph.t(node.outputs[0]).shape
                view = replace(node, op=OpKind.RESHAPE, attrs=ReshapeAttrs(shape))
                graph = graph.with_nodes([view if n is node else n for n in graph.nodes])
                changed = True
                break
    return graph
