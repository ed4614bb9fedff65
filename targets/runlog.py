"""What a run produced (`RunLog`) and the strict parsers for its instrumented parts.

Two line formats are parsed here:
* fault lines printed by board support (targets/support/*): Cortex-M
  `FAULT: CFSR=<hex8> HFSR=<hex8> BFAR=<hex8> PC=<hex8> OP=<int>`, `FAULT: unexpected exception OP=<int>`,
  and hosted `FAULT: SIGNAL=<int> ADDR=<hex> OP=<int>`; the harness's `ECC_GUARD OP=<int> BUFFER=<name>`
  (stdout, debug_guards builds: the guard after that buffer was found broken after that op);
* the stack high-water line of board support: `ECC_STACK used=<bytes> painted=<bytes>` (stderr);
* the tcount plugin log (targets/plugin/tcount.c): a `tcount: v2 ...` header and one line per mark.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field

from targets.errors import RunError
from targets.target import CYCLE_CLASSES

# CFSR bit -> name (ARMv7-M/v8-M ARM, B3.2.15). The *VALID bits only qualify MMFAR/BFAR.
_CFSR_BITS = {
    0: "IACCVIOL", 1: "DACCVIOL", 3: "MUNSTKERR", 4: "MSTKERR", 5: "MLSPERR",
    8: "IBUSERR", 9: "PRECISERR", 10: "IMPRECISERR", 11: "UNSTKERR", 12: "STKERR", 13: "LSPERR",
    16: "UNDEFINSTR", 17: "INVSTATE", 18: "INVPC", 19: "NOCP", 20: "STKOF", 24: "UNALIGNED", 25: "DIVBYZERO",
}  # fmt: skip
_HFSR_BITS = {1: "VECTTBL", 31: "DEBUGEVT"}


def decode_cfsr(cfsr: int, hfsr: int = 0) -> str:
    """Short text for a Cortex-M fault, e.g. "UNALIGNED", "NOCP", "IBUSERR/PRECISERR"."""
    names = [name for bit, name in _CFSR_BITS.items() if cfsr >> bit & 1]
    names += [name for bit, name in _HFSR_BITS.items() if hfsr >> bit & 1]
    return "/".join(names) or "UNKNOWN"


@dataclass(frozen=True)
class Fault:
    """A fault reported by the board support code (one `FAULT:` line).

    `reason` is the decoded CFSR ("UNALIGNED"), a signal name ("SIGSEGV"), "UNEXPECTED_EXCEPTION"
    or "GUARD". `kind`: cpu (Cortex-M fault registers), exception, signal (hosted) or guard (a
    debug guard broken after op `op`; `buffer` names the buffer it follows). `op` is the harness's
    ecc_current_op at fault time (-1: outside any op). Registers are None where the board does not
    report them (hosted boards report `signal` and `address` instead).
    """

    reason: str
    op: int
    kind: str | None = None
    buffer: str | None = None
    pc: int | None = None
    cfsr: int | None = None
    hfsr: int | None = None
    bfar: int | None = None
    signal: int | None = None
    address: int | None = None
    line: str = ""

    def as_dict(self) -> dict[str, object]:
        """Plain-dict view (for JSON reports)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


_CM_FAULT_RE = re.compile(
    r"FAULT: CFSR=(?P<cfsr>[0-9a-fA-F]{8}) HFSR=(?P<hfsr>[0-9a-fA-F]{8}) BFAR=(?P<bfar>[0-9a-fA-F]{8}) "
    r"PC=(?P<pc>[0-9a-fA-F]{8}) OP=(?P<op>-?\d+)"
)
_UNEXPECTED_RE = re.compile(r"FAULT: unexpected exception OP=(?P<op>-?\d+)")
_SIGNAL_RE = re.compile(r"FAULT: SIGNAL=(?P<sig>\d+) ADDR=(?P<addr>[0-9a-fA-F]+) OP=(?P<op>-?\d+)")


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


