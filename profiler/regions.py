"""report.json's memory.regions and memory.placement: what the model puts in each memory region of
the board (arena part, weights), the measured data accesses to the regions with wait states, and
the placement estimate of an arena spread over several regions (toolchain.placement).
Not here: the placement itself (toolchain.placement), the cycle estimate (profiler.cycles)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolchain.ir import Graph
from toolchain.memory import MemoryPlan
from toolchain.placement import placement_cost, traffic

NOTE = ("estimate: bytes each buffer moves per inference (a write per output; a read per MAC of an op's "
        "activation input and scratch, else per byte) x its region's wait_states")


def regions_section(target: Any, plan: MemoryPlan, weights_bytes: int,
                    accesses: Mapping[str, int] | None = None) -> dict[str, Any]:
    """memory.regions (`target`: a targets.Target): every board region (board order) -> its size and wait states (bytes, cycles per
    access), the roles it holds, the model's bytes there (arena part; weights: the library's weights
    section, `weights_bytes`) and `accesses`: data accesses over one inference measured by the plugin
    (regions with wait states on boards with cycle_costs), else None."""
    mem = target.memory
    arena = dict(plan.region_bytes) or {mem.arena: plan.arena_bytes}
    out = {}
    for r in mem.regions:
        roles = [role for role in ("code", "weights", "ram") if getattr(mem, role) == r.name]
        roles += ["arena"] if r.name in mem.arenas else []
        out[r.name] = {"size": r.size, "wait_states": r.wait_states, "roles": roles,
                       "arena_bytes": arena.get(r.name, 0),
                       "weights_bytes": weights_bytes if r.name == mem.weights else 0,
                       "accesses": (accesses or {}).get(r.name)}
    return out


def placement_section(target: Any, plan: MemoryPlan, graph: Graph) -> dict[str, Any] | None:
    """memory.placement for an arena over several regions: the estimated cost (bytes moved x wait
    states) of the chosen placement and of every buffer in the slowest arena region; None with one."""
    if not plan.region_of:
        return None
    mem = target.memory
    moved = traffic(graph, list(plan.buffers), dict(plan.tensor_buffer))
    ws = {r.name: r.wait_states for r in mem.regions}
    slowest = max(mem.arenas, key=lambda n: (ws[n], -mem.arenas.index(n)))
    return {"cost": placement_cost(moved, plan.region_of, ws),
            "all_slowest_cost": placement_cost(moved, dict.fromkeys(moved, slowest), ws),
            "slowest_region": slowest, "traffic_bytes": sum(moved.values()), "note": NOTE}
