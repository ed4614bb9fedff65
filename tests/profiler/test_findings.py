"""profiler.findings on hand-made report rows: flags for isolated SQNR below 10 dB (not at 10 dB or
for an exact op), notes matched to their op by name, and the terminal's kernel-reason lines: the
costliest ops first, at most three, one line counting the rest."""
from __future__ import annotations

from profiler.findings import flag_lines, flags, kernel_reason_lines
from toolchain.ir import Graph


def _row(i: int, name: str, *, iso=None, cost=None, reason=None) -> dict:
    return {"index": i, "name": name, "op_type": "Conv2D", "sqnr_db_isolated": iso, "cost": cost, "macs": 0,
            "share": None if cost is None else cost / 100, "kernel": "portable", "kernel_reason": reason}


def test_low_isolated_sqnr_is_flagged_below_10_db_only() -> None:
    rows = [_row(0, "a", iso=9.99), _row(1, "b", iso=10.0), _row(2, "c", iso=None)]
    fs = flags(Graph("g", (), {}, (), ()), rows, ())
    assert [(f["index"], f["kind"]) for f in fs] == [(0, "low_isolated_sqnr")] and "9.99 dB < 10 dB" in fs[0]["cause"]
    assert flag_lines({"flags": fs})[0].startswith("FLAG op 0 a (Conv2D): isolated SQNR 9.99 dB")


def test_a_note_naming_no_op_is_a_model_flag() -> None:
    note = "m.onnx: node gone (Conv2D): int32 accumulator can overflow in 1 of 2 channel(s) (...)"
    fs = flags(Graph("g", (), {}, (), ()), [_row(0, "a")], [note])
    assert fs == [{"index": None, "name": None, "op_type": None, "kind": "int32_overflow_risk", "cause": note}]
    assert flag_lines({"flags": fs}) == [f"FLAG model: {note}"]


def test_kernel_reason_lines_costliest_first_at_most_three() -> None:
    rows = [_row(i, f"op{i}", cost=c, reason=r) for i, (c, r) in
            enumerate([(5, "x"), (50, "y"), (1, None), (20, "z"), (30, "w"), (2, "v")])]
    lines = kernel_reason_lines({"ops": rows})
    assert [ln.split(" (")[0] for ln in lines[:3]] == ["kernel of op 1 op1", "kernel of op 4 op4", "kernel of op 3 op3"]
    assert lines[0].endswith("50.0% of the cost): portable, not faster because y")
    assert lines[3].startswith("... and 2 more op(s)") and len(lines) == 4
    assert kernel_reason_lines({"ops": [_row(0, "a", cost=9)]}) == []
