"""Arena planners (toolchain.planners), in-place aliasing (toolchain.memory) and the execution
order (toolchain.schedule): hand lifetime sets with known optimal offsets; TFLM's own planner test
vectors and its exact plans on the four MLPerf Tiny int8 models; the fault cases BL-21/22/23 and
their neighbours; seeded property sweeps over random lifetimes for every planner; the overlap
checker fed broken plans; determinism and time."""
from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest
from graph_builder import GraphBuilder, assert_equivalent

from toolchain.lower import select_kernels
from toolchain.memory import (PLANNERS, Buffer, MemoryPlan, PlanError, check_no_overlap, inplace_inputs, lifetimes,
                              live_bound, plan_memory)
from toolchain.planners import _cp_sat, live_bound_units, plan_best, plan_greedy_by_size
from toolchain.schedule import _problem, best_order, order_for_memory

MLPERF = Path(__file__).resolve().parents[3] / "shared" / "models" / "mlperf_tiny"


def arena_of(buffers, offsets, a):
    return -(-max((offsets[b.name] + b.size for b in buffers), default=0) // a) * a


def checked(buffers, offsets, a, name="t"):
    """The plan, after check_no_overlap and an independent pairwise check."""
    plan = MemoryPlan(tuple(buffers), offsets, arena_of(buffers, offsets, a), a, name,
                      {b.name: b.name for b in buffers})
    check_no_overlap(plan)
    for i, x in enumerate(buffers):
        assert offsets[x.name] % a == 0
        for y in buffers[i + 1:]:
            if x.first <= y.last and y.first <= x.last:
                ox, oy = offsets[x.name], offsets[y.name]
                assert ox + x.size <= oy or oy + y.size <= ox, (x, y, ox, oy)
    return plan


def bufs(*spec):
    return [Buffer(*s) for s in spec]


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


# ---- TFLM: its unit-test vectors, a literal reference, the four MLPerf Tiny models ----------
def test_tflm_vectors():
    basics = bufs(("0", 10, 0, 1), ("1", 20, 2, 3))
    assert plan_greedy_by_size(basics, 1) == {"0": 0, "1": 0}
    overlap = bufs(("0", 100, 0, 1), ("1", 50, 2, 3), ("2", 20, 1, 2))
    assert arena_of(overlap, plan_greedy_by_size(overlap, 1), 1) == 120
    person = [9216, 3, 256, 2304, 2304, 2304, 1152] + [4608] * 11 + [2304, 9216, 9216, 9216, 4608] + \
        [18432] * 3 + [9216, 36864, 18432, 18432]
    spans = [(0, 29)] + [(28 - k, 29 - k) for k in range(29)]
    pd = [Buffer(str(i), s, f, last) for i, (s, (f, last)) in enumerate(zip(person, spans, strict=True))]
    assert arena_of(pd, checked(pd, plan_greedy_by_size(pd, 1), 1).offsets, 1) < 241027


def tflm_reference(buffers, a):
    """TFLM's GreedyMemoryPlanner written out literally: fill the sort arrays from the tail,
    bubble-sort descending (swap only on <), then for each buffer walk the offset-ordered linked
    list of placed buffers active at the same time, and insert the new entry after equal offsets."""
    n = len(buffers)
    req = [(-(-b.size // a) * a, b.first, b.last) for b in buffers]
    sizes, ids = [0] * n, [0] * n
    for i in range(n):
        sizes[n - 1 - i], ids[n - 1 - i] = req[i][0], i
    swapped = True
    while swapped:
        swapped = False
        for i in range(1, n):
            if sizes[i - 1] < sizes[i]:
                sizes[i - 1], sizes[i] = sizes[i], sizes[i - 1]
                ids[i - 1], ids[i] = ids[i], ids[i - 1]
                swapped = True
    off, order = [0] * n, [ids[0]] if n else []
    for b in ids[1:]:
        size, first, last = req[b]
        cand, prior = 0, None
        active = [e for e in order if not (req[e][1] > last or first > req[e][2])]
        for nxt in active + [None]:
            if prior is not None:
                cand = max(cand, off[prior] + req[prior][0])
            if nxt is None or off[nxt] - cand >= size:
                break
            prior = nxt
        off[b] = cand
        pos = 0 if off[order[0]] > cand else next((k for k in range(1, len(order)) if off[order[k]] > cand),
                                                   len(order))
        order.insert(pos, b)
    return {buffers[i].name: off[i] for i in range(n)}


def test_greedy_by_size_equals_the_literal_tflm_reference_with_many_ties():
    rng = random.Random(21)
    for _ in range(300):
        n, steps = rng.randrange(1, 25), rng.randrange(1, 12)
        bs = []
        for i in range(n):
            f = rng.randrange(steps)
            bs.append(Buffer(f"t{i}", rng.choice([16, 32, 30, 48, 64, 100]), f, rng.randrange(f, steps)))
        a = rng.choice([1, 4, 16])
        assert plan_greedy_by_size(bs, a) == tflm_reference(bs, a)


# TFLM's plans (offsets in its AddBuffer order = tensor index order, alignment 16) and arenas;
# the arenas equal the "head" the TFLM runtime reports for these models (checked below).
TFLM_PLANS = {
    "ic_resnet8": (49152, [0, 32768, 0, 16384, 0, 16384, 24576, 16384, 0, 8192, 12288, 8192, 0, 4096, 0, 64, 0]),
    "vww_mobilenet": (73728, [0, 55296, 36864, 0, 36864, 0, 18432, 0, 18432, 0, 9216, 0, 9216, 0, 4608, 0, 4608, 0,
                              4608, 0, 4608, 0, 4608, 0, 4608, 0, 2304, 0, 2304, 0, 256, 0]),
    "kws_dscnn": (16000, [8000, 0, 8000, 0, 8000, 0, 8000, 0, 8000, 0, 8000, 0, 64, 0]),
    "ad_autoencoder": (768, [0, 640, 0, 128, 0, 128, 0, 128, 0, 640, 0]),
}
LIVE_BOUND = {"ic_resnet8": 49152, "vww_mobilenet": 55296, "kws_dscnn": 16000, "ad_autoencoder": 768}


def tflm_buffers(path):
    """TFLM's planner input for a .tflite, read with the flatbuffer schema: every non-constant,
    non-variable tensor in index order, lifetimes as micro_allocation_info.cc marks them."""
    schema = pytest.importorskip("tflite_micro.tensorflow.lite.micro.python.schema_py_generated")
    buf = path.read_bytes()
    model = schema.Model.GetRootAsModel(buf, 0)
    sg = model.Subgraphs(0)
    itemsize = {0: 4, 2: 4, 3: 1, 4: 8, 7: 2, 9: 1}  # FLOAT32, INT32, UINT8, INT64, INT16, INT8
    first, last, scope = {}, {}, 0
    for t in [*sg.InputsAsNumpy(), *sg.OutputsAsNumpy()]:
        first[t] = last[t] = 0
    for i in range(sg.OperatorsLength()):
        op, scope = sg.Operators(i), scope + 1
        for t in op.OutputsAsNumpy():
            first[t] = last[t] = scope
        for t in op.InputsAsNumpy():
            if t >= 0:
                last[t] = scope
    for t in sg.OutputsAsNumpy():
        last[t] = scope
    out = []
    for t in range(sg.TensorsLength()):
        ten = sg.Tensors(t)
        data = model.Buffers(ten.Buffer())
        if (data is not None and data.DataLength()) or ten.IsVariable() or t not in first:
            continue
        out.append(Buffer(ten.Name().decode(), int(np.prod(ten.ShapeAsNumpy())) * itemsize[ten.Type()],
                          first[t], last[t]))
    return out


@pytest.mark.parametrize("model", sorted(TFLM_PLANS))
def test_greedy_by_size_reproduces_tflm_on_mlperf_tiny(model):
    path = MLPERF / f"{model}_int8.tflite"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    bs = tflm_buffers(path)
    arena, offsets = TFLM_PLANS[model]
    got = plan_greedy_by_size(bs, 16)
    assert [got[b.name] for b in bs] == offsets
    assert arena_of(bs, got, 16) == arena
    name, best = plan_best(bs, 16)
    assert arena_of(bs, checked(bs, best, 16).offsets, 16) == live_bound(bs, 16) == LIVE_BOUND[model], name


def test_tflm_runtime_plans_the_same_arenas(capfd):
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    for model, (arena, _) in TFLM_PLANS.items():
        path = MLPERF / f"{model}_int8.tflite"
        if not path.is_file():
            pytest.skip(f"{path} not present")
        runtime.Interpreter.from_file(str(path), arena_size=400_000).print_allocations()
        printed = capfd.readouterr()
        assert f"Arena allocation head {arena} bytes" in printed.out + printed.err, model


@pytest.mark.parametrize("model", sorted(TFLM_PLANS))
def test_tflite_frontend_graphs_plan_like_tflm_and_reach_the_bound(model):
    tflite = pytest.importorskip("toolchain.frontend.tflite")
    path = MLPERF / f"{model}_int8.tflite"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    g = tflite.load_tflite(path)
    bs, _ = lifetimes(g, {})
    # Reshape is a view here (one buffer fewer than TFLM has): the same arena all the same
    assert arena_of(bs, plan_greedy_by_size(bs, 16), 16) == TFLM_PLANS[model][0]
    g = order_for_memory(g, {}, 16, inplace_inputs(select_kernels(g, ["portable"])))
    plan = plan_memory(g, {}, 16, inplace=inplace_inputs(select_kernels(g, ["portable"])))
    assert plan.arena_bytes == live_bound(list(plan.buffers), 16) == LIVE_BOUND[model]


# ---- properties over random lifetimes ------------------------------------------------------
def random_buffers(rng, n_max=24, steps_max=14):
    n, steps = rng.randrange(1, n_max), rng.randrange(1, steps_max)
    out = []
    for i in range(n):
        f = rng.randrange(steps)
        last = rng.randrange(f, min(steps, f + rng.choice([1, 2, 4, steps])))
        out.append(Buffer(f"t{i}", rng.choice([rng.randrange(1, 64), rng.randrange(1, 4096), 1024]), f, last))
    return out


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


# ---- in-place outputs ----------------------------------------------------------------------
def inplace_of(g):
    return inplace_inputs(select_kernels(g, ["portable"]))


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
