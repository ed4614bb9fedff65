"""Estimated cycles per op (issue 6, point 5): the tcount plugin's instruction classes between the
op marks (targets/plugin/tc_classify.h, decoded from the instruction bytes: approximate) weighted by
the board's `cycle_costs` (boards.yaml, from the core's published timing tables).

An ESTIMATE, labelled so in report.json: no pipeline, branch-prediction or MVE overlap model. It
exists because instruction counts reward tricks that save no cycles (LDM, which the `xfer` class
charges per register; gathers, charged per element). Memory: on a board whose regions have
wait_states, the plugin also counts the data accesses to each such region (one per access QEMU
makes; instruction fetches are not counted: caches / flash accelerators hide most of them), and
each costs the region's wait states on top of its instruction's cycles."""
from __future__ import annotations

from collections.abc import Sequence

from profiler.parse import MARK_OP, MARK_RUN

NOTE = ("estimate: instructions per class (decoded approximately from the instruction bytes by the "
        "tcount plugin) x the board's cycle_costs from published timing tables; no pipeline, memory "
        "or overlap model")
NOTE_WAIT = ("estimate: instructions per class (decoded approximately from the instruction bytes by the "
             "tcount plugin) x the board's cycle_costs from published timing tables, plus the data accesses "
             "to each memory region x its wait_states; no pipeline or overlap model")


def _cycles(delta: Sequence[int], costs: Sequence[float]) -> float:
    return sum(d * c for d, c in zip(delta, costs, strict=True))


def estimate(marks: Sequence[tuple[int, int]], mark_classes: Sequence[Sequence[int]], n_ops: int,
             costs: Sequence[float]) -> tuple[list[float], float] | None:
    """(estimated cycles per op, per run of sample 0) from the plugin marks (the layout of
    profiler.parse.from_marks) and their class counts; `costs`: cycles per class, in the order of
    the class counts (targets.target.CYCLE_CLASSES). None when the classes are missing or the
    marks do not have that layout."""
    if len(mark_classes) != len(marks) or not marks:
        return None
    ops = [cls for (w, _), cls in zip(marks, mark_classes) if w == MARK_OP]
    runs = [cls for (w, _), cls in zip(marks, mark_classes) if w == MARK_RUN]
    if len(ops) != 2 * n_ops or len(runs) != 2:
        return None

    def between(a: Sequence[int], b: Sequence[int]) -> float:
        return _cycles([y - x for x, y in zip(a, b, strict=True)], costs)

    return [between(ops[2 * k], ops[2 * k + 1]) for k in range(n_ops)], between(runs[0], runs[1])


def region_accesses(marks: Sequence[tuple[int, int]], mark_classes: Sequence[Sequence[int]],
                    n_classes: int) -> list[int] | None:
    """Data accesses per counted region over one inference of sample 0: the counts after the
    `n_classes` class counts of the two run marks (targets.runlog.PluginCounts), their difference;
    None when the marks do not have that layout."""
    runs = [cls for (w, _), cls in zip(marks, mark_classes) if w == MARK_RUN]
    if len(mark_classes) != len(marks) or len(runs) != 2:
        return None
    return [b - a for a, b in zip(runs[0][n_classes:], runs[1][n_classes:], strict=True)]


def cycle_fields(report: dict, marks: Sequence[tuple[int, int]], mark_classes: Sequence[Sequence[int]],
                 costs: Sequence[float] | None, wait_states: bool = False) -> dict:
    """report.json additions: ops[*].est_cycles (set in place) and est_cycles_total, est_cycles_note;
    None everywhere when the board has no cycle_costs or the run gave no classes. `costs` may go on
    after the classes with one wait-state count per counted region (`wait_states`: it does)."""
    ops = report.get("ops") or []
    est = estimate(marks, mark_classes, len(ops), costs) if costs else None
    for k, op in enumerate(ops):
        op["est_cycles"] = round(est[0][k]) if est else None
    note = (NOTE_WAIT if wait_states else NOTE) if est else None
    return {"est_cycles_total": round(est[1]) if est else None, "est_cycles_note": note}
