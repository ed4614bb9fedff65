"""Target: one boards.yaml entry as frozen, validated data (architecture P15 "target as data").

Owns the schema of a board entry and its validation (`target_from_mapping`). It deliberately does
not read files, run tools or import anything from `toolchain`: `targets/__init__.py` loads the
YAML, `build.py`/`qemu.py` act on the data. Code reads these fields; it never branches on names.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from targets.errors import BoardError


class ISA(enum.Enum):
    """Kernel ISA folders under c_templates/kernels/ (value = folder name)."""

    PORTABLE = "portable"
    DSP = "dsp"
    HELIUM = "helium"
    NEON = "neon"


VECTOR_ISAS = frozenset({ISA.HELIUM.value, ISA.NEON.value})
# Run timeouts: RUN_STARTUP_S (emulator start, plugin load, file I/O) + RUN_MARGIN x the expected time
# at the board's measured rates. The rates in boards.yaml were measured with the plugin on a loaded
# 2-vCPU machine (load ~4); the margin covers a slower CI machine, and a frozen guest still ends soon.
RUN_STARTUP_S = 3.0
RUN_MARGIN = 3.0


class RunKind(enum.Enum):
    """How an ELF for this board is executed."""

    NATIVE = "native"  # run directly on the build machine
    QEMU_SYSTEM = "qemu-system"  # bare-metal image, semihosting, qemu-system-arm
    QEMU_USER = "qemu-user"  # Linux user-space binary under qemu-<arch>


class TimeSource(enum.Enum):
    """Where per-op cost comes from (the harness timer; c_templates/timers/)."""

    PLUGIN = "plugin"  # tcount TCG plugin: exact retired guest instructions
    CLOCK = "clock"  # clock_gettime(CLOCK_MONOTONIC) inside the program: microseconds
    # Cortex-M in-guest timer: DWT->CYCCNT when it counts (silicon: cycles; untested on silicon),
    # else SysTick; under QEMU the run adds -icount shift=icount_shift, which makes SysTick
    # deterministic: 1 tick = 1e9 / (core_clock_hz * 2**icount_shift) guest instructions.
    SYSTICK = "systick"
    # AArch64 Linux: PMCCNTR_EL0 when readable at EL0 (cycles; untested on silicon), else
    # CLOCK_MONOTONIC (qemu-user traps the PMU read: SIGILL, caught by the probe).
    PMU = "pmu"


# Feature words the kernels and flags care about; anything else in boards.yaml is a typo.
KNOWN_FEATURES = frozenset({"fpu", "fpu_dp", "dsp", "mve", "mve_fp", "neon", "dotprod", "i8mm"})
# An ISA kernel folder may only be preferred when the core has the feature it needs.
ISA_REQUIRES: dict[ISA, str | None] = {ISA.PORTABLE: None, ISA.DSP: "dsp", ISA.HELIUM: "mve", ISA.NEON: "neon"}
LAYOUTS = frozenset({"NHWC", "NCHW", "CHWN"})
# Instruction classes of the tcount plugin (targets/plugin/tc_classify.h), in its output order; a
# board's `cycle_costs` gives the estimated cycles of each (xfer: per extra register of a
# multiple load/store). The cycle estimate is approximate by construction.
CYCLE_CLASSES = ("load", "store", "mac", "branch", "other", "vload", "vstore", "vmac", "vother", "vgather", "xfer")
COST_UNITS = frozenset({"instructions", "us", "cycles"})
MEMORY_ROLES = ("code", "weights", "ram", "arena")


@dataclass(frozen=True)
class MemoryRegion:
    """A contiguous address range. `address` and `size` are in bytes; `wait_states`: extra cycles
    per data access to it, relative to a zero-wait-state TCM (boards.yaml; 0 when not given), for
    the arena placement (toolchain.placement) and the cycle estimate (profiler.cycles)."""

    name: str
    address: int
    size: int
    wait_states: int = 0

    @property
    def end(self) -> int:
        """One past the last byte (bytes)."""
        return self.address + self.size


@dataclass(frozen=True)
class MemoryMap:
    """Regions plus which region holds each kind of content (names refer to `regions`)."""

    regions: tuple[MemoryRegion, ...]
    code: str  # vectors, .text, .rodata (+ .data load image)
    weights: str  # the model's constant weight section
    ram: str  # .data, .bss, heap, stack
    arena: str  # the static tensor arena (NOLOAD); with several arena regions, the first listed
    stack_size: int  # bytes
    heap_size: int  # bytes
    # every region the arena may use, `arena` first: boards.yaml `arena: [A, B, ...]` lets the planner
    # place each buffer in one of them by speed (toolchain.placement); () means (arena,)
    arena_regions: tuple[str, ...] = ()

    @property
    def arenas(self) -> tuple[str, ...]:
        """The regions the arena may use, the main one (`arena`, REGION_ARENA) first."""
        return self.arena_regions or (self.arena,)

    def region(self, name: str) -> MemoryRegion:
        """The region called `name` (KeyError if absent; validation guarantees roles exist)."""
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def region_for(self, role: str) -> MemoryRegion:
        """The region holding `role` (one of MEMORY_ROLES)."""
        return self.region(getattr(self, role))


@dataclass(frozen=True)
class RunSpec:
    """How to run an ELF and what its cost numbers mean."""

    kind: RunKind
    executable: str | None  # emulator executable; None for native
    args: tuple[str, ...]  # board-specific emulator argv (-M ..., -cpu ...)
    time_source: TimeSource
    cost_unit: str  # "instructions" | "us" | "cycles"
    guest_ips: float  # guest instructions per second measured under QEMU (for run timeouts)
    core_clock_hz: float | None = None  # SysTick clock of the core (Hz); needed by time_source systick
    icount_shift: int = 3  # QEMU -icount shift for time_source systick: 2**shift ns of virtual time per insn
    vector_ips: float | None = None  # the same for the vector kernels (helium, neon) when they emulate slower

    def ips(self, isa: str) -> float:
        """Measured guest instructions per second of kernels from ISA folder `isa`."""
        return self.vector_ips if isa in VECTOR_ISAS and self.vector_ips else self.guest_ips

    @property
    def insns_per_tick(self) -> float | None:
        """Guest instructions per SysTick tick under QEMU -icount (None without core_clock_hz)."""
        return 1e9 / (self.core_clock_hz * 2**self.icount_shift) if self.core_clock_hz else None


@dataclass(frozen=True)
class Target:
    """One board: CPU, ISA, compiler flags, memory map and how to run its binaries."""

    name: str
    description: str
    cpu: str
    isa_features: frozenset[str]
    kernel_preference: tuple[ISA, ...]  # first supported variant wins (toolchain.lower)
    support: str | None  # folder under targets/support/ with startup/fault code, or None
    compiler: str
    nm: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    memory: MemoryMap
    buffer_alignment: int  # bytes; power of two in 4..256
    preferred_layout: str  # activation layout, e.g. "NHWC"
    run: RunSpec
    # Estimated cycles per instruction class (CYCLE_CLASSES -> cycles) from published timing
    # tables, or None: boards.yaml `cycle_costs`; the report's est_cycles (an estimate).
    cycle_costs: Mapping[str, float] | None = None
    source: str = "boards.yaml"  # the boards file the entry comes from (a user's own file: its path)

    def has_feature(self, feature: str) -> bool:
        """True if the core has ISA feature `feature` (e.g. "dsp", "mve", "dotprod")."""
        return feature in self.isa_features

    def run_timeout_s(self, expected: int | Mapping[str, int], *, margin: float = RUN_MARGIN,
                      startup_s: float = RUN_STARTUP_S) -> float:
        """Wall-clock timeout (seconds) for a run expected to retire `expected` guest instructions,
        or that many per kernel ISA folder (vector kernels at the board's vector rate): `startup_s`
        plus `margin` times the expected time at the board's measured rates (boards.yaml run.guest_ips
        and run.vector_ips)."""
        per = expected if isinstance(expected, Mapping) else {ISA.PORTABLE.value: expected}
        return startup_s + margin * sum(n / self.run.ips(isa) for isa, n in per.items())


# ---------------------------------------------------------------------------------------------
# Validation: boards.yaml mapping -> Target. Every failure is one line naming file, board, field.


# (key path from the file's top: "boards", board, field parts...) -> its 1-based line, or None
LineOf = Callable[[tuple[str, ...]], int | None]
_SIZE_RE = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s*([KMG]?)i?B?\s*$")
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class _Fields:
    """Typed accessors over one board's mapping that raise BoardError naming the field."""

    def __init__(self, source: str, board: str, data: Mapping[str, Any], line_of: LineOf | None = None) -> None:
        self.source, self.board, self.data, self.line_of = source, board, data, line_of

    def where(self, field: str | None = None) -> str:
        """`source:LINE` of `field` (or of the board), or `source` when the line is unknown."""
        path = ("boards", self.board, *(field.split(".") if field else ()))
        line = self.line_of(path) if self.line_of else None
        return f"{self.source}:{line}" if line else self.source

    def fail(self, field: str, why: str) -> BoardError:
        return BoardError(f"{self.where(field)}: board '{self.board}': field '{field}': {why}")

    def get(self, field: str, default: Any = ...) -> Any:
        node: Any = self.data
        for part in field.split("."):
            if not isinstance(node, Mapping) or part not in node:
                if default is ...:
                    raise self.fail(field, "missing")
                return default
            node = node[part]
        return node

    def only(self, field: str | None, allowed: frozenset[str]) -> None:
        """Refuse keys of mapping `field` (None: the board itself) outside `allowed` (typos)."""
        node = self.data if field is None else self.get(field, None)
        if not isinstance(node, Mapping):
            return
        for key in node:
            if key not in allowed:
                at = f"{field}.{key}" if field else str(key)
                raise self.fail(at, f"unknown field; allowed here: {', '.join(sorted(allowed))}")

    def str_(self, field: str, default: Any = ...) -> str:
        v = self.get(field, default)
        if not isinstance(v, str) or not v:
            raise self.fail(field, f"expected a non-empty string, got {v!r}")
        return v

    def str_list(self, field: str, default: Any = ...) -> tuple[str, ...]:
        v = self.get(field, default)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(field, f"expected a list of strings, got {v!r}")
        return tuple(v)

    def size(self, field: str, default: Any = ...) -> int:
        """An int, or a string like "4M", "512K", "0x8000" (bytes)."""
        v = self.get(field, default)
        if isinstance(v, bool):
            raise self.fail(field, f"expected a byte count, got {v!r}")
        if isinstance(v, int):
            n = v
        elif isinstance(v, str) and (m := _SIZE_RE.match(v)):
            n = int(m.group(1), 0) * _SCALE[m.group(2)]
        else:
            raise self.fail(field, f"expected a byte count like 4096, 0x1000 or '4M', got {v!r}")
        if n < 0:
            raise self.fail(field, f"must not be negative, got {n}")
        return n

    def enum(self, field: str, kind: type[enum.Enum], default: Any = ...) -> Any:
        v = self.get(field, default)
        try:
            return kind(v)
        except ValueError:
            allowed = ", ".join(str(e.value) for e in kind)
            raise self.fail(field, f"{v!r} is not one of: {allowed}") from None


