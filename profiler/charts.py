"""PNG pictures of a report (matplotlib object API on the Agg canvas, no pyplot state): per-op
cost bars, cumulative cost and per-layer SQNR; the memory timeline is memory_plot.py's.

Reads only report.json's content, so the pictures can be redrawn from a report. Not here: the
HTML page (html.py draws its own inline SVG so it needs no image files).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

CHART_FILES = ("cost.png", "cumulative.png", "sqnr.png")


def _figure(n_ops: int, title: str, ylabel: str) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, min(24.0, 0.3 * n_ops + 3)), 4.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("op (kernel call index)")
    ax.grid(axis="y", linewidth=0.3)
    return fig, ax


def save_png(fig: Any, path: Path) -> Path:
    """Lay out (tight) and write `fig` as PNG at `path`; returns path."""
    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine, which makes savefig lay the figure out again in
    # a dry draw first (a third of the drawing time); the layout is final here: the same PNG bytes
    fig.set_layout_engine(None)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def plot_charts(report: dict[str, Any], out_dir: Path) -> list[Path]:
    """Write cost.png, cumulative.png and sqnr.png into out_dir; returns their paths."""
    ops, unit = report["ops"], report["cost_unit"] or "no unit"
    x = list(range(len(ops)))
    costs = [o["cost"] or 0.0 for o in ops]
    fig, ax = _figure(len(ops), f"cost per op on {report['board']} ({unit})", unit)
    ax.bar(x, costs, color="#4e79a7")
    paths = [save_png(fig, out_dir / CHART_FILES[0])]

    fig, ax = _figure(len(ops), f"cumulative cost on {report['board']} ({unit})", unit)
    running = [sum(costs[: i + 1]) for i in x]
    ax.step([-0.5, *[i + 0.5 for i in x]], [0.0, *running], where="pre", color="#e15759")
    paths.append(save_png(fig, out_dir / CHART_FILES[1]))

    fig, ax = _figure(len(ops), "SQNR per op vs the float reference (dB)", "dB")
    for k, (key, color, label) in enumerate((("sqnr_db_isolated", "#59a14f", "isolated"),
                                             ("sqnr_db_cumulative", "#edc948", "cumulative"))):
        pts = [(i - 0.2 + 0.4 * k, o[key]) for i, o in enumerate(ops) if o.get(key) is not None]
        ax.bar([p[0] for p in pts], [p[1] for p in pts], width=0.4, color=color, label=label)
    worst = ((report.get("numerics") or {}).get("worst_isolated_op") or {})
    if worst:
        ax.bar([worst["index"] - 0.2], [worst["sqnr_db_isolated"]], width=0.4, color="#e15759",
               label=f"largest isolated error: {worst['name'][-30:]}")
    ax.legend(fontsize=8, loc="lower right")
    paths.append(save_png(fig, out_dir / CHART_FILES[2]))
    return paths
