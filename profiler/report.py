"""Join per-op costs, static estimates, the memory plan and the per-op numeric error into the
report (build_report), and write it as report.json, report.md, report.csv and the terminal
tables. Field meanings and units: schema.json beside this file. HTML and PNG: html.py, charts.py.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from profiler import SCHEMA_VERSION
from profiler.findings import flag_lines, flags, kernel_reason_lines
from profiler.json_out import write_json_file
from profiler.numerics import REFERENCE_FLOAT, worst_isolated
from profiler.parse import OpCosts
from profiler.precision import STEP_HEADERS, precision_lines, precision_section, step_rows
from toolchain.ir import Graph
from toolchain.notes import NOTES_KEY

UNIT_WORDS = {"instructions": "instructions", "us": "microseconds", "cycles": "cycles"}
UNTESTED = ("dwt_cyccnt", "pmccntr_el0")  # counters whose code never ran on real silicon here
NUMERIC_FIELDS = ("sqnr_db_isolated", "sqnr_db_cumulative", "max_abs_err_lsb", "max_abs_err_lsb_isolated", "error_at")


def cost_note(costs: OpCosts | None) -> str:
    """How the cost was measured, in words (unit, source, runs)."""
    if costs is None:
        return "no measurement"
    if costs.timer == "plugin":
        return ("exact retired guest instructions counted by the project's QEMU TCG plugin; QEMU has no cycle "
                "model, so these are instruction counts, not cycles; exact, so one run (repeats not needed)")
    source = {"clock_monotonic": "wall-clock microseconds (CLOCK_MONOTONIC)",
              "systick": f"guest instructions derived from SysTick ticks under QEMU -icount ({costs.factor:g} "
                         "instructions per tick, +-1 tick per reading); deterministic but not exact"
              if costs.unit == "instructions" else "core cycles from SysTick (processor clock)",
              "dwt_cyccnt": "core cycles from DWT->CYCCNT (untested on silicon)",
              "pmccntr_el0": "core cycles from the PMU cycle counter PMCCNTR_EL0 (untested on silicon)"}
    text = source.get(costs.timer, f"{costs.unit} from {costs.timer}")
    if costs.fallback:
        text += f" (fallback: {costs.fallback})"
    return f"{text}; median of {costs.runs} timed runs on sample 0 after {costs.warmup} warm-up runs"


def measurement(costs: OpCosts | None) -> dict[str, Any] | None:
    """report.measurement: which timer, exact or not, runs and warm-up."""
    if costs is None:
        return None
    return {"timer": costs.timer, "exact": costs.exact, "runs": costs.runs, "warmup_runs": costs.warmup,
            "statistic": "exact count of one run" if costs.exact else f"median of {costs.runs} runs",
            "fallback": costs.fallback or None, "unit_per_tick": costs.factor if costs.timer == "systick" else None,
            "untested_on_silicon": costs.timer in UNTESTED}


def live_bytes(memory: dict[str, Any], index: int) -> int:
    """Bytes of arena buffers live during kernel call `index` (exact sizes, scratch included)."""
    return sum(b["size"] for b in memory["buffers"] if b["first_op"] <= index <= b["last_op"])


def op_rows(ops: list[dict[str, Any]], costs: OpCosts | None, memory: dict[str, Any] | None = None,
            numerics: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per-op rows with cost (median, min, max), share of the per-op sum, MACs per cost unit,
    live arena bytes and the numeric error fields filled in."""
    total = sum(costs.per_op) if costs else 0.0
    per_num = (numerics or {}).get("ops", {})
    rows = []
    for i, op in enumerate(ops):
        row = dict(op)
        cost = costs.per_op[i] if costs else None
        row["cost"] = cost
        row["cost_min"] = costs.per_op_min[i] if costs and costs.per_op_min else cost
        row["cost_max"] = costs.per_op_max[i] if costs and costs.per_op_max else cost
        row["instructions"] = round(cost) if costs and costs.unit == "instructions" else None
        row["share"] = (cost / total) if costs and total > 0 else None
        row["macs_per_cost"] = (op.get("macs_live", op["macs"]) / cost) if cost else None  # the MACs done
        row["arena_live_bytes"] = live_bytes(memory, i) if memory else None
        row.update({k: per_num.get(op["name"], {}).get(k) for k in NUMERIC_FIELDS})
        rows.append(row)
    return rows


