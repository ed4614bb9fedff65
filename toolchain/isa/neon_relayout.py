"""NEON (AArch64) byte-moving kernel plan: neon/relayout_s8 for Relayout nodes (changes of storage
layout, passes/select_layout.py) and for plain 4-D Transpose nodes (e.g. a model input NCHW ->
NHWC), where the storage transpose is one of the block forms relayout.relayout_plan recognises.
Attached to the ops with registry.add_variants; portable/transpose stays every shape's fallback."""
from __future__ import annotations

from toolchain.ir import Graph, Node
from toolchain.ops import relayout
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants


def _neon_args(node: Node, graph: Graph) -> list[CArg]:
    plan = relayout.relayout_plan(*relayout.storage(node, graph))
    return [*map(CArg.lit, plan), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


RELAYOUT = KernelVariant("neon", "neon", "neon/relayout_s8.c.j2", "ecc_neon_relayout_s8",
                     applies=lambda n, g: relayout.relayout_plan(*relayout.storage(n, g)) is not None, args=_neon_args,
                     headers=("neon/ecc_neon_kernels.h", "neon/ecc_neon.h"), layouts=relayout.ALL_LAYOUTS,
                     why_not=lambda n, g: None if relayout.relayout_plan(*relayout.storage(n, g)) is not None
                     else "no four-loop byte-move plan for this change of layout")

def _transpose_plan(node: Node, graph: Graph) -> tuple[int, int, int, int] | None:
    shape = graph.t(node.inputs[0]).shape
    if len(shape) != 4:
        return None
    return relayout.relayout_plan(shape, tuple(node.attrs.perm))


TRANSPOSE = KernelVariant("neon", "neon", "neon/relayout_s8.c.j2", "ecc_neon_relayout_s8",
                               applies=lambda n, g: relayout.fast_plan(_transpose_plan(n, g)),
                               args=lambda n, g: [*map(CArg.lit, _transpose_plan(n, g)), CArg("act", n.inputs[0]),
                                                  CArg("act", n.outputs[0])],
                               headers=("neon/ecc_neon_kernels.h", "neon/ecc_neon.h"),
                               why_not=lambda n, g: None if relayout.fast_plan(_transpose_plan(n, g))
                               else "not a 4-D transpose the vector byte moves speed up")


add_variants(OpKind.RELAYOUT, RELAYOUT)
add_variants(OpKind.TRANSPOSE, TRANSPOSE)
