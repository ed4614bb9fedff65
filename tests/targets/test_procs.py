"""targets.procs: an interrupted edgecc ends its children (QEMU, gcc) although worker threads wait on them."""
from __future__ import annotations

import threading
import time

from targets import procs


def test_kill_all_ends_a_child_waited_on_in_another_thread():
    results: list[int | None] = []

    def worker() -> None:
        with procs.spawned(["sleep", "30"]) as proc:
            proc.communicate()
            results.append(proc.returncode)

    t = threading.Thread(target=worker)
    t.start()
    deadline = time.monotonic() + 10
    while not procs._LIVE and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert procs.kill_all() == 1
        t.join(timeout=10)
        assert not t.is_alive() and results == [-9]  # SIGKILLed, not finished after 30 s
        with procs.spawned(["sleep", "30"]) as late:  # started after the interrupt: killed at once
            late.communicate(timeout=10)
        assert late.returncode == -9
    finally:
        procs.reset()
    assert not procs._LIVE
