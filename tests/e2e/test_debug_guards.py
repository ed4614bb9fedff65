"""Issue 5 point 8, the debug build: `debug_guards: true` (or --debug-guards) plans a guard after
every arena buffer and one at the arena's end, and the emitted model checks them after every op.
A kernel that writes one byte past its output (the knob EDGECC_DEBUG_OVERRUN_AT_OP=k) is caught
after op k on the board, named in report.json `fault` {kind: guard, op, buffer} with exit 3; a
clean model with guards runs bit-exact and the report says what the guards cost."""
from __future__ import annotations

import re

import pytest
import yaml
from e2e_helpers import DIGITS_YAML, finish, leftovers

OVERRUN_OP = 3


def _run(edgecc, tmp_path, board, overrun=None, flag=True):
    out = tmp_path / "out"
    cfg = DIGITS_YAML
    if not flag:  # the YAML key instead of the flag
        raw = yaml.safe_load(DIGITS_YAML.read_text())
        for key in ("model", "calibration", "verify"):
            if raw.get(key):
                raw[key] = str((DIGITS_YAML.parent / raw[key]).resolve())
        raw["debug_guards"] = True
        cfg = tmp_path / "guards.yaml"
        cfg.write_text(yaml.safe_dump(raw))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
        mp.delenv("EDGECC_DEBUG_OVERRUN_AT_OP", raising=False)
        if overrun is not None:
            mp.setenv("EDGECC_DEBUG_OVERRUN_AT_OP", str(overrun))
        res = edgecc("run", cfg, "--board", board, "--out", out, "--quiet", *(["--debug-guards"] if flag else []))
    return finish(res, out)


@pytest.mark.parametrize("board", ["mps2-an386", "host"])
def test_an_overrun_is_caught_after_the_op_that_made_it(edgecc, need_board, tmp_path, board):
    need_board(board)
    job = _run(edgecc, tmp_path, board, overrun=OVERRUN_OP)
    assert "Traceback" not in job.err, job.err
    assert job.code == 3, f"exit {job.code}; stderr:\n{job.err}"
    r = job.report
    f = r["fault"]
    assert r["status"] == "fault" and f["kind"] == "guard" and f["reason"] == "GUARD"
    assert f["op"] == OVERRUN_OP and f["op_name"] == r["ops"][OVERRUN_OP]["name"]
    # the broken guard is the one right after op k's output: the buffer that ends where op k's output ends
    model_c = (job.out / "lib" / "model.c").read_text()
    ends = [int(v) for v in re.search(r"ecc_output_end\[ECC_NUM_OPS\] = \{ ([\d, ]+) \}", model_c)[1].split(", ")]
    broken = next(b for b in r["memory"]["buffers"] if b["name"] == f["buffer"])
    assert broken["offset"] + broken["size"] == ends[OVERRUN_OP]
    assert broken["first_op"] <= OVERRUN_OP <= broken["last_op"]
    log = (job.out / "fw" / "run.log").read_text()
    assert f"ECC_GUARD OP={OVERRUN_OP} BUFFER={f['buffer']}" in log
    assert "ECC_DONE" not in log  # the run stopped at the broken guard
    md = (job.out / "report.md").read_text()
    assert f"the guard after buffer {f['buffer']} was broken while running op {OVERRUN_OP}" in md
    assert leftovers(job.out) == []


def test_a_clean_model_with_guards_runs_bit_exact_on_qemu(edgecc, need_board, tmp_path, digits_run):
    need_board("mps2-an386")
    job = _run(edgecc, tmp_path, "mps2-an386", flag=False)  # the YAML key
    assert job.code == 0, f"exit {job.code}; stderr:\n{job.err}"
    r = job.report
    assert r["status"] == "pass" and r["verification"]["bit_exact"] is True and r["verification"]["samples"] == 32
    m, g = r["memory"], r["memory"]["guards"]
    assert m["arena_bytes"] == m["lower_bound_bytes"] == r["arena_bytes"]
    assert g["count"] == len(m["buffers"]) + 1 and g["min_bytes"] == 16
    assert g["bytes"] >= 16 * g["count"] and g["cost_bytes"] == m["arena_bytes"] - g["arena_without_guards_bytes"] > 0
    plain = digits_run("mps2-an386").report  # the same model without guards: the arena they cost
    assert "guards" not in plain["memory"] and g["arena_without_guards_bytes"] == plain["arena_bytes"]
    # the checks run between the ops, outside their measured windows: what the inference spends
    # outside the ops grows, the ops themselves cost about the same (code placement aside)
    def between(rep):
        return rep["total_instructions"] - sum(op["instructions"] for op in rep["ops"])

    assert between(r) > between(plain) + 100 * len(r["ops"])
    assert abs(sum(op["instructions"] for op in r["ops"]) / sum(op["instructions"] for op in plain["ops"]) - 1) < 0.01
    model_c = (job.out / "lib" / "model.c").read_text()
    assert model_c.count("if (ecc_guards_check(a, ") == len(r["ops"])
    assert "ecc_guards" not in (digits_run("mps2-an386").out / "lib" / "model.c").read_text()
    assert "debug guards on" in (job.out / "report.md").read_text()
