"""report.json `precision` (profiler.precision): the quantized graph's record as is, one terminal line
that names what precision chose and what it cost, and report.md's table of auto's moves."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from report_fixtures import report

from profiler.precision import precision_lines, step_rows
from profiler.report import summary_lines, write_markdown
from toolchain.ir import DType, Graph, Tensor

AUTO = {"mode": "auto", "int16_ops": ["conv_a", "fc_c"], "requantize_ops": 2,
        "io_dtypes": {"x": "int8", "fc_c": "int16"},
        "auto": {"target": {"agreement": 1.0, "sqnr_db": 40.0},
                 "budgets": {"max_arena_bytes": None, "max_cost_ratio": 2.0},
                 "cost_unit": "estimated instructions on mps2-an386", "held_out_samples": 100,
                 "start": {"agreement": 0.96, "sqnr_db": 26.1, "judged_sqnr_db": 26.9, "arena_bytes": 96, "cost": 1000},
                 "steps": [{"op": "fc_c", "isolated_sqnr_db": 30.05, "moved": ["pool_b", "fc_c"], "taken": True,
                            "why": None, "arena_bytes": 128, "arena_bytes_delta": 32, "cost": 1100, "cost_delta": 100,
                            "agreement": 0.98, "sqnr_db": 31.7, "judged_sqnr_db": 32.5, "sqnr_gain_db": 5.6},
                           {"op": "conv_a", "isolated_sqnr_db": 33.2, "moved": ["conv_a"], "taken": False,
                            "why": "cost 2.300x the int8 graph's, over max_cost_ratio 2", "arena_bytes": 160,
                            "arena_bytes_delta": 32, "cost": 2300, "cost_delta": 1200}],
                 "final": {"agreement": 0.98, "sqnr_db": 31.7, "judged_sqnr_db": 32.5, "arena_bytes": 128,
                           "cost": 1100, "cost_ratio": 1.1}, "stopped": "no candidate left"}}


def graph(meta: dict) -> Graph:
    x = Tensor("x", (1, 4), DType.INT8)
    return Graph("g", (), {"x": x}, ("x",), ("x",), meta)


def test_the_graphs_record_is_the_report_section():
    r = report(graph=graph({"precision": AUTO}))
    assert r["precision"] == AUTO
    assert report()["precision"] is None  # no graph: no record


def test_the_terminal_line_says_what_auto_chose_and_what_it_cost():
    r = report(graph=graph({"precision": AUTO}))
    r["ops"][0]["precision"] = r["ops"][2]["precision"] = "int16"
    line, = precision_lines(r)
    assert line.startswith("precision auto: 2 layer(s) in 16x8") and "2 REQUANTIZE" in line
    assert "I/O: x int8, fc_c int16" in line and "1 move(s), no candidate left" in line
    assert "agreement 96.0% -> 98.0%, SQNR 26.1 -> 31.7 dB" in line and "arena +32 B, cost x1.1" in line
    assert line in summary_lines(r)


def test_no_line_for_an_int8_graph():
    int8 = {"mode": "int8", "int16_ops": [], "requantize_ops": 0, "io_dtypes": {"x": "int8"}}
    assert precision_lines(report(graph=graph({"precision": int8}))) == []
    line, = precision_lines(report(graph=graph({"precision": {**int8, "mode": "int16", "int16_ops": ["conv_a"]}})))
    assert line.startswith("precision int16: 1 layer(s) in 16x8")


def test_report_md_lists_each_move_with_its_cost(tmp_path: Path):
    r = report(graph=graph({"precision": AUTO}))
    rows = step_rows(r)
    assert rows[0] == ["fc_c", "30.05", "2", "yes", "98.0%", "31.70", "+5.600", "+32", "+100", ""]
    assert rows[1][3] == "no" and rows[1][-1].startswith("cost 2.300x") and rows[1][4] == "-"
    write_markdown(r, tmp_path / "report.md")
    md = (tmp_path / "report.md").read_text()
    assert "## precision auto: the moves to 16x8" in md and "| fc_c | 30.05 | 2 | yes |" in md


def test_schema_takes_the_precision_section():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "schema.json").read_text())
    r = report(graph=graph({"precision": AUTO}))
    r["ops"][0]["precision"] = "int16"
    jsonschema.validate(json.loads(json.dumps(r, default=float)), schema)
    r["precision"] = {**AUTO, "mode": "fp16"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(r, default=float)), schema)
    r["precision"], r["ops"][0]["precision"] = AUTO, "int4"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(r, default=float)), schema)
    assert np.isfinite(r["precision"]["auto"]["final"]["cost_ratio"])
