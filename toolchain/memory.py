"""Static memory planning: every activation and scratch buffer at a fixed offset in one arena.

Stages: lifetimes over kernel-call steps (a tensor read by several ops lives until its last
reader, BL-21; graph inputs live from step 0, graph outputs to the last step; scratch lives
exactly during its op, BL-22) -> aliasing (Reshape outputs are views of their input's buffer; an
elementwise kernel that declares `inplace_inputs` writes its output over an input that dies at
that op) -> a planner from toolchain.planners (the best one found unless one is named) ->
check_no_overlap on every plan. Offsets and the arena size are multiples of the board's alignment
(the arena base is aligned by the emitted C); buffer sizes stay exact.
Debug guards (`debug_guards: true`): every buffer is planned `guard_bytes` larger, so the pattern
bytes written right after its last byte (up to its aligned end) never share a byte with another
live buffer, and one more guard closes the arena; the emitted C checks them after every op.
Several arena regions (boards.yaml `arena: [A, B]`): toolchain.placement picks each buffer's region,
then each region's buffers are planned as an arena of their own (MemoryPlan.region_of).
Not here: the placement algorithms (toolchain.planners), the execution order (toolchain.schedule).
Later: Concat producers writing straight into their slice of the output (no Concat op yet).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolchain.ir import Graph, Node
from toolchain.ops.registry import KernelVariant, opdef
from toolchain.placement import RegionSpec, place, traffic
from toolchain.planners import PLANNERS, Buffer, align, live_bound_units, plan_best
from toolchain.schedule import order_for_memory

__all__ = ["Buffer", "GUARD_BYTES", "MemoryPlan", "PlanError", "PLANNERS", "RegionSpec", "lifetimes", "live_bound",
           "plan_memory", "check_no_overlap", "inplace_inputs", "plan_for_kernels", "plan_naive", "plan_greedy_by_size"]

GUARD_BYTES = 16  # debug guards: at least this many pattern bytes after every buffer and at the arena's end

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
    guard_bytes: int = 0  # debug guards: minimum guard after every buffer (0: no guards)
    # Several arena regions (toolchain.placement): buffer -> region, and region -> bytes of its part of
    # the arena, in the board's order, the first being the main arena (<name>_arena); offsets are then
    # from the base of the buffer's region part and arena_bytes is the sum. Empty: one arena.
    region_of: Mapping[str, str] = field(default_factory=dict)
    region_bytes: Mapping[str, int] = field(default_factory=dict)

    def offset_of(self, tensor: str) -> int:
        """Arena offset in bytes of a tensor's first element (from its region part's base)."""
        return self.offsets[self.tensor_buffer[tensor]]

    @property
    def main_region(self) -> str | None:
        """The region of the main arena array (<name>_arena, ecc_arena by default), None with one arena."""
        return next(iter(self.region_bytes), None)

    @property
    def main_bytes(self) -> int:
        """Bytes of the main arena array (<NAME>_ARENA_SIZE): all of it with one arena."""
        return self.region_bytes[self.main_region] if self.region_bytes else self.arena_bytes

    def base_of_buffer(self, buffer: str) -> str:
        """The C pointer name of the buffer's arena part in <name>_model_run: `a` (the main arena) or
        `a_<REGION>`."""
        region = self.region_of.get(buffer)
        return "a" if region is None or region == self.main_region else f"a_{region}"

    def base_of(self, tensor: str) -> str:
        """base_of_buffer of the buffer holding `tensor`."""
        return self.base_of_buffer(self.tensor_buffer[tensor])

    def tensors_of(self, buffer: str) -> list[str]:
        """The tensors stored in a buffer, sorted (empty for scratch)."""
        return sorted(t for t, b in self.tensor_buffer.items() if b == buffer)

    def planned_buffers(self) -> list[Buffer]:
        """The buffers as the planner placed them: each one `guard_bytes` larger with guards on."""
        g = self.guard_bytes
        return [Buffer(b.name, b.size + g, b.first, b.last) if g else b for b in self.buffers]

    @property
    def end_guard_bytes(self) -> int:
        """Bytes of the guard that closes the arena (its last bytes); 0 without guards."""
        return align(self.guard_bytes, self.alignment) if self.guard_bytes else 0

    def guards(self) -> list[tuple[str, int, int, int, int]]:
        """Debug guards as (buffer, offset, bytes, first step, last step): one right after every
        buffer, up to its aligned planned end (>= guard_bytes), live while the buffer is; then the
        arena's end guard ("<arena end>", live over every step). [] without guards."""
        if not self.guard_bytes:
            return []
        out = []
        for b in self.buffers:
            end = self.offsets[b.name] + b.size
            out.append((b.name, end, align(b.size + self.guard_bytes, self.alignment) - b.size, b.first, b.last))
        last = max((b.last for b in self.buffers), default=0)
        top = self.arena_bytes - self.end_guard_bytes
        return [*out, ("<arena end>", top, self.end_guard_bytes, 0, last)]


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


