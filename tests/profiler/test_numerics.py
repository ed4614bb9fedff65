"""Per-op numeric error against the float reference (profiler/numerics.py): isolated and
cumulative SQNR and max error in LSB, tensors matched by name, None without a counterpart."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from profiler import numerics
from profiler.numerics import op_numerics
from toolchain.config import load_config
from toolchain.data import load_data, quantize_inputs
from toolchain.ops.registry import opdef
from toolchain.pipeline import import_model

REPO = Path(__file__).resolve().parents[2]
TFLITE = REPO.parent / "shared" / "models" / "mlperf_tiny" / "ic_resnet8_int8.tflite"
CIFAR = REPO.parent / "shared" / "data" / "cifar10_calib_200.npz"


@pytest.fixture(scope="module")
def digits():
    cfg = load_config(REPO / "examples" / "digits" / "pipeline.yaml", {})
    front = import_model(cfg)
    data = load_data(cfg.verify, front.graph_f32, cfg.preprocess)
    return front, data, quantize_inputs(data, front.graph_s8)


def _executed(g) -> list[str]:
    return [n.name for n in g.nodes if not opdef(n).is_view]


def test_every_op_gets_both_errors(digits):
    front, data, q = digits
    res = op_numerics(front.graph_f32, front.graph_s8, data, q, max_samples=8)
    assert res["samples"] == 8 and list(res["ops"]) == _executed(front.graph_s8)
    for name, e in res["ops"].items():
        assert 20 < e["sqnr_db_isolated"] < 70 and 20 < e["sqnr_db_cumulative"] < 70, name
        assert 0 < e["max_abs_err_lsb"] < 64 and e["max_abs_err_lsb_isolated"] > 0, name
    first = res["ops"][_executed(front.graph_s8)[0]]  # fed the exact quantized input: both ways agree
    assert first["sqnr_db_isolated"] == first["sqnr_db_cumulative"]
    later = [res["ops"][n] for n in _executed(front.graph_s8)[2:]]
    assert any(e["sqnr_db_cumulative"] < e["sqnr_db_isolated"] for e in later)  # errors accumulate


def test_precomputed_int8_environments_give_the_same_numbers(digits):
    from toolchain.interpret import interpret

    front, data, q = digits
    envs = [interpret(front.graph_s8, {k: v[i] for k, v in q.items()}, keep_all=True) for i in range(4)]
    assert op_numerics(front.graph_f32, front.graph_s8, data, q, 4, envs) == \
        op_numerics(front.graph_f32, front.graph_s8, data, q, 4)


def _without(monkeypatch, front, gone):
    real = numerics.interpret

    def without(graph, inputs, keep_all=False, transform=None):
        env = real(graph, inputs, keep_all=keep_all, transform=transform)
        return {k: v for k, v in env.items() if k != gone} if graph is front.graph_f32 else env

    monkeypatch.setattr(numerics, "interpret", without)


def test_an_op_without_float_counterpart_is_measured_with_its_consumer(digits, monkeypatch):
    front, data, q = digits
    nodes = [n for n in front.graph_s8.nodes if not opdef(n).is_view]
    gone = nodes[3].outputs[0]
    consumer = next(n for n in nodes if gone in n.inputs)
    alone = op_numerics(front.graph_f32, front.graph_s8, data, q, max_samples=2)["ops"]
    _without(monkeypatch, front, gone)
    res = op_numerics(front.graph_f32, front.graph_s8, data, q, max_samples=2)["ops"]
    after = res[consumer.name]  # isolated from the op's own inputs, through both ops: a real figure, at its output
    assert after["error_at"] is None and after["sqnr_db_cumulative"] == alone[consumer.name]["sqnr_db_cumulative"]
    assert 20 < after["sqnr_db_isolated"] < alone[consumer.name]["sqnr_db_isolated"]  # two ops' rounding, not one
    assert res[nodes[3].name] == {**after, "error_at": consumer.name}  # the group's figures, saying where
    assert all(e["error_at"] is None for n, e in res.items() if n not in (nodes[3].name,))


def test_the_last_op_without_float_counterpart_gets_none(digits, monkeypatch):
    front, data, q = digits
    last = [n for n in front.graph_s8.nodes if not opdef(n).is_view][-1]
    _without(monkeypatch, front, last.outputs[0])
    res = op_numerics(front.graph_f32, front.graph_s8, data, q, max_samples=2)
    assert res["ops"][last.name] == {"sqnr_db_isolated": None, "sqnr_db_cumulative": None, "max_abs_err_lsb": None,
                                     "max_abs_err_lsb_isolated": None, "error_at": None}


def test_tflite_reference_is_the_dequantized_twin(tmp_path):
    if not (TFLITE.is_file() and CIFAR.is_file()):
        pytest.skip(f"{TFLITE.name} or {CIFAR.name} not present")
    raw = dict(np.load(CIFAR))
    np.savez(tmp_path / "v.npz", **{k: v[:4] for k, v in raw.items()})
    (tmp_path / "p.yaml").write_text(f"model: {TFLITE}\nverify: v.npz\n")
    cfg = load_config(tmp_path / "p.yaml", {})
    front = import_model(cfg)
    assert front.graph_f32.meta.get("dequantized")
    data = load_data(cfg.verify, front.graph_f32, cfg.preprocess)
    t0 = time.monotonic()
    res = op_numerics(front.graph_f32, front.graph_s8, data, quantize_inputs(data, front.graph_s8))
    assert time.monotonic() - t0 < 20
    rated = [e for e in res["ops"].values() if e["sqnr_db_isolated"] is not None]
    assert len(rated) >= len(res["ops"]) - 2 and all(e["sqnr_db_cumulative"] is not None for e in rated)
