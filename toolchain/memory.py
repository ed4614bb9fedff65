"""Static memory planning: every activation and scratch buffer at a fixed offset in one arena.

Stages: lifetimes over kernel-call steps (a tensor read by several ops lives until its last
reader, BL-21; graph inputs live from step 0, graph outputs to the last step; scratch lives
exactly during its op, BL-22) -> aliasing (Reshape outputs are views of their input's buffer; an
elementwise kernel that declares `inplace_inputs` writes its output over an input that dies at
that op) -> a planner from toolchain.planners (the best one found unless one is named) ->
check_no_overlap on every plan. Offsets and the arena size are multiples of the board's alignment
(the arena base is aligned by the emitted C); buffer sizes stay exact.
Not here: the placement algorithms (toolchain.planners), the execution order (toolchain.schedule).
Later: Concat producers writing straight into their slice of the output (no Concat op yet).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from toolchain.ir import Graph, Node
from toolchain.ops.registry import KernelVariant, opdef
from toolchain.planners import PLANNERS, Buffer, align, live_bound_units, plan_best

__all__ = ["Buffer", "MemoryPlan", "PlanError", "PLANNERS", "lifetimes", "live_bound", "plan_memory",
           "check_no_overlap", "inplace_inputs", "plan_naive", "plan_greedy_by_size"]

plan_naive = PLANNERS["naive"]
plan_greedy_by_size = PLANNERS["greedy_by_size"]


class PlanError(Exception):
    """A memory plan that breaks an invariant (overlap, misalignment), or an unknown planner."""


@dataclass(frozen=True)
class MemoryPlan:
    """Offsets (bytes from the arena base) of every buffer; arena_bytes includes alignment slack."""

    buffers: tuple[Buffer, ...]
    offsets: Mapping[str, int]
    arena_bytes: int
    alignment: int
    planner: str
    tensor_buffer: Mapping[str, str]  # tensor name -> buffer name (views and in-place outputs share one)

    def offset_of(self, tensor: str) -> int:
        """Arena offset in bytes of a tensor's first element."""
        return self.offsets[self.tensor_buffer[tensor]]

    def tensors_of(self, buffer: str) -> list[str]:
        """The tensors stored in a buffer, sorted (empty for scratch)."""
        return sorted(t for t, b in self.tensor_buffer.items() if b == buffer)


def inplace_inputs(variants: Mapping[str, KernelVariant]) -> dict[str, tuple[int, ...]]:
    """node name -> input positions its chosen kernel may overwrite with its output."""
    return {name: v.inplace_inputs for name, v in sorted(variants.items()) if v.inplace_inputs}


def _last_reads(graph: Graph) -> tuple[dict[str, str], dict[str, int]]:
    """(tensor -> the tensor whose bytes it is, through views; tensor -> last step reading those bytes)."""
    vroot = {name: name for name in graph.inputs}
    last: dict[str, int] = {}
    step = -1
    for node in graph.nodes:
        if opdef(node).is_view:
            for o in node.outputs:
                vroot[o] = vroot[node.inputs[0]]
            continue
        step += 1
        for t in node.inputs:
            if t in vroot:
                last[vroot[t]] = step
        for o in node.outputs:
            vroot[o] = o
    return vroot, last


def _inplace_source(node: Node, graph: Graph, step: int, allowed: tuple[int, ...], vroot: Mapping[str, str],
                    last_read: Mapping[str, int], outputs: set[str]) -> str | None:
    """The tensor (view root) whose bytes this node's output may take over: an allowed input of
    the same byte size that no later step reads and that is not a graph output."""
    want = graph.t(node.outputs[0]).nbytes
    for k in allowed:
        r = vroot.get(node.inputs[k]) if k < len(node.inputs) else None
        if r is not None and last_read.get(r) == step and r not in outputs and graph.t(r).nbytes == want:
            return r
    return None


