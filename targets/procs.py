"""The child processes (QEMU, the board's ELF, gcc) this process is running, each in its own
process group, so that an interrupted edgecc can end them all at once (`kill_all`).

Runs wait for their child in worker threads; a signal is handled in the main thread, which cannot
interrupt those waits. The signal handler therefore kills every registered group itself: the
waits then return at once, and the unwinding main thread finds no worker left blocked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_LOCK = threading.Lock()
_LIVE: set[int] = set()  # process-group ids of running children (each child leads its own group)
_closing = False  # set by kill_all: children started afterwards (queued compiles) are killed at once


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone (PermissionError: a reaped zombie's group on some kernels)


@contextmanager
def spawned(cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
            stdin: int | None = subprocess.DEVNULL) -> Iterator[subprocess.Popen[bytes]]:
    """Start `cmd` in a new session (its own process group) with stdout/stderr piped; the group is
    registered while the block runs and SIGKILLed when the block is left by any exception (an
    interrupt included), so no emulator or compiler outlives the caller's unwinding.
    Raises FileNotFoundError / PermissionError from Popen as they are."""
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    with _LOCK:
        _LIVE.add(proc.pid)
    if _closing:
        _killpg(proc.pid)
    try:
        yield proc
    except BaseException:
        _killpg(proc.pid)
        proc.communicate()  # reap it and close the pipes
        raise
    finally:
        with _LOCK:
            _LIVE.discard(proc.pid)


def kill_all() -> int:
    """SIGKILL every registered child process group, and every one started from now on in this
    process; returns how many were running. Safe in a signal handler: it takes no lock (list() of a
    set runs without releasing the GIL, so no registration interleaves)."""
    global _closing
    _closing = True
    groups = list(_LIVE)
    for pgid in groups:
        _killpg(pgid)
    return len(groups)


def reset() -> None:
    """Allow children again after kill_all (a new command in the same process, e.g. in tests)."""
    global _closing
    _closing = False