def build_report(*, model: str, model_sha256: str, board: str, costs: OpCosts | None, ops: list[dict[str, Any]],
                 memory: dict[str, Any], lib_sections: dict[str, int], harness_bytes: int,
                 verification: dict[str, Any], status: str, timings: dict[str, float],
                 fault: dict[str, Any] | None = None, generator: str = "",
                 numerics: dict[str, Any] | None = None, weights: dict[str, int] | None = None,
                 graph: Graph | None = None) -> dict[str, Any]:
    """The report.json document (schema_version SCHEMA_VERSION). weights: the byte breakdown of the
    weights section from the emitter (toolchain.codegen.context.weights_breakdown), optional; graph:
    the int8 graph, whose quantize.bias_fit notes become `flags` and numerics.accumulator_notes."""
    unit = costs.unit if costs else None
    flash = sum(lib_sections[k] for k in ("text", "rodata", "weights", "data"))
    rows = op_rows(ops, costs, memory, numerics)
    notes = graph.meta.get(NOTES_KEY, ()) if graph is not None else ()
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": generator,
        "model": model,
        "model_sha256": model_sha256,
        "board": board,
        "status": status,
        "cost_unit": unit,
        "cost_note": cost_note(costs),
        "measurement": measurement(costs),
        "total_cost": costs.total if costs else None,
        "total_instructions": round(costs.total) if costs and unit == "instructions" else None,
        "arena_bytes": memory["arena_bytes"],
        "flash_bytes": flash,
        **weight_fields(flash, lib_sections, weights),
        "ram_bytes": memory["arena_bytes"] + lib_sections["data"] + lib_sections["bss"],
        "harness_bytes": harness_bytes,
        "sections": lib_sections,
        "memory": memory,
        "ops": rows,
        "numerics": {"reference": (numerics or {}).get("reference", REFERENCE_FLOAT),
                     "samples": (numerics or {}).get("samples", 0), "worst_isolated_op": worst_isolated(rows),
                     "accumulator_notes": list(notes)},
        "precision": precision_section(graph),
        "flags": flags(graph, rows, notes) if graph is not None else [],
        "verification": verification,
        "fault": fault,
        "timings_s": timings,
    }


FLASH_DEFINITION = ("flash = the model library's text + rodata + weights section + data (linker map); weights = "
                    "the model's own parameters (int8 weights + int32 biases, int64 for 16x8 ops, as the source model "
                    "stores them, before re-packing); overhead = flash - weights")


def weight_fields(flash: int, sections: dict[str, int], weights: dict[str, int] | None) -> dict[str, Any]:
    """weights_bytes, flash_overhead_bytes and weights_breakdown (bytes) from the emitter's breakdown;
    without one (None) the three are null. The breakdown gains `alignment`: the weights section's
    bytes minus the emitted arrays' (padding between arrays). The emitter's `skipped` (parameters of
    output channels proven constant, not stored) counts in weights_bytes but not in the breakdown,
    which sums to the section: it becomes weights_skipped_bytes (present only when not 0)."""
    if weights is None:
        return {"weights_bytes": None, "flash_overhead_bytes": None, "weights_breakdown": None}
    weights = dict(weights)
    skipped = weights.pop("skipped", 0)
    own = weights["weights"] + weights["biases"] + weights.get("other", 0) + skipped
    breakdown = {**weights, "alignment": sections["weights"] - sum(weights.values())}
    return {"weights_bytes": own, "flash_overhead_bytes": flash - own, "weights_breakdown": breakdown,
            **({"weights_skipped_bytes": skipped} if skipped else {})}


