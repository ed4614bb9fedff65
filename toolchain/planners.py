"""Arena planners behind one interface: `planner(buffers, alignment) -> {buffer name: offset}`.

Owns the placement algorithms over fixed lifetimes: `naive` (prefix sum, the baseline),
`greedy_by_size` (TFLM's GreedyMemoryPlanner reproduced exactly, for comparison), first-fit under
four orderings, a deterministic local search over orderings, and an exact CP-SAT model for small
problems. `plan_best` runs them in that order, stops at the live-set bound (no plan can be
smaller) and keeps the smallest arena, earliest on ties. Every planner works in units of the
alignment: a buffer reserves ceil(size / alignment) units, so each offset is aligned and the arena
is the highest unit in use. Deterministic: no clocks, no unseeded randomness, fixed budgets.
Not here: lifetimes and aliasing (toolchain.memory), the execution order (toolchain.schedule).
"""
from __future__ import annotations

import random
from bisect import insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Offsets = dict[str, int]
Planner = Callable[[Sequence["Buffer"], int], Offsets]

EXACT_MAX_BUFFERS = 120          # CP-SAT only for problems this small ...
EXACT_DETERMINISTIC_TIME = 0.4   # ... and for this much deterministic time (CP-SAT's own work units)
LOCAL_SEARCH_WORK = 60_000       # local search budget: first-fit evaluations x buffers ...
LOCAL_SEARCH_MAX_EVALS = 1_000   # ... and at most this many evaluations


@dataclass(frozen=True)
class Buffer:
    """One arena allocation: size in bytes, live from kernel-call step `first` to `last` inclusive."""

    name: str
    size: int
    first: int
    last: int


def align(n: int, a: int) -> int:
    """n rounded up to a multiple of a."""
    return (n + a - 1) // a * a


