"""What the report points out beyond its tables: flags (ops whose isolated SQNR is below
LOW_SQNR_DB, ops whose bias or accumulator needed the build's attention: quantize.bias_fit's and
quantize.precision's notes) and the costliest ops whose kernel is not the fastest the board has (report.json
`kernel_reason`, toolchain.lower.kernel_reasons), as report.json fields and terminal lines.
Not here: the figures themselves (profiler.numerics, toolchain.lower, quantize.bias_fit).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolchain.ir import Graph
from toolchain.notes import KEPT_INT8, OVERFLOW_RISK, note_subject

LOW_SQNR_DB = 10.0  # an op whose isolated SQNR is below this loses most of its signal to quantization alone
REASON_LINES = 3    # terminal lines for ops that did not get the fastest kernel (costliest first)


def flags(graph: Graph, ops: Sequence[dict[str, Any]], notes: Sequence[str]) -> list[dict[str, Any]]:
    """report.json `flags`: one entry per finding, {index, name, op_type, kind, cause} (index / name /
    op_type null when a note names no op of the report; cause: the note without the op's name).
    kinds: "low_isolated_sqnr" (isolated SQNR below LOW_SQNR_DB dB), "int32_overflow_risk" (the
    model's own int32 bias: its worst-case accumulator exceeds 2^31 - 1, kept as the model has it),
    "bias_refit" (a float model's bias did not fit int32, or for a 16x8 op 2^46, with the calibrated
    weight scale: the scale was raised, quantize.bias_fit.fit_bias, quantize.precision.make_bias64) and
    "kept_int8" (an op chosen for 16x8 whose parameters TFLM's int16 kernels cannot take stayed int8).
    `notes`: the graph's NOTES_KEY lines (quantize.bias_fit, quantize.precision)."""
    out = []
    for o in ops:
        db = o.get("sqnr_db_isolated")
        if db is not None and db < LOW_SQNR_DB and not o.get("error_at"):  # a group's figure: flagged at its output
            out.append({**_op(o), "kind": "low_isolated_sqnr",
                        "cause": f"isolated SQNR {db:.2f} dB < {LOW_SQNR_DB:g} dB: quantizing this op alone loses "
                                 "most of its signal (its input or output grid is too coarse for its values)"})
    by_name = {o["name"]: o for o in ops}
    subjects = [(note_subject(n), by_name.get(n.name)) for n in graph.nodes]
    for line in notes:
        subject, op = next(((s, o) for s, o in subjects if o is not None and f"{s}: " in line), ("", None))
        kind = "int32_overflow_risk" if OVERFLOW_RISK in line else "kept_int8" if KEPT_INT8 in line else "bias_refit"
        out.append({**(_op(op) if op else {"index": None, "name": None, "op_type": None}), "kind": kind,
                    "cause": line.split(f"{subject}: ", 1)[1] if op else line})
    return sorted(out, key=lambda f: (f["index"] is None, f["index"] or 0))


def _op(o: dict[str, Any]) -> dict[str, Any]:
    return {"index": o["index"], "name": o["name"], "op_type": o["op_type"]}


def flag_lines(report: dict[str, Any]) -> list[str]:
    """The flags in words, one line each (the terminal's last lines)."""
    lines = []
    for f in report.get("flags") or ():
        where = f"op {f['index']} {f['name']} ({f['op_type']})" if f["index"] is not None else "model"
        lines.append(f"FLAG {where}: {f['cause']}")
    return lines


def kernel_reason_lines(report: dict[str, Any], limit: int = REASON_LINES) -> list[str]:
    """The `limit` costliest ops (by cost, else MACs) whose kernel is not the fastest the board has,
    with the reason (report.json ops[].kernel_reason); one more line counts the rest."""
    slow = [o for o in report["ops"] if o.get("kernel_reason")]
    slow.sort(key=lambda o: (-(o.get("cost") or 0), -(o.get("macs") or 0), o["index"]))
    lines = []
    for o in slow[:limit]:
        share = f", {o['share']:.1%} of the cost" if o.get("share") is not None else ""
        lines.append(f"kernel of op {o['index']} {o['name']} ({o['op_type']}{share}): {o['kernel']}, "
                     f"not faster because {o['kernel_reason']}")
    if len(slow) > limit:
        lines.append(f"... and {len(slow) - limit} more op(s) without the board's fastest kernel "
                     "(report.json ops[].kernel_reason)")
    return lines
