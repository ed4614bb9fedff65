"""Relayout: a change of an activation's memory layout, inserted by passes/select_layout.py.

Logically it is a Transpose by `perm` (the identity for a pure layout change; the pass folds a
model-input Transpose NCHW -> NHWC into it): the IR keeps every activation in its logical shape
(NHWC for 4-D) and records how each one is stored in graph.meta["layouts"]. The kernel moves the
bytes from the input's storage order (`src`) to the output's (`dst`): a physical transpose of the
storage dimensions (neon/relayout for the shapes it takes, toolchain/isa/neon_relayout.py, else
portable/transpose).

Layout names describe the storage order of a logical NHWC tensor's axes (LAYOUT_AXES): NHWC (as
is), NCHW, CHWN (batch innermost, for batched inference on AArch64, where NEON vectorises across
the batch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, KernelVariant, OpDef, register

LAYOUT_AXES = {"NHWC": (0, 1, 2, 3), "NCHW": (0, 3, 1, 2), "CHWN": (3, 1, 2, 0)}
ALL_LAYOUTS = frozenset(LAYOUT_AXES)


def storage_dims(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """The dimensions of a logical 4-D tensor in the order `layout` stores them."""
    return tuple(shape[a] for a in LAYOUT_AXES[layout])


def storage_perm(perm: tuple[int, ...], src: str, dst: str) -> tuple[int, ...]:
    """The transpose of storage dimensions that implements logical `perm` from layout src to dst:
    storage axis j of the output holds logical output axis a = LAYOUT_AXES[dst][j], i.e. logical input
    axis perm[a], which the input stores at position LAYOUT_AXES[src].index(perm[a])."""
    return tuple(LAYOUT_AXES[src].index(perm[a]) for a in LAYOUT_AXES[dst])


def merged(dims: tuple[int, ...], perm: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Storage dims and perm with unit axes dropped and runs of input axes that stay adjacent in the
    output merged (the transpose they describe moves the same bytes)."""
    keep = [a for a in range(len(dims)) if dims[a] > 1]
    order = [keep.index(a) for a in perm if a in keep]  # output order of the kept input axes
    groups: list[list[int]] = []
    for a in order:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    by_input = sorted(groups)
    return ([int(np.prod([dims[keep[a]] for a in gr])) for gr in by_input],
            [by_input.index(gr) for gr in groups])


def fast_plan(plan: tuple[int, int, int, int] | None) -> bool:
    """Whether neon/relayout moves the bytes of `plan` in vector steps (8x8 blocks, or 2-4 rows
    interleaved) rather than element by element."""
    if plan is None:
        return False
    _, rows, mid, cols = plan
    return (rows % 8 == 0 and cols % 8 == 0) or (mid == 1 and rows in (2, 3, 4) and cols >= 16)


def relayout_plan(dims: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(outer, rows, mid, cols) when the storage transpose is [outer][rows][mid][cols] ->
    [outer][cols][mid][rows] (neon/relayout), else None."""
    d, p = merged(dims, perm)
    if p == [1, 0]:
        return 1, d[0], 1, d[1]
    if p == [0, 2, 1]:
        return d[0], d[1], 1, d[2]
    if p == [2, 1, 0]:
        return 1, d[0], d[1], d[2]
    if p == [0, 3, 2, 1]:
        return d[0], d[1], d[2], d[3]
    return None


@dataclass(frozen=True)
class RelayoutAttrs:
    """perm: the logical transpose (identity for a pure layout change); src/dst: storage layouts."""

    perm: tuple[int, ...] = (0, 1, 2, 3)
    src: str = "NHWC"
    dst: str = "NHWC"


def storage(node: Node, graph: Graph) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(storage dims of the input, storage perm) of a Relayout node: what its kernel moves."""
    shape = graph.t(node.inputs[0]).shape
    a = node.attrs
    return storage_dims(shape, a.src), storage_perm(a.perm, a.src, a.dst)


def _portable_args(node: Node, graph: Graph) -> list[CArg]:
    dims, perm = storage(node, graph)
    return [CArg.lit(4), CArg("array", np.array(dims, np.int32), "dims"), CArg("array", np.array(perm, np.int32), "perm"),
            CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


PORTABLE = KernelVariant("portable", "portable", "portable/transpose_s8.c.j2", "ecc_transpose_s8",
                         args=_portable_args, layouts=ALL_LAYOUTS)


@register("RELAYOUT", "Relayout")
class Relayout(OpDef):
    variants = (PORTABLE,)  # the neon kernel: toolchain/isa/neon_relayout.py

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        src = graph.t(node.inputs[0]).shape
        if len(src) != 4 or sorted(node.attrs.perm) != [0, 1, 2, 3]:
            raise ValueError(f"relayout of a {len(src)}-D tensor with perm {list(node.attrs.perm)}")
        return [tuple(src[p] for p in node.attrs.perm)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.transpose(ins[0], node.attrs.perm))]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        return _portable_args(node, graph)
