"""The main job on the bundled example (issue 2, "Done when"): `edgecc run
examples/digits/pipeline.yaml` on mps2-an386 (QEMU, instruction counts) and on host (wall clock)
passes bit-exact verification and writes a complete report (point 9) into a complete OUT.

The exact instruction counts on mps2-an386 are committed in expected_counts.json: counts are
deterministic, so a change in the generated code (or the kernels, flags, toolchain) is noticed.
"""
from __future__ import annotations

import json
import math
import re

import pytest
from e2e_helpers import EXPECTED_COUNTS, leftovers

BOARDS = ["mps2-an386", "host"]
OP_FIELDS = ("name", "op_type", "kernel", "output_shape", "macs", "instructions", "share")
SECTION_KEYS = {"text", "rodata", "weights", "data", "bss"}
UPDATE_HINT = (
    "Instruction counts are deterministic, so this means the generated code, a kernel, the compiler "
    "flags or the toolchain changed. If that is intended, update tests/e2e/expected_counts.json on "
    "purpose with the numbers of a fresh run:\n"
    "  edgecc run examples/digits/pipeline.yaml --board mps2-an386 --out /tmp/digits --quiet\n"
    "  then copy total_instructions and [op.instructions for op in ops] from /tmp/digits/report.json\n"
    "and say why in the commit message."
)


@pytest.fixture(params=BOARDS)
def job(request, digits_run):
    return digits_run(request.param)


def test_run_passes(job):
    assert job.code == 0, f"edgecc run exited {job.code}; stderr:\n{job.err}"
    assert "Traceback" not in job.err
    assert job.err == ""
    assert re.search(r"edgecc: PASS: report in .*report\.json", job.out_text)
    assert job.report is not None and job.report["status"] == "pass" and job.report["fault"] is None


def test_out_is_complete_and_nothing_left_beside_it(job):
    out = job.out
    for rel in ("lib/model.c", "lib/model.h", "lib/weights.c", "lib/edgecc.mk", "fw/main.c",
                "fw/firmware.elf", "fw/run.log", "report.json", "report.md"):
        assert (out / rel).is_file(), f"missing OUT/{rel}"
    assert leftovers(out) == [], f"temporary folders left beside OUT: {leftovers(out)}"


def test_host_prints_the_table(digits_run):
    job = digits_run("host")  # the host run is not --quiet
    for header in ("MACs", "share", "kernel"):
        assert header in job.out_text
    for op in job.report["ops"]:
        assert op["op_type"][:10] in job.out_text


def test_report_fields(job):
    r = job.report
    board = r["board"]
    assert isinstance(r["schema_version"], str) and r["schema_version"]
    assert r["model"].endswith("model.onnx")
    assert board in ("mps2-an386", "host")
    assert r["cost_unit"] == ("instructions" if board == "mps2-an386" else "us")

    # memory: the whole arena, the same number as memory.arena_bytes and ECC_ARENA_SIZE in model.h
    assert isinstance(r["arena_bytes"], int) and r["arena_bytes"] > 0
    assert r["arena_bytes"] == r["memory"]["arena_bytes"]
    assert r["arena_bytes"] >= r["memory"]["lower_bound_bytes"] > 0
    model_h = (job.out / "lib" / "model.h").read_text()
    assert re.search(rf"#define ECC_ARENA_SIZE {r['arena_bytes']}u\b", model_h), "report arena != model.h"

    # flash = text + rodata + weights + data of the library objects; the harness counted apart
    assert set(r["sections"]) == SECTION_KEYS
    assert all(isinstance(v, int) and v >= 0 for v in r["sections"].values())
    assert r["sections"]["text"] > 0 and r["sections"]["weights"] > 0
    assert r["flash_bytes"] == sum(r["sections"][k] for k in ("text", "rodata", "weights", "data")) > 0
    assert isinstance(r["harness_bytes"], int) and r["harness_bytes"] > 0

    # ops
    ops = r["ops"]
    num_ops = int(re.search(r"#define ECC_NUM_OPS (\d+)", model_h).group(1))
    assert len(ops) == num_ops > 0
    for i, op in enumerate(ops):
        for f in OP_FIELDS:
            assert f in op, f"ops[{i}] has no {f!r}"
        assert isinstance(op["name"], str) and op["name"]
        assert isinstance(op["op_type"], str) and op["op_type"]
        assert isinstance(op["kernel"], str) and op["kernel"]
        assert op["output_shape"] and all(isinstance(d, int) and d > 0 for d in op["output_shape"])
        assert isinstance(op["macs"], int) and op["macs"] >= 0
        assert 0.0 <= op["share"] <= 1.0
        if board == "mps2-an386":
            assert isinstance(op["instructions"], int) and op["instructions"] > 0
        else:
            assert op["instructions"] is None and op["cost"] > 0
    assert sum(op["macs"] for op in ops) > 0
    assert math.isclose(sum(op["share"] for op in ops), 1.0, abs_tol=1e-6)
    assert len({op["name"] for op in ops}) == len(ops), "op names are not unique"

    if board == "mps2-an386":  # entry to return of the run function on sample 0 covers every op
        assert isinstance(r["total_instructions"], int)
        assert r["total_instructions"] >= sum(op["instructions"] for op in ops)
    else:
        assert r["total_instructions"] is None

    v = r["verification"]
    assert isinstance(v["reference"], str) and v["reference"]
    assert v["bit_exact"] is True and v["mismatches"] is None
    assert v["samples"] == 32
    assert v["top1_agreement"] >= 0.9
    assert v["sqnr_db"] > 25


def test_report_md_has_the_table(job):
    md = (job.out / "report.md").read_text()
    assert md.startswith("# edgecc report: model.onnx on " + job.report["board"])
    assert "| # | op | type | kernel | output | MACs | cost | share | MACs/cost |" in md
    rows = [ln for ln in md.splitlines() if re.match(r"\| \d+ \| ", ln)]
    assert [ln.split(" | ")[1] for ln in rows] == [op["name"] for op in job.report["ops"]]
    assert "bit-exact on 32 samples" in md


def test_digits_instruction_counts_are_the_committed_ones(digits_run):
    r = digits_run("mps2-an386").report
    expected = json.loads(EXPECTED_COUNTS.read_text())
    got_total = r["total_instructions"]
    got_per_op = [op["instructions"] for op in r["ops"]]
    want_total = expected["digits/mps2-an386/total_instructions"]
    want_per_op = expected["per_op"]
    assert got_total == want_total, (
        f"digits on mps2-an386: total_instructions {got_total} != committed {want_total} "
        f"({got_total - want_total:+d}).\n{UPDATE_HINT}")
    assert got_per_op == want_per_op, (
        "digits on mps2-an386: per-op instructions changed:\n"
        + "\n".join(f"  op {i} {op['name']}: {g} (committed {w})" for i, (op, g, w) in
                    enumerate(zip(r["ops"], got_per_op, want_per_op)) if g != w)
        + (f"\n  op count {len(got_per_op)} (committed {len(want_per_op)})" if len(got_per_op) != len(want_per_op)
           else "")
        + f"\n{UPDATE_HINT}")

