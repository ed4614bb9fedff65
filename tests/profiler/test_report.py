"""The joined report (profiler/report.py) and its formats: report.json against the one schema,
report.md / report.csv / report.html (inline SVG, one cost bar per op, offline) and the PNGs."""
from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_fixtures import NAMES, report

from profiler.outputs import write_outputs
from profiler.parse import OpCosts
from profiler.report import live_bytes, print_table

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "schema.json").read_text())


def test_joined_fields_per_op():
    r = report()
    assert r["schema_version"] == "1.1" and r["measurement"]["exact"] and r["measurement"]["runs"] == 1
    ops = r["ops"]
    assert [o["share"] for o in ops] == [0.6, 0.1, 0.3]
    assert ops[0]["macs_per_cost"] == 2.0 and ops[0]["instructions"] == 600
    assert [o["arena_live_bytes"] for o in ops] == [32 + 64 + 16, 64 + 16, 16 + 10]  # scratch counted while live
    assert ops[2]["sqnr_db_isolated"] == 31.5 and ops[1]["max_abs_err_lsb"] == 2.0
    assert r["numerics"]["worst_isolated_op"] == {"index": 2, "name": "fc_c", "op_type": "FullyConnected",
                                                  "sqnr_db_isolated": 31.5, "sqnr_db_cumulative": 30.0}
    assert r["ram_bytes"] == 96 and r["flash_bytes"] == 1222
    assert "exact" in r["cost_note"] and "one run" in r["cost_note"]
    jsonschema.validate(r, SCHEMA)


def test_measured_timer_report_names_its_statistic():
    c = OpCosts("us", (2.0, 0.5, 1.0), 3.6, False, (1.0, 0.4, 0.9), (3.0, 0.9, 1.1), "clock_monotonic", 7, 2)
    m = report(board="host", costs=c)
    assert m["measurement"] == {"timer": "clock_monotonic", "exact": False, "runs": 7, "warmup_runs": 2,
                                "statistic": "median of 7 runs", "fallback": None, "unit_per_tick": None,
                                "untested_on_silicon": False}
    assert m["ops"][0]["cost_min"] == 1.0 and m["ops"][0]["cost_max"] == 3.0 and m["total_instructions"] is None
    assert "median of 7 timed runs" in m["cost_note"] and "2 warm-up" in m["cost_note"]
    jsonschema.validate(m, SCHEMA)


def test_no_measurement_and_no_numerics_still_validate():
    r = report(costs=None, numerics=None, status="fault",
               fault={"reason": "UNDEFINSTR", "op": 1, "op_name": "pool_b"})
    assert r["measurement"] is None and r["numerics"]["worst_isolated_op"] is None
    assert all(o["sqnr_db_isolated"] is None and o["cost"] is None for o in r["ops"])
    jsonschema.validate(r, SCHEMA)


def test_schema_requires_the_new_fields():
    r = report()
    del r["ops"][0]["sqnr_db_isolated"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(r, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report() | {"schema_version": "1.0"}, SCHEMA)


def _described(node: object, path: str = "") -> list[str]:
    """Paths of schema properties with no description (neither their own nor named in their parent's)."""
    bad = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if not (isinstance(sub, dict) and sub.get("description")) and name not in node.get("description", ""):
                bad.append(f"{path}/{name}")
            bad += _described(sub, f"{path}/{name}")
        if isinstance(node.get("items"), dict):
            bad += _described(node["items"], f"{path}[]")
    return bad


def test_every_schema_field_is_documented():
    assert _described(SCHEMA) == []
    summary = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "summary.schema.json").read_text())
    assert _described(summary) == []


def test_live_bytes_counts_buffers_live_at_the_op():
    r = report()
    assert live_bytes(r["memory"], 1) == 80


class _Svg(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.classes: list[str] = []
        self.ids: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.classes += (a.get("class") or "").split()
        if a.get("id"):
            self.ids.append(a["id"])
        for key in ("src", "href"):
            if a.get(key):
                self.external.append(f"{tag} {key}={a[key]}")


def test_all_formats_are_written(tmp_path):
    r = report()
    paths = write_outputs(r, tmp_path)
    names = {p.name for p in paths}
    assert names == {"report.json", "report.md", "report.csv", "report.html", "cost.png", "cumulative.png", "sqnr.png"}
    assert json.loads((tmp_path / "report.json").read_text()) == json.loads(json.dumps(r))
    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert [row["name"] for row in rows] == NAMES and rows[0]["cost_unit"] == "instructions"
    assert rows[2]["sqnr_db_isolated"] == "31.5" and rows[0]["arena_live_bytes"] == "112"
    md = (tmp_path / "report.md").read_text()
    assert "| # | op | type | kernel | output | MACs | cost | share | MACs/cost |" in md
    assert "largest isolated error: op 2 fc_c (FullyConnected): SQNR 31.5 dB isolated" in md
    assert "| #2 | fc_c | 50 |" in md
    for png in ("cost.png", "cumulative.png", "sqnr.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "report.html").read_text()
    p = _Svg()
    p.feed(html)
    assert p.classes.count("cost-bar") == len(r["ops"]) == 3
    assert {f"cost-bar-{i}" for i in range(3)} <= set(p.ids)
    assert {"cost-chart", "cumulative-chart", "memory-chart", "sqnr-chart"} <= set(p.ids)
    assert p.classes.count("mem-buf") == len(r["memory"]["buffers"])
    assert p.classes.count("sqnr-isolated") == 3 and p.classes.count("cum-point") == 3
    assert p.external == [] and "<script" not in html  # self-contained: opens offline


def test_terminal_tables_fit_100_columns(capsys):
    r = report()
    r["ops"][0]["name"] = "model/very/long/layer/name/that/goes/on/and/on/conv2d_17/BiasAdd"
    print_table(r)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "model/very/long" in out and "…" in out and "17/BiasAdd" in out  # cut in the middle, both ends kept
    assert "largest isolated error: op 2 fc_c" in out
