"""The report's account of activation precision: which ops compute in 16x8 (int16 activations, int8
weights, int64 biases) and, under `precision: auto`, what the search chose and what each move cost.

report.json `precision` is graph.meta["precision"] as the quantizer wrote it (quantize.precision
precision_meta; quantize.precision_search for auto): mode (int8 / int16 / auto, or "model" for a
quantized model's own types), int16_ops, requantize_ops, io_dtypes, and for auto the search record
(target, budgets, start, steps[], final, stopped). Per op, ops[].precision says int8 or int16.
Here: that section as is, its terminal line and its report.md table. Not here: the choice itself.
"""
from __future__ import annotations

from typing import Any

from toolchain.ir import Graph


def precision_section(graph: Graph | None) -> dict[str, Any] | None:
    """report.json `precision` (None without a graph or a record: reports of older builds)."""
    return None if graph is None else graph.meta.get("precision")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def precision_lines(report: dict[str, Any]) -> list[str]:
    """One terminal / report.md line on the precision: nothing for an all-int8 graph."""
    p = report.get("precision") or {}
    ops = report.get("ops") or []
    n16 = sum(1 for o in ops if o.get("precision") == "int16")
    if not p or (p.get("mode") in ("int8", "model") and not n16):
        return []
    layers = len(p.get("int16_ops") or ())
    io = ", ".join(f"{k} {v}" for k, v in (p.get("io_dtypes") or {}).items())
    head = (f"{layers} layer(s) in 16x8 (int16 activations, int8 weights, int64 biases), "
            f"{p.get('requantize_ops', 0)} REQUANTIZE between int8 and int16; I/O: {io}")
    if p.get("mode") != "auto":
        who = {"int16": "precision int16", "model": "precision: the model's own"}.get(p.get("mode"), "precision")
        return [f"{who}: {head}"]
    a = p.get("auto") or {}
    s, f = a.get("start") or {}, a.get("final") or {}
    if not f:
        return [f"precision auto: int8 ({a.get('stopped')})"]
    took = sum(1 for st in a.get("steps") or () if st.get("taken"))
    arena = f.get("arena_bytes", 0) - s.get("arena_bytes", 0)
    return [f"precision auto: {head}; {took} move(s), {a.get('stopped')}; held-out top-1 agreement "
            f"{_pct(s.get('agreement'))} -> {_pct(f.get('agreement'))}, SQNR {s.get('sqnr_db')} -> "
            f"{f.get('sqnr_db')} dB; arena {arena:+,} B, cost x{f.get('cost_ratio')} ({a.get('cost_unit')})"]


STEP_HEADERS = ["op", "isolated dB (int8)", "moved", "taken", "agreement", "SQNR dB", "judged gain dB",
                "arena +B", "cost +", "why not"]


def step_rows(report: dict[str, Any]) -> list[list[str]]:
    """precision auto's moves as table rows (report.md): the op ranked, its isolated int8 SQNR, how many
    ops the move put in 16x8, taken or not, the held-out figures after it, its arena and cost deltas."""
    a = (report.get("precision") or {}).get("auto") or {}
    rows = []
    for st in a.get("steps") or ():
        def val(key: str, fmt: str = "{}") -> str:
            return "-" if st.get(key) is None else fmt.format(st[key])
        rows.append([st["op"], val("isolated_sqnr_db", "{:.2f}"), str(len(st.get("moved") or ())),
                     "yes" if st.get("taken") else "no", _pct(st.get("agreement")), val("sqnr_db", "{:.2f}"),
                     val("sqnr_gain_db", "{:+.3f}"), val("arena_bytes_delta", "{:+,}"), val("cost_delta", "{:+,}"),
                     st.get("why") or ""])
    return rows
