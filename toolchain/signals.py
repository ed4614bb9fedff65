"""SIGTERM and SIGHUP handled like SIGINT (Ctrl-C): the command unwinds through its normal cleanup.

CI systems and `timeout` stop a job with SIGTERM, a closed terminal sends SIGHUP; Python's default
for both is to die on the spot, leaving the temporary `.OUT.tmp-*` folder and a running QEMU
behind. `install()` makes all three raise `Interrupted` (a KeyboardInterrupt, so every existing
`except KeyboardInterrupt` and `finally` runs) after killing the child process groups
(targets.procs), and `interrupted()` turns it into the one-line message and exit status 128+signum
(130 SIGINT, 129 SIGHUP, 143 SIGTERM).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from targets import procs

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_raised = False  # one exception per process: a second signal must not interrupt the cleanup of the first


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when edgecc receives SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _handler(signum: int, frame: FrameType | None) -> None:
    global _raised
    procs.kill_all()  # the emulator/compilers first: worker threads waiting on them return
    if not _raised:
        _raised = True
        raise Interrupted(signum)


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise `Interrupted` in the main thread (no-op elsewhere:
    signal handlers can only be set from the main thread)."""
    global _raised
    if threading.current_thread() is not threading.main_thread():
        return
    _raised = False
    procs.reset()
    for sig in HANDLED:
        signal.signal(sig, _handler)


def interrupted(exc: KeyboardInterrupt) -> int:
    """Print the one-line message for an interrupt and return its exit status, 128 + signal number
    (a plain KeyboardInterrupt counts as SIGINT)."""
    signum = getattr(exc, "signum", signal.SIGINT)
    name = signal.Signals(signum).name
    print(f"edgecc: interrupted ({name}); OUT left as it was", file=sys.stderr)
    return 128 + int(signum)
