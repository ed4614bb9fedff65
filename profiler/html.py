"""report.html: one self-contained page (no script, no external file, opens offline) with the
summary, four inline SVG charts and the per-op table, rendered from report.json's content.

Charts: per-op cost bars (one <rect class="cost-bar" id="cost-bar-K"> per op), cumulative cost,
the memory timeline (one rect per arena buffer) and per-layer SQNR (isolated and cumulative
bars). Geometry is computed here as plain view data (Chart); templates/report.html.j2 only
loops and prints. Not here: the PNG pictures (charts.py, matplotlib).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiler.report import summary_lines

W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 300, 70, 20, 30, 50  # px of the SVG viewBox and its margins
COLORS = {"cost": "#4e79a7", "cum": "#e15759", "act": "#4e79a7", "scratch": "#f28e2b", "isolated": "#59a14f",
          "cumulative": "#edc948", "worst": "#e15759", "bound": "#59a14f", "arena": "#000000"}


@dataclass
class Chart:
    """One SVG chart as data: rectangles, polylines and horizontal rules in viewBox pixels."""

    id: str
    title: str
    y_label: str
    x_label: str = "op (kernel call index; hover for the name)"
    width: int = W
    height: int = H
    rects: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    xticks: list[tuple[float, str]] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)

    @property
    def plot(self) -> tuple[int, int, int, int]:
        """x0, y0 (top), width, height of the plotting area."""
        return LEFT, TOP, self.width - LEFT - RIGHT, self.height - TOP - BOTTOM


def nice_ticks(hi: float, lo: float = 0.0, n: int = 5) -> list[float]:
    """About n round tick values covering lo..hi (1, 2, 5 times a power of ten)."""
    span = hi - lo if hi > lo else (abs(hi) or 1.0)
    raw = span / n
    step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda s: abs(s - raw))
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(math.ceil((hi - start) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:,.2g}" if abs(v) < 1 else f"{v:,.1f}"


class _Axes:
    """Maps data to viewBox pixels for n ops on x and lo..hi on y."""

    def __init__(self, chart: Chart, n: int, hi: float, lo: float = 0.0) -> None:
        self.c, self.n = chart, max(n, 1)
        ticks = nice_ticks(hi, lo)
        self.lo, self.hi = ticks[0], ticks[-1] if ticks[-1] > ticks[0] else ticks[0] + 1
        x0, y0, w, h = chart.plot
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        chart.yticks = [(self.y(t), _fmt(t)) for t in ticks]
        every = max(1, math.ceil(n / 40))
        chart.xticks = [(self.x(i) + self.slot / 2, str(i)) for i in range(0, n, every)]

    @property
    def slot(self) -> float:
        return self.w / self.n

    def x(self, i: float) -> float:
        return self.x0 + i * self.slot

    def y(self, v: float) -> float:
        return self.y0 + self.h * (1 - (v - self.lo) / (self.hi - self.lo))


def cost_chart(r: dict[str, Any]) -> Chart:
    """Per-op cost bars, one per op (class cost-bar, id cost-bar-<index>)."""
    unit = r["cost_unit"] or "no unit"
    c = Chart("cost-chart", f"Cost per op ({unit})", unit)
    costs = [o["cost"] or 0.0 for o in r["ops"]]
    ax = _Axes(c, len(costs), max(costs, default=0) or 1)
    for i, (o, v) in enumerate(zip(r["ops"], costs, strict=True)):
        share = f", {o['share']:.1%}" if o.get("share") is not None else ""
        c.rects.append({"x": ax.x(i) + ax.slot * 0.1, "y": ax.y(v), "w": ax.slot * 0.8, "h": ax.y(0) - ax.y(v),
                        "cls": "cost-bar", "id": f"cost-bar-{o['index']}", "fill": COLORS["cost"],
                        "title": f"op {o['index']} {o['name']} ({o['op_type']}, {o['kernel']}): {_fmt(v)} {unit}{share}"})
    return c


def cumulative_chart(r: dict[str, Any]) -> Chart:
    """Running sum of the per-op costs after each op, as a step line with one point per op."""
    unit = r["cost_unit"] or "no unit"
    c = Chart("cumulative-chart", f"Cumulative cost ({unit})", unit)
    total, points = 0.0, []
    ax_total = sum(o["cost"] or 0.0 for o in r["ops"])
    ax = _Axes(c, len(r["ops"]), ax_total or 1)
    for i, o in enumerate(r["ops"]):
        points.append((ax.x(i), ax.y(total)))
        total += o["cost"] or 0.0
        points.append((ax.x(i + 1), ax.y(total)))
        c.rects.append({"x": ax.x(i + 1) - 2.5, "y": ax.y(total) - 2.5, "w": 5, "h": 5, "cls": "cum-point",
                        "id": f"cum-point-{o['index']}", "fill": COLORS["cum"],
                        "title": f"after op {o['index']} {o['name']}: {_fmt(total)} {unit}"})
    c.lines.append({"points": " ".join(f"{x:.1f},{y:.1f}" for x, y in points), "stroke": COLORS["cum"],
                    "cls": "cum-line"})
    return c


def memory_chart(r: dict[str, Any]) -> Chart:
    """Arena offsets over kernel calls: one rect per buffer, the arena size and live-set bound."""
    m = r["memory"]
    c = Chart("memory-chart", f"Memory timeline (arena {m['arena_bytes']:,} B, {m['planner']})", "arena offset (bytes)")
    top = max(m["arena_bytes"], m.get("greedy_by_size_bytes") or 0, 1)
    ax = _Axes(c, len(r["ops"]), top)
    for b in m["buffers"]:
        scratch = b["name"].startswith("scratch:")
        y1, y2 = ax.y(b["offset"] + b["size"]), ax.y(b["offset"])
        c.rects.append({"x": ax.x(b["first_op"]) + ax.slot * 0.05, "y": y1, "w": ax.slot * (b["last_op"] - b["first_op"] + 0.9),
                        "h": max(y2 - y1, 0.5), "cls": "mem-buf", "id": "",
                        "fill": COLORS["scratch" if scratch else "act"],
                        "title": f"{b['name']}: {b['size']:,} B at offset {b['offset']:,}, ops {b['first_op']}..{b['last_op']}"})
    arena, bound = m["arena_bytes"], m["lower_bound_bytes"]
    c.rules.append({"y": ax.y(arena), "stroke": COLORS["arena"], "dash": "",
                    "label": f"arena {arena:,} B" + (" = live-set bound" if arena == bound else "")})
    if bound != arena:
        c.rules.append({"y": ax.y(bound), "stroke": COLORS["bound"], "dash": "4 3", "label": f"live-set bound {bound:,} B"})
    c.legend = [(COLORS["act"], "activation"), (COLORS["scratch"], "scratch")]
    return c


def sqnr_chart(r: dict[str, Any]) -> Chart:
    """Per-layer SQNR (dB), isolated and cumulative bars side by side; the worst layer in red."""
    c = Chart("sqnr-chart", "SQNR per op vs the float reference (dB; higher is better)", "dB")
    vals = [v for o in r["ops"] for v in (o.get("sqnr_db_isolated"), o.get("sqnr_db_cumulative")) if v is not None]
    ax = _Axes(c, len(r["ops"]), max(vals, default=1), min(0.0, min(vals, default=0)))
    worst = ((r.get("numerics") or {}).get("worst_isolated_op") or {}).get("index")
    for i, o in enumerate(r["ops"]):
        for k, (key, way) in enumerate((("sqnr_db_isolated", "isolated"), ("sqnr_db_cumulative", "cumulative"))):
            v = o.get(key)
            if v is None:
                continue
            fill = COLORS["worst"] if way == "isolated" and o["index"] == worst else COLORS[way]
            c.rects.append({"x": ax.x(i) + ax.slot * (0.1 + 0.4 * k), "y": ax.y(max(v, 0)), "w": ax.slot * 0.4,
                            "h": abs(ax.y(0) - ax.y(v)), "cls": f"sqnr-bar sqnr-{way}", "id": f"sqnr-{way}-{o['index']}",
                            "fill": fill, "title": f"op {o['index']} {o['name']}: {v:.1f} dB ({way})"})
    c.legend = [(COLORS["isolated"], "isolated"), (COLORS["cumulative"], "cumulative"), (COLORS["worst"], "largest isolated error")]
    return c


def write_html(report: dict[str, Any], path: Path) -> None:
    """report.html beside report.json: summary, the four charts and the per-op table, offline."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(str(Path(__file__).resolve().parent / "templates")), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    charts = [cost_chart(report), cumulative_chart(report), memory_chart(report), sqnr_chart(report)]
    text = env.get_template("report.html.j2").render(r=report, charts=charts, summary=summary_lines(report),
                                                      name=Path(report["model"]).name)
    path.write_text(text, encoding="utf-8")
