"""The strict parsers of harness output (profiler/parse.py): plugin marks and measured-timer
lines. Good input gives per-op median/min/max in the report's unit; malformed, duplicated,
missing or truncated lines raise ProfileError saying what and where (and which op was running)."""
from __future__ import annotations

import pytest

from profiler.parse import MARK_OP, MARK_RUN, ProfileError, from_harness, from_marks


def _marks(per_op: list[int], stop_after: int | None = None) -> list[tuple[int, int]]:
    marks, count = [(MARK_RUN, 100), (MARK_RUN, 100 + sum(per_op) + 7)], 1000
    for cost in per_op:
        marks += [(MARK_OP, count), (MARK_OP, count + cost)]
        count += cost + 3
    return marks if stop_after is None else marks[:stop_after]


def test_marks_give_exact_counts():
    c = from_marks(_marks([50, 7, 300]), 3)
    assert c.unit == "instructions" and c.exact and c.runs == 1 and c.timer == "plugin"
    assert c.per_op == (50.0, 7.0, 300.0) == c.per_op_min == c.per_op_max
    assert c.total == 357 + 7


def test_marks_stopping_inside_an_op_name_it():
    with pytest.raises(ProfileError, match=r"op 1 began but never ended") as e:
        from_marks(_marks([50, 7, 300], stop_after=2 + 3), 3)  # run marks, op 0 begin/end, op 1 begin
    assert e.value.op == 1


@pytest.mark.parametrize(("marks", "match"), [
    ([(MARK_RUN, 1)], r"expected 2 run marks, got 1"),
    (_marks([5, 5])[:4], r"expected 4 op marks for 2 ops, got 2"),
])
def test_marks_incomplete(marks, match):
    with pytest.raises(ProfileError, match=match) as e:
        from_marks(marks, 2)
    assert e.value.op == -1


def _harness(values: dict[int, list[int]], runs: list[int], unit: str = "ns", extra: str = "",
             done: bool = True) -> str:
    lines = ["some output", f"ECC_TIMER clock_monotonic unit={unit}{extra} repeats={len(runs)} warmup=2"]
    lines += [f"ECC_OP {op} {r} {v}" for op, vs in values.items() for r, v in enumerate(vs)]
    lines += [f"ECC_RUN {r} {v}" for r, v in enumerate(runs)]
    return "\n".join(lines + (["ECC_DONE samples=3 status=0"] if done else [])) + "\n"


def test_harness_lines_give_median_min_max_in_microseconds():
    c = from_harness(_harness({0: [3000, 1000, 2000], 1: [500, 500, 9000]}, [4000, 6000, 5000]), 2)
    assert c.unit == "us" and not c.exact and c.runs == 3 and c.warmup == 2 and c.timer == "clock_monotonic"
    assert c.per_op == (2.0, 0.5) and c.per_op_min == (1.0, 0.5) and c.per_op_max == (3.0, 9.0)
    assert c.total == 5.0 and c.fallback == ""


def test_systick_ticks_become_instructions_under_icount_else_cycles():
    text = _harness({0: [10, 11, 10]}, [20, 20, 21], unit="ticks").replace("clock_monotonic", "systick")
    c = from_harness(text, 1, insns_per_tick=5.0)
    assert (c.unit, c.per_op, c.per_op_max, c.total, c.factor) == ("instructions", (50.0,), (55.0,), 100.0, 5.0)
    assert from_harness(text, 1).unit == "cycles"  # silicon SysTick counts core clock cycles


def test_fallback_is_reported():
    c = from_harness(_harness({0: [1, 1]}, [2, 2], extra=" fallback=pmu-not-readable"), 1)
    assert c.fallback == "pmu-not-readable" and c.unit == "us"


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda t: t.replace("ECC_OP 1 1 500", "ECC_OP 1 1 5x0"), r"line \d+: malformed ECC_OP line: 'ECC_OP 1 1 5x0'"),
    (lambda t: t.replace("ECC_OP 1 1 500", "ECC_OP 1 1"), r"line \d+: malformed ECC_OP line"),
    (lambda t: t.replace("unit=ns", "unit=furlongs"), r"line 2: malformed ECC_TIMER line"),
    (lambda t: t.replace("ECC_RUN 1 6000", "ECC_RUN 1 6000 7"), r"malformed ECC_RUN line"),
    (lambda t: t.replace("ECC_OP 1 1 500", "ECC_OP 0 1 500"), r"duplicate ECC_OP line"),
    (lambda t: t.replace("ECC_OP 1 1 500", "ECC_OP 9 1 500"), r"unknown op or repeat"),
    (lambda t: t.replace("ECC_OP 1 1 500", "ECC_OP 1 7 500"), r"unknown op or repeat"),
    (lambda t: t.replace("ECC_OP 1 1 500\n", ""), r"truncated measurements: 5 of 6 ECC_OP .*first missing: op 1"),
    (lambda t: t.split("ECC_OP 1 0")[0], r"truncated measurements: 3 of 6 ECC_OP and 0 of 3 ECC_RUN"),
    (lambda t: t.replace("ECC_DONE samples=3 status=0\n", ""), r"no ECC_DONE line after the measurements"),
    (lambda t: t.replace("ECC_TIMER", "ECC_TIMER_X"), r"line \d+: ECC_OP line before the ECC_TIMER line"),
    (lambda t: "\n".join(t.splitlines()[1:2] * 2) + "\n" + t, r"a second ECC_TIMER line"),
    (lambda t: t + "ECC_RUN 0 1\n", r"ECC_RUN line after ECC_DONE"),
    (lambda t: "ECC_DONE samples=0 status=0\n", r"no ECC_TIMER line"),
])
def test_harness_rejects_malformed_or_truncated_output(mutate, match):
    good = _harness({0: [3000, 1000, 2000], 1: [500, 500, 9000]}, [4000, 6000, 5000])
    from_harness(good, 2)
    with pytest.raises(ProfileError, match=match):
        from_harness(mutate(good), 2)


def test_a_line_cut_mid_number_is_caught_by_the_missing_done():
    good = _harness({0: [3000]}, [4000])
    cut = good[: good.index("ECC_RUN 0 4000") + len("ECC_RUN 0 40")]  # the board died while printing
    with pytest.raises(ProfileError, match="no ECC_DONE"):
        from_harness(cut, 1)
