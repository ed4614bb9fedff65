"""The memory timeline picture: kernel calls on x, arena offsets on y, one rectangle per buffer
(activations blue, scratch orange), the live-set bound and greedy-by-size arena as lines.

Reads only report.json's `memory` section (so the picture can be redrawn from a report) and
draws with matplotlib's object API on the Agg canvas (no pyplot, no global backend state).
Not here: the plan itself (toolchain.memory).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profiler.charts import save_png


def plot_memory(memory: dict[str, Any], op_names: list[str], path: Path) -> Path:
    """Write the timeline of `memory` (report.json's section) as a PNG at `path`; returns path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    bufs = memory["buffers"]
    steps = max((b["last_op"] for b in bufs), default=0) + 1
    fig = Figure(figsize=(max(6.0, min(24.0, 0.35 * steps + 3)), 5.0), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for b in bufs:
        scratch = b["name"].startswith("scratch:")
        ax.add_patch(Rectangle((b["first_op"] - 0.45, b["offset"]), b["last_op"] - b["first_op"] + 0.9, b["size"],
                               facecolor="#f28e2b" if scratch else "#4e79a7", edgecolor="black", linewidth=0.4,
                               alpha=0.85))
    arena, bound, greedy = memory["arena_bytes"], memory["lower_bound_bytes"], memory.get("greedy_by_size_bytes")
    ax.axhline(arena, color="black", linewidth=1.0, label=f"arena {arena:,} B ({memory['planner']})")
    ax.axhline(bound, color="#59a14f", linewidth=1.0, linestyle="--", label=f"live-set bound {bound:,} B")
    if greedy is not None and greedy != arena:
        ax.axhline(greedy, color="#e15759", linewidth=1.0, linestyle=":", label=f"greedy-by-size (TFLM) {greedy:,} B")
    ax.set_xlim(-0.6, steps - 0.4)
    ax.set_ylim(0, max(arena, greedy or 0, 1) * 1.05)
    ax.set_xlabel("kernel call")
    ax.set_ylabel("arena offset (bytes)")
    if op_names and len(op_names) <= 60:
        ax.set_xticks(range(len(op_names)))
        ax.set_xticklabels([n[-18:] for n in op_names], rotation=90, fontsize=6)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black", linewidth=0.4, label=k)
                for k, c in (("activation", "#4e79a7"), ("scratch", "#f28e2b"))]
    ax.legend(handles=handles, loc="upper right", fontsize=8)
    ax.set_title(f"memory timeline: {len(bufs)} buffers, alignment {memory['alignment']} B")
    return save_png(fig, path)
