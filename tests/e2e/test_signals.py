"""SIGTERM (CI, `timeout`) and SIGHUP during a board run are handled like Ctrl-C (issue "hardened
front door", item 7): exit 128 + signal, one line on stderr, no QEMU left running, no temporary
`.OUT.tmp-*` folder, and a previous OUT untouched.

The run is the digits example on mps2-an386 with a frozen guest (EDGECC_DEBUG_HANG_AT_OP) over 12,800
samples, so QEMU is certainly running when the signal arrives and its timeout (~15 s) is far off;
edgecc runs as a real subprocess to receive the signal.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS, DIGITS_YAML, REPO, leftovers

QEMU = "qemu-system-arm"


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the live processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if int(rest[1]) == pid and rest[0] != "Z":
            found.append((int(entry.name), comm))
    return found


def _alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie (a zombie has ended; its parent may not reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc to find the QEMU child")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_during_board_run_cleans_up(need_board, tmp_path, sig):
    need_board("mps2-an386")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".edgecc").write_text("")  # a previous OUT written by edgecc: replaceable, so at risk
    (out / "report.json").write_text('{"previous": true}\n')
    data = tmp_path / "verify_12800.npy"
    np.save(data, np.tile(np.load(DIGITS / "verify.npy"), (400, 1, 1, 1)))
    env = {**os.environ, "EDGECC_DEBUG_HANG_AT_OP": "2", "PYTHONPATH": str(REPO)}
    env.pop("EDGECC_DEBUG_FAULT_AT_OP", None)
    cmd = [sys.executable, "-m", "toolchain.cli", "run", str(DIGITS_YAML), "--board", "mps2-an386",
           "--verify", str(data), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, qemu = time.monotonic() + 120, []
        while not qemu and proc.poll() is None and time.monotonic() < deadline:
            qemu = [p for p, comm in _children(proc.pid) if comm.startswith(QEMU[:15])]  # comm: 15 chars
            time.sleep(0.05)
        assert qemu, f"no {QEMU} child seen (exit {proc.poll()})"
        proc.send_signal(sig)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=60)
        unwound_s = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, f"exit {proc.returncode}; stderr:\n{err}"
    assert err.strip().splitlines() == [f"edgecc: interrupted ({sig.name}); OUT left as it was"], err
    assert "Traceback" not in err
    assert not any(_alive(p) for p in qemu), "QEMU still running after edgecc exited"
    # QEMU is killed at the signal: waiting for it instead would last until the run's timeout (~15 s)
    assert unwound_s < 8, f"edgecc took {unwound_s:.1f} s to exit after {sig.name}"
    assert leftovers(out) == []
    assert sorted(p.name for p in out.iterdir()) == [".edgecc", "report.json"]
    assert (out / "report.json").read_text() == '{"previous": true}\n'
