"""precision: auto (quantize.precision_search): the layer whose int8 quantization hurts is moved to 16x8
and the others are not; budgets stop moves; a met target stops the search; the record says what each
move cost. Measures from the pipeline for the host board (toolchain.pipeline.precision_search)."""
from __future__ import annotations

import numpy as np
import pytest

from test_precision import calib, wide_net
from quantize import quantize
from quantize.precision_search import NORMALIZERS, judged_tensor
from targets import load_target
from toolchain.config import Config
from toolchain.ir import DType
from toolchain.pipeline import precision_search


def auto(target=None, **budgets):
    """wide_net quantized with precision auto (64 calibration samples) and its search record."""
    cfg = Config(precision="auto", precision_target=target or {"agreement": None, "sqnr_db": 25.0}, **budgets)
    q = quantize(wide_net(), calib(64), "mse", precision="auto", search=precision_search(cfg, load_target("host")))
    return q, q.meta["precision"]["auto"]


def test_auto_moves_the_sensitive_layer_and_not_the_others():
    q, a = auto()
    first = a["steps"][0]
    # B is ranked first (its input, A's output, has a grid made for A's wide channel): 11.7 dB isolated
    # against ~40 dB for every other op
    assert first["op"] == "B" and first["isolated_sqnr_db"] < 15.0
    assert all(st["isolated_sqnr_db"] > 35.0 for st in a["steps"][1:])
    # the move takes B's input and output tensors to int16: A (their writer) and C (the reader) come along
    assert first["moved"] == ["A", "B", "C"] and first["taken"] and first["sqnr_gain_db"] > 10.0
    assert a["stopped"] == "target met" and len(a["steps"]) == 1
    assert q.meta["precision"]["int16_ops"] == ["A", "B", "C"]
    assert q.t(q.outputs[0]).dtype == DType.INT8  # D stayed int8, reading C's output through a REQUANTIZE
    assert a["start"]["sqnr_db"] < 15.0 and a["final"]["sqnr_db"] >= 25.0
    assert a["final"]["arena_bytes"] == a["start"]["arena_bytes"] + first["arena_bytes_delta"]
    assert a["final"]["cost"] == a["start"]["cost"] + first["cost_delta"] and first["cost_delta"] > 0


def test_without_a_target_every_move_that_pays_is_taken():
    q, a = auto({"agreement": None, "sqnr_db": None})
    assert a["stopped"] == "no candidate left"
    assert [st["taken"] for st in a["steps"]][:2] == [True, True]  # B's move, then C's (D joins)
    assert q.meta["precision"]["int16_ops"] == ["A", "B", "C", "D"]


def test_a_met_target_moves_nothing():
    q, a = auto({"agreement": None, "sqnr_db": 5.0})
    assert a["stopped"] == "target met" and a["steps"] == [] and q.meta["precision"]["int16_ops"] == []
    assert a["final"]["cost_ratio"] == 1.0


@pytest.mark.parametrize("budget, why", [("max_arena_bytes", "over max_arena_bytes"),
                                         ("max_cost_ratio", "over max_cost_ratio")])
def test_budgets_stop_moves(budget, why):
    _, free = auto()
    limit = free["start"]["arena_bytes"] if budget == "max_arena_bytes" else 1.01  # the int8 graph's own
    q, a = auto(**{budget: limit})
    first = a["steps"][0]
    assert first["op"] == "B" and not first["taken"] and why in first["why"]
    taken = [st for st in a["steps"] if st["taken"]]
    if budget == "max_arena_bytes":
        assert all(st["arena_bytes"] <= limit for st in taken) and a["final"]["arena_bytes"] <= limit
    else:
        assert all(st["cost"] <= limit * a["start"]["cost"] for st in taken) and a["final"]["cost_ratio"] <= limit
    assert "B" not in q.meta["precision"]["int16_ops"]
    assert a["stopped"] == "no candidate left" and a["final"]["sqnr_db"] < 25.0  # the target is out of reach


def test_the_search_is_deterministic():
    assert auto()[1] == auto()[1]


def test_judged_tensor_is_the_logits_of_a_final_softmax():
    from graph_builder import GraphBuilder

    b = GraphBuilder("s", 0)
    x = b.input("x", (1, 6))
    logits = b.reshape(b.fc(x, 4), (1, 4))
    g = b.build(b.reshape(b.softmax(logits), (1, 4)))  # through the view after it, to its input
    assert "SOFTMAX" in NORMALIZERS and judged_tensor(g) == logits
    assert judged_tensor(wide_net()) == wide_net().outputs[0]


def test_held_out_figures_never_see_other_data():
    """The record's figures come from the calibration halves alone: the same calibration data give the
    same record whatever the graph is later verified on (there is no verification input to the search)."""
    _, a = auto()
    assert a["held_out_samples"] == 64 and "even / odd" in a["criterion"]
    assert np.isfinite(a["start"]["sqnr_db"]) and a["start"]["agreement"] is not None
