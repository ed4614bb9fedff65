"""`edgecc compare A/report.json B/report.json`: per-op and total deltas (cost, arena, flash,
numeric error) from A (the baseline) to B, and the regression budget gate.

The budget is checked separately for total cost, arena bytes and flash bytes: B may exceed A by
at most the allowed fraction of A on each. Reports of different boards or cost units are not
comparable (refused unless forced). Errors (SQNR) are shown, not gated.
Not here: producing the reports, or the exit status (the CLI maps `failures` to it).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiler.report import squeeze

DEFAULT_BUDGET = 0.05
GATED = ("cost", "arena", "flash")
_PCT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


class CompareError(Exception):
    """The reports cannot be read or compared (one line naming the file or the mismatch)."""


def _fraction(text: str) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '0' -> 0. A bare number of 1 or more is refused: `5` could
    mean 5% or 500%, and `1` 1% or 100%, so it needs its % sign."""
    m = _PCT_RE.match(text)
    if not m:
        raise CompareError(f"--max-regression: {text.strip()!r} is not a percentage like 5% or a fraction like 0.05")
    v = float(m[1])
    if not m[2] and v >= 1:
        raise CompareError(f"--max-regression: {text.strip()!r} is ambiguous (a percentage or a fraction?); "
                           f"write {m[1]}% or a fraction below 1 such as 0.05")
    return v / 100 if m[2] else v


def parse_budget(text: str | None) -> dict[str, float]:
    """'5%' or '0.05' for all three, or 'cost=5%,arena=0,flash=1%' (unnamed ones stay at 5%).
    Fractions of the baseline; CompareError on a malformed, ambiguous or repeated value."""
    budget = dict.fromkeys(GATED, DEFAULT_BUDGET)
    if text is None:
        return budget
    if "=" not in text:
        return dict.fromkeys(GATED, _fraction(text))
    seen: set[str] = set()
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in GATED:
            raise CompareError(f"--max-regression: unknown metric {key!r}; use cost, arena or flash")
        if key in seen:
            raise CompareError(f"--max-regression: {key} is given twice in {text!r}; give each metric once")
        seen.add(key)
        budget[key] = _fraction(value)
    return budget


def load_report(path: Path) -> dict[str, Any]:
    """A report.json as a dict; CompareError when unreadable or not an edgecc report."""
    try:
        r = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise CompareError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise CompareError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    missing = [k for k in ("board", "cost_unit", "total_cost", "arena_bytes", "flash_bytes", "ops")
               if not isinstance(r, dict) or k not in r]
    if missing:
        raise CompareError(f"{path}: not an edgecc report.json (missing {', '.join(missing)})")
    return r


def _delta(a: float | None, b: float | None) -> tuple[float | None, float | None]:
    """(b - a, (b - a) / a) with None where undefined; a 0 -> +inf relative growth."""
    if a is None or b is None:
        return None, None
    d = b - a
    return d, (d / a if a else (0.0 if d == 0 else math.inf))


@dataclass
class Comparison:
    """Totals (metric rows), per-op rows and the budget failures (empty: within budget)."""

    a: dict[str, Any]
    b: dict[str, Any]
    budget: dict[str, float]
    totals: list[dict[str, Any]] = field(default_factory=list)
    ops: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _worst_iso(r: dict[str, Any]) -> float | None:
    return ((r.get("numerics") or {}).get("worst_isolated_op") or {}).get("sqnr_db_isolated")


def compare(a: dict[str, Any], b: dict[str, Any], budget: dict[str, float], force: bool = False) -> Comparison:
    """Deltas from A to B; budget failures for total cost, arena and flash. Raises CompareError
    when the boards or cost units differ and not `force`."""
    for key, what in (("board", "boards"), ("cost_unit", "cost units")):
        if a[key] != b[key] and not force:
            raise CompareError(f"the reports are of different {what} ({a[key]} vs {b[key]}); their costs are not "
                               "comparable (use --force to compare anyway)")
    c = Comparison(a, b, budget)
    if a["board"] != b["board"] or a["cost_unit"] != b["cost_unit"]:
        c.notes.append(f"forced: comparing {a['board']} ({a['cost_unit']}) with {b['board']} ({b['cost_unit']})")
    unit = a["cost_unit"] or "-"
    if (b["cost_unit"] or "-") != unit:  # forced across units: each side keeps its own
        unit = f"{unit} -> {b['cost_unit'] or '-'}"
    va, vb = a.get("verification") or {}, b.get("verification") or {}
    rows = [("cost", "total cost", unit, a["total_cost"], b["total_cost"]),
            ("arena", "arena", "bytes", a["arena_bytes"], b["arena_bytes"]),
            ("flash", "flash", "bytes", a["flash_bytes"], b["flash_bytes"]),
            ("ram", "RAM", "bytes", a.get("ram_bytes"), b.get("ram_bytes")),
            ("sqnr", "output SQNR", "dB", va.get("sqnr_db"), vb.get("sqnr_db")),
            ("top1", "top-1 agreement", "fraction", va.get("top1_agreement"), vb.get("top1_agreement")),
            ("worst_iso", "worst isolated SQNR", "dB", _worst_iso(a), _worst_iso(b))]
    for key, label, u, x, y in rows:
        d, rel = _delta(x, y)
        row = {"metric": key, "label": label, "unit": u, "a": x, "b": y, "delta": d, "relative": rel,
               "budget": budget.get(key), "exceeded": False}
        if key in budget:
            if rel is None:
                row["exceeded"] = True
                c.failures.append(f"{label}: not measured in {'A' if x is None else 'B'}, cannot check the budget")
            elif rel > budget[key] + 1e-12:
                row["exceeded"] = True
                c.failures.append(f"{label} {_sides(x, y, u)} ({rel:+.1%}) exceeds the {budget[key]:.1%} budget")
        c.totals.append(row)
    by_name = {o["name"]: o for o in b["ops"]}
    for o in a["ops"]:
        p = by_name.pop(o["name"], None)
        c.ops.append(_op_row(o, p))
    c.ops += [_op_row(None, p) for p in b["ops"] if p["name"] in by_name]
    return c


