"""In-place outputs (toolchain.memory): kernels that declare inplace_inputs write over an input
that dies at their op; the fault cases BL-21 (no in-place over a tensor read later), BL-22 (scratch
disjoint from an in-place pair) and BL-23 (odd sizes, every alignment) with their neighbours."""
from __future__ import annotations

import pytest
from graph_builder import GraphBuilder
from planner_cases import inplace_of

from toolchain.memory import PLANNERS, check_no_overlap, live_bound, plan_memory


def test_kernels_declare_in_place_inputs():
    gb = GraphBuilder()
    x = gb.input("x", (1, 8))
    g = gb.build(gb.add(gb.relu(x, out="R"), x, out="S"))
    assert inplace_of(g) == {"n_R": (0,), "n_S": (0, 1)}


def test_add_writes_over_the_input_that_dies_and_the_arena_shrinks():
    gb = GraphBuilder()
    x = gb.input("x", (1, 4, 4, 8))
    a = gb.conv(x, 8, 1, out="A")          # step 0
    b = gb.conv(a, 8, 1, out="B")          # step 1
    g = gb.build(gb.conv(gb.add(a, b, out="S"), 8, 1, out="Y"))  # steps 2, 3
    plain = plan_memory(g, {}, 16)
    plan = plan_memory(g, {}, 16, inplace=inplace_of(g))
    assert plan.tensor_buffer["S"] == "A" and plan.offset_of("S") == plan.offset_of("A")
    assert {b.name: (b.first, b.last) for b in plan.buffers}["A"] == (0, 3)  # A, then S until Y reads it
    assert plan.tensors_of("A") == ["A", "S"]
    assert plan.arena_bytes == live_bound(list(plan.buffers), 16) == 2 * 512 < plain.arena_bytes == 3 * 512


def test_clamp_chain_stays_in_one_buffer():
    gb = GraphBuilder()
    x = gb.input("x", (1, 64))
    h = gb.fc(x, 64, out="H")
    g = gb.build(gb.fc(gb.clamp(gb.relu(h, out="R"), -1, 1, out="C"), 4, out="Y"))
    plan = plan_memory(g, {}, 16, inplace=inplace_of(g))
    assert plan.tensor_buffer["R"] == plan.tensor_buffer["C"] == "H"


def test_bl21_no_in_place_over_a_tensor_read_later():
    """T = Relu(x); U = T + T; V = Clip(U); W = V + T: U must not take T's bytes (T is read at
    step 3), V may take U's, W may take V's or T's (both die at step 3)."""
    gb = GraphBuilder()
    x = gb.input("x", (1, 4))
    t = gb.relu(x, out="T")
    v = gb.clamp(gb.add(t, t, out="U"), -10.0, 10.0, out="V")
    g = gb.build(gb.add(v, t, out="W"))
    for planner in (*PLANNERS, None):
        plan = plan_memory(g, {}, 16, planner, inplace=inplace_of(g))
        tb = plan.tensor_buffer
        assert tb["T"] == "x" and tb["U"] != tb["T"] and tb["V"] == tb["U"] and tb["W"] == tb["U"]
        assert {b.name: b.last for b in plan.buffers}[tb["T"]] == 3
        check_no_overlap(plan)


def test_no_in_place_over_graph_outputs_inputs_read_later_or_other_sizes():
    gb = GraphBuilder()
    x = gb.input("x", (1, 8))
    b = gb.relu(x, out="B")                 # graph output: never overwritten
    c = gb.clamp(b, -1, 1, out="C")
    d = gb.add(c, x, out="D")               # x read here: not overwritten by B
    e = gb.fc(d, 4, out="E")                # another size: never in place
    g = gb.build(e, b)
    tb = plan_memory(g, {}, 16, inplace=inplace_of(g)).tensor_buffer
    assert tb["B"] == "B" and tb["C"] == "C" and tb["D"] in ("C", "x") and tb["E"] == "E"


def test_bl22_scratch_is_disjoint_from_an_in_place_pair():
    gb = GraphBuilder()
    x = gb.input("x", (1, 32))
    h = gb.fc(x, 32, out="H")
    g = gb.build(gb.fc(gb.relu(h, out="R"), 4, out="Y"))
    for planner in (*PLANNERS, None):
        plan = plan_memory(g, {"n_R": 48, "n_H": 16}, 16, planner, inplace=inplace_of(g))
        by = {b.name: b for b in plan.buffers}
        assert plan.tensor_buffer["R"] == "H" and (by["scratch:n_R"].first, by["scratch:n_R"].last) == (1, 1)
        s, h_off = plan.offsets["scratch:n_R"], plan.offsets["H"]
        assert s + 48 <= h_off or h_off + 128 <= s
        check_no_overlap(plan)


@pytest.mark.parametrize("alignment", [4, 8, 16, 32, 64, 128, 256])
def test_bl23_odd_sizes_every_offset_and_the_arena_aligned_sizes_exact(alignment):
    gb = GraphBuilder()
    x = gb.input("x", (1, 5, 5, 3))
    h = gb.conv(x, 13, 1, out="H")          # 1300 B: 13 channels, odd rows
    r = gb.relu(gb.conv(h, 3, 3, pads=(1, 1, 1, 1), out="C"), out="R")
    g = gb.build(gb.fc(gb.reshape(r, (1, 75)), 10, out="Y"))
    for planner in (*PLANNERS, None):
        plan = plan_memory(g, {"n_C": 75}, alignment, planner, inplace=inplace_of(g))
        assert all(o % alignment == 0 for o in plan.offsets.values()) and plan.arena_bytes % alignment == 0
        assert {b.name: b.size for b in plan.buffers} == {"x": 300, "H": 1300, "C": 300, "Y": 40, "scratch:n_C": 75}
        check_no_overlap(plan)