def write_json(report: dict[str, Any], path: Path) -> None:
    write_json_file(report, path)  # strict JSON: a NaN / inf becomes null


CSV_FIELDS = ("index", "name", "op_type", "kernel", "precision", "output_shape", "macs", "macs_live", "macs_skipped",
              "weight_bytes", "act_read_bytes", "act_write_bytes", "cost", "cost_min", "cost_max", "cost_unit", "share",
              "macs_per_cost", "arena_live_bytes", *NUMERIC_FIELDS, "kernel_reason")


def write_csv(report: dict[str, Any], path: Path) -> None:
    """report.csv: one row per op, the report.json op fields (cost in the cost_unit column's unit)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CSV_FIELDS)
        for o in report["ops"]:
            row = {**o, "cost_unit": report["cost_unit"], "output_shape": "x".join(map(str, o["output_shape"]))}
            w.writerow(["" if row.get(k) is None else row.get(k) for k in CSV_FIELDS])


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _cost_digits(report: dict[str, Any]) -> int:
    return 0 if report["cost_unit"] in ("instructions", "cycles") else 2


def table_rows(report: dict[str, Any]) -> list[list[str]]:
    """The cost table as strings: #, name, op, kernel, output shape, MACs, cost, share, MACs/cost."""
    d = _cost_digits(report)
    return [[str(o["index"]), o["name"], o["op_type"], o["kernel"], "x".join(map(str, o["output_shape"])),
             _fmt(o["macs"]), _fmt(o["cost"], d), _fmt(o["share"] * 100 if o["share"] is not None else None) + "%",
             _fmt(o["macs_per_cost"], 2)] for o in report["ops"]]


HEADERS = ["#", "op", "type", "kernel", "output", "MACs", "cost", "share", "MACs/cost"]
DETAIL_HEADERS = ["#", "op", "weights B", "act read B", "act write B", "live arena B", "SQNR iso dB",
                  "SQNR cum dB", "max err LSB", "cost min", "cost max"]


def _sqnr_cell(db: float | None, lsb: float | None) -> str:
    """An SQNR figure; "exact" where the op was compared and no element differs (SQNR null, 0 LSB)."""
    return "exact" if db is None and lsb == 0 else _fmt(db)


def detail_rows(report: dict[str, Any]) -> list[list[str]]:
    """The memory and numerics table: bytes, live arena, SQNR isolated/cumulative, error, spread; the
    error cells of an op that reports its layer's output error (error_at) marked `*`."""
    d = _cost_digits(report)
    return [[str(o["index"]), o["name"], _fmt(o.get("weight_bytes")), _fmt(o.get("act_read_bytes")),
             _fmt(o.get("act_write_bytes")), _fmt(o.get("arena_live_bytes")),
             *(c + ("*" if o.get("error_at") else "") for c in (
                 _sqnr_cell(o.get("sqnr_db_isolated"), o.get("max_abs_err_lsb_isolated")),
                 _sqnr_cell(o.get("sqnr_db_cumulative"), o.get("max_abs_err_lsb")), _fmt(o.get("max_abs_err_lsb")))),
             _fmt(o.get("cost_min"), d), _fmt(o.get("cost_max"), d)] for o in report["ops"]]


def _arena_line(arena: int, m: dict[str, Any]) -> str:
    """Arena vs the live-set bound vs TFLM's greedy-by-size (and the naive sum), in bytes."""
    bound = m["lower_bound_bytes"]
    gap = "= live-set bound" if arena == bound else f"= live-set bound {bound:,} B + {arena - bound:,} B"
    greedy = m.get("greedy_by_size_bytes")
    vs = f"; greedy-by-size (TFLM) {greedy:,} B" if greedy is not None else ""
    if greedy and greedy != arena:
        vs += f" ({greedy - arena:+,} B, {(greedy - arena) / arena:+.1%})"
    return f"arena {arena:,} B {gap}{vs}; naive {m['naive_bytes']:,} B; planner {m['planner']}"