_REGION_KEYS = frozenset({"address", "size", "wait_states"})


def _memory(f: _Fields) -> MemoryMap:
    raw = f.get("memory.regions")
    if not isinstance(raw, Mapping) or not raw:
        raise f.fail("memory.regions", "expected a mapping {name: {address, size}}")
    regions = []
    for name in raw:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
            raise f.fail(f"memory.regions.{name}", "region names must be C/ld identifiers")
        f.only(f"memory.regions.{name}", _REGION_KEYS)
        address = f.size(f"memory.regions.{name}.address")
        size = f.size(f"memory.regions.{name}.size")
        if size == 0:
            raise f.fail(f"memory.regions.{name}.size", "must be > 0")
        ws = f.get(f"memory.regions.{name}.wait_states", 0)
        if isinstance(ws, bool) or not isinstance(ws, int) or not 0 <= ws <= 1000:
            raise f.fail(f"memory.regions.{name}.wait_states", f"expected an integer 0..1000 (extra cycles per "
                                                               f"access), got {ws!r}")
        regions.append(MemoryRegion(str(name), address, size, ws))
    ordered = sorted(regions, key=lambda r: r.address)
    for a, b in zip(ordered, ordered[1:]):
        if b.address < a.end:
            raise f.fail(f"memory.regions.{b.name}", f"overlaps region {a.name}")
    names = {r.name for r in regions}
    roles = {}
    arenas: tuple[str, ...] = ()
    for role in MEMORY_ROLES:
        if role == "arena" and isinstance(f.get("memory.arena"), list):  # several regions: placed by speed
            arenas = f.str_list("memory.arena")
            if not arenas or len(set(arenas)) != len(arenas):
                raise f.fail("memory.arena", "expected a region name or a list of different region names")
        for name in arenas if role == "arena" and arenas else (f.str_(f"memory.{role}"),):
            if name not in names:
                known = ", ".join(sorted(names))
                raise f.fail(f"memory.{role}", f"region {name!r} is not in memory.regions ({known})")
        roles[role] = arenas[0] if role == "arena" and arenas else f.str_(f"memory.{role}")
    return MemoryMap(
        regions=tuple(regions),
        stack_size=f.size("memory.stack_size"),
        heap_size=f.size("memory.heap_size"),
        arena_regions=arenas if len(arenas) > 1 else (),
        **roles,
    )


