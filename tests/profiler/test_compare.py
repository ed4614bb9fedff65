"""`edgecc compare` logic (profiler/compare.py): deltas, the separate budgets for total cost,
arena and flash, and the refusal to compare different boards or cost units."""
from __future__ import annotations

import json

import pytest
from report_fixtures import report

from profiler.compare import CompareError, compare, load_report, parse_budget


def test_identical_reports_pass():
    c = compare(report(), report(), parse_budget(None))
    assert c.failures == []
    assert {t["metric"]: t["relative"] for t in c.totals}["cost"] == 0.0
    assert [o["name"] for o in c.ops] == ["conv_a", "pool_b", "fc_c"]


def test_a_ten_percent_cost_regression_is_flagged():
    a, b = report(), report()
    b["total_cost"] = a["total_cost"] * 1.10
    c = compare(a, b, parse_budget("5%"))
    assert len(c.failures) == 1 and c.failures[0].startswith("total cost") and "+10.0%" in c.failures[0]
    assert compare(a, b, parse_budget("10.5%")).failures == []


@pytest.mark.parametrize("key", ["arena_bytes", "flash_bytes"])
def test_arena_and_flash_are_checked_separately(key):
    a, b = report(), report()
    b[key] = int(a[key] * 1.2)
    fails = compare(a, b, parse_budget("cost=50%,arena=10%,flash=10%")).failures
    assert len(fails) == 1 and fails[0].startswith(key.split("_")[0])
    assert compare(a, b, parse_budget(f"{key.split('_')[0]}=25%")).failures == []


def test_improvements_and_per_op_deltas():
    a, b = report(), report(costs=(300.0, 100.0, 300.0))
    c = compare(a, b, parse_budget("0"))
    assert c.failures == []
    conv = next(o for o in c.ops if o["name"] == "conv_a")
    assert conv["cost"] == (600.0, 300.0, -300.0, -0.5)


def test_added_and_removed_ops_are_listed():
    a, b = report(), report()
    b["ops"][1] = dict(b["ops"][1], name="pool_new")
    changes = {o["name"]: o["change"] for o in compare(a, b, parse_budget(None)).ops}
    assert changes["pool_b"] == "removed" and changes["pool_new"] == "added"


def test_missing_measurement_fails_the_cost_budget():
    b = report()
    b["total_cost"] = None
    assert "not measured in B" in compare(report(), b, parse_budget(None)).failures[0]


@pytest.mark.parametrize(("key", "value"), [("board", "host"), ("cost_unit", "us")])
def test_different_boards_or_units_are_refused_unless_forced(key, value):
    b = report() | {key: value}
    with pytest.raises(CompareError, match="different (boards|cost units)"):
        compare(report(), b, parse_budget(None))
    assert compare(report(), b, parse_budget(None), force=True).notes


@pytest.mark.parametrize(("text", "want"), [
    (None, {"cost": 0.05, "arena": 0.05, "flash": 0.05}), ("10%", {"cost": 0.1, "arena": 0.1, "flash": 0.1}),
    ("0.02", {"cost": 0.02, "arena": 0.02, "flash": 0.02}), ("arena=0,cost=1.5%", {"cost": 0.015, "arena": 0.0,
                                                                                  "flash": 0.05})])
def test_budget_syntax(text, want):
    assert parse_budget(text) == pytest.approx(want)


@pytest.mark.parametrize("bad", ["five", "5%%", "speed=5%", "-3%"])
def test_bad_budget_is_one_clear_line(bad):
    with pytest.raises(CompareError, match="--max-regression"):
        parse_budget(bad)


def test_load_report_errors_name_the_file(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(CompareError, match=r"x\.json: not JSON"):
        load_report(tmp_path / "x.json")
    (tmp_path / "y.json").write_text(json.dumps({"board": "host"}))
    with pytest.raises(CompareError, match=r"y\.json: not an edgecc report.json \(missing cost_unit"):
        load_report(tmp_path / "y.json")
    with pytest.raises(CompareError, match="cannot read"):
        load_report(tmp_path / "none.json")
