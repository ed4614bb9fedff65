"""Join per-op costs, static estimates and the memory plan into the report; write report.json
and report.md and print the terminal table. Field meanings: schema.json beside this file."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from profiler import SCHEMA_VERSION
from profiler.parse import OpCosts

COST_NOTES = {
    "instructions": "exact retired guest instructions counted by the project's QEMU TCG plugin; QEMU has no "
                    "cycle model, so these are instruction counts, not cycles",
    "us": "wall-clock microseconds (CLOCK_MONOTONIC), median of the repeats on sample 0",
}


def op_rows(ops: list[dict[str, Any]], costs: OpCosts | None) -> list[dict[str, Any]]:
    """Per-op rows with cost, share of the per-op sum and MACs per cost unit filled in."""
    total = sum(costs.per_op) if costs else 0.0
    rows = []
    for i, op in enumerate(ops):
        row = dict(op)
        cost = costs.per_op[i] if costs else None
        row["cost"] = cost
        row["instructions"] = int(cost) if costs and costs.unit == "instructions" else None
        row["share"] = (cost / total) if costs and total > 0 else None
        row["macs_per_cost"] = (op["macs"] / cost) if cost else None
        rows.append(row)
    return rows


def build_report(*, model: str, model_sha256: str, board: str, costs: OpCosts | None, ops: list[dict[str, Any]],
                 memory: dict[str, Any], lib_sections: dict[str, int], harness_bytes: int,
                 verification: dict[str, Any], status: str, timings: dict[str, float],
                 fault: dict[str, Any] | None = None, generator: str = "") -> dict[str, Any]:
    """The report.json document (schema_version SCHEMA_VERSION)."""
    unit = costs.unit if costs else None
    flash = sum(lib_sections[k] for k in ("text", "rodata", "weights", "data"))
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": generator,
        "model": model,
        "model_sha256": model_sha256,
        "board": board,
        "status": status,
        "cost_unit": unit,
        "cost_note": COST_NOTES.get(unit or "", "no measurement"),
        "total_cost": costs.total if costs else None,
        "total_instructions": int(costs.total) if costs and unit == "instructions" else None,
        "arena_bytes": memory["arena_bytes"],
        "flash_bytes": flash,
        "harness_bytes": harness_bytes,
        "sections": lib_sections,
        "memory": memory,
        "ops": op_rows(ops, costs),
        "verification": verification,
        "fault": fault,
        "timings_s": timings,
    }


def write_json(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The per-op table as strings: #, name, op, kernel, output shape, MACs, cost, share, MACs/cost."""
    digits = 0 if report["cost_unit"] == "instructions" else 2
    return [[str(o["index"]), o["name"], o["op_type"], o["kernel"], "x".join(map(str, o["output_shape"])),
             _fmt(o["macs"]), _fmt(o["cost"], digits), _fmt(o["share"] * 100 if o["share"] is not None else None) + "%",
             _fmt(o["macs_per_cost"], 2)] for o in report["ops"]]


HEADERS = ["#", "op", "type", "kernel", "output", "MACs", "cost", "share", "MACs/cost"]


def _arena_line(arena: int, m: dict[str, Any]) -> str:
    """Arena vs the live-set bound vs TFLM's greedy-by-size (and the naive sum), in bytes."""
    bound = m["lower_bound_bytes"]
    gap = "= live-set bound" if arena == bound else f"= live-set bound {bound:,} B + {arena - bound:,} B"
    greedy = m.get("greedy_by_size_bytes")
    vs = f"; greedy-by-size (TFLM) {greedy:,} B" if greedy is not None else ""
    if greedy and greedy != arena:
        vs += f" ({greedy - arena:+,} B, {(greedy - arena) / arena:+.1%})"
    return f"arena {arena:,} B {gap}{vs}; naive {m['naive_bytes']:,} B; planner {m['planner']}"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """Totals in plain words with units."""
    v, m = report["verification"], report["memory"]
    unit = report["cost_unit"] or "-"
    lines = [
        f"board {report['board']}: total {_fmt(report['total_cost'], 0 if unit == 'instructions' else 2)} {unit} "
        f"per inference ({report['cost_note']})",
        _arena_line(report["arena_bytes"], m),
        f"flash {report['flash_bytes']:,} B (model library); harness {report['harness_bytes']:,} B",
    ]
    if report["status"] in ("fault", "timeout"):
        lines.append("verification: not done, the run did not complete (see fw/run.log)")
    elif v.get("samples"):
        lines.append(f"verification vs {v['reference']}: {'bit-exact' if v['bit_exact'] else 'MISMATCH'} on "
                     f"{v['samples']} samples; top-1 agreement with float {_fmt(v.get('top1_agreement'), 4)}, "
                     f"SQNR {_fmt(v.get('sqnr_db'), 1)} dB")
    if report.get("fault"):
        f = report["fault"]
        where = f" in {f['function']}()" if f.get("function") else ""
        lines.append(f"FAULT: {f.get('reason')}{where} while running op {f.get('op')} ({f.get('op_name') or 'none'})")
    return lines


def write_markdown(report: dict[str, Any], path: Path) -> None:
    """report.md: summary lines and the per-op table."""
    out = [f"# edgecc report: {Path(report['model']).name} on {report['board']}", ""]
    out += [f"- {ln}" for ln in summary_lines(report)]
    out += ["", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    out += ["| " + " | ".join(r) + " |" for r in table_rows(report)]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def print_table(report: dict[str, Any]) -> None:
    """The per-op table on the terminal (rich; plain text when not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{Path(report['model']).name} on {report['board']} (cost in {report['cost_unit']})")
    for h in HEADERS:
        t.add_column(h, justify="right" if h in ("#", "MACs", "cost", "share", "MACs/cost") else "left",
                     overflow="fold")
    for r in table_rows(report):
        t.add_row(*r)
    console = Console(width=max(100, Console().width))
    console.print(t)
    for ln in summary_lines(report):
        console.print(ln, highlight=False)
