"""Graph -> Graph passes, one per file, run in PIPELINE order on the float graph.

verify() runs after each pass when asked (tests, debug), so a broken pass is caught where it
breaks the graph, not three stages later.
"""
from __future__ import annotations

from collections.abc import Callable

from toolchain.ir import Graph
from toolchain.ir.verify import verify
from toolchain.ops.registry import opdef
from toolchain.passes.fold_batchnorm import fold_batchnorm
from toolchain.passes.fold_constants import fold_constants
from toolchain.passes.fuse_activation import fuse_activation
from toolchain.passes.fuse_decomposed_activations import fuse_decomposed_activations
from toolchain.passes.remove_dead import remove_dead
from toolchain.passes.simplify_transpose import simplify_transpose

PIPELINE: list[Callable[[Graph], Graph]] = [
    fold_constants,
    fold_batchnorm,
    fuse_decomposed_activations,
    fuse_activation,
    simplify_transpose,
    remove_dead,
]


def run_passes(graph: Graph, check: bool = True) -> Graph:
    """Apply every pass of PIPELINE in order; with check, verify the graph after each."""
    for p in PIPELINE:
        graph = p(graph)
        if check:
            verify(graph, lambda node, g: opdef(node).infer_shapes(node, g), after=p.__name__)
    return graph