def lifetimes(graph: Graph, scratch: Mapping[str, int],
              inplace: Mapping[str, tuple[int, ...]] | None = None) -> tuple[list[Buffer], dict[str, str]]:
    """Buffers of every activation (views and in-place outputs merged into their source) and of
    every op's scratch, in TFLM's AddBuffer order (tensor order of the graph, then scratch by op).

    Steps count executed ops only (views run no code), so step k is the k-th kernel call.
    scratch: node name -> scratch bytes (0 or absent for none); inplace: node name -> input
    positions the kernel may overwrite (see inplace_inputs). Returns (buffers, tensor -> buffer).
    """
    inplace = inplace or {}
    vroot, last_read = _last_reads(graph)
    outputs = {vroot[o] for o in graph.outputs}
    buf: dict[str, str] = {name: name for name in graph.inputs}  # view root -> buffer name
    first: dict[str, int] = {name: 0 for name in graph.inputs}
    last: dict[str, int] = dict(first)
    step = -1
    scratch_buffers = []
    for node in graph.nodes:
        if opdef(node).is_view:
            continue
        step += 1
        for t in node.inputs:
            if t in vroot:
                last[buf[vroot[t]]] = max(last[buf[vroot[t]]], step)
        src = _inplace_source(node, graph, step, inplace.get(node.name, ()), vroot, last_read, outputs)
        for k, o in enumerate(node.outputs):
            if k == 0 and src is not None:
                buf[o] = buf[src]  # written over its dying input: one buffer from the input's first step
            else:
                buf[o] = o
                first[o], last[o] = step, step
        if scratch.get(node.name, 0) > 0:
            scratch_buffers.append(Buffer(f"scratch:{node.name}", scratch[node.name], step, step))
    for o in graph.outputs:
        last[buf[vroot[o]]] = max(step, 0)  # copied out after the last op
    order = [t for t in graph.tensors if t in first] + sorted(set(first) - set(graph.tensors))
    buffers = [Buffer(b, graph.t(b).nbytes, first[b], last[b]) for b in order]
    return buffers + scratch_buffers, {t: buf[r] for t, r in vroot.items()}


def live_bound(buffers: list[Buffer], alignment: int) -> int:
    """The lower bound of any plan: the peak, over op steps, of the aligned bytes live at once."""
    return live_bound_units(buffers, alignment) * alignment


def plan_memory(graph: Graph, scratch: Mapping[str, int], alignment: int, planner: str | None = None, *,
                inplace: Mapping[str, tuple[int, ...]] | None = None) -> MemoryPlan:
    """Plan the arena of a graph in its node order: the best plan found (smallest arena, the
    earliest planner on ties; MemoryPlan.planner names the winner) or the named planner's. The
    result is checked before it is returned."""
    buffers, root = lifetimes(graph, scratch, inplace)
    if planner is None:
        planner, offsets = plan_best(buffers, alignment)
    elif planner in PLANNERS:
        offsets = PLANNERS[planner](buffers, alignment)
    else:
        raise PlanError(f"unknown planner {planner!r}; known: {', '.join(PLANNERS)}")
    size = align(max((offsets[b.name] + b.size for b in buffers), default=0), alignment)
    plan = MemoryPlan(tuple(buffers), offsets, size, alignment, planner, root)
    check_no_overlap(plan)
    return plan


def check_no_overlap(plan: MemoryPlan) -> None:
    """Raise PlanError if two buffers live at the same time share a byte, an offset is not
    aligned, or a buffer runs past the arena."""
    bs = sorted(plan.buffers, key=lambda b: (b.first, b.name))
    for b in bs:
        if b.name not in plan.offsets:
            raise PlanError(f"buffer {b.name} has no offset")
        off = plan.offsets[b.name]
        if off % plan.alignment or off < 0 or off + b.size > plan.arena_bytes:
            raise PlanError(f"buffer {b.name} at {off} (+{b.size} B) is misaligned or outside the "
                            f"{plan.arena_bytes} B arena")
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            if b.first > a.last:
                break  # sorted by first step: no later buffer is live with a
            if a.size and b.size:
                oa, ob = plan.offsets[a.name], plan.offsets[b.name]
                if oa < ob + b.size and ob < oa + a.size:
                    raise PlanError(f"buffers {a.name} [{oa}, {oa + a.size}) and {b.name} [{ob}, {ob + b.size}) "
                                    f"overlap in the arena while both are live")
