"""Issue 5 end to end: the arena of real compiles equals the live-set bound (no planner overhead)
and the report shows the gap to TFLM's greedy-by-size; a model with branches is reordered and
its residual Add written in place, and still runs bit-exact on the board; report.json `memory`,
the text summary and OUT/memory.png; every arena offset aligned (BL-23)."""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from e2e_helpers import REPO, finish
from onnx import TensorProto, helper, numpy_helper

BOARD = "mps2-an386"
MODELS = REPO / "tests" / "models"
# model -> (live-set bound of the serial order without scratch, TFLM greedy-by-size on the same
# buffers), bytes, alignment 16. With the board's kernels the arena must equal the bound of the
# chosen kernels (their scratch included), whatever it is.
EXPECTED = {
    "ic_resnet8_float": (49_152, 49_152),
    "vww_mobilenet_float": (55_296, 73_728),
    "digits": (768, 896),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """compiled(model) -> pipeline Build of tests/models/MODEL.yaml (or the digits example) for
    BOARD, up to the emitted C: the C compile is stubbed out (test_digits and test_mlperf_float
    compile and run these models), so the plan is checked even while a kernel does not build."""
    import toolchain.pipeline as pipeline
    from targets import load_target
    from toolchain.config import load_config

    cache = {}

    def get(model: str):
        if model not in cache:
            yaml = REPO / "examples/digits/pipeline.yaml" if model == "digits" else MODELS / f"{model}.yaml"
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(pipeline, "build_firmware", lambda *a, **kw: None)
                cache[model] = pipeline.compile_model(load_config(yaml, {}), load_target(BOARD),
                                                      tmp_path_factory.mktemp(model), profile=False)
        return cache[model]

    return get


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_arena_is_the_live_bound_planned_in_under_a_second(compiled, model):
    from toolchain.lower import scratch_sizes
    from toolchain.memory import PLANNERS, inplace_inputs, lifetimes, live_bound, plan_memory
    from toolchain.schedule import order_for_memory

    build = compiled(model)
    g, plan, a = build.graph_s8, build.plan, build.plan.alignment
    assert a == 16
    assert plan.arena_bytes == live_bound(list(plan.buffers), a), plan.planner  # with the kernels' scratch
    scratch, inplace = scratch_sizes(g, build.variants), inplace_inputs(build.variants)
    bound, greedy_bytes = EXPECTED[model]
    bare, _ = lifetimes(g, {}, inplace)  # the same order without scratch
    greedy = PLANNERS["greedy_by_size"](bare, a)
    assert live_bound(bare, a) == bound == plan_memory(g, {}, a, inplace=inplace).arena_bytes
    assert -(-max(greedy[b.name] + b.size for b in bare) // a) * a == greedy_bytes
    # planning again on the same graph: the same order and plan (determinism), and the time it takes
    t = time.perf_counter()
    again = plan_memory(order_for_memory(g, scratch, a, inplace), scratch, a, inplace=inplace)
    assert time.perf_counter() - t < 1.0
    assert dict(again.offsets) == dict(plan.offsets) and again.planner == plan.planner
    assert order_for_memory(g, scratch, a, inplace) is g


def test_emitted_offsets_and_arena_base_are_aligned(compiled):
    build = compiled("vww_mobilenet_float")
    model_c = (build.lib_dir / "model.c").read_text()
    assert f"aligned({build.plan.alignment})" in model_c
    offsets = [int(m) for m in re.findall(r"\(a \+ (\d+)\)", model_c)] + \
        [int(m) for m in re.findall(r"memcpy\(a \+ (\d+)", model_c)]
    assert offsets and all(o % build.plan.alignment == 0 for o in offsets)
    assert f"#define ECC_ARENA_SIZE {build.plan.arena_bytes}u" in (build.lib_dir / "model.h").read_text()


def test_digits_report_memory_section_summary_and_picture(digits_run):
    job = digits_run("host")
    m = job.report["memory"]
    arena, greedy = m["arena_bytes"], m["greedy_by_size_bytes"]
    assert arena == m["lower_bound_bytes"] == job.report["arena_bytes"] and greedy >= arena
    assert m["naive_bytes"] >= greedy and m["planner"] and m["alignment"] == 16
    add = next(b for b in m["buffers"] if "/relu_add/Relu_output_0" in b["tensors"])  # the Add, written in place
    assert add["name"] != "/relu_add/Relu_output_0" and add["last_op"] > add["first_op"]
    for b in m["buffers"]:
        assert b["offset"] % 16 == 0 and b["offset"] + b["size"] <= arena
    png = job.out / m["timeline_png"]
    assert png.name == "memory.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (job.out / "report.md").read_text()
    gap = f" (+{greedy - arena:,} B, +{(greedy - arena) / arena:.1%})" if greedy > arena else ""
    assert f"arena {arena:,} B = live-set bound; greedy-by-size (TFLM) {greedy:,} B{gap}; naive" in md


def test_digits_report_ram_total_and_library_stack(digits_run):
    """Issue 5 point 7: the RAM a user must reserve, stated exactly (arena + the library's .data +
    .bss + the board's stack and heap), and the library's stack need measured with -fstack-usage."""
    from targets import load_target

    job = digits_run(BOARD)
    r = job.report
    assert r is not None and job.code == 0, f"exit {job.code}; stderr:\n{job.err}"
    m, s, mem = r["memory"], r["sections"], load_target(BOARD).memory
    assert m["ram_total_bytes"] == m["arena_bytes"] + mem.stack_size + mem.heap_size + s["data"] + s["bss"]
    assert 0 < m["lib_stack_bytes"] < 1024
    # what OUT/lib alone needs in a user's firmware: no harness heap, no board stack_size
    assert m["library_ram_stack_figure"] == "fstack_usage"
    assert m["library_ram_bytes"] == m["arena_bytes"] + s["data"] + s["bss"] + m["lib_stack_bytes"]
    assert m["library_ram_bytes"] < m["ram_total_bytes"] - mem.heap_size
    md = (job.out / "report.md").read_text()
    lib_line = f"model library RAM to reserve {m['library_ram_bytes']:,} B (arena {m['arena_bytes']:,} + "
    assert lib_line in md and f"test firmware RAM total {m['ram_total_bytes']:,} B (harness included" in md
    assert md.index(lib_line) < md.index("test firmware RAM total")  # the user's number comes first


def _branchy_model(path: Path) -> Path:
    """x[1,1,8,8] -> A (4 ch) -> { C1 (8) -> C2 (16) } and { B1 (32) + Relu -> B2 (16) } -> Add + Relu ->
    global average pool -> Flatten -> Gemm(10). The file lists the small branch first: running
    the branch with the large temporary first lowers the peak (A dies at B1, not held beside B2)."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def conv(x: str, cin: int, cout: int, out: str) -> str:
        inits.append(numpy_helper.from_array(rng.standard_normal((cout, cin, 1, 1)).astype(np.float32) * 0.5,
                                             f"{out}_w"))
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, f"{out}_b"))
        nodes.append(helper.make_node("Conv", [x, f"{out}_w", f"{out}_b"], [out], name=out))
        return out

    a = conv("x", 1, 4, "A")
    c2 = conv(conv(a, 4, 8, "C1"), 8, 16, "C2")
    conv(a, 4, 32, "B1")
    nodes.append(helper.make_node("Relu", ["B1"], ["B1r"], name="B1r"))
    b2 = conv("B1r", 32, 16, "B2")
    nodes += [helper.make_node("Add", [b2, c2], ["S"], name="S"), helper.make_node("Relu", ["S"], ["Sr"], name="Sr"),
              helper.make_node("GlobalAveragePool", ["Sr"], ["P"], name="P"),
              helper.make_node("Flatten", ["P"], ["F"], name="F"),
              helper.make_node("Gemm", ["F", "W", "Wb"], ["y"], name="y", transB=1)]
    inits += [numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), "W"),
              numpy_helper.from_array(np.zeros(10, np.float32), "Wb")]
    graph = helper.make_graph(nodes, "branchy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("board", ["host", BOARD])
def test_branches_are_reordered_written_in_place_and_run_bit_exact(edgecc, need_board, tmp_path, board):
    need_board(board)
    _branchy_model(tmp_path / "branchy.onnx")
    np.save(tmp_path / "data.npy", np.random.default_rng(1).uniform(0, 1, (16, 1, 8, 8)).astype(np.float32))
    (tmp_path / "p.yaml").write_text("model: branchy.onnx\ncalibration: data.npy\npreprocess:\n  layout: NCHW\n")
    out = tmp_path / "out"
    job = finish(edgecc("run", tmp_path / "p.yaml", "--board", board, "--out", out, "--quiet"), out)
    assert job.code == 0, job.err
    r = job.report
    assert r["verification"]["bit_exact"] is True
    kinds = [op["name"] for op in r["ops"]]
    # int8 bytes: x 64 (viewed as NHWC), A 256, B1 2048, B2 1024, C1 512, C2 1024
    if board == "host":  # portable kernels, no scratch: the large branch must run first
        assert kinds.index("B2") < kinds.index("C1"), kinds
    # (on the M4 the DSP kernels' scratch changes which order has the smallest peak)
    m = r["memory"]
    assert m["arena_bytes"] == m["lower_bound_bytes"]
    if board == "host":
        assert m["arena_bytes"] < 1024 + 2048 + 1024  # C first: C2, B1, B2 live at B2
    s = next(b for b in m["buffers"] if "S" in b["tensors"] or "Sr" in b["tensors"])
    assert s["name"] in ("B2", "C2"), s  # the Add wrote over one of its dying inputs
    assert (out / "memory.png").is_file()
