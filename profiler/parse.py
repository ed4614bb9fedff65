"""Per-op costs from a run: instruction counts from the plugin marks (QEMU boards) or
CLOCK_MONOTONIC nanoseconds printed by the harness (host/Linux). Strict: a malformed or
truncated measurement raises ProfileError naming what is wrong."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

MARK_OP, MARK_RUN = 0, 1  # index of each marker symbol in MARK_SYMBOLS
MARK_SYMBOLS = ("ecc_mark_op", "ecc_mark_run")
_NS_RE = re.compile(r"ECC_OP_NS (\d+) (\d+) (-?\d+)")


class ProfileError(Exception):
    """The harness output cannot be turned into per-op costs."""


@dataclass(frozen=True)
class OpCosts:
    """Per-op cost in `unit` ('instructions' or 'us'), total for one inference of sample 0."""

    unit: str
    per_op: tuple[float, ...]
    total: float
    exact: bool  # True for exact instruction counts (one run is enough)


def from_marks(marks: list[tuple[int, int]], n_ops: int) -> OpCosts:
    """Plugin marks: two run marks around an unprofiled run of sample 0, then two op marks per op
    around the profiled run. Instructions of op k = count at its end mark - count at its begin mark."""
    runs = [c for w, c in marks if w == MARK_RUN]
    ops = [c for w, c in marks if w == MARK_OP]
    if len(runs) != 2:
        raise ProfileError(f"expected 2 run marks, got {len(runs)} (the run stopped early?)")
    if len(ops) != 2 * n_ops:
        raise ProfileError(f"expected {2 * n_ops} op marks for {n_ops} ops, got {len(ops)} (truncated run?)")
    per = tuple(float(ops[2 * k + 1] - ops[2 * k]) for k in range(n_ops))
    return OpCosts("instructions", per, float(runs[1] - runs[0]), True)


def from_clock(stdout: str, n_ops: int) -> OpCosts:
    """Harness lines `ECC_OP_NS <op> <repeat> <ns>` -> per-op median in microseconds."""
    samples: dict[int, list[int]] = {}
    for line in stdout.splitlines():
        if line.startswith("ECC_OP_NS"):
            m = _NS_RE.fullmatch(line.strip())
            if not m:
                raise ProfileError(f"malformed timing line: {line[:80]!r}")
            op, ns = int(m[1]), int(m[3])
            if op >= n_ops or ns < 0:
                raise ProfileError(f"timing line for unknown op or negative time: {line[:80]!r}")
            samples.setdefault(op, []).append(ns)
    if sorted(samples) != list(range(n_ops)) or len({len(v) for v in samples.values()}) > 1:
        raise ProfileError(f"timing lines cover ops {sorted(samples)} of {n_ops} (truncated output?)")
    per = tuple(statistics.median(samples[k]) / 1000.0 for k in range(n_ops))
    return OpCosts("us", per, float(sum(per)), False)
