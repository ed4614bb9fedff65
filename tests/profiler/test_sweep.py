"""Sweep summary (profiler/sweep.py): one entry per board, the worst exit status, the schema."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_fixtures import report

from profiler.sweep import board_entry, print_sweep, summary

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "summary.schema.json").read_text())


@pytest.mark.parametrize(("codes", "worst"), [((0, 0), 0), ((0, 1), 1), ((1, 3, 0), 3), ((2, 1), 2)])
def test_exit_status_is_the_worst_board(codes, worst):
    entries = [board_entry(f"b{i}", c, report() if c != 2 else None, "does not fit" if c == 2 else None)
               for i, c in enumerate(codes)]
    doc = summary("m.onnx", entries)
    assert doc["exit_code"] == worst
    jsonschema.validate(doc, SCHEMA)


def test_entry_fields_and_side_by_side_table(capsys):
    r = report()
    e = board_entry("mps2-an386", 0, r)
    assert e["macs"] == 1240 and e["macs_per_cost"] == pytest.approx(1240 / r["total_cost"])
    assert e["report"] == "mps2-an386/report.json" and e["arena_bytes"] == 96
    host = report(board="host")
    doc = summary("m.onnx", [e, board_entry("host", 0, host), board_entry("x", 2, None, "region overflowed")])
    print_sweep(doc, {"mps2-an386": r, "host": host})
    out = capsys.readouterr().out
    assert "an386" in out and "host" in out and "MACs per cost unit" in out and "fc_c" in out
    assert "x: error: region overflowed" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_board_lists():
    from targets import list_targets
    from toolchain.cli import _targets

    assert [t.name for t in _targets("host, host,")] == ["host"]  # duplicates collapse: one board, no sweep
    assert [t.name for t in _targets("all")] == [t.name for t in list_targets()]
    assert [t.name for t in _targets("aarch64,host")] == ["aarch64", "host"]
