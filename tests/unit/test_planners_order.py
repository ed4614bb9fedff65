"""Execution order (toolchain.schedule): the topological order with the smallest peak of live
bytes is chosen for graphs with branches, computes the same, is deterministic, follows scratch, and
falls back to the graph's order past MAX_STATES."""
from __future__ import annotations

from graph_builder import GraphBuilder, assert_equivalent
from planner_cases import inplace_of

from toolchain.memory import lifetimes, live_bound, plan_memory
from toolchain.schedule import _problem, best_order, order_for_memory


# ---- execution order -----------------------------------------------------------------------
def two_branches(first):
    """A feeds a branch with a large temporary (B1 -> B2) and a small one (C1 -> C2); S adds them."""
    gb = GraphBuilder()
    a = gb.conv(gb.input("x", (1, 8, 8, 4)), 4, 1, out="A")
    for br in first:
        if br == "C":
            c2 = gb.conv(gb.conv(a, 8, 1, out="C1"), 16, 1, out="C2")
        else:
            b2 = gb.conv(gb.conv(a, 32, 1, out="B1"), 16, 1, out="B2")
    return gb.build(gb.fc(gb.reshape(gb.avgpool(gb.add(b2, c2, out="S"), 8, 8), (1, 16), out="F"), 4, out="Y"))


def test_the_order_with_the_smaller_peak_is_chosen_and_computes_the_same():
    g = two_branches("CB")
    inplace = inplace_of(g)
    before = live_bound(lifetimes(g, {}, inplace)[0], 16)
    h = order_for_memory(g, {}, 16, inplace)
    names = [n.outputs[0] for n in h.nodes]
    assert names[:5] == ["A", "B1", "B2", "C1", "C2"] and names.index("F") == names.index("Y") - 1
    after = live_bound(lifetimes(h, {}, inplace)[0], 16)
    assert (before, after) == (4 * (1024 + 2048 + 1024), 4 * (256 + 2048 + 1024))  # at B2: C2+B1+B2 vs A+B1+B2
    assert best_order(_problem(g, {}, 16, inplace))[1] == after  # the schedule's peak is the planner's bound
    assert plan_memory(h, {}, 16, inplace=inplace).arena_bytes == after
    assert_equivalent(g, h)


def test_an_optimal_order_is_kept_and_the_result_is_deterministic():
    g = two_branches("BC")
    assert order_for_memory(g, {}, 16, inplace_of(g)) is g
    h1, h2 = (order_for_memory(two_branches("CB"), {}, 16, inplace_of(g)) for _ in range(2))
    assert [n.name for n in h1.nodes] == [n.name for n in h2.nodes]


def test_scratch_steers_the_order():
    """With a big scratch on C1, running C first (while only A is live) beats running it beside B2."""
    g = two_branches("BC")
    h = order_for_memory(g, {"n_C1": 20_000}, 16, inplace_of(g))
    assert [n.outputs[0] for n in h.nodes][:2] == ["A", "C1"]


def test_too_many_downsets_keep_the_graph_order(monkeypatch):
    import toolchain.schedule as schedule

    monkeypatch.setattr(schedule, "MAX_STATES", 3)
    g = two_branches("CB")
    assert order_for_memory(g, {}, 16, inplace_of(g)) is g