def _kernel_preference(f: _Fields, features: frozenset[str]) -> tuple[ISA, ...]:
    names = f.str_list("kernel_preference")
    prefs = []
    for n in names:
        try:
            isa = ISA(n)
        except ValueError:
            folders = ", ".join(i.value for i in ISA)
            raise f.fail("kernel_preference", f"{n!r} is not an ISA folder ({folders})") from None
        need = ISA_REQUIRES[isa]
        if need is not None and need not in features:
            raise f.fail("kernel_preference", f"{n!r} needs isa feature {need!r}, which this cpu lacks")
        prefs.append(isa)
    if len(set(prefs)) != len(prefs):
        raise f.fail("kernel_preference", "lists an ISA twice")
    if ISA.PORTABLE not in prefs:
        # The portable set is the only complete one (P9); without it some op could have no kernel.
        raise f.fail("kernel_preference", "must include 'portable'")
    return tuple(prefs)


def _run(f: _Fields) -> RunSpec:
    kind = f.enum("run.kind", RunKind)
    executable = None if kind is RunKind.NATIVE else f.str_("run.executable")
    time_source = f.enum("run.time_source", TimeSource)
    if time_source is TimeSource.PLUGIN and kind is RunKind.NATIVE:
        raise f.fail("run.time_source", "'plugin' needs a QEMU run kind")
    if time_source is TimeSource.SYSTICK and kind is not RunKind.QEMU_SYSTEM:
        raise f.fail("run.time_source", "'systick' is the Cortex-M timer: it needs run kind qemu-system")
    if time_source is TimeSource.PMU and kind is RunKind.QEMU_SYSTEM:
        raise f.fail("run.time_source", "'pmu' is the AArch64 Linux timer: it needs run kind native or qemu-user")
    cost_unit = f.str_("run.cost_unit")
    if cost_unit not in COST_UNITS:
        raise f.fail("run.cost_unit", f"{cost_unit!r} is not one of: {', '.join(sorted(COST_UNITS))}")
    ips = _rate(f, "run.guest_ips", f.get("run.guest_ips"))
    vector_ips = f.get("run.vector_ips", None)
    vector_ips = None if vector_ips is None else _rate(f, "run.vector_ips", vector_ips)
    clock = f.get("run.core_clock_hz", None)
    if isinstance(clock, str):
        try:
            clock = float(clock)
        except ValueError:
            pass
    if clock is not None and (isinstance(clock, bool) or not isinstance(clock, int | float) or clock <= 0):
        raise f.fail("run.core_clock_hz", f"expected a positive number (Hz), got {clock!r}")
    if time_source is TimeSource.SYSTICK and clock is None:
        raise f.fail("run.core_clock_hz", "time_source 'systick' needs the core clock (Hz) to convert ticks")
    shift = f.get("run.icount_shift", 3)
    if isinstance(shift, bool) or not isinstance(shift, int) or not 0 <= shift <= 10:
        raise f.fail("run.icount_shift", f"expected an integer 0..10, got {shift!r}")
    return RunSpec(kind, executable, f.str_list("run.args", []), time_source, cost_unit, ips,
                   None if clock is None else float(clock), shift, vector_ips)


