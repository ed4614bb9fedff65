"""TFLM's GreedyMemoryPlanner reproduced (toolchain.planners.plan_greedy_by_size): its unit-test
vectors, a literal re-implementation with many ties, its exact plans and arenas on the four MLPerf
Tiny int8 models (checked against the TFLM runtime itself), and our plans of the same graphs at
the live-set bound."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from planner_cases import arena_of, bufs, checked

from toolchain.lower import select_kernels
from toolchain.memory import Buffer, inplace_inputs, lifetimes, live_bound, plan_memory
from toolchain.planners import plan_best, plan_greedy_by_size
from toolchain.schedule import order_for_memory

MLPERF = Path(__file__).resolve().parents[3] / "shared" / "models" / "mlperf_tiny"


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