def _units(buffers: Sequence[Buffer], alignment: int) -> list[int]:
    return [-(-b.size // alignment) for b in buffers]


def _overlaps(buffers: Sequence[Buffer]) -> list[list[int]]:
    """For each buffer, the indices of the buffers live at some common step (sweep over starts)."""
    n = len(buffers)
    adj: list[list[int]] = [[] for _ in range(n)]
    by_first = sorted(range(n), key=lambda i: buffers[i].first)
    for k, i in enumerate(by_first):
        for j in by_first[k + 1:]:
            if buffers[j].first > buffers[i].last:
                break
            adj[i].append(j)
            adj[j].append(i)
    return adj


def live_bound_units(buffers: Sequence[Buffer], alignment: int) -> int:
    """Peak over steps of the units live at once (the lower bound of every plan), in units."""
    events: dict[int, int] = {}
    for b, u in zip(buffers, _units(buffers, alignment), strict=True):
        events[b.first] = events.get(b.first, 0) + u
        events[b.last + 1] = events.get(b.last + 1, 0) - u
    peak = cur = 0
    for s in sorted(events):
        cur += events[s]
        peak = max(peak, cur)
    return peak


def _first_fit(order: Sequence[int], units: Sequence[int], adj: Sequence[Sequence[int]]) -> tuple[list[int], int]:
    """Place buffers in `order`, each at the lowest unit where it clears every already placed
    buffer it is live with. Returns (offsets in units by index, arena in units)."""
    off = [-1] * len(units)
    top = 0
    for i in order:
        u = units[i]
        at = 0
        for lo, hi in sorted((off[j], off[j] + units[j]) for j in adj[i] if off[j] >= 0):
            if lo - at >= u:
                break
            at = max(at, hi)
        off[i] = at
        top = max(top, at + u)
    return off, top


def _as_offsets(buffers: Sequence[Buffer], off_units: Sequence[int], alignment: int) -> Offsets:
    return {b.name: o * alignment for b, o in zip(buffers, off_units, strict=True)}


# ---- the baselines --------------------------------------------------------------------------
def plan_naive(buffers: Sequence[Buffer], alignment: int) -> Offsets:
    """Every buffer after the previous one, in list order: the baseline (no reuse)."""
    offsets, at = {}, 0
    for b in buffers:
        offsets[b.name] = at
        at += align(b.size, alignment)
    return offsets


def tflm_order(buffers: Sequence[Buffer], alignment: int) -> list[int]:
    """TFLM's placement order: aligned size descending; equal sizes in reverse list order (TFLM
    fills its sort array from the tail and then bubble-sorts it, which is stable)."""
    units = _units(buffers, alignment)
    return sorted(reversed(range(len(buffers))), key=lambda i: -units[i])


def plan_greedy_by_size(buffers: Sequence[Buffer], alignment: int) -> Offsets:
    """TFLM GreedyMemoryPlanner (memory_planner/greedy_memory_planner.cc), the list order being
    TFLM's AddBuffer order: sizes rounded up to the alignment, placed in `tflm_order`, each at the
    first gap (walking the placed buffers live at the same time in offset order; entries with equal
    offsets in insertion order) that holds it, else after the last of them."""
    units = _units(buffers, alignment)
    placed: list[tuple[int, int, int]] = []  # (offset, insertion number, index): TFLM's offset-ordered list
    off = [0] * len(buffers)
    for seq, i in enumerate(tflm_order(buffers, alignment)):
        b, at = buffers[i], 0
        for lo, _, j in placed:
            p = buffers[j]
            if p.first > b.last or b.first > p.last:
                continue
            if lo - at >= units[i]:
                break
            at = max(at, lo + units[j])
        off[i] = at
        insort(placed, (at, seq, i))
    return _as_offsets(buffers, off, alignment)


# ---- first fit under orderings, local search ------------------------------------------------
def _orderings(buffers: Sequence[Buffer], units: Sequence[int]) -> dict[str, list[int]]:
    idx = range(len(buffers))
    dur = [b.last - b.first + 1 for b in buffers]
    return {
        "by_size": sorted(idx, key=lambda i: (-units[i], -dur[i], buffers[i].first, i)),
        "by_duration": sorted(idx, key=lambda i: (-dur[i], -units[i], buffers[i].first, i)),
        "by_first_use": sorted(idx, key=lambda i: (buffers[i].first, -units[i], -dur[i], i)),
        "by_area": sorted(idx, key=lambda i: (-units[i] * dur[i], -units[i], buffers[i].first, i)),
    }


def _first_fit_planner(key: str) -> Planner:
    def plan(buffers: Sequence[Buffer], alignment: int) -> Offsets:
        units = _units(buffers, alignment)
        off, _ = _first_fit(_orderings(buffers, units)[key], units, _overlaps(buffers))
        return _as_offsets(buffers, off, alignment)

    plan.__doc__ = f"First fit (lowest aligned offset that clears the live buffers), buffers taken {key}."
    return plan


def _local_search(buffers: Sequence[Buffer], units: Sequence[int], adj: Sequence[Sequence[int]],
                  start: Sequence[int], bound: int, evals: int) -> tuple[list[int], int]:
    """Improve a first-fit order: move a buffer that reaches the arena top (or one live with it)
    earlier in the order, keep the move if the arena does not grow; seeded, fixed budget."""
    rng = random.Random(0x5EED)
    order = list(start)
    off, top = _first_fit(order, units, adj)
    best_off, best_top = off, top
    for _ in range(evals):
        if best_top <= bound:
            break
        crit = [i for i in order if off[i] + units[i] == top]
        i = rng.choice(crit)
        if adj[i] and rng.random() < 0.5:
            i = rng.choice(adj[i])
        pos = order.index(i)
        if pos == 0:
            continue
        cand = order[:pos] + order[pos + 1:]
        cand.insert(rng.randrange(pos), i)
        c_off, c_top = _first_fit(cand, units, adj)
        if c_top <= top:
            order, off, top = cand, c_off, c_top
            if top < best_top:
                best_off, best_top = off, top
    return best_off, best_top


def plan_local_search(buffers: Sequence[Buffer], alignment: int) -> Offsets:
    """The best first-fit ordering, then the local search over orderings."""
    return _as_offsets(buffers, _search(buffers, alignment)[1], alignment)


def _search(buffers: Sequence[Buffer], alignment: int) -> tuple[str, list[int], int]:
    """(name, offsets in units, arena in units) of the best first-fit ordering (earliest on ties),
    improved by the local search when it is above the live-set bound."""
    units, adj = _units(buffers, alignment), _overlaps(buffers)
    bound = live_bound_units(buffers, alignment)
    runs = []
    for name, order in _orderings(buffers, units).items():
        off, top = _first_fit(order, units, adj)
        runs.append((top, len(runs), f"first_fit_{name}", order, off))
    top, _, name, order, off = min(runs, key=lambda r: r[:2])
    if top > bound:
        budget = min(LOCAL_SEARCH_MAX_EVALS, LOCAL_SEARCH_WORK // (len(buffers) + 1) + 1)
        ls_off, ls_top = _local_search(buffers, units, adj, order, bound, budget)
        if ls_top < top:
            return "local_search", ls_off, ls_top
    return name, off, top


# ---- exact: CP-SAT --------------------------------------------------------------------------
def _cp_sat(buffers: Sequence[Buffer], alignment: int, hint: Sequence[int], hint_top: int) -> list[int] | None:
    """Smallest arena by CP-SAT: one offset per buffer, the time x memory rectangles of NoOverlap2D,
    the per-step sum of sizes as a redundant cumulative, minimise the top; started from `hint`.
    One worker, fixed seed, deterministic time limit: identical inputs give identical plans. The
    model is written in CP-SAT's text format and solved through the compiled helper (the Python
    cp_model wrapper would also import pandas, ~0.5 s). None if nothing better than the hint."""
    from ortools.sat.python import cp_model_helper as cmh

    units = _units(buffers, alignment)
    n, top = len(buffers), len(buffers)  # variables 0..n-1 are the offsets, n the arena top
    text = [f"variables {{ domain: [0, {hint_top - u}] }}" for u in units]
    text.append(f"variables {{ domain: [{live_bound_units(buffers, alignment)}, {hint_top}] }}")
    for b in buffers:  # intervals 0..n-1: time (fixed)
        text.append(f"constraints {{ interval {{ start {{ offset: {b.first} }} end {{ offset: {b.last + 1} }} "
                    f"size {{ offset: {b.last - b.first + 1} }} }} }}")
    for k, u in enumerate(units):  # intervals n..2n-1: memory
        text.append(f"constraints {{ interval {{ start {{ vars: [{k}] coeffs: [1] }} "
                    f"end {{ vars: [{k}] coeffs: [1] offset: {u} }} size {{ offset: {u} }} }} }}")
    for k, u in enumerate(units):
        text.append(f"constraints {{ linear {{ vars: [{k}, {top}] coeffs: [1, -1] domain: [{-hint_top}, {-u}] }} }}")
    ivs = ", ".join(map(str, range(n)))
    text.append(f"constraints {{ no_overlap_2d {{ x_intervals: [{ivs}] "
                f"y_intervals: [{', '.join(map(str, range(n, 2 * n)))}] }} }}")
    demands = " ".join(f"demands {{ offset: {u} }}" for u in units)
    text.append(f"constraints {{ cumulative {{ capacity {{ vars: [{top}] coeffs: [1] }} "
                f"intervals: [{ivs}] {demands} }} }}")
    text.append(f"objective {{ vars: [{top}] coeffs: [1] }}")
    text.append(f"solution_hint {{ vars: [{ivs}, {top}] values: [{', '.join(map(str, hint))}, {hint_top}] }}")
    model = cmh.CpModelProto()
    model.parse_text_format("\n".join(text))
    params = cmh.SatParameters()
    params.parse_text_format(f"num_workers: 1 random_seed: 0 max_deterministic_time: {EXACT_DETERMINISTIC_TIME}")
    solver = cmh.SolveWrapper()
    solver.set_parameters(params)
    r = solver.solve(model)
    sol = list(r.solution)
    if r.status not in (cmh.CpSolverStatus.OPTIMAL, cmh.CpSolverStatus.FEASIBLE) or sol[top] >= hint_top:
        return None
    return sol[:n]


def plan_exact(buffers: Sequence[Buffer], alignment: int) -> Offsets:
    """CP-SAT from the local-search plan (that plan when the problem is too large or no better one is found)."""
    _, off, top = _search(buffers, alignment)
    if len(buffers) <= EXACT_MAX_BUFFERS and top > live_bound_units(buffers, alignment):
        off = _cp_sat(buffers, alignment, off, top) or off
    return _as_offsets(buffers, off, alignment)


# ---- the portfolio --------------------------------------------------------------------------
def plan_best(buffers: Sequence[Buffer], alignment: int) -> tuple[str, Offsets]:
    """(winner, offsets): greedy_by_size, then first fit under each ordering, the local search and
    CP-SAT, stopping as soon as a plan reaches the live-set bound; smallest arena, earliest on ties."""
    bound = live_bound_units(buffers, alignment)

    def top_of(offsets: Offsets) -> int:
        return max((offsets[b.name] // alignment + u for b, u in zip(buffers, _units(buffers, alignment),
                                                                       strict=True)), default=0)

    offsets = plan_greedy_by_size(buffers, alignment)
    best_name, best, best_top = "greedy_by_size", offsets, top_of(offsets)
    if best_top <= bound:
        return best_name, best
    name, off, top = _search(buffers, alignment)
    if top < best_top:
        best_name, best, best_top = name, _as_offsets(buffers, off, alignment), top
    if best_top > bound and len(buffers) <= EXACT_MAX_BUFFERS:
        hint = [best[b.name] // alignment for b in buffers]
        exact = _cp_sat(buffers, alignment, hint, best_top)
        if exact is not None:
            best_name, best = "cp_sat", _as_offsets(buffers, exact, alignment)
    return best_name, best


PLANNERS: dict[str, Planner] = {
    "naive": plan_naive,
    "greedy_by_size": plan_greedy_by_size,
    **{f"first_fit_{k}": _first_fit_planner(k) for k in ("by_size", "by_duration", "by_first_use", "by_area")},
    "local_search": plan_local_search,
    "cp_sat": plan_exact,
    "best": lambda buffers, alignment: plan_best(buffers, alignment)[1],
}