def library_ram_lines(m: dict[str, Any]) -> list[str]:
    """The RAM to reserve for OUT/lib in a user's firmware (memory.library_ram_bytes), in words;
    [] for reports made before the field existed."""
    if m.get("library_ram_bytes") is None:
        return []
    total, arena, stack = m["library_ram_bytes"], m["arena_bytes"], m.get("lib_stack_bytes") or 0
    how = f"stack {stack:,} by -fstack-usage" if m.get("library_ram_stack_figure") == "fstack_usage" \
        else "stack not measured"
    return [f"model library RAM to reserve {total:,} B (arena {arena:,} + data and bss {total - arena - stack:,} "
            f"+ {how}; what OUT/lib needs in your firmware)"]


def worst_line(report: dict[str, Any]) -> str | None:
    """The op with the largest isolated error, in words (None without numerics)."""
    w = (report.get("numerics") or {}).get("worst_isolated_op")
    if not w:
        return None
    return (f"largest isolated error: op {w['index']} {w['name']} ({w['op_type']}): SQNR {w['sqnr_db_isolated']:.1f} dB "
            f"isolated, {_fmt(w['sqnr_db_cumulative'])} dB cumulative, over {report['numerics']['samples']} samples")


def summary_lines(report: dict[str, Any]) -> list[str]:
    """Totals in plain words with units."""
    v, m = report["verification"], report["memory"]
    unit = report["cost_unit"] or "-"
    s = report["sections"]
    lines = [
        (f"board {report['board']}: total {_fmt(report['total_cost'], _cost_digits(report))} {unit} "
         f"per inference ({report['cost_note']})"),
        *library_ram_lines(m),
        _arena_line(report["arena_bytes"], m),
        (f"flash {report['flash_bytes']:,} B (model library: text {s['text']:,} + rodata {s['rodata']:,} + weights "
         f"{s['weights']:,} + data {s['data']:,}); RAM {report.get('ram_bytes', report['arena_bytes']):,} B "
         f"(arena + data + bss); harness {report['harness_bytes']:,} B"),
    ]
    if report.get("weights_bytes") is not None:
        lines.append(flash_line(report))
    if m.get("ram_total_bytes") is not None:
        stack = m.get("lib_stack_bytes")
        lines.append(f"test firmware RAM total {m['ram_total_bytes']:,} B (harness included: arena + data + bss + "
                     "the board's stack and heap)"
                     + (f"; the model library's stack need {stack:,} B (-fstack-usage)" if stack is not None else ""))
        if m.get("stack_high_water_bytes") is not None:
            lines[-1] += (f"; stack high-water mark {m['stack_high_water_bytes']:,} B of the board's "
                          f"{m.get('stack_size_bytes') or 0:,} B (measured on {m['stack_high_water_board']}, "
                          "harness included)")
    if g := m.get("guards"):
        lines.append(f"debug guards on: {g['count']} guards, {g['bytes']:,} B; the arena is {g['cost_bytes']:,} B "
                     f"larger than without them ({g['arena_without_guards_bytes']:,} B)")
    if report["status"] in ("fault", "timeout"):
        lines.append("verification: not done, the run did not complete (see fw/run.log)")
    elif v.get("samples"):
        lines += verification_lines(v)
        if "tflm_bit_exact" in v:  # .tflite models: TFLM on the same samples
            lines.append(_tflm_line(v))
        if v.get("ort_max_abs_diff_lsb") is not None:  # quantized ONNX models: onnxruntime on the same samples
            lines.append(ort_line(v))
    lines += precision_lines(report)
    if worst := worst_line(report):
        lines.append(worst)
    if any(o.get("error_at") for o in report["ops"]):
        lines.append("error figures marked *: an op of a layer rewritten into several (weight zero point) or a "
                     "REQUANTIZE between int8 and int16, measured with its group at the group's output "
                     "(report.json ops[].error_at)")
    lines += kernel_reason_lines(report)
    if report.get("fault"):
        f = report["fault"]
        where = f" in {f['function']}()" if f.get("function") else ""
        if f.get("kind") == "guard":
            where = f": the guard after buffer {f.get('buffer')} was broken"
        lines.append(f"FAULT: {f.get('reason')}{where} while running op {f.get('op')} ({f.get('op_name') or 'none'})")
    return lines + flag_lines(report)  # the flags last: the lines a user reads first


