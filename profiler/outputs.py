"""Every file of a report in OUT: report.json (the schema'd document), report.md, report.csv,
report.html (self-contained, inline SVG charts) and the PNG charts (cost, cumulative, SQNR; the
memory timeline memory.png is drawn with the memory section). Not here: what they contain."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profiler.charts import plot_charts
from profiler.html import write_html
from profiler.json_out import finite_json
from profiler.report import write_csv, write_json, write_markdown

REPORT_FILES = ("report.json", "report.md", "report.csv", "report.html")


def write_outputs(report: dict[str, Any], out_dir: Path) -> list[Path]:
    """Write all report formats and charts into out_dir; returns the paths written. Non-finite
    floats are written as null (JSON) / missing values (the other formats)."""
    report = finite_json(report)  # NaN / inf -> None once, so every format (and its charts) sees the same values
    paths = [out_dir / f for f in REPORT_FILES]
    write_json(report, paths[0])
    write_markdown(report, paths[1])
    write_csv(report, paths[2])
    write_html(report, paths[3])
    return paths + plot_charts(report, out_dir)
