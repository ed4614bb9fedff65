"""Exit 3 names the op on every board kind (issue "hardened front door", item 6): a trap on aarch64
(SIGTRAP under qemu-aarch64, not SIGILL as on x86) and a frozen guest (EDGECC_DEBUG_HANG_AT_OP=k:
the harness spins forever when op k starts) end with a complete OUT whose report.json `fault` names
op k. The run timeout comes from the board's measured speed, so a frozen ResNet-8 over 200 images on
the M4 ends within 60 s (it used to take 18 minutes; checked on an 8-image frozen run, the wait of
its timeout swapped for the 200-image one).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS_YAML, leftovers


def _shared() -> Path | None:
    """The shared models/data folder: the first `shared` beside an ancestor of this repository."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "models" / "mlperf_tiny").is_dir():
            return parent / "shared"
    return None


def _assert_exit3_naming(res, out: Path, op: int, kind: str) -> dict:
    assert "Traceback" not in res.err, res.err
    assert res.code == 3, f"exit {res.code}; stderr:\n{res.err}"
    r = json.loads((out / "report.json").read_text())
    f = r["fault"]
    assert f["kind"] == kind and f["op"] == op, f
    assert f["op_name"] == r["ops"][op]["name"] and f["op_name"]
    for rel in ("fw/run.log", "fw/firmware.elf", "lib/model.c", "report.md"):
        assert (out / rel).is_file(), f"missing OUT/{rel}"
    assert f"op {op} ({r['ops'][op]['name']})" in (out / "report.md").read_text()
    assert leftovers(out) == []
    return f


def test_trap_on_aarch64_is_sigtrap_naming_the_op(edgecc, need_board, monkeypatch, tmp_path):
    need_board("aarch64")
    monkeypatch.setenv("EDGECC_DEBUG_FAULT_AT_OP", "3")
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", "aarch64", "--out", out, "--quiet")
    f = _assert_exit3_naming(res, out, 3, "signal")
    assert f["reason"] == "SIGTRAP"  # brk: the hosted handler must catch it, not only SIGILL
    assert "OP=3" in (out / "fw" / "run.log").read_text()


def test_frozen_hosted_guest_times_out_naming_the_op(edgecc, need_board, monkeypatch, tmp_path):
    """Native host: the runner asks the frozen program (SIGUSR1) which op it is in before killing it."""
    need_board("host")
    monkeypatch.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
    monkeypatch.setenv("EDGECC_DEBUG_HANG_AT_OP", "2")
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    f = _assert_exit3_naming(res, out, 2, "timeout")
    assert f["reason"] == "TIMEOUT" and f["timeout_s"] > 0
    assert (out / "fw" / "run.log").read_text().count("OP=2") == 1  # the guest's answer, logged once


def test_frozen_resnet8_on_m4_ends_within_60s_naming_the_op(edgecc, need_board, monkeypatch, tmp_path):
    """qemu-system: the op is read through the QEMU monitor; hang at op 4. The frozen run here has
    8 CIFAR images (its timeout a few seconds); the 60 s bar is for all 200: the timeout the runner
    computes for the same build over 200 images replaces the 8-image one in the measured wall (the
    references are computed while the board runs, so the rest of the run does not grow with them)."""
    import toolchain.runner as runner

    need_board("mps2-an386")
    shared = _shared()
    if shared is None:
        pytest.skip("no shared/models/mlperf_tiny beside the repository")
    model = shared / "models" / "mlperf_tiny" / "ic_resnet8_int8.tflite"
    images = np.load(shared / "data" / "cifar10_calib_200.npz")["images"]
    assert len(images) == 200
    np.save(tmp_path / "cifar8.npy", images[:8])
    seen = []
    expected = runner.expected_instructions
    monkeypatch.setattr(runner, "expected_instructions", lambda build, n: seen.append((build, n)) or expected(build, n))
    monkeypatch.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
    monkeypatch.setenv("EDGECC_DEBUG_HANG_AT_OP", "4")
    out = tmp_path / "out"
    start = time.monotonic()
    res = edgecc("run", model, "--verify", tmp_path / "cifar8.npy", "--board", "mps2-an386", "--out", out,
                 "--quiet")
    wall = time.monotonic() - start
    f = _assert_exit3_naming(res, out, 4, "timeout")
    (build, samples), = seen
    assert samples == 8 and f["timeout_s"] == round(build.target.run_timeout_s(expected(build, 8)), 1)
    timeout_200 = build.target.run_timeout_s(expected(build, 200))
    assert timeout_200 > f["timeout_s"]
    wall_200 = wall - f["timeout_s"] + timeout_200
    assert wall_200 < 60, f"a frozen 200-image run would take {wall_200:.0f} s to end (timeout {timeout_200:.1f} s)"