def verification_lines(v: dict[str, Any]) -> list[str]:
    """Bit-exactness and the float agreement of every output, each named: on the verification line
    for a one-output model, one line per output otherwise (reports without `outputs`: output 0's)."""
    head = f"verification vs {v['reference']}: {'bit-exact' if v['bit_exact'] else 'MISMATCH'} on {v['samples']} samples"
    outs = v.get("outputs") or [{"name": None, "top1_agreement": v.get("top1_agreement"), "sqnr_db": v.get("sqnr_db")}]

    def figures(o: dict[str, Any]) -> str:
        if o.get("index_agreement") is not None:  # int32 indices (ARG_MAX): no top-1 or SQNR
            return f"index agreement with float {_fmt(o['index_agreement'], 4)}"
        return f"top-1 agreement with float {_fmt(o.get('top1_agreement'), 4)}, SQNR {_fmt(o.get('sqnr_db'), 1)} dB"
    def named(o: dict[str, Any]) -> str:  # the model file's output name first: the one the user knows
        m = o.get("model_name")
        return repr(o["name"]) if not m or m == o["name"] else f"{m!r} (tensor {o['name']!r})"
    if len(outs) == 1:
        name = f" (output {named(outs[0])})" if outs[0]["name"] else ""
        return [f"{head}; {figures(outs[0])}{name}"]
    return [f"{head}; per output ({len(outs)}):"] + [
        f"  output {k} {named(o)} {'x'.join(map(str, o['shape']))}: {figures(o)}"
        + ("" if o.get("bit_exact") in (True, None) else f"; MISMATCH, max {_fmt(o['max_abs_diff_lsb'])} LSB")
        for k, o in enumerate(outs)]


def flash_line(report: dict[str, Any]) -> str:
    """Flash against the model's own weights, with the definition and the weights section by content."""
    b = report["weights_breakdown"]
    parts = ", ".join(f"{k} {v:,}" for k, v in b.items() if v)
    skipped = report.get("weights_skipped_bytes")
    return (f"flash overhead {report['flash_overhead_bytes']:,} B over the model's weights {report['weights_bytes']:,} B "
            f"({FLASH_DEFINITION}); weights section by content (B): {parts}"
            + (f"; not stored: {skipped:,} B of constant output channels" if skipped else ""))


def ort_line(v: dict[str, Any]) -> str:
    """One line on the onnxruntime comparison of a quantized ONNX run: float simulation and default session."""
    line = (f"onnxruntime (QDQ as float simulation): max {v['ort_max_abs_diff_lsb']} LSB, "
            f"{v['ort_exact_fraction']:.2%} of output values equal")
    if v.get("ort_default_max_abs_diff_lsb") is not None:
        line += (f"; default session (integer QLinear kernels where it fuses, float elsewhere): max {v['ort_default_max_abs_diff_lsb']} LSB, "
                 f"{v['ort_default_exact_fraction']:.2%} equal")
    return line


