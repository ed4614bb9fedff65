"""A sweep over boards (`edgecc run|build ... --board a,b,c` or `--board all`): OUT/summary.json (schema:
summary.schema.json beside this file) and the side-by-side terminal table (one column per board:
status, total cost, MACs per cost unit, arena, flash, RAM, SQNR, then the cost of every op, matched by name).

The exit status of a sweep is the worst of its boards: 4 (internal error) > 3 (fault/timeout) > 2 (the board could not
be built, e.g. the model does not fit) > 1 (mismatch or gate) > 0. Not here: running the boards.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profiler.json_out import write_json_file
from profiler.report import squeeze

SUMMARY_VERSION = "1.0"
MAX_OP_ROWS = 40  # per-op rows in the terminal table; longer models: see each board's report


def board_entry(board: str, exit_code: int, report: dict[str, Any] | None, error: str | None = None) -> dict[str, Any]:
    """summary.json's entry for one board (from its report, or the error that stopped it); a sweep adds
    the unit's name, matrix values and model (toolchain.units)."""
    if report is None:
        return {"board": board, "status": "error", "exit_code": exit_code, "error": error, "report": None,
                "cost_unit": None, "total_cost": None, "macs": None, "macs_per_cost": None, "arena_bytes": None,
                "flash_bytes": None, "ram_bytes": None, "bit_exact": None, "sqnr_db": None}
    macs = sum(o["macs"] for o in report["ops"])
    total = report["total_cost"]
    v = report["verification"]
    return {"board": board, "status": report["status"], "exit_code": exit_code, "error": None,
            "report": f"{board}/report.json", "cost_unit": report["cost_unit"], "total_cost": total, "macs": macs,
            "macs_per_cost": sum(o.get("macs_live", o["macs"]) for o in report["ops"]) / total if total else None,
            "arena_bytes": report["arena_bytes"],
            "flash_bytes": report["flash_bytes"], "ram_bytes": report.get("ram_bytes"),
            "bit_exact": v.get("bit_exact"), "sqnr_db": v.get("sqnr_db")}


def build_entry(board: str, build: Any) -> dict[str, Any]:
    """summary.json's entry for one board of `edgecc build` (a toolchain.pipeline.Build; nothing ran):
    status built, the planned arena and the library's flash and RAM in bytes (as report.json counts
    them), every measured field null."""
    lib = build.firmware.lib
    return {"board": board, "status": "built", "exit_code": 0, "error": None, "report": None,
            "cost_unit": None, "total_cost": None, "macs": None, "macs_per_cost": None,
            "arena_bytes": build.plan.arena_bytes, "flash_bytes": lib.text + lib.rodata + lib.weights + lib.data,
            "ram_bytes": build.plan.arena_bytes + lib.data + lib.bss, "bit_exact": None, "sqnr_db": None}


def summary(model: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary.json document; exit_code is the worst of the boards'."""
    return {"schema_version": SUMMARY_VERSION, "model": model, "boards": entries,
            "exit_code": max((e["exit_code"] for e in entries), default=0)}


def write_summary(doc: dict[str, Any], path: Path) -> None:
    write_json_file(doc, path)  # strict JSON: a NaN / inf becomes null


def _f(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def print_sweep(doc: dict[str, Any], reports: dict[str, dict[str, Any]]) -> None:
    """One table, boards side by side; each board's cost in its own unit (named in the header)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    entries = doc["boards"]
    t = Table(title=f"{Path(doc['model']).name}: boards side by side (cost in each board's unit: insns = "
                    "instructions, us = microseconds)", box=box.SIMPLE_HEAD, collapse_padding=True,
              pad_edge=False, title_justify="left")
    t.add_column("", no_wrap=True, max_width=26, overflow="ellipsis")
    short = {"instructions": "insns", "us": "us", "cycles": "cycles"}
    key = {id(e): e.get("unit") or e["board"] for e in entries}  # a sweep's units; reports are keyed by unit
    for e in entries:
        label = key[id(e)]
        name = label if len(label) < 9 or "-" not in label else label.replace("-", "-\n", 1)
        t.add_column(f"{name}\n({short.get(e['cost_unit'], '-')})", justify="right", overflow="fold")
    digits = {key[id(e)]: 2 if e["cost_unit"] == "us" else 0 for e in entries}
    rows = [("status", lambda e: e["status"]),
            ("total cost", lambda e: _f(e["total_cost"], digits[key[id(e)]])),
            ("MACs per cost unit", lambda e: _f(e["macs_per_cost"], 2)),
            ("arena B", lambda e: _f(e["arena_bytes"])),
            ("flash B", lambda e: _f(e["flash_bytes"])),
            ("RAM B", lambda e: _f(e["ram_bytes"])),
            ("output SQNR dB", lambda e: _f(e["sqnr_db"], 1))]
    for label, get in rows:
        t.add_row(label, *(get(e) for e in entries))
    ops = next((r["ops"] for r in reports.values()), [])
    if 0 < len(ops) <= MAX_OP_ROWS:
        t.add_section()
        costs = {b: {o["name"]: o["cost"] for o in r["ops"]} for b, r in reports.items()}  # orders may differ
        for o in ops:
            t.add_row(squeeze(o["name"], 26), *(_f(costs.get(key[id(e)], {}).get(o["name"]), digits[key[id(e)]])
                                                 for e in entries))
    console = Console(width=max(100, Console().width))
    console.print(t)
    for e in entries:
        if e["error"]:
            console.print(f"{key[id(e)]}: error: {e['error']}", highlight=False)
