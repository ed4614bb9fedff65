"""Kernel selection: one KernelVariant per node for the target, the first in the target's
kernel preference order whose predicate accepts the node (CMSIS-NN's wrapper logic, moved into
the compiler so the emitted C has no ISA #if ladders)."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import toolchain.isa  # noqa: F401 - attaches the ISA kernel variants (dsp, helium, neon) to the ops
from toolchain.errors import UnsupportedModel
from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import graph_rounding
from toolchain.ops.registry import KernelVariant, kernel_dtype, opdef


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


def kernel_reasons(graph: Graph, chosen: dict[str, KernelVariant], preference: Sequence[str],
                   features: Collection[str] = ()) -> dict[str, str | None]:
    """node name -> why the faster kernels stepped aside for it (report.json `kernel_reason`), None
    when its chosen variant is the fastest the op has for the board (no variant of an ISA folder
    earlier in `preference` than the chosen one's exists). The reason is the first a faster variant
    gives in preference order (KernelVariant.why_not, the user's words, e.g. "dsp: weights hold
    -128"; of an ISA folder with kernels of the node's activation type, int8 or 16x8, only those speak);
    without one: the board lacks a feature the variant needs, the layout is not the
    variant's, "rounding onnx: no <isa> twin" (a registry.tflm_only kernel under `rounding: onnx`),
    or "no <isa> kernel for these parameters"."""
    order = [*preference, *(["portable"] if "portable" not in preference else [])]
    have = frozenset(features)
    layouts = graph.meta.get("layouts") or {}
    out: dict[str, str | None] = {}
    for node in graph.nodes:
        v = chosen.get(node.name)
        if v is None:
            continue
        rank = order.index(v.isa) if v.isa in order else len(order)
        faster = [f for isa in order[:rank] for f in opdef(node).variants if f.isa == isa]
        # an ISA folder with kernels of the node's activation type (int8 / 16x8) speaks through those
        # only; the other type's kernels speak ("no kernel for int16 activations") where it has none
        dtype = kernel_dtype(node, graph)
        typed = {f.isa for f in faster if f.dtype == dtype}
        faster = [f for f in faster if f.dtype == dtype or f.isa not in typed]
        reasons = [_why_not(f, node, graph, have, layouts.get(node.outputs[0], "NHWC")) for f in faster]
        specific = [r for r, own in reasons if own]
        out[node.name] = specific[0] if specific else reasons[0][0] if reasons else None
    return out


def _why_not(v: KernelVariant, node: Node, graph: Graph, have: frozenset[str], layout: str) -> tuple[str, bool]:
    """(reason variant v was not taken for node, whether the reason is specific rather than generic)."""
    if not v.requires <= have:
        missing = ', '.join(sorted(v.requires - have))
        if v.requires_why:
            return f"{v.isa}: {v.requires_why} ({missing}, which this board lacks)", True
        return f"{v.isa}: needs {missing}, which this board lacks", True
    if layout not in v.layouts:
        return f"{v.isa}: no kernel for the {layout} layout", True
    own = v.why_not(node, graph) if v.why_not is not None else None
    if own:
        return f"{v.isa}: {own}", True
    if getattr(v.applies, "tflm_only", False) and graph_rounding(graph) != "tflm":
        return f"rounding {graph_rounding(graph)}: no {v.isa} twin", True
    if v.applies(node, graph):  # applies, yet not chosen: `optimize: ram` took a kernel with less scratch
        return f"optimize ram: a kernel with less scratch than {v.isa}", True
    return f"no {v.isa} kernel for these parameters", False


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
