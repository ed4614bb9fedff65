"""Arena placement over several memory regions: which region (TCM, SRAM, PSRAM, ...) holds each
activation and scratch buffer, for boards whose `memory.arena` lists several (boards.yaml).

Stages: traffic -> place -> (toolchain.memory plans each region's buffers with the usual planners).
1. traffic: the bytes each buffer moves over one inference, a static estimate from the ops: a
   producer writes its output once; an op with MACs reads an activation input (and its scratch,
   the operand buffer of the im2col kernels) once per MAC, which over-counts the register reuse
   of the ISA kernels but keeps the ranking (small, much re-read buffers first); other ops read
   each input once; the graph's inputs are copied in and its outputs copied out.
2. place: buffers in order of traffic per byte (then name), regions from the fewest wait states
   (then the board's order); each region but the slowest takes every buffer that still fits its
   free bytes as planned with the buffers it already has (TFLM's greedy-by-size packing, after
   the cheap live-set bound), the slowest region takes the rest (the fit check then names it if it
   overflows). Cost = traffic x wait states, summed: the placement's estimate, reported with the
   all-in-the-slowest-region figure beside it.
Deterministic (sorted by numbers and names). Not here: offsets inside a region (toolchain.memory,
toolchain.planners), the linker sections (targets.linker), measured accesses (profiler.cycles).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolchain.ir import Graph
from toolchain.ops.registry import opdef
from toolchain.planners import PLANNERS, Buffer, align, live_bound_units


@dataclass(frozen=True)
class RegionSpec:
    """One region the arena may use: `capacity` bytes free for arena buffers (its size less what the
    board's other roles reserve there), `wait_states` extra cycles per access."""

    name: str
    capacity: int
    wait_states: int


def traffic(graph: Graph, buffers: Sequence[Buffer], tensor_buffer: Mapping[str, str]) -> dict[str, int]:
    """Estimated bytes each buffer moves over one inference (reads + writes; the model in the module
    docstring). `graph` in execution order; buffers and tensor -> buffer from toolchain.memory.lifetimes."""
    moved = {b.name: 0 for b in buffers}
    for t in (*graph.inputs, *graph.outputs):  # copied in / out by <name>_model_run
        moved[tensor_buffer[t]] += graph.t(t).nbytes
    for node in graph.nodes:
        op = opdef(node)
        if op.is_view:
            continue
        macs = op.cost(node, graph).macs
        for t in node.inputs:
            if t and t in tensor_buffer:
                moved[tensor_buffer[t]] += macs or graph.t(t).nbytes
        for t in node.outputs:
            moved[tensor_buffer[t]] += graph.t(t).nbytes
        scratch = f"scratch:{node.name}"
        if scratch in moved:
            size = next(b.size for b in buffers if b.name == scratch)
            moved[scratch] += size + (macs or size)
    return moved


def _packed_bytes(buffers: Sequence[Buffer], alignment: int) -> int:
    """Arena bytes of `buffers` packed by greedy-by-size (a quick, good upper bound of the best plan)."""
    offsets = PLANNERS["greedy_by_size"](buffers, alignment)
    return align(max((offsets[b.name] + b.size for b in buffers), default=0), alignment)


def place(buffers: Sequence[Buffer], moved: Mapping[str, int], regions: Sequence[RegionSpec],
          alignment: int) -> dict[str, str]:
    """buffer name -> region name: the greedy of the module docstring. The last region in speed order
    takes whatever the faster ones cannot hold, even beyond its capacity (the fit check refuses that)."""
    by_speed = sorted(enumerate(regions), key=lambda ir: (ir[1].wait_states, ir[0]))
    order = sorted(buffers, key=lambda b: (-moved[b.name] / max(b.size, 1), b.name))
    region_of: dict[str, str] = {}
    for _, r in by_speed[:-1]:
        chosen: list[Buffer] = []
        for b in order:
            if b.name in region_of or align(b.size, alignment) > r.capacity:
                continue
            trial = [*chosen, b]
            if live_bound_units(trial, alignment) * alignment <= r.capacity and \
                    _packed_bytes(trial, alignment) <= r.capacity:
                chosen.append(b)
        region_of.update((b.name, r.name) for b in chosen)
    slowest = by_speed[-1][1].name
    return {b.name: region_of.get(b.name, slowest) for b in buffers}


def placement_cost(moved: Mapping[str, int], region_of: Mapping[str, str], wait_states: Mapping[str, int]) -> int:
    """The placement's estimated cost: bytes moved x the wait states of each buffer's region, summed."""
    return sum(n * wait_states[region_of[b]] for b, n in moved.items())