def parse_fault(text: str) -> Fault | None:
    """The first fault line in `text` (stderr of a run), or None if there is none."""
    for line in text.splitlines():
        if "FAULT:" not in line:
            continue
        if m := _CM_FAULT_RE.search(line):
            cfsr, hfsr = int(m["cfsr"], 16), int(m["hfsr"], 16)
            return Fault(reason=decode_cfsr(cfsr, hfsr), op=int(m["op"]), kind="cpu", pc=int(m["pc"], 16),
                         cfsr=cfsr, hfsr=hfsr, bfar=int(m["bfar"], 16), line=line.strip())  # fmt: skip
        if m := _UNEXPECTED_RE.search(line):
            return Fault(reason="UNEXPECTED_EXCEPTION", op=int(m["op"]), kind="exception", line=line.strip())
        if m := _SIGNAL_RE.search(line):
            sig = int(m["sig"])
            return Fault(reason=_signal_name(sig), op=int(m["op"]), kind="signal", signal=sig,
                         address=int(m["addr"], 16), line=line.strip())  # fmt: skip
    return None


_GUARD_RE = re.compile(r"^ECC_GUARD OP=(?P<op>-?\d+) BUFFER=(?P<buffer>.*)$")
_STACK_RE = re.compile(r"^ECC_STACK used=(?P<used>\d+) painted=(?P<painted>\d+)$")


def parse_guard(stdout: str) -> Fault | None:
    """The harness's broken-guard line (debug_guards builds) as a Fault of kind guard, or None."""
    for line in stdout.splitlines():
        if m := _GUARD_RE.match(line.strip()):
            return Fault(reason="GUARD", op=int(m["op"]), kind="guard", buffer=m["buffer"], line=line.strip())
    return None


def parse_stack(stderr: str) -> tuple[int, int] | None:
    """(bytes of stack used at the deepest point, bytes painted) from board support's
    `ECC_STACK used=<n> painted=<n>` line, or None when the board printed none."""
    for line in stderr.splitlines():
        if m := _STACK_RE.match(line.strip()):
            return int(m["used"]), int(m["painted"])
    return None


@dataclass(frozen=True)
class PluginCounts:
    """Parsed tcount log: total retired guest instructions and (mark index, count) in firing order.
    With instruction classes (plugin arg classes=1): the class totals and, per mark record, the
    class counts when it fired, in the order of targets.target.CYCLE_CLASSES."""

    total_instructions: int
    marks: list[tuple[int, int]] = field(default_factory=list)
    class_totals: tuple[int, ...] = ()
    mark_classes: list[tuple[int, ...]] = field(default_factory=list)
    # With regions (plugin args region=LO:HI): the data accesses per region, appended to class_totals
    # and to every mark_classes entry after the CYCLE_CLASSES counts, in the order the regions were given.


_HEADER_RE = re.compile(r"tcount: v2 total_insns=(\d+) marks=(\d+) dropped=(\d+) exact=(\d+)")
_MARK_RE = re.compile(r"tcount: mark (\d+) which=(\d+) insns=(\d+)")
_CLASSES = "".join(rf" {c}=(\d+)" for c in CYCLE_CLASSES)
_CLASSES_RE = re.compile(r"tcount: classes" + _CLASSES)
_MARK_CLASSES_RE = re.compile(r"tcount: mark (\d+) which=(\d+) insns=(\d+)" + _CLASSES + r"(?: acc=([\d,]+))?")
_REGIONS_RE = re.compile(r"tcount: regions acc=([\d,]+)")


def _accesses(text: str | None, n_regions: int, what: str) -> tuple[int, ...]:
    """The region access counts of an `acc=n,n,...` field: exactly n_regions of them (none when 0)."""
    counts = tuple(int(x) for x in text.split(",") if x) if text else ()
    if len(counts) != n_regions:
        raise RunError(f"tcount log: {what}: {len(counts)} region access counts, expected {n_regions}")
    return counts


def _class_counts(m: re.Match, first: int, insns: int, what: str) -> tuple[int, ...]:
    """The class counts of a matched line; the instruction classes (all but xfer) must sum to insns."""
    counts = tuple(int(m[first + k]) for k in range(len(CYCLE_CLASSES)))
    if sum(counts[:-1]) != insns:
        raise RunError(f"tcount log: {what}: the instruction classes sum to {sum(counts[:-1])}, not {insns}")
    return counts