def _tflm_line(v: dict[str, Any]) -> str:
    """One line on the TFLM comparison of a .tflite run (verification.tflm_bit_exact / tflm)."""
    t = v.get("tflm") or {}
    if v["tflm_bit_exact"] is None:
        return f"TFLM: no comparison ({t.get('error')})"
    if v["tflm_bit_exact"]:
        return f"TFLM ({t.get('reference')}): bit-exact on every sample"
    first = t.get("first_difference") or {}
    where = (f"first differing op {first['op_index']} {first['name']} ({first['op_type']}), max |diff| "
             f"{first['max_abs_diff']}") if "op_index" in first else first.get("note", "")
    return f"TFLM: {t['mismatches']['count']} output elements differ; {where}"


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + ["| " + " | ".join(r) + " |" for r in rows]


def write_markdown(report: dict[str, Any], path: Path) -> None:
    """report.md: summary lines, the cost table and the memory/numerics table."""
    unit = report["cost_unit"] or "no unit"
    out = [f"# edgecc report: {Path(report['model']).name} on {report['board']}", ""]
    out += [f"- {ln}" for ln in summary_lines(report)]
    out += ["", f"## Cost per op (cost in {unit}; share of the per-op sum; MACs per {unit})", ""]
    out += _md_table(HEADERS, table_rows(report))
    out += ["", (f"## Memory and numeric error per op (bytes; SQNR in dB vs the float reference, isolated and "
                 f"cumulative; max abs error in LSB of the op's output scale; cost spread in {unit})"), ""]
    out += _md_table(["op #"] + DETAIL_HEADERS[1:], [[f"#{r[0]}"] + r[1:] for r in detail_rows(report)])
    if steps := step_rows(report):
        out += ["", "## precision auto: the moves to 16x8 (worst isolated int8 error first; held-out figures "
                    "on calibration halves after each move; arena in bytes, cost in the search's estimated unit)", ""]
        out += _md_table(STEP_HEADERS, steps)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _rich_table(title: str, headers: list[str], rows: list[list[str]], width: int) -> Any:
    """A borderless rich table `width` columns wide: every column as wide as its longest cell,
    the op-name column (index 1) gets the rest and its names are cut in the middle."""
    from rich import box
    from rich.table import Table

    widths = [max([len(r[i]) for r in rows] + [max(len(w) for w in h.split())]) for i, h in enumerate(headers)]
    widths[1] = max(12, min(48, width - 2 - (len(headers) - 1) - sum(widths) + widths[1]))
    t = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False, title_justify="left")
    for i, h in enumerate(headers):
        numeric = h not in ("op", "type", "kernel", "output")
        t.add_column(h, justify="right" if numeric else "left", no_wrap=True, overflow="fold",
                     min_width=widths[i], max_width=widths[i])
    for r in rows:
        t.add_row(r[0], squeeze(r[1], widths[1]), *r[2:])
    return t


TERMINAL_DETAIL = ["#", "op", "wgt B", "in B", "out B", "live B", "iso dB", "cum dB", "err LSB", "min", "max"]


def squeeze(name: str, width: int) -> str:
    """`name` cut in the middle to `width` characters (both ends of a layer name carry meaning)."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]


def print_table(report: dict[str, Any]) -> None:
    """The per-op tables on the terminal (rich; fits 100 columns; plain text when not a terminal)."""
    from rich.console import Console

    console = Console(width=max(100, Console().width))
    unit = report["cost_unit"] or "-"
    where = f"{Path(report['model']).name} on {report['board']}"
    per = {"instructions": "instruction", "cycles": "cycle"}.get(unit, unit)
    console.print(_rich_table(f"{where}: cost per op (cost in {unit}, MACs per {per})", HEADERS, table_rows(report),
                              console.width))
    console.print(_rich_table(f"{where}: bytes (weights read, activations in/out, arena live), error vs float "
                              f"(SQNR isolated/cumulative dB, max LSB), cost min/max ({unit})",
                              TERMINAL_DETAIL, detail_rows(report), console.width))
    for ln in summary_lines(report):
        console.print(ln, highlight=False)