def _rate(f: _Fields, key: str, ips: Any) -> float:
    if isinstance(ips, str):
        # PyYAML (YAML 1.1) reads "2.0e9" as a string; accept it as a number.
        try:
            ips = float(ips)
        except ValueError:
            pass
    if isinstance(ips, bool) or not isinstance(ips, int | float) or ips <= 0:
        raise f.fail(key, f"expected a positive number (instructions/second), got {ips!r}")
    return float(ips)


_BOARD_KEYS = frozenset({"description", "cpu", "isa_features", "kernel_preference", "support", "toolchain", "memory",
                         "buffer_alignment", "preferred_layout", "run", "cycle_costs"})
_SECTION_KEYS = {
    "toolchain": frozenset({"compiler", "nm", "cflags", "ldflags"}),
    "memory": frozenset({"regions", *MEMORY_ROLES, "stack_size", "heap_size"}),
    "run": frozenset({"kind", "executable", "args", "time_source", "cost_unit", "guest_ips", "vector_ips",
                      "core_clock_hz", "icount_shift"}),
}


def target_from_mapping(name: str, data: Any, source: str = "boards.yaml", line_of: LineOf | None = None) -> Target:
    """Validate one boards.yaml entry and build its Target. `line_of` (targets.boards_file) gives
    the line of a key path, so messages read `source:LINE: ...`.

    Raises BoardError (one line: `source` and line, board `name`, the bad field and why).
    """
    f = _Fields(source, name, data if isinstance(data, Mapping) else {}, line_of)
    if not isinstance(data, Mapping):
        raise BoardError(f"{f.where()}: board '{name}': expected a mapping of fields, got {type(data).__name__}")
    f.only(None, _BOARD_KEYS)
    for section, keys in _SECTION_KEYS.items():
        f.only(section, keys)
    features = frozenset(f.str_list("isa_features"))
    if unknown := sorted(features - KNOWN_FEATURES):
        known = ", ".join(sorted(KNOWN_FEATURES))
        raise f.fail("isa_features", f"unknown feature(s) {', '.join(unknown)} (known: {known})")
    alignment = f.get("buffer_alignment", 16)
    is_int = isinstance(alignment, int) and not isinstance(alignment, bool)
    if not is_int or not 4 <= alignment <= 256 or alignment & (alignment - 1):
        raise f.fail("buffer_alignment", f"must be a power of two in 4..256 bytes, got {alignment!r}")
    layout = f.str_("preferred_layout", "NHWC")
    if layout not in LAYOUTS:
        raise f.fail("preferred_layout", f"{layout!r} is not one of: {', '.join(sorted(LAYOUTS))}")
    compiler = f.str_("toolchain.compiler")
    default_nm = compiler[: -len("gcc")] + "nm" if compiler.endswith("gcc") else "nm"
    support = f.get("support", None)
    if support is not None and not (isinstance(support, str) and re.fullmatch(r"[a-z0-9_]+", support)):
        raise f.fail("support", f"expected a support folder name like 'cortex_m', got {support!r}")
    return Target(
        name=name,
        description=f.str_("description"),
        cpu=f.str_("cpu"),
        isa_features=features,
        kernel_preference=_kernel_preference(f, features),
        support=support,
        compiler=compiler,
        nm=f.str_("toolchain.nm", default_nm),
        cflags=f.str_list("toolchain.cflags"),
        ldflags=f.str_list("toolchain.ldflags", []),
        memory=_memory(f),
        buffer_alignment=alignment,
        preferred_layout=layout,
        run=_run(f),
        cycle_costs=_cycle_costs(f),
        source=source,
    )


def _cycle_costs(f: _Fields) -> dict[str, float] | None:
    """boards.yaml `cycle_costs`: every class of CYCLE_CLASSES -> a non-negative number of cycles,
    plus an optional `source` string (where the numbers come from)."""
    raw = f.get("cycle_costs", None)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise f.fail("cycle_costs", f"expected a mapping {{class: cycles}}, got {raw!r}")
    keys = set(raw) - {"source"}
    if keys != set(CYCLE_CLASSES):
        missing, unknown = sorted(set(CYCLE_CLASSES) - keys), sorted(keys - set(CYCLE_CLASSES))
        raise f.fail("cycle_costs", f"needs exactly the classes {', '.join(CYCLE_CLASSES)}"
                     + (f"; missing {', '.join(missing)}" if missing else "")
                     + (f"; unknown {', '.join(map(str, unknown))}" if unknown else ""))
    if "source" in raw:
        f.str_("cycle_costs.source")
    costs = {}
    for c in CYCLE_CLASSES:
        v = raw[c]
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise f.fail(f"cycle_costs.{c}", f"expected a non-negative number of cycles, got {v!r}")
        costs[c] = float(v)
    return costs
