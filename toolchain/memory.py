"""Static memory planning: every activation and scratch buffer at a fixed offset in one arena.

Stages: lifetimes (first/last op index per buffer; a tensor read by several ops lives until its
last reader, BL-21; Reshape outputs are views of their input's buffer; scratch lives exactly
during its op, BL-22) -> a planner (greedy-by-size, TFLM's algorithm; `naive` = sum of sizes as
baseline) -> check_no_overlap on every plan. Offsets and the arena size are multiples of the
board's alignment. Not here: execution-order search and better planners (issue 5).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from toolchain.ir import Graph
from toolchain.ops.registry import opdef


class PlanError(Exception):
    """A memory plan that breaks an invariant (overlap, misalignment)."""


@dataclass(frozen=True)
class Buffer:
    """One arena allocation: size in bytes, live from op index `first` to `last` inclusive."""

    name: str
    size: int
    first: int
    last: int


@dataclass(frozen=True)
class MemoryPlan:
    """Offsets (bytes from the arena base) of every buffer; arena_bytes includes alignment slack."""

    buffers: tuple[Buffer, ...]
    offsets: Mapping[str, int]
    arena_bytes: int
    alignment: int
    planner: str
    tensor_buffer: Mapping[str, str]  # tensor name -> buffer name (views share their input's buffer)

    def offset_of(self, tensor: str) -> int:
        """Arena offset in bytes of a tensor's first element."""
        return self.offsets[self.tensor_buffer[tensor]]


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def lifetimes(graph: Graph, scratch: Mapping[str, int]) -> tuple[list[Buffer], dict[str, str]]:
    """Buffers of every activation (views merged into their source) and of every op's scratch.

    Steps count executed ops only (views run no code), so step k is the k-th kernel call.
    scratch: node name -> scratch bytes (0 or absent for none). Returns (buffers, tensor->buffer).
    """
    root: dict[str, str] = {name: name for name in graph.inputs}
    first: dict[str, int] = {name: 0 for name in graph.inputs}
    last: dict[str, int] = dict(first)
    step = -1
    scratch_buffers = []
    for node in graph.nodes:
        if opdef(node).is_view:
            for o in node.outputs:
                root[o] = root[node.inputs[0]]
            continue
        step += 1
        for t in node.inputs:
            if t in root:
                last[root[t]] = max(last[root[t]], step)
        for o in node.outputs:
            root[o] = o
            first[o], last[o] = step, step
        if scratch.get(node.name, 0) > 0:
            scratch_buffers.append(Buffer(f"scratch:{node.name}", scratch[node.name], step, step))
    for o in graph.outputs:
        last[root[o]] = max(step, 0)  # copied out after the last op
    buffers = [Buffer(b, graph.t(b).nbytes, first[b], last[b]) for b in sorted(first, key=lambda b: (first[b], b))]
    return buffers + scratch_buffers, root


def live_bound(buffers: list[Buffer], alignment: int) -> int:
    """The lower bound of any plan: the peak, over op steps, of the aligned bytes live at once."""
    steps = range(max((b.last for b in buffers), default=-1) + 1)
    return max((sum(_align(b.size, alignment) for b in buffers if b.first <= s <= b.last) for s in steps), default=0)


def plan_naive(buffers: list[Buffer], alignment: int) -> dict[str, int]:
    """Every buffer after the previous one: the baseline (no reuse)."""
    offsets, at = {}, 0
    for b in buffers:
        offsets[b.name] = at
        at += _align(b.size, alignment)
    return offsets


def plan_greedy_by_size(buffers: list[Buffer], alignment: int) -> dict[str, int]:
    """TFLM GreedyMemoryPlanner: largest first, each at the lowest aligned offset where it does not
    overlap (in bytes) any already placed buffer that is live at the same time."""
    placed: list[tuple[int, int, Buffer]] = []
    offsets: dict[str, int] = {}
    for b in sorted(buffers, key=lambda b: (-b.size, b.first, b.name)):
        clash = sorted((o, o + _align(p.size, alignment)) for o, _, p in placed if p.first <= b.last and b.first <= p.last)
        at = 0
        for lo, hi in clash:
            if at + b.size <= lo:
                break
            at = max(at, hi)
        offsets[b.name] = _align(at, alignment)
        placed.append((offsets[b.name], b.size, b))
    return offsets


PLANNERS = {"naive": plan_naive, "greedy_by_size": plan_greedy_by_size}


def plan_memory(graph: Graph, scratch: Mapping[str, int], alignment: int, planner: str = "greedy_by_size") -> MemoryPlan:
    """Plan the arena of a graph with the named planner; the result is checked before it is returned."""
    buffers, root = lifetimes(graph, scratch)
    offsets = PLANNERS[planner](buffers, alignment)
    size = _align(max((offsets[b.name] + b.size for b in buffers), default=0), alignment)
    plan = MemoryPlan(tuple(buffers), offsets, size, alignment, planner, root)
    check_no_overlap(plan)
    return plan


def check_no_overlap(plan: MemoryPlan) -> None:
    """Raise PlanError if two buffers live at the same time share a byte, an offset is not
    aligned, or a buffer runs past the arena."""
    bs = plan.buffers
    for b in bs:
        off = plan.offsets[b.name]
        if off % plan.alignment or off < 0 or off + b.size > plan.arena_bytes:
            raise PlanError(f"buffer {b.name} at {off} (+{b.size} B) is misaligned or outside the {plan.arena_bytes} B arena")
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            if a.first <= b.last and b.first <= a.last and a.size and b.size:
                oa, ob = plan.offsets[a.name], plan.offsets[b.name]
                if oa < ob + b.size and ob < oa + a.size:
                    raise PlanError(f"buffers {a.name} and {b.name} overlap in the arena while both are live")