def _plan_regions(graph: Graph, buffers: list[Buffer], root: dict[str, str], alignment: int, planner: str | None,
                  regions: Sequence[RegionSpec]) -> MemoryPlan:
    """The arena over several regions: toolchain.placement chooses each buffer's region, then each
    region's buffers are planned as one arena of their own."""
    region_of = place(buffers, traffic(graph, buffers, root), regions, alignment)
    offsets: dict[str, int] = {}
    region_bytes: dict[str, int] = {}
    winners = []
    for r in regions:
        part = [b for b in buffers if region_of[b.name] == r.name]
        if planner is None:
            name, off = plan_best(part, alignment)
        elif planner in PLANNERS:
            name, off = planner, PLANNERS[planner](part, alignment)
        else:
            raise PlanError(f"unknown planner {planner!r}; known: {', '.join(PLANNERS)}")
        if part:
            winners.append(name)
        offsets.update(off)
        region_bytes[r.name] = align(max((off[b.name] + b.size for b in part), default=0), alignment)
    plan = MemoryPlan(tuple(buffers), offsets, sum(region_bytes.values()), alignment,
                      "+".join(dict.fromkeys(winners)) or "best", root, 0, region_of, region_bytes)
    check_no_overlap(plan)
    return plan


def plan_memory(graph: Graph, scratch: Mapping[str, int], alignment: int, planner: str | None = None, *,
                inplace: Mapping[str, tuple[int, ...]] | None = None, guard_bytes: int = 0,
                regions: Sequence[RegionSpec] | None = None) -> MemoryPlan:
    """Plan the arena of a graph in its node order: the best plan found (smallest arena, the
    earliest planner on ties; MemoryPlan.planner names the winner) or the named planner's. The
    result is checked before it is returned. guard_bytes > 0 (debug guards, e.g. GUARD_BYTES):
    every buffer is planned that much larger and the arena ends with an aligned guard of its own.
    regions (two or more, the main arena's first; not with guards): the arena is spread over them
    by toolchain.placement, each region's part planned on its own (MemoryPlan.region_of)."""
    buffers, root = lifetimes(graph, scratch, inplace)
    if regions is not None and len(regions) > 1:
        if guard_bytes:
            raise PlanError("debug guards need one arena region")
        return _plan_regions(graph, buffers, root, alignment, planner, regions)
    planned = [Buffer(b.name, b.size + guard_bytes, b.first, b.last) for b in buffers] if guard_bytes else buffers
    if planner is None:
        planner, offsets = plan_best(planned, alignment)
    elif planner in PLANNERS:
        offsets = PLANNERS[planner](planned, alignment)
    else:
        raise PlanError(f"unknown planner {planner!r}; known: {', '.join(PLANNERS)}")
    size = align(max((offsets[b.name] + b.size for b in planned), default=0), alignment)
    size += align(guard_bytes, alignment) if guard_bytes else 0
    plan = MemoryPlan(tuple(buffers), offsets, size, alignment, planner, root, guard_bytes)
    check_no_overlap(plan)
    return plan


def plan_for_kernels(graph: Graph, variants: Mapping[str, KernelVariant], alignment: int, *,
                     guard_bytes: int = 0) -> tuple[Graph, MemoryPlan]:
    """(graph in the order with the smallest live peak, its plan) for the chosen kernel variants
    (node name -> variant, toolchain.lower.select_kernels): their scratch and in-place inputs,
    toolchain.schedule.order_for_memory, then plan_memory. The planning half of a compile, without C."""
    nodes = {n.name: n for n in graph.nodes}
    scratch = {name: v.scratch_bytes(nodes[name], graph) for name, v in variants.items()}
    inplace = inplace_inputs(variants)
    graph = order_for_memory(graph, scratch, alignment, inplace)
    return graph, plan_memory(graph, scratch, alignment, inplace=inplace, guard_bytes=guard_bytes)


def check_no_overlap(plan: MemoryPlan) -> None:
    """Raise PlanError if two buffers live at the same time share a byte, an offset is not
    aligned, or a buffer runs past the arena. With debug guards a buffer's guard counts as part of
    it, and nothing may reach into the arena's end guard."""
    bs = sorted(plan.planned_buffers(), key=lambda b: (b.first, b.name))
    for b in bs:
        if b.name not in plan.offsets:
            raise PlanError(f"buffer {b.name} has no offset")
        off = plan.offsets[b.name]
        region = plan.region_of.get(b.name)
        top = plan.region_bytes[region] if region is not None else plan.arena_bytes - plan.end_guard_bytes
        if off % plan.alignment or off < 0 or off + b.size > top:
            raise PlanError(f"buffer {b.name} at {off} (+{b.size} B) is misaligned or outside the "
                            f"{top} B arena{f' part in {region}' if region else ''}")
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            if b.first > a.last:
                break  # sorted by first step: no later buffer is live with a
            if a.size and b.size and plan.region_of.get(a.name) == plan.region_of.get(b.name):
                oa, ob = plan.offsets[a.name], plan.offsets[b.name]
                if oa < ob + b.size and ob < oa + a.size:
                    raise PlanError(f"buffers {a.name} [{oa}, {oa + a.size}) and {b.name} [{ob}, {ob + b.size}) "
                                    f"overlap in the arena while both are live")
