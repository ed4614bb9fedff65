"""Per-op costs from a run, parsed strictly from what the harness (c_templates/main.c.j2) left:

* plugin boards: the tcount plugin's marks, two run marks around an unprofiled run of sample 0
  and two op marks per op around a profiled run: exact retired instructions, one run;
* measured timers (clock, systick, pmu): stdout lines
    ECC_TIMER <source> unit=<ns|ticks|cycles>[ fallback=<why>] repeats=<R> warmup=<W>
    ECC_OP <op> <repeat> <value>      (R per op, in the timer's unit)
    ECC_RUN <repeat> <value>          (R whole runs with the hooks off)
  then ECC_DONE; per op the median, min and max over the R repeats.

Any malformed, duplicated, missing or truncated measurement raises ProfileError saying what and
where (and which op was running when the marks stop inside one). Not here: running the board.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

MARK_OP, MARK_RUN = 0, 1  # index of each marker symbol in MARK_SYMBOLS
MARK_SYMBOLS = ("ecc_mark_op", "ecc_mark_run")

_TIMER_RE = re.compile(r"ECC_TIMER (?P<source>[a-z0-9_]+) unit=(?P<unit>ns|ticks|cycles)"
                       r"(?: fallback=(?P<fallback>[a-z0-9-]+))? repeats=(?P<repeats>\d+) warmup=(?P<warmup>\d+)")
_OP_RE = re.compile(r"ECC_OP (?P<op>\d+) (?P<rep>\d+) (?P<value>\d+)")
_RUN_RE = re.compile(r"ECC_RUN (?P<rep>\d+) (?P<value>\d+)")
_TAGS = {"ECC_TIMER": _TIMER_RE, "ECC_OP": _OP_RE, "ECC_RUN": _RUN_RE}


class ProfileError(Exception):
    """The harness output cannot be turned into per-op costs; `op` = the op that was running
    when the measurement stopped, when known (else -1)."""

    def __init__(self, message: str, op: int = -1) -> None:
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class OpCosts:
    """Per-op cost of one inference of sample 0 in `unit` ('instructions', 'cycles' or 'us').

    per_op is the median over `runs` timed runs (exact counts: the one run), per_op_min/_max the
    extremes; total is the median whole run. `timer` names the source that produced them and
    `fallback` why a preferred counter was not used ('' if it was).
    """

    unit: str
    per_op: tuple[float, ...]
    total: float
    exact: bool  # True for exact instruction counts (one run is enough)
    per_op_min: tuple[float, ...] = ()
    per_op_max: tuple[float, ...] = ()
    timer: str = "plugin"
    runs: int = 1
    warmup: int = 0
    fallback: str = ""
    factor: float = 1.0  # report unit per harness unit (e.g. instructions per SysTick tick)


def from_marks(marks: list[tuple[int, int]], n_ops: int) -> OpCosts:
    """Plugin marks: two run marks around an unprofiled run of sample 0, then two op marks per op
    around the profiled run. Instructions of op k = count at its end mark - count at its begin mark."""
    runs = [c for w, c in marks if w == MARK_RUN]
    ops = [c for w, c in marks if w == MARK_OP]
    if len(runs) != 2:
        raise ProfileError(f"expected 2 run marks, got {len(runs)} (the run stopped before the profiled run)")
    if len(ops) != 2 * n_ops:
        if len(ops) < 2 * n_ops and len(ops) % 2 == 1:
            k = len(ops) // 2
            raise ProfileError(f"op {k} began but never ended: {len(ops)} of {2 * n_ops} op marks (the run stopped "
                               f"inside op {k})", op=k)
        raise ProfileError(f"expected {2 * n_ops} op marks for {n_ops} ops, got {len(ops)} (truncated run?)")
    per = tuple(float(ops[2 * k + 1] - ops[2 * k]) for k in range(n_ops))
    return OpCosts("instructions", per, float(runs[1] - runs[0]), True, per, per)


def _unit(raw: str, insns_per_tick: float | None) -> tuple[str, float]:
    """(report unit, factor from the harness unit): ns -> us; SysTick ticks -> instructions under
    QEMU -icount (insns_per_tick given), else core cycles (CLKSOURCE = processor clock)."""
    if raw == "ns":
        return "us", 1e-3
    if raw == "ticks" and insns_per_tick:
        return "instructions", insns_per_tick
    return "cycles", 1.0


def from_harness(stdout: str, n_ops: int, *, insns_per_tick: float | None = None) -> OpCosts:
    """ECC_TIMER / ECC_OP / ECC_RUN lines of a measured-timer harness -> per-op median, min, max."""
    timer = None
    ops: dict[tuple[int, int], int] = {}
    runs: dict[int, int] = {}
    done_after = False
    for lineno, line in enumerate(stdout.splitlines(), 1):
        text = line.strip()
        tag = text.split(" ", 1)[0]
        if tag == "ECC_DONE":
            done_after = True
            continue
        if tag not in _TAGS:
            continue
        m = _TAGS[tag].fullmatch(text)
        if not m:
            raise ProfileError(f"line {lineno}: malformed {tag} line: {text[:80]!r}")
        if done_after:
            raise ProfileError(f"line {lineno}: {tag} line after ECC_DONE: {text[:80]!r}")
        if tag == "ECC_TIMER":
            if timer is not None:
                raise ProfileError(f"line {lineno}: a second ECC_TIMER line")
            timer = m
            continue
        if timer is None:
            raise ProfileError(f"line {lineno}: {tag} line before the ECC_TIMER line")
        reps = int(timer["repeats"])
        rep, value = int(m["rep"]), int(m["value"])
        key = (int(m["op"]), rep) if tag == "ECC_OP" else rep
        if rep >= reps or (tag == "ECC_OP" and key[0] >= n_ops):
            raise ProfileError(f"line {lineno}: {tag} for an unknown op or repeat: {text[:80]!r}")
        table = ops if tag == "ECC_OP" else runs
        if key in table:
            raise ProfileError(f"line {lineno}: duplicate {tag} line: {text[:80]!r}")
        table[key] = value  # type: ignore[index]
    if timer is None:
        raise ProfileError("no ECC_TIMER line: the harness printed no measurement (the run stopped early?)")
    reps = int(timer["repeats"])
    if len(ops) != n_ops * reps or len(runs) != reps:
        missing = next((k for k in range(n_ops) for r in range(reps) if (k, r) not in ops), None)
        where = f"; first missing: op {missing}" if missing is not None else ""
        raise ProfileError(f"truncated measurements: {len(ops)} of {n_ops * reps} ECC_OP and {len(runs)} of {reps} "
                           f"ECC_RUN lines{where}")
    if not done_after:
        raise ProfileError("truncated output: no ECC_DONE line after the measurements")
    unit, f = _unit(timer["unit"], insns_per_tick)
    per = [[ops[(k, r)] * f for r in range(reps)] for k in range(n_ops)]
    return OpCosts(unit, tuple(statistics.median(v) for v in per), statistics.median(runs[r] * f for r in range(reps)),
                   False, tuple(min(v) for v in per), tuple(max(v) for v in per), timer["source"], reps,
                   int(timer["warmup"]), timer["fallback"] or "", f if unit == "instructions" else 1.0)
