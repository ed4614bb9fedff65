"""report.json / summary.json are strict JSON whatever the numbers: a NaN or inf (a diverged SQNR, a
0/0 ratio) is written as null, never as the bare `NaN` / `Infinity` that JSON.parse, jq and CI tools
refuse (it reached report.json with NaN weights before the model check existed)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from report_fixtures import report

from profiler.json_out import dumps, finite_json
from profiler.outputs import write_outputs
from profiler.sweep import summary, write_summary


def _strict(text: str):
    """json.loads that refuses NaN / Infinity / -Infinity, as strict parsers do."""
    def refuse(name: str):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_non_finite_values_of_any_type_become_null():
    doc = {"a": math.nan, "b": [math.inf, np.float32("nan"), np.float64(-np.inf), 1.5, np.float32(2.5)],
           "c": {"d": (-math.inf, 3)}, "e": np.array([1.0, np.nan]), "f": np.int64(7), "g": "NaN", "h": None}
    back = _strict(dumps(doc))
    assert back == {"a": None, "b": [None, None, None, 1.5, 2.5], "c": {"d": [None, 3]}, "e": [1.0, None],
                    "f": 7, "g": "NaN", "h": None}
    assert finite_json(True) is True and finite_json(0) == 0


def test_report_json_with_nan_and_inf_is_strict_json(tmp_path):
    r = report()
    r["verification"]["top1_agreement"] = math.nan
    r["ops"][0]["sqnr_db_isolated"] = math.inf
    r["ops"][1]["macs_per_cost"] = np.float32("nan")
    r["numerics"]["worst_isolated_op"]["sqnr_db_cumulative"] = -math.inf
    write_outputs(r, tmp_path)
    text = (tmp_path / "report.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    back = _strict(text)
    assert back["verification"]["top1_agreement"] is None and back["ops"][0]["sqnr_db_isolated"] is None
    assert back["ops"][1]["macs_per_cost"] is None and back["numerics"]["worst_isolated_op"]["sqnr_db_cumulative"] is None
    assert back["ops"][2]["name"] == r["ops"][2]["name"]  # the rest unchanged


def test_summary_json_with_nan_is_strict_json(tmp_path):
    doc = summary("m.onnx", [{"board": "host", "exit_code": 0, "sqnr_db": math.nan, "total_cost": math.inf}])
    write_summary(doc, tmp_path / "summary.json")
    back = _strict((tmp_path / "summary.json").read_text())
    assert back["boards"][0]["sqnr_db"] is None and back["boards"][0]["total_cost"] is None


def test_a_nan_in_an_unwalked_type_is_refused_not_written():
    class Holder(float):  # a float subclass finite_json passes through as a float: still checked
        pass
    assert _strict(dumps({"x": Holder(math.nan)})) == {"x": None}
    with pytest.raises(ValueError, match="Out of range float"):
        json.dumps({"x": math.nan}, allow_nan=False)  # what dumps relies on for anything it does not map
