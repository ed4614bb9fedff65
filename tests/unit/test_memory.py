"""Memory planner (architecture P11): greedy-by-size on hand cases with known offsets, the overlap
checker on hand-broken plans, a seeded property sweep over random lifetimes, and the lifetime
rules of BL-21 (several readers), BL-22 (scratch) and Reshape views."""
import numpy as np
import pytest

from graph_builder import GraphBuilder
from toolchain.memory import (PLANNERS, Buffer, MemoryPlan, PlanError, check_no_overlap, lifetimes, live_bound,
                              plan_greedy_by_size, plan_memory, plan_naive)


def _align(n, a):
    return -(-n // a) * a


def make_plan(buffers, alignment, planner="greedy_by_size"):
    offsets = PLANNERS[planner](buffers, alignment)
    arena = _align(max((offsets[b.name] + b.size for b in buffers), default=0), alignment)
    return MemoryPlan(tuple(buffers), offsets, arena, alignment, planner, {b.name: b.name for b in buffers})


def live_together(a, b):
    return a.first <= b.last and b.first <= a.last


def assert_disjoint(plan, a_name, b_name):
    by = {b.name: b for b in plan.buffers}
    a, b = by[a_name], by[b_name]
    oa, ob = plan.offsets[a_name], plan.offsets[b_name]
    assert oa + a.size <= ob or ob + b.size <= oa, f"{a_name}@{oa}+{a.size} overlaps {b_name}@{ob}+{b.size}"


def independent_check(plan):
    """The plan invariant, written again here: live-together buffers never share a byte."""
    for i, a in enumerate(plan.buffers):
        off = plan.offsets[a.name]
        assert off % plan.alignment == 0 and 0 <= off and off + a.size <= plan.arena_bytes
        for b in plan.buffers[i + 1:]:
            if live_together(a, b) and a.size and b.size:
                assert_disjoint(plan, a.name, b.name)


# ---- hand cases with exact offsets ----------------------------------------------------------
HAND = [
    # (buffers as (name, size, first, last), alignment, expected offsets, expected arena, arena is optimal)
    # The list order is TFLM's AddBuffer order: equal aligned sizes are placed in reverse list order.
    ([("A", 100, 0, 1), ("B", 50, 1, 2), ("C", 100, 2, 3)], 4,
     {"A": 0, "C": 0, "B": 100}, 152, True),
    ([("A", 64, 0, 2), ("B", 32, 0, 0), ("C", 32, 1, 2), ("D", 16, 0, 2)], 16,
     {"A": 0, "B": 64, "C": 64, "D": 96}, 112, True),
    # A, C and D share bytes: never live at the same step
    ([("A", 80, 0, 0), ("B", 100, 0, 2), ("C", 80, 2, 2), ("D", 20, 1, 1)], 4,
     {"B": 0, "A": 100, "C": 100, "D": 100}, 180, True),
    # everything live together: stacked largest first, each at the aligned end of the previous
    ([("X", 100, 0, 2), ("Y", 50, 0, 2), ("H", 10, 0, 0), ("D", 30, 0, 2)], 4,
     {"X": 0, "Y": 100, "D": 152, "H": 184}, 196, True),
    # D (40) slides into the 40-byte hole between C [0,60) and B [100,200) at step 1
    ([("B", 100, 0, 1), ("A", 100, 0, 0), ("C", 60, 1, 1), ("D", 40, 1, 1)], 4,
     {"A": 0, "B": 100, "C": 0, "D": 60}, 200, True),
    # one byte more and it no longer fits the hole: greedy gives 241 where 201 is possible
    ([("B", 100, 0, 1), ("A", 100, 0, 0), ("C", 60, 1, 1), ("D", 41, 1, 1)], 1,
     {"A": 0, "B": 100, "C": 0, "D": 200}, 241, False),
    # the same buffers added in the other order: B goes first and C, D stack above it
    ([("A", 100, 0, 0), ("B", 100, 0, 1), ("C", 60, 1, 1), ("D", 40, 1, 1)], 4,
     {"B": 0, "A": 100, "C": 100, "D": 160}, 200, True),
    # sizes not a multiple of the alignment: the aligned size is reserved
    ([("B", 10, 0, 1), ("A", 10, 0, 1)], 16, {"A": 0, "B": 16}, 32, True),
    ([("B", 10, 0, 1), ("A", 10, 0, 1)], 4, {"A": 0, "B": 12}, 24, True),
    ([("C", 1, 0, 1), ("B", 1, 1, 1), ("A", 1, 0, 0)], 256, {"A": 0, "B": 0, "C": 256}, 512, True),
    # equal sizes (10 and 12 are both 16 once aligned): the last added is placed first
    ([("b", 8, 0, 1), ("a", 8, 0, 1), ("c", 8, 1, 2)], 8, {"c": 0, "a": 8, "b": 16}, 24, True),
    ([("b", 12, 0, 1), ("a", 10, 0, 1)], 16, {"a": 0, "b": 16}, 32, True),
]


@pytest.mark.parametrize("case", range(len(HAND)))
def test_greedy_by_size_hand_cases(case):
    spec, alignment, want, arena, optimal = HAND[case]
    buffers = [Buffer(*b) for b in spec]
    assert plan_greedy_by_size(buffers, alignment) == want
    plan = make_plan(buffers, alignment)
    assert plan.arena_bytes == arena
    assert (plan.arena_bytes == live_bound(buffers, alignment)) == optimal
    check_no_overlap(plan)
    independent_check(plan)


def test_naive_planner_is_a_prefix_sum():
    buffers = [Buffer("A", 10, 0, 0), Buffer("B", 20, 1, 1), Buffer("C", 3, 2, 2)]
    assert plan_naive(buffers, 8) == {"A": 0, "B": 16, "C": 40}
    assert make_plan(buffers, 8, "naive").arena_bytes == 48


def test_live_bound():
    buffers = [Buffer("A", 10, 0, 1), Buffer("B", 20, 1, 2), Buffer("C", 5, 2, 2)]
    assert live_bound(buffers, 1) == 30
    assert live_bound(buffers, 16) == 48  # 16 + 32 at step 1; 32 + 16 at step 2
    assert live_bound([], 16) == 0


# ---- the checker rejects broken plans -------------------------------------------------------
def _plan(buffers, offsets, arena, alignment=16):
    return MemoryPlan(tuple(buffers), offsets, arena, alignment, "hand", {b.name: b.name for b in buffers})


def test_checker_accepts_a_good_plan():
    bs = [Buffer("A", 16, 0, 1), Buffer("B", 16, 1, 2), Buffer("C", 32, 2, 3)]
    check_no_overlap(_plan(bs, {"A": 0, "B": 16, "C": 32}, 64))
    # A and C never live together: they may share bytes
    check_no_overlap(_plan(bs, {"A": 0, "B": 32, "C": 0}, 48))


@pytest.mark.parametrize("offsets,arena,why", [
    ({"A": 0, "B": 0}, 64, "overlap"),            # same bytes, both live at step 1
    ({"A": 0, "B": 8}, 64, "overlap"),            # partial overlap (and B misaligned)
    ({"A": 16, "B": 0}, 64, "overlap"),           # B [0,32) covers A [16,32)
    ({"A": 0, "B": 20}, 64, "misaligned"),
    ({"A": 4, "B": 32}, 64, "misaligned"),
    ({"A": 0, "B": 32}, 48, "past the arena"),    # B ends at 64
    ({"A": 48, "B": 0}, 48, "past the arena"),    # A ends at 64
    ({"A": -16, "B": 0}, 64, "negative"),
])
def test_checker_rejects_broken_plans(offsets, arena, why):
    bs = [Buffer("A", 16, 0, 1), Buffer("B", 32, 1, 2)]
    with pytest.raises(PlanError):
        check_no_overlap(_plan(bs, offsets, arena))


def test_checker_ignores_overlap_of_buffers_not_live_together():
    bs = [Buffer("A", 16, 0, 1), Buffer("B", 16, 2, 3)]
    check_no_overlap(_plan(bs, {"A": 0, "B": 0}, 16))


def test_checker_rejects_overlap_at_a_single_shared_step():
    bs = [Buffer("A", 16, 0, 2), Buffer("B", 16, 2, 3)]
    with pytest.raises(PlanError):
        check_no_overlap(_plan(bs, {"A": 0, "B": 0}, 16))


# ---- property sweep over random lifetimes ----------------------------------------------------
def _random_buffers(rng):
    n = int(rng.integers(1, 16))
    steps = int(rng.integers(1, 12))
    out = []
    for i in range(n):
        first = int(rng.integers(0, steps))
        last = int(rng.integers(first, steps))
        size = int(rng.choice([rng.integers(1, 64), rng.integers(1, 4096)]))
        out.append(Buffer(f"t{i}", size, first, last))
    return out


def test_property_random_lifetimes():
    rng = np.random.default_rng(2024)
    for case in range(400):
        buffers = _random_buffers(rng)
        alignment = int(2 ** rng.integers(2, 9))  # 4 .. 256
        plan = make_plan(buffers, alignment)
        check_no_overlap(plan)
        independent_check(plan)
        naive = make_plan(buffers, alignment, "naive")
        check_no_overlap(naive)
        assert plan.arena_bytes <= naive.arena_bytes, case
        assert plan.arena_bytes >= live_bound(buffers, alignment), case
        assert all(o % alignment == 0 for o in plan.offsets.values()), case
        assert plan.arena_bytes % alignment == 0


def test_property_deterministic():
    rng = np.random.default_rng(7)
    for _ in range(50):
        buffers = _random_buffers(rng)
        assert plan_greedy_by_size(buffers, 16) == plan_greedy_by_size(list(buffers), 16)
        if len({_align(b.size, 16) for b in buffers}) == len(buffers):  # no ties: the list order cannot matter
            assert plan_greedy_by_size(buffers, 16) == plan_greedy_by_size(list(reversed(buffers)), 16)


# ---- lifetimes from graphs ------------------------------------------------------------------
def _bl21_graph():
    """T = Relu(x); U = T + T; V = Clip(U); W = V + T (Mul/Add-with-constant are not IR ops)."""
    gb = GraphBuilder()
    x = gb.input("x", (1, 4))
    t = gb.relu(x, out="T")
    u = gb.add(t, t, out="U")
    v = gb.clamp(u, -10.0, 10.0, out="V")
    w = gb.add(v, t, out="W")
    return gb.build(w)


def test_bl21_tensor_with_two_readers_lives_until_the_last():
    g = _bl21_graph()
    buffers, _ = lifetimes(g, {})
    by = {b.name: b for b in buffers}
    assert (by["T"].first, by["T"].last) == (0, 3)
    assert (by["x"].first, by["x"].last) == (0, 0)
    assert (by["U"].first, by["U"].last) == (1, 2)
    assert (by["W"].first, by["W"].last) == (3, 3)
    for planner in PLANNERS:
        plan = plan_memory(g, {}, 16, planner)
        for other in ("U", "V", "W"):
            assert_disjoint(plan, "T", other)
        independent_check(plan)


def test_bl21_values_through_the_interpreter():
    from graph_builder import outputs_in_order

    x = np.array([[-1, 0.5, 2, 3]], np.float32)
    t = np.maximum(x, 0)
    np.testing.assert_allclose(outputs_in_order(_bl21_graph(), {"x": x})[0], np.clip(t + t, -10, 10) + t)


def test_bl21_graph_input_read_late_and_output_read_internally():
    gb = GraphBuilder()
    x = gb.input("x", (1, 8))
    a = gb.relu(x, out="A")                  # op0
    b = gb.clamp(a, -1, 1, out="B")          # op1, a graph output that is also read by op3
    c = gb.add(b, b, out="C")                # op2
    d = gb.add(c, x, out="D")                # op3 reads the graph input again
    e = gb.add(d, b, out="E")                # op4
    g = gb.build(e, b)
    buffers, _ = lifetimes(g, {})
    by = {bb.name: bb for bb in buffers}
    assert by["x"].last == 3
    assert by["B"].last == 4                 # graph outputs live to the end
    plan = plan_memory(g, {}, 8)
    for other in ("A", "B", "C", "D"):
        if other != "A":
            assert_disjoint(plan, "x", other)
    for other in ("C", "D", "E"):
        assert_disjoint(plan, "B", other)
    independent_check(plan)


def _scratch_graph():
    gb = GraphBuilder()
    x = gb.input("x", (1, 6, 6, 4))
    c = gb.conv(x, 4, 3, pads=(1, 1, 1, 1), name="conv0", out="C0")
    d = gb.conv(c, 4, 1, name="conv1", out="C1")
    return gb.build(d)


def test_bl22_scratch_lives_exactly_during_its_op():
    g = _scratch_graph()
    plan = plan_memory(g, {"conv0": 100}, 16)
    by = {b.name: b for b in plan.buffers}
    s = by["scratch:conv0"]
    assert (s.first, s.last, s.size) == (0, 0, 100)
    assert_disjoint(plan, "scratch:conv0", "x")
    assert_disjoint(plan, "scratch:conv0", "C0")
    independent_check(plan)
    # the scratch is free again at step 1: C1 may reuse it, so the arena is below the naive sum
    naive = plan_memory(g, {"conv0": 100}, 16, "naive")
    assert plan.arena_bytes < naive.arena_bytes


def test_bl22_scratch_of_second_op_and_zero_scratch():
    g = _scratch_graph()
    plan = plan_memory(g, {"conv0": 0, "conv1": 64}, 16)
    names = {b.name for b in plan.buffers}
    assert "scratch:conv0" not in names and "scratch:conv1" in names
    by = {b.name: b for b in plan.buffers}
    assert (by["scratch:conv1"].first, by["scratch:conv1"].last) == (1, 1)
    assert_disjoint(plan, "scratch:conv1", "C0")
    assert_disjoint(plan, "scratch:conv1", "C1")


def test_bl22_depthwise_scratch_with_input_kept_live_by_a_later_add():
    gb = GraphBuilder()
    x = gb.input("x", (1, 5, 5, 3))
    r = gb.relu(x, out="R")
    d = gb.dwconv(r, 3, 1, pads=(1, 1, 1, 1), name="dw", out="D")
    g = gb.build(gb.add(d, r, out="S"))
    plan = plan_memory(g, {"dw": 200}, 16)
    for other in ("R", "D"):
        assert_disjoint(plan, "scratch:dw", other)
    assert {b.name: b for b in plan.buffers}["R"].last == 2
    independent_check(plan)


def test_reshape_output_shares_its_input_buffer_and_extends_its_lifetime():
    gb = GraphBuilder()
    x = gb.input("x", (1, 2, 2, 3))
    c = gb.conv(x, 3, 1, out="C")                   # step 0
    r = gb.reshape(c, (1, 12), out="R")             # a view of C: no kernel, no step
    f = gb.fc(r, 12, out="F")                       # step 1 reads the view
    y = gb.fc(f, 4, out="Y")                        # step 2
    g = gb.build(y)
    buffers, root = lifetimes(g, {})
    assert root["R"] == "C"
    by = {b.name: b for b in buffers}
    assert "R" not in by
    assert (by["C"].first, by["C"].last) == (0, 1)  # extended to the view's reader
    assert (by["F"].first, by["Y"].first) == (1, 2)
    plan = plan_memory(g, {}, 16)
    assert plan.offset_of("R") == plan.offset_of("C")
    assert_disjoint(plan, "C", "F")
    independent_check(plan)


def test_reshape_of_graph_input_is_a_view_of_the_input():
    gb = GraphBuilder()
    x = gb.input("x", (1, 2, 2, 3))
    r = gb.reshape(x, (1, 12), out="R")
    a = gb.relu(r, out="A")                          # step 0
    g = gb.build(gb.fc(gb.add(a, r), 3, out="Y"))    # step 1 reads the view again, step 2
    buffers, root = lifetimes(g, {})
    assert root["R"] == "x"
    assert {b.name: b for b in buffers}["x"].last == 1
    plan = plan_memory(g, {}, 16)
    assert plan.offset_of("R") == plan.offset_of("x")
    assert_disjoint(plan, "x", "A")


def test_reshape_that_is_a_graph_output_keeps_its_source_live_to_the_end():
    gb = GraphBuilder()
    x = gb.input("x", (1, 2, 2, 3))
    c = gb.conv(x, 3, 1, out="C")                    # step 0
    r = gb.reshape(c, (1, 12), out="R")              # view, a graph output
    g = gb.build(gb.fc(r, 4, out="Y"), r)            # step 1
    buffers, _ = lifetimes(g, {})
    by = {b.name: b for b in buffers}
    assert (by["C"].first, by["C"].last) == (0, 1)
    assert_disjoint(plan_memory(g, {}, 16), "C", "Y")


def test_real_model_arena_is_below_the_naive_sum():
    gb = GraphBuilder()
    x = gb.input("x", (1, 16, 16, 3))
    h = gb.relu(gb.conv(x, 8, 3, pads=(1, 1, 1, 1)))
    h = gb.maxpool(h)
    h = gb.relu(gb.conv(h, 16, 3, pads=(1, 1, 1, 1)))
    h = gb.add(h, gb.conv(h, 16, 1))
    h = gb.avgpool(h, 8, 8)
    h = gb.fc(gb.reshape(h, (1, 16)), 10)
    g = gb.build(gb.softmax(h))
    greedy, naive = plan_memory(g, {}, 16), plan_memory(g, {}, 16, "naive")
    buffers, _ = lifetimes(g, {})
    assert live_bound(buffers, 16) <= greedy.arena_bytes < naive.arena_bytes
    assert naive.arena_bytes == sum(_align(b.size, 16) for b in buffers)
    independent_check(greedy)


def test_plan_graph_lifetimes_are_intersections_of_use():
    g = _bl21_graph()
    plan = plan_memory(g, {}, 4)
    for a in plan.buffers:
        for b in plan.buffers:
            if a is not b and live_together(a, b):
                assert_disjoint(plan, a.name, b.name)
