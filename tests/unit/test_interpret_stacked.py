"""interpret_each: samples stacked on axis 0 through the float references give every sample exactly
its one-sample values (bit for bit), so calibration ranges, and the generated C, do not change;
and `onnx` is imported only when an ONNX file is read (its import costs ~0.7 s of CPU)."""
from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import quantize.calibrate as calibrate
from graph_builder import GraphBuilder
from quantize.calibrate import observe_ranges
from toolchain.interpret import interpret, interpret_chunks, interpret_each, stack_size
from toolchain.ir import Graph

REPO = Path(__file__).resolve().parents[2]
MLPERF = REPO.parent / "shared" / "models" / "mlperf_tiny"


def _bits(a: np.ndarray) -> tuple:
    a = np.ascontiguousarray(a)
    return a.shape, a.dtype.str, a.tobytes()


def _assert_same_as_one_at_a_time(g: Graph, data: dict[str, np.ndarray], **kw) -> None:
    n = len(next(iter(data.values())))
    got = list(interpret_each(g, data, keep_all=True, **kw))
    assert [i for i, _ in got] == list(range(n))
    for i, env in got:
        want = interpret(g, {k: v[i] for k, v in data.items()}, keep_all=True)
        assert env.keys() == want.keys()
        for name in want:
            assert _bits(env[name]) == _bits(want[name]), (i, name)


def _every_stacking_op() -> Graph:
    """Conv (padded, strided, grouped), depthwise (multiplier 2), Add with a broadcast constant,
    Relu / Clamp, both pools, Transpose keeping axis 0, Reshape, FC and Softmax: odd sizes so the
    matmuls hit BLAS edge cases (rows not a multiple of 4)."""
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (1, 11, 9, 3))
    y = gb.conv(x, 8, 3, stride=(2, 1), pads=(1, 1, 1, 1), act=(0.0, 6.0))
    y = gb.conv(y, 8, 1, groups=2)
    y = gb.dwconv(y, 3, mult=2, pads=(1, 0, 1, 2))
    y = gb.add(y, gb.rand((1, 1, 1, 16)))
    y = gb.relu(gb.add(y, gb.conv(y, 16, 1)))
    y = gb.clamp(gb.maxpool(y, 2, 1), -1.0, 4.0)
    y = gb.transpose(gb.avgpool(y, 2, 2, pads=(0, 0, 1, 1)), (0, 3, 1, 2))
    y = gb.reshape(y, (1, math.prod(gb.tensors[y].shape)))
    return gb.build(gb.softmax(gb.fc(y, 5)))


def test_stacked_run_equals_one_sample_at_a_time_bit_for_bit():
    g = _every_stacking_op()
    data = {"x": (np.random.default_rng(0).standard_normal((13, 1, 11, 9, 3)) * 3).astype(np.float32)}
    assert stack_size(g, 13) == 13
    _assert_same_as_one_at_a_time(g, data)
    # chunks of 4 (4 + 4 + 4 + 1): the last partial chunk as well
    sizes = [g.t(a).size for a in [*g.inputs, *(n.outputs[0] for n in g.nodes)]]
    small = 4 * (4 * sum(sizes) + 24 * max(sizes))
    assert stack_size(g, 13, max_bytes=small) == 4
    _assert_same_as_one_at_a_time(g, data, max_bytes=small)


def test_graphs_that_cannot_stack_run_one_sample_at_a_time():
    gb = GraphBuilder()
    x = gb.input("x", (1, 4, 2))
    moved = gb.build(gb.transpose(x, (1, 0, 2)))  # axis 0 moves: samples would mix
    assert stack_size(moved, 8) == 1

    gb = GraphBuilder()
    x = gb.input("x", (2, 3))  # a model batch of 2: no axis of 1 to stack on
    assert stack_size(gb.build(gb.relu(x)), 8) == 1

    gb = GraphBuilder()
    x = gb.input("x", (1, 3))
    low_rank = gb.build(gb.add(gb.reshape(x, (1, 1, 3)), gb.reshape(x, (3,))))  # broadcast from rank 1
    assert stack_size(low_rank, 8) == 1

    data = {"x": np.arange(24, dtype=np.float32).reshape(3, 1, 4, 2)}
    _assert_same_as_one_at_a_time(moved, data)


def test_wrong_sample_shape_raises_as_interpret_does():
    g = _every_stacking_op()
    with pytest.raises(ValueError, match="has shape"):
        list(interpret_each(g, {"x": np.zeros((3, 1, 11, 9, 2), np.float32)}))


def _float_model(yaml_name: str) -> tuple[Graph, dict[str, np.ndarray]]:
    """The float graph and calibration data of tests/models/YAML_NAME, as `edgecc build` makes them."""
    from toolchain.config import load_config
    from toolchain.data import load_data
    from toolchain.frontend.onnx import load_onnx
    from toolchain.passes import run_passes

    cfg = load_config(REPO / "tests" / "models" / yaml_name, {})
    if not cfg.model.is_file() or not cfg.calibration.exists():
        pytest.skip("the MLPerf Tiny files of ../shared are not here")
    g = run_passes(load_onnx(cfg.model, None))
    return g, load_data(cfg.calibration, g, cfg.preprocess)


@pytest.mark.parametrize("yaml_name, samples", [("ic_resnet8_float.yaml", 200), ("vww_mobilenet_float.yaml", 120)])
def test_calibrated_ranges_are_those_of_one_sample_at_a_time(monkeypatch, yaml_name, samples):
    g, data = _float_model(yaml_name)
    data = {k: v[:samples] for k, v in data.items()}
    assert stack_size(g, samples) > 1  # every op of the MLPerf float models stacks
    stacked = observe_ranges(g, data)
    monkeypatch.setattr(calibrate, "interpret_chunks", functools.partial(interpret_chunks, max_bytes=0))
    assert observe_ranges(g, data) == stacked


def _modules_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_cli_and_tflite_import_no_onnx():
    mods = _modules_after("import toolchain.cli, toolchain.pipeline, toolchain.runner")
    assert "onnx" not in mods and "onnxruntime" not in mods
    tflite = MLPERF / "ic_resnet8_int8.tflite"
    if not tflite.is_file():
        pytest.skip("the MLPerf Tiny files of ../shared are not here")
    mods = _modules_after(
        "from pathlib import Path\nfrom toolchain.config import load_config, rounding_of\n"
        "from toolchain.pipeline import import_model\n"
        f"cfg = load_config(None, {{'model': Path({str(tflite)!r})}})\n"
        "assert rounding_of(cfg)[0] == 'tflm'\nimport_model(cfg)")
    assert "toolchain.frontend.tflite" in mods
    assert "onnx" not in mods and "onnxruntime" not in mods
