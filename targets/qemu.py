"""Run an ELF for a board: natively, under qemu-system-arm (semihosting) or qemu-user.

Owns the emulator command lines, the timeout (kills the whole process group), symbol lookup for
plugin marks (`nm`), and assembling a `RunLog` (fault line, tcount counts). Takes file paths and
knows nothing of the IR or of what the program computes (architecture §3.2).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from targets import hang, procs
from targets.errors import RunError
from targets.plugin import plugin_path
from targets.runlog import (Fault, PluginCounts, RunLog, decode_cfsr, parse_fault, parse_guard, parse_plugin_log,
                            parse_stack)
from targets.target import RunKind, Target, TimeSource

__all__ = ["Fault", "RunLog", "decode_cfsr", "parse_fault", "parse_plugin_log", "run_firmware", "symbol_addresses"]

# Fixed qemu-system options: no display/monitor/UART (semihosting is the console), and semihosting
# file I/O relative to QEMU's working directory ("native" = semihosting calls go to the host).
_SYSTEM_ARGS = ("-nographic", "-serial", "null")  # plus a monitor on a socket (targets.hang)
_PLUGIN_LOAD_ERRORS = ("Failed to load plugin", "plugin requires API version", "does not declare API version")


def function_at(target: Target, elf: Path, address: int) -> str | None:
    """Name of the function whose code contains `address` (the nearest text symbol at or below it,
    via the board's nm; None when nm fails or nothing precedes it). Used to name a faulting PC."""
    try:
        proc = subprocess.run([target.nm, "--defined-only", "-n", str(elf)], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    best = None
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT" and (int(parts[0], 16) & ~1) <= address:
            best = parts[2]
    return best


def symbol_addresses(target: Target, elf: Path, names: Sequence[str]) -> list[int]:
    """Addresses of the functions `names` in `elf`, via the board's nm (bytes, Thumb bit cleared).

    Raises RunError if nm is missing or fails, a symbol is absent, or two names share an address
    (e.g. identical empty marker functions folded by the compiler: the marks would be ambiguous).
    """
    try:
        proc = subprocess.run([target.nm, "--defined-only", str(elf)], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise RunError(f"board '{target.name}': '{target.nm}' not found on PATH") from None
    if proc.returncode != 0:
        raise RunError(f"{target.nm} {elf.name} failed: {proc.stderr.strip()[:200]}")
    table: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table.setdefault(parts[2], int(parts[0], 16) & ~1)  # Thumb functions: LSB marks the state
    missing = [n for n in names if n not in table]
    if missing:
        raise RunError(f"mark symbol(s) {', '.join(missing)} not found in {elf.name}")
    addrs = [table[n] for n in names]
    if len(set(addrs)) != len(addrs):
        raise RunError(f"mark symbols {', '.join(names)} do not have distinct addresses in {elf.name} "
                       "(make each marker noinline/noipa with a distinct body)")  # fmt: skip
    return addrs


def _optional_symbol(target: Target, elf: Path, name: str) -> int | None:
    """The address of `name` in `elf`, or None if nm fails or the symbol is absent."""
    try:
        return symbol_addresses(target, elf, [name])[0]
    except RunError:
        return None


def _escape_opt(value: str) -> str:
    return value.replace(",", ",,")  # QEMU option syntax: a literal comma is written twice


def _command(target: Target, elf: Path, args: Sequence[str], plugin: list[str], monitor: Path) -> list[str]:
    kind = target.run.kind
    if kind is RunKind.NATIVE:
        return [str(elf), *args]
    assert target.run.executable is not None  # guaranteed by validation for emulated kinds
    if kind is RunKind.QEMU_USER:
        return [target.run.executable, *target.run.args, *plugin, str(elf), *args]
    semihosting = "enable=on,target=native"
    if args:  # semihosting command line: argv[0] then the arguments
        semihosting += "".join(f",arg={_escape_opt(a)}" for a in (str(elf), *args))
    # SysTick timing is only deterministic with -icount (qemu-and-toolchains.md 2.6)
    icount = ["-icount", f"shift={target.run.icount_shift}"] if target.run.time_source is TimeSource.SYSTICK else []
    return [target.run.executable, *target.run.args, *_SYSTEM_ARGS, *hang.monitor_args(monitor), *icount,
            "-semihosting-config", semihosting,
            *plugin, "-kernel", str(elf)]  # fmt: skip


def _execute(cmd: list[str], cwd: Path, timeout_s: float,
             ask: Callable[[subprocess.Popen[bytes]], tuple[bytes, bytes] | None]) -> tuple[str, str, int | None, bool]:
    """Run `cmd` in its own process group (registered in targets.procs, so an interrupted edgecc
    kills it too); on timeout `ask` the guest which op it is in, then kill the whole group."""
    try:
        with procs.spawned(cmd, cwd=cwd) as proc:
            try:
                out, err = proc.communicate(timeout=timeout_s)
                return out.decode(errors="replace"), err.decode(errors="replace"), proc.returncode, False
            except subprocess.TimeoutExpired:
                answered = ask(proc)
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # exited after answering
                # the answer holds all the output; otherwise whatever was printed before the kill
                out, err = answered if answered is not None else proc.communicate()
                return out.decode(errors="replace"), err.decode(errors="replace"), None, True
    except FileNotFoundError:
        raise RunError(f"cannot run: '{cmd[0]}' not found") from None
    except PermissionError:
        raise RunError(f"cannot run: '{cmd[0]}' is not executable") from None


def _timeout_fault(stderr: str, asked_op: int | None, timeout_s: float) -> Fault:
    """The Fault of a run killed at its timeout: the op it was in, from the hosted guest's answer to
    hang.ASK_SIGNAL (a FAULT line) or from the word read through the QEMU monitor; -1 if unknown."""
    answer = parse_fault(stderr)
    op = answer.op if answer is not None and answer.signal == hang.ASK_SIGNAL else asked_op
    return Fault(reason="TIMEOUT", op=-1 if op is None else op, kind="timeout",
                 line=f"timeout after {timeout_s:.1f} s")


def _emulator_fault(target: Target, rc: int | None, stderr: str) -> Fault | None:
    """The Fault of an emulated run that QEMU itself stopped (an unknown -cpu, a lockup: an image
    for another core or memory map, a fault inside the fault handler), naming what QEMU said: its
    last message on stderr or in its log. None for native runs, exit 0, or no message (then the
    exit status alone tells, as for any program)."""
    if target.run.kind is RunKind.NATIVE or rc == 0:
        return None
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith(("qemu", target.run.executable or "qemu"))]
    if not said:
        return None
    return Fault(reason="EMULATOR", op=-1, kind="emulator", line=said[-1][:300])


def run_firmware(
    target: Target,
    elf: Path,
    *,
    cwd: Path,
    timeout_s: float,
    marks: Sequence[str] = (),
    args: Sequence[str] = (),
    classes: bool = False,
    regions: Sequence[tuple[int, int]] = (),
) -> RunLog:
    """Run `elf` for `target` in folder `cwd`, killed after `timeout_s` seconds of wall time.

    Native boards run the ELF directly; qemu-system boards use semihosting, so the program's
    fopen() of relative paths reads/writes files in `cwd`; qemu-user boards run under the board's
    emulator and -cpu. On plugin boards the tcount plugin counts retired instructions (exact=1)
    and records each execution of the functions named in `marks` (mark index = position in
    `marks`); on other boards `marks` is ignored. `args` are passed to main (semihosting arg= on
    qemu-system). A fault line from board support becomes `RunLog.fault`. `classes`: the plugin
    also counts instructions per class (targets.target.CYCLE_CLASSES; A64 decoding for qemu-user
    aarch64 boards, Thumb otherwise) and RunLog.mark_classes holds them per mark record. `regions`
    ([start, end) byte ranges; with `classes`): the plugin also counts the data accesses to each, appended
    to the class counts in RunLog.mark_classes (targets.runlog.PluginCounts).

    Raises RunError if the emulator/ELF/nm cannot be run, a mark symbol is missing, the plugin
    cannot be loaded, or the plugin log of a completed run is malformed. A timeout, non-zero exit
    or guest fault is not an error: it is reported in the RunLog.
    """
    elf, cwd = Path(elf).resolve(), Path(cwd).resolve()
    if not elf.is_file():
        raise RunError(f"no such ELF: {elf}")
    use_plugin = target.run.time_source is TimeSource.PLUGIN
    with tempfile.TemporaryDirectory(prefix="edgecc-run-") as tmp:
        log_path = Path(tmp) / "tcount.log"
        plugin: list[str] = []
        if use_plugin:
            addrs = symbol_addresses(target, elf, marks)
            isa = "a64" if "aarch64" in (target.run.executable or "") else "thumb"
            spec = ",".join([str(plugin_path()), *(f"mark=0x{a:x}" for a in addrs), "exact=1",
                             *([f"classes=1,isa={isa}"] if classes else []),
                             *(f"region=0x{lo:x}:0x{hi:x}" for lo, hi in (regions if classes else ()))])
            plugin = ["-plugin", spec, "-d", "plugin", "-D", str(log_path)]
        monitor = Path(tmp) / "monitor.sock"
        cmd = _command(target, elf, args, plugin, monitor)
        asked: list[int | None] = [None]

        def ask(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes] | None:
            if target.run.kind is not RunKind.QEMU_SYSTEM:
                return hang.ask_hosted(proc)
            addr = _optional_symbol(target, elf, hang.CURRENT_OP_SYMBOL)
            asked[0] = None if addr is None else hang.read_word(monitor, addr)
            return None

        start = time.monotonic()
        stdout, stderr, rc, timed_out = _execute(cmd, cwd, timeout_s, ask)
        wall = time.monotonic() - start
        if use_plugin and any(e in stderr for e in _PLUGIN_LOAD_ERRORS):
            line = next(ln for ln in stderr.splitlines() if any(e in ln for e in _PLUGIN_LOAD_ERRORS))
            raise RunError(f"{target.run.executable} could not load the tcount plugin: {line.strip()}")
        counts: PluginCounts | None = None
        log_text = log_path.read_text(errors="replace") if log_path.is_file() else ""
        # -D gets QEMU's own fatal messages too ("qemu: fatal: Lockup: ..."): they are what QEMU said
        said = [ln.strip() for ln in log_text.splitlines() if ln.strip() and not ln.startswith("tcount:")]
        plugin_text = "\n".join(ln for ln in log_text.splitlines() if ln.startswith("tcount:"))
        # A killed or crashed (lockup: abort) QEMU does not reach the plugin's atexit hook: no counts then.
        if use_plugin and not timed_out and plugin_text.strip():
            counts = parse_plugin_log(plugin_text, len(marks), classes, len(regions) if classes else 0)
        if said:  # into stderr, so fw/run.log and the fault line show them
            stderr = stderr + ("" if not stderr or stderr.endswith("\n") else "\n") + "\n".join(said) + "\n"
    return RunLog(
        stdout=stdout,
        stderr=stderr,
        returncode=rc,
        timed_out=timed_out,
        fault=(_timeout_fault(stderr, asked[0], timeout_s) if timed_out
               else parse_fault(stderr) or parse_guard(stdout) or _emulator_fault(target, rc, stderr)),
        total_instructions=counts.total_instructions if counts else None,
        marks=counts.marks if counts else [],
        wall_s=wall,
        command=tuple(cmd),
        mark_classes=counts.mark_classes if counts else [],
        stack=parse_stack(stderr),
    )
