"""Which op a run that timed out was in: asked of the still-running guest just before it is killed.

The harness keeps the running op's index in `ecc_current_op`. On hosted boards (native, qemu-user)
the board support's signal handler prints it on a `FAULT:` line: the runner sends SIGUSR1 and
gives the guest a moment to print and exit. On qemu-system boards the runner reads the variable's
word through QEMU's monitor (HMP `xp`, physical address = the symbol's address on these MPU-less
cores) on a unix socket given with -monitor. A guest that cannot answer leaves the op unknown (-1).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

CURRENT_OP_SYMBOL = "ecc_current_op"
ASK_SIGNAL = signal.SIGUSR1  # caught by targets/support/hosted/fault.c
_XP_RE = re.compile(rb"^[0-9a-fA-F]+:\s+(\d+)\s*$", re.MULTILINE)


_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux; QEMU fails to start beyond it


def monitor_args(sock: Path) -> list[str]:
    """qemu-system options for a monitor on unix socket `sock` that nobody needs to connect to; no
    monitor if the path is too long for a socket (a timeout then cannot name its op)."""
    if len(str(sock).encode()) > _SOCKET_PATH_MAX:
        return ["-monitor", "none"]
    return ["-monitor", f"unix:{sock},server=on,wait=off"]


def _until(conn: socket.socket, token: bytes, deadline: float) -> bytes:
    data = b""
    while token not in data:
        conn.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def read_word(sock: Path, address: int, timeout_s: float = 2.0) -> int | None:
    """The signed 32-bit word at physical `address` of the QEMU behind monitor socket `sock`, or None
    if the monitor does not answer within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout_s)
            conn.connect(str(sock))
            _until(conn, b"(qemu) ", deadline)  # the banner and first prompt
            conn.sendall(f"xp /1uw 0x{address:x}\n".encode())
            reply = _until(conn, b"(qemu) ", deadline)
    except OSError:
        return None
    m = _XP_RE.search(reply.replace(b"\r", b""))
    if m is None:
        return None
    word = int(m[1]) & 0xFFFFFFFF
    return word - (1 << 32) if word >> 31 else word


def ask_hosted(proc: subprocess.Popen[bytes], wait_s: float = 3.0) -> tuple[bytes, bytes] | None:
    """Send the guest ASK_SIGNAL (its handler prints the `FAULT:` line with the op and exits) and
    collect its output; None if it did not exit within `wait_s` (the caller kills it)."""
    try:
        proc.send_signal(ASK_SIGNAL)
        return proc.communicate(timeout=wait_s)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        return None