def _sides(x: float, y: float, unit: str) -> str:
    """'A -> B unit', or 'A unit_a -> B unit_b' when the units differ (a forced comparison)."""
    ua, _, ub = unit.partition(" -> ")
    return f"{x:,.6g} {ua} -> {y:,.6g} {ub}" if ub else f"{x:,.6g} -> {y:,.6g} {unit}"


def _op_row(x: dict[str, Any] | None, y: dict[str, Any] | None) -> dict[str, Any]:
    ref = x or y or {}
    row: dict[str, Any] = {"name": ref.get("name"), "op_type": ref.get("op_type"),
                           "change": "removed" if y is None else "added" if x is None else ""}
    for key in ("cost", "arena_live_bytes", "sqnr_db_cumulative", "sqnr_db_isolated", "max_abs_err_lsb"):
        a, b = (x or {}).get(key), (y or {}).get(key)
        row[key] = (a, b, *_delta(a, b))
    return row


def _f(v: float | None, digits: int = 1) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}" if not float(v).is_integer() or digits == 0 else f"{v:,.0f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else ("+inf" if math.isinf(v) else f"{v:+.1%}")


def print_comparison(c: Comparison, a_path: str, b_path: str) -> None:
    """Per-op and total tables (rich) and the verdict lines."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(100, Console().width))
    unit = next(t["unit"] for t in c.totals if t["metric"] == "cost")  # "us -> instructions" when forced
    d = 0 if unit in ("instructions", "cycles") else 2
    ua, _, ub = unit.partition(" -> ")
    units = f"cost A in {ua}, cost B in {ub}" if ub else f"cost in {unit}"
    ops = Table(title=f"per op: A = {a_path}, B = {b_path} ({units}; live arena in bytes; SQNR cumulative "
                      "in dB)", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, title_justify="left")
    for h in ("op", "cost A", "cost B", "Δ cost", "live A", "live B", "SQNR A", "SQNR B", "Δ dB"):
        ops.add_column(h, justify="left" if h == "op" else "right", no_wrap=True, max_width=34 if h == "op" else None,
                       overflow="ellipsis" if h == "op" else "fold")
    for r in c.ops:
        ca, cb, _, crel = r["cost"]
        la, lb, _, _ = r["arena_live_bytes"]
        sa, sb, sd, _ = r["sqnr_db_cumulative"]
        name = (r["name"] or "?") + (f" ({r['change']})" if r["change"] else "")
        ops.add_row(squeeze(name, 34), _f(ca, d), _f(cb, d), _pct(crel), _f(la, 0), _f(lb, 0), _f(sa), _f(sb), _f(sd))
    console.print(ops)
    totals = Table(title="totals (gated: total cost, arena, flash)", box=box.SIMPLE_HEAD, collapse_padding=True,
                   pad_edge=False, title_justify="left")
    for h in ("metric", "unit", "A", "B", "Δ", "Δ %", "budget", "verdict"):
        totals.add_column(h, justify="left" if h in ("metric", "unit", "verdict") else "right")
    for t in c.totals:
        gated = t["budget"] is not None
        verdict = ("EXCEEDED" if t["exceeded"] else "ok") if gated else ""
        digits = d if t["metric"] == "cost" else 0 if t["unit"] == "bytes" else 2
        totals.add_row(t["label"], t["unit"], _f(t["a"], digits), _f(t["b"], digits), _f(t["delta"], digits),
                       _pct(t["relative"]),
                       f"{t['budget']:.1%}" if gated else "", verdict)
    console.print(totals)
    for n in c.notes:
        console.print(f"note: {n}", highlight=False)
