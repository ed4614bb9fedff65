"""Kernel selection: one KernelVariant per node for the target, the first in the target's
kernel preference order whose predicate accepts the node (CMSIS-NN's wrapper logic, moved into
the compiler so the emitted C has no ISA #if ladders)."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import toolchain.isa  # noqa: F401 - attaches the ISA kernel variants (dsp, helium, neon) to the ops
from toolchain.errors import UnsupportedModel
from toolchain.ir import Graph
from toolchain.ops.registry import KernelVariant, opdef


def select_kernels(graph: Graph, preference: Sequence[str], features: Collection[str] = (),
                   optimize: str = "speed") -> dict[str, KernelVariant]:
    """node name -> chosen variant; views (Reshape) get none. `preference` lists ISA folders,
    e.g. ("dsp", "portable"); portable is always the last resort. `features`: the board's
    isa_features; a variant whose `requires` are not all among them is never chosen, nor one whose
    `layouts` miss the layout of the node's output (graph.meta["layouts"], default NHWC).
    `optimize`: "speed" takes the first applicable variant in preference order; "ram" takes, among
    all applicable variants, the one with the smallest scratch_bytes (ties: preference order)."""
    order = [*preference, *(["portable"] if "portable" not in preference else [])]
    have = frozenset(features)
    layouts = graph.meta.get("layouts") or {}  # set by passes/select_layout.py; default NHWC
    chosen = {}
    for node in graph.nodes:
        op = opdef(node)
        if op.is_view:
            continue
        layout = layouts.get(node.outputs[0], "NHWC")
        if optimize == "ram":
            fits = [v for isa in order for v in op.variants if v.isa == isa and v.requires <= have
                    and layout in v.layouts and v.applies(node, graph)]
            if not fits:
                raise UnsupportedModel(f"node {node.source or node.name} ({node.op.value}): no kernel variant applies")
            chosen[node.name] = min(fits, key=lambda v: v.scratch_bytes(node, graph))  # min keeps the first of ties
            continue
        for isa in order:
            v = next((v for v in op.variants if v.isa == isa and v.requires <= have and layout in v.layouts
                      and v.applies(node, graph)), None)
            if v is not None:
                chosen[node.name] = v
                break
        else:
            raise UnsupportedModel(f"node {node.source or node.name} ({node.op.value}): no kernel variant applies")
    return chosen


def lowering_target(target, kernels: str = "auto"):
    """The board as layout selection and kernel selection see it (a targets.Target). `kernels`
    (Config.kernels): "auto" keeps the board's kernel_preference; "portable" cuts it to the portable
    C kernels, a baseline that shows what the ISA variants gain (bench/mlperf_int8.py). Only the
    preference changes: the compiler, flags, memory map and run of the board stay the same."""
    if kernels == "auto":
        return target
    return replace(target, kernel_preference=tuple(i for i in target.kernel_preference if i.value == "portable"))


def scratch_sizes(graph: Graph, variants: dict[str, KernelVariant]) -> dict[str, int]:
    """node name -> scratch bytes its chosen kernel needs (0 for none)."""
    by_name = {n.name: n for n in graph.nodes}
    return {name: v.scratch_bytes(by_name[name], graph) for name, v in variants.items()}