def parse_plugin_log(text: str, n_marks: int, classes: bool = False, n_regions: int = 0) -> PluginCounts:
    """Parse a tcount log strictly. `n_marks` = number of mark addresses passed to the plugin;
    `classes`: the plugin ran with classes=1 (a classes line after the header, class counts on
    every mark line), else the log must have neither. `n_regions`: region= arguments given (with
    classes): a regions line after the classes line and access counts on every mark line.

    Raises RunError on anything unexpected: no or repeated header, unknown lines, a record count
    that disagrees with the header, out-of-order sequence numbers, a mark index >= n_marks,
    decreasing counts, class counts that do not sum to the instructions, or dropped records (the
    plugin ran out of memory).
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not (h := _HEADER_RE.fullmatch(lines[0].strip())):
        raise RunError(f"tcount log: expected a 'tcount: v2 total_insns=...' header, got {lines[:1]!r}")
    total, count, dropped = int(h[1]), int(h[2]), int(h[3])
    if dropped:
        raise RunError(f"tcount log: {dropped} mark records were dropped (too many marks fired)")
    class_totals: tuple[int, ...] = ()
    body = lines[1:]
    if classes:
        if not body or not (c := _CLASSES_RE.fullmatch(body[0].strip())):
            raise RunError(f"tcount log: expected a 'tcount: classes ...' line, got {body[:1]!r}")
        class_totals = _class_counts(c, 1, total, "classes line")
        body = body[1:]
        if n_regions:
            if not body or not (r := _REGIONS_RE.fullmatch(body[0].strip())):
                raise RunError(f"tcount log: expected a 'tcount: regions ...' line, got {body[:1]!r}")
            class_totals += _accesses(r[1], n_regions, "regions line")
            body = body[1:]
    line_re = _MARK_CLASSES_RE if classes else _MARK_RE
    marks: list[tuple[int, int]] = []
    mark_classes: list[tuple[int, ...]] = []
    for i, line in enumerate(body):
        m = line_re.fullmatch(line.strip())
        if not m:
            raise RunError(f"tcount log: malformed line {i + 2 + classes + bool(n_regions)}: {line[:80]!r}")
        seq, which, insns = int(m[1]), int(m[2]), int(m[3])
        if seq != i:
            raise RunError(f"tcount log: mark record {seq} out of order at line {i + 2 + classes}")
        if which >= n_marks:
            raise RunError(f"tcount log: mark index {which} but only {n_marks} marks were requested")
        if insns > total or (marks and insns < marks[-1][1]):
            raise RunError(f"tcount log: mark record {seq} has an impossible count {insns}")
        marks.append((which, insns))
        if classes:
            acc = _accesses(m[4 + len(CYCLE_CLASSES)], n_regions, f"mark record {seq}")
            mark_classes.append(_class_counts(m, 4, insns, f"mark record {seq}") + acc)
    if len(marks) != count:
        raise RunError(f"tcount log: header says {count} mark records but {len(marks)} follow (truncated log?)")
    return PluginCounts(total_instructions=total, marks=marks, class_totals=class_totals, mark_classes=mark_classes)


@dataclass(frozen=True)
class RunLog:
    """Result of one run. `returncode` is None when the run timed out (the process was killed).

    `total_instructions` and `marks` come from the tcount plugin (plugin boards, run not timed
    out); otherwise None and []. `marks` holds (mark index, instructions retired when that mark
    fired) in firing order; the index is the position of the symbol in the `marks` argument.
    `wall_s` is the wall-clock duration in seconds.
    """

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    fault: Fault | None
    total_instructions: int | None
    marks: list[tuple[int, int]]
    wall_s: float
    command: tuple[str, ...]
    # tcount instruction classes (run_firmware(classes=True)): per mark record, the counts per
    # targets.target.CYCLE_CLASSES when it fired; [] otherwise
    mark_classes: list[tuple[int, ...]] = field(default_factory=list)
    # stack high-water mark from board support (painted stack): (bytes used, bytes painted); None if not printed
    stack: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        """True if the program exited with status 0, without fault or timeout."""
        return self.returncode == 0 and not self.timed_out and self.fault is None
