"""Arena planners (toolchain.planners): hand lifetime sets with known optimal offsets and CP-SAT;
seeded property sweeps over random lifetimes for every planner; the overlap checker fed broken
plans; determinism and time. TFLM's plans: test_planners_tflm.py; in-place outputs and BL-21/22/23:
test_planners_inplace.py; execution order: test_planners_order.py; debug guards:
test_planners_guards.py."""
from __future__ import annotations

import random
import time

import pytest
from planner_cases import arena_of, bufs, checked, random_buffers

from toolchain.memory import PLANNERS, MemoryPlan, PlanError, check_no_overlap, live_bound
from toolchain.planners import _cp_sat, live_bound_units, plan_best, plan_greedy_by_size


# ---- hand cases with known optimal offsets -------------------------------------------------
# A chain of equal-size tensors (input B -> A -> C -> D): TFLM takes equal sizes in reverse add
# order, puts D and B at 0 and must stack A on top (12 units); ping-pong needs 8.
PING_PONG = bufs(("A", 4, 0, 1), ("B", 4, 0, 0), ("C", 4, 1, 2), ("D", 4, 2, 2))


def test_ping_pong_chain_greedy_is_50_percent_above_the_optimum():
    assert plan_greedy_by_size(PING_PONG, 1) == {"D": 0, "C": 4, "B": 0, "A": 8}
    name, off = plan_best(PING_PONG, 1)
    assert (name, off) == ("first_fit_by_size", {"A": 0, "C": 4, "B": 4, "D": 0})
    assert arena_of(PING_PONG, off, 1) == live_bound(PING_PONG, 1) == 8
    checked(PING_PONG, off, 1)


HAND_OPTIMAL = [
    # (buffers, alignment, optimal arena, {planner: its exact offsets})
    (bufs(("A", 64, 0, 1), ("B", 64, 0, 0), ("C", 64, 1, 2), ("D", 64, 2, 2)), 16, 128,
     {"first_fit_by_size": {"A": 0, "C": 64, "B": 64, "D": 0}, "greedy_by_size": {"D": 0, "C": 64, "B": 0, "A": 128}}),
    # a residual block: x lives across the branch; the branch output goes beside it
    (bufs(("x", 64, 0, 2), ("a", 128, 0, 1), ("b", 64, 1, 2), ("y", 64, 2, 2)), 16, 256,
     {"greedy_by_size": {"a": 0, "y": 0, "b": 128, "x": 192}}),
    # sizes that are not multiples of the alignment reserve the aligned size; exact sizes elsewhere
    (bufs(("i", 75, 0, 0), ("o", 10, 0, 1), ("p", 13, 1, 1)), 16, 96,
     {"greedy_by_size": {"i": 0, "o": 80, "p": 0}, "naive": {"i": 0, "o": 80, "p": 96}}),
    # TFLM's own "medium" vector (greedy_memory_planner_test.cc, arena 90), aligned to 1: 80 is possible
    (bufs(("0", 10, 0, 1), ("1", 20, 1, 2), ("2", 30, 2, 3), ("3", 40, 3, 4), ("4", 50, 0, 1)), 1, 80,
     {"greedy_by_size": {"0": 50, "1": 70, "2": 40, "3": 0, "4": 0}}),
]


@pytest.mark.parametrize("case", range(len(HAND_OPTIMAL)))
def test_hand_cases_reach_the_known_optimum(case):
    buffers, a, optimal, exact = HAND_OPTIMAL[case]
    for name, want in exact.items():
        assert PLANNERS[name](buffers, a) == want, name
    _, off = plan_best(buffers, a)
    assert arena_of(buffers, checked(buffers, off, a).offsets, a) == optimal == live_bound(buffers, a)


def test_cp_sat_finds_the_optimum_from_a_bad_start():
    naive = [o // 1 for o in PLANNERS["naive"](PING_PONG, 1).values()]
    off = _cp_sat(PING_PONG, 1, naive, 16)
    assert off is not None
    plan = checked(PING_PONG, {b.name: o for b, o in zip(PING_PONG, off)}, 1)
    assert plan.arena_bytes == 8
    assert _cp_sat(PING_PONG, 1, [0, 4, 4, 0], 8) is None  # nothing better than an optimal hint



# ---- properties over random lifetimes ------------------------------------------------------
def test_every_planner_is_valid_bounded_aligned_and_deterministic():
    rng = random.Random(2025)
    for case in range(150):
        bs, a = random_buffers(rng), rng.choice([4, 8, 16, 32, 64, 256])
        naive = arena_of(bs, PLANNERS["naive"](bs, a), a)
        bound = live_bound(bs, a)
        assert naive == sum(-(-b.size // a) * a for b in bs)
        arenas = {}
        for name, planner in PLANNERS.items():
            off = planner(bs, a)
            plan = checked(bs, off, a, name)
            assert bound <= plan.arena_bytes <= naive, (case, name)
            assert plan.arena_bytes % a == 0
            assert planner(list(bs), a) == off, (case, name)  # same input, same plan
            arenas[name] = plan.arena_bytes
        assert arenas["best"] <= min(v for k, v in arenas.items() if k.startswith(("greedy", "first_fit"))), case
        assert arenas["best"] == bound, (case, arenas)  # reached on every one of these sets


def test_the_checker_rejects_every_broken_plan():
    rng = random.Random(99)
    rejected = 0
    for _ in range(200):
        bs, a = random_buffers(rng), 16
        off = dict(PLANNERS["best"](bs, a))
        arena = arena_of(bs, off, a)
        pairs = [(x, y) for i, x in enumerate(bs) for y in bs[i + 1:] if x.first <= y.last and y.first <= x.last]
        broken = []
        if pairs:
            x, y = rng.choice(pairs)
            broken.append({**off, x.name: off[y.name]})                      # two live buffers on the same bytes
            broken.append({**off, x.name: off[y.name] + (y.size // 2 // a) * a})  # or partly
        b = rng.choice(bs)
        broken.append({**off, b.name: off[b.name] + a // 2})                     # misaligned
        broken.append({**off, b.name: -a})                                       # before the arena
        for bad in broken:
            with pytest.raises(PlanError):
                check_no_overlap(MemoryPlan(tuple(bs), bad, max(arena, arena_of(bs, bad, a)), a, "bad", {}))
            rejected += 1
        with pytest.raises(PlanError):                                           # arena too small
            check_no_overlap(MemoryPlan(tuple(bs), off, arena - a, a, "bad", {}))
    assert rejected > 400


def test_plan_best_takes_under_a_second_on_large_hard_sets():
    rng = random.Random(5)
    for n in (60, 120, 300):
        bs = random_buffers(rng, n + 1, n // 2)[:n]
        t = time.perf_counter()
        name, off = plan_best(bs, 16)
        assert time.perf_counter() - t < 1.0, (n, name)
        assert arena_of(bs, off, 16) <= arena_of(bs, plan_greedy_by_size(bs, 16), 16)


def test_live_bound_units_matches_a_step_by_step_sum():
    rng = random.Random(3)
    for _ in range(100):
        bs, a = random_buffers(rng), rng.choice([1, 16])
        steps = range(max(b.last for b in bs) + 1)
        want = max(sum(-(-b.size // a) for b in bs if b.first <= s <= b.last) for s in steps)
        assert live_bound_units(bs, a) == want
