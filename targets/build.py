"""Compile and link C sources into one ELF for a board, and report section sizes.

Owns: the gcc command lines (board flags from boards.yaml + project warnings/gc flags), adding
the board support code (targets/support/<support>/) and, for Cortex-M, the generated linker
script; turning gcc/ld failures into one-line BuildErrors; the pre-build memory fit check.
Takes file paths only and knows nothing of the IR (architecture §3.2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from targets import procs
from targets.errors import BuildError, CompileError
from targets.linker import SUPPORT_DIR, sections_template, write_linker_script
from targets.mapfile import SectionSizes, parse_map_sizes
from targets.target import MEMORY_ROLES, Target

# Project-wide rules on top of the board flags: warnings are errors; per-function/data sections
# so --gc-sections drops unused code and the map attributes sizes per function.
COMMON_CFLAGS = ("-Wall", "-Wextra", "-Werror", "-ffunction-sections", "-fdata-sections")
COMMON_LDFLAGS = ("-Wl,--gc-sections",)
SUPPORT_INCLUDE = SUPPORT_DIR / "include"

__all__ = ["BuildResult", "Footprint", "SectionSizes", "build_firmware", "check_fits", "support_sources"]


@dataclass(frozen=True)
class BuildResult:
    """A linked image. Sizes are bytes after --gc-sections, from the linker map."""

    elf: Path
    map: Path
    lib: SectionSizes  # objects compiled from `lib_sources` (the model library)
    harness: SectionSizes  # everything else: harness sources, board support, libc, libgcc
    lib_stack: dict[str, int] | None = None  # library function -> its own stack frame, bytes (gcc -fstack-usage)

    @property
    def total(self) -> SectionSizes:
        """lib + harness (bytes)."""
        return self.lib + self.harness


@dataclass(frozen=True)
class Footprint:
    """Planned byte sizes to check against the board before compiling (see `check_fits`)."""

    code: int = 0  # .text + .rodata (+ .data load image) of the whole image
    weights: int = 0  # the weights section
    arena: int = 0  # the tensor arena
    ram: int = 0  # .data + .bss; the board's stack_size and heap_size are added by check_fits
    # the arena spread over several regions (region -> bytes of its part; their sum is `arena`), or None
    arena_parts: Mapping[str, int] | None = None


def _bytes(n: int) -> str:
    return f"{n} byte{'' if n == 1 else 's'}"


def check_fits(target: Target, sizes: Footprint) -> None:
    """Raise BuildError (one line, naming every size in bytes) if `sizes` overflow a board region.

    Roles that share a region (e.g. code and weights in CODE on mps2) are summed.
    """
    mem = target.memory
    demand = {"code": sizes.code, "weights": sizes.weights, "arena": sizes.arena,
              "ram": sizes.ram + mem.stack_size + mem.heap_size}  # fmt: skip
    per_region: dict[str, list[str]] = {}
    used: dict[str, int] = {}
    for role in MEMORY_ROLES:
        parts = sizes.arena_parts if role == "arena" and sizes.arena_parts else {getattr(mem, role): demand[role]}
        for region, n in parts.items():
            used[region] = used.get(region, 0) + n
            per_region.setdefault(region, []).append(role)
    over = [
        f"region {name} needs {used[name]} bytes ({' + '.join(per_region[name])}) but has {mem.region(name).size} "
        f"({_bytes(used[name] - mem.region(name).size)} over)"
        for name in used
        if used[name] > mem.region(name).size
    ]
    if over:
        # code is only known once linked (the linker names an overflow then): listed when given
        listed = ", ".join(f"{role} {demand[role]}" for role in MEMORY_ROLES if role != "code" or demand[role])
        if sizes.arena_parts:
            listed += " (" + ", ".join(f"{n} in {r}" for r, n in sizes.arena_parts.items()) + ")"
        raise BuildError(f"model does not fit board '{target.name}': {'; '.join(over)} (sizes in bytes: {listed})")


def support_sources(target: Target) -> list[Path]:
    """Board support C files linked into every image for `target` (startup, fault hook)."""
    if target.support is None:
        return []
    folder = SUPPORT_DIR / target.support
    if not folder.is_dir():
        raise BuildError(f"boards.yaml: board '{target.name}': support folder {folder} does not exist")
    return sorted(folder.glob("*.c"))


def _first_errors(output: str, limit: int = 2) -> str:
    """The first `limit` gcc/ld error lines (or the first lines at all), joined on one line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b(error|fatal error|undefined reference)\b", ln)]
    return " | ".join((errors or lines)[:limit]) or "(no output)"


def _run_tool(cmd: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # LC_ALL=C: plain ASCII quotes and English messages, so errors parse and read the same everywhere.
    env = {**os.environ, "LC_ALL": "C"}
    try:
        with procs.spawned(cmd, cwd=cwd, env=env, stdin=None) as proc:  # registered: an interrupt kills it
            out, err = proc.communicate()
    except FileNotFoundError:
        raise BuildError(f"{what}: '{cmd[0]}' not found on PATH") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def _board_cflags(target: Target, opt_flags: Sequence[str] | None) -> list[str]:
    flags = list(target.cflags)
    if opt_flags is not None:
        # Caller's optimisation level replaces the board's (-O2 etc.); arch flags stay.
        flags = [f for f in flags if not f.startswith("-O")] + list(opt_flags)
    return flags


def stack_usage(su_files: Sequence[Path]) -> dict[str, int]:
    """function -> its own frame in bytes, from gcc's -fstack-usage files
    (lines `file:line:col:function<TAB>bytes<TAB>static|dynamic[,bounded]`)."""
    frames: dict[str, int] = {}
    for su in su_files:
        if not su.is_file():
            continue
        for line in su.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1].strip().isdigit():
                name = parts[0].rsplit(":", 1)[-1]
                frames[name] = max(frames.get(name, 0), int(parts[1]))
    return frames


def _compile(cmd_prefix: list[str], src: Path, obj: Path) -> None:
    # An assembler source runs in its own folder (every path on the command line is absolute): GNU as
    # looks for an `.incbin` file (weights.S's weights.bin) in the current folder before the -I ones,
    # so a file of that name wherever edgecc was started would be taken instead of the library's.
    cwd = src.parent if src.suffix in (".S", ".s") else None
    proc = _run_tool([*cmd_prefix, "-c", str(src), "-o", str(obj)], f"compiling {src.name}", cwd)
    if proc.returncode != 0:
        raise CompileError(f"compiling {src.name} failed: {_first_errors(proc.stderr)}")


_OVERFLOW_RE = re.compile(r"region [`'](?P<region>[^`']+)' overflowed by (?P<n>\d+) bytes?")
_NOFIT_RE = re.compile(r"section [`'](?P<section>[^`']+)' will not fit in region [`'](?P<region>[^`']+)'")


def _link_error(target: Target, stderr: str) -> BuildError:
    """One-line BuildError for a failed link; region overflows name the region, role and bytes."""
    overflow = _OVERFLOW_RE.search(stderr)
    if overflow:
        region = overflow["region"]
        roles = [r for r in MEMORY_ROLES if getattr(target.memory, r) == region]
        nofit = [m["section"] for m in _NOFIT_RE.finditer(stderr) if m["region"] == region]
        sections = f" (section {', '.join(dict.fromkeys(nofit))} will not fit)" if nofit else ""
        return BuildError(
            f"link failed for board '{target.name}': region '{region}' ({'/'.join(roles) or 'unassigned'}) "
            f"overflowed by {overflow['n']} byte{'s' if overflow['n'] != '1' else ''}{sections}"
        )
    return CompileError(f"link failed for board '{target.name}': {_first_errors(stderr)}")


def build_firmware(
    target: Target,
    sources: Sequence[Path],
    include_dirs: Sequence[Path],
    out_dir: Path,
    *,
    defines: Sequence[str] = (),
    lib_sources: Sequence[Path] = (),
    weights_section: str = ".weights",
    opt_flags: Sequence[str] | None = None,
) -> BuildResult:
    """Compile `sources` (harness) and `lib_sources` (model library) and link `<out_dir>/firmware.elf`.

    Each source (C, or assembler `.S` such as the library's weights.S, compiled in its own folder)
    becomes its own object under `<out_dir>/obj/` so the map attributes sizes per file.
    Board support code and its include folder are added; Cortex-M boards also get the generated
    linker script with weights in `weights_section`. `defines` are "NAME" or "NAME=VALUE";
    `opt_flags` (e.g. ["-Os"]) replace the board's -O flags. Returns the ELF, the map and section
    sizes in bytes. Raises BuildError (one line) on a missing tool, compile error or link error
    (a region overflow names the region and by how many bytes).
    """
    out_dir = Path(out_dir).resolve()
    obj_dir = out_dir / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    prefix = [
        target.compiler,
        *_board_cflags(target, opt_flags),
        *COMMON_CFLAGS,
        *(f"-D{d}" for d in defines),
        *(f"-I{Path(d).resolve()}" for d in (*include_dirs, SUPPORT_INCLUDE)),
    ]
    if out_dir.parent != out_dir.parent.parent:
        # The CLI builds in a temporary folder (lib/ and fw/ side by side) renamed to OUT at the end;
        # debug info and __FILE__ would name that deleted folder. Mapped to ".", the ELF names
        # ./lib/... and ./fw/... relative to OUT: the same bytes wherever OUT is, and a debugger
        # started in OUT finds the sources.
        prefix.append(f"-ffile-prefix-map={out_dir.parent}=.")
    if shutil.which(target.compiler) is None:
        raise BuildError(f"board '{target.name}': compiler '{target.compiler}' not found on PATH")

    all_sources = [*(Path(s).resolve() for s in sources), *support_sources(target)]
    lib = [Path(s).resolve() for s in lib_sources]
    jobs = [(src, obj_dir / f"{i:03d}_{src.stem}.o") for i, src in enumerate([*lib, *all_sources])]
    lib_objects = [obj for _, obj in jobs[: len(lib)]]
    lib_prefix = [*prefix, "-fstack-usage"]  # library objects: each function's frame in OBJ.su (code unchanged)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for fut in [pool.submit(_compile, lib_prefix if i < len(lib) else prefix, src, obj)
                    for i, (src, obj) in enumerate(jobs)]:
            fut.result()  # re-raises the first BuildError in source order

    elf, map_path = out_dir / "firmware.elf", out_dir / "firmware.map"
    link = [target.compiler, *_board_cflags(target, opt_flags), *COMMON_LDFLAGS, f"-Wl,-Map={map_path}"]
    if sections_template(target) is not None:  # bare-metal family: our own linker script
        link += ["-T", str(write_linker_script(target, out_dir, weights_section))]
    link += [*(str(obj) for _, obj in jobs), *target.ldflags, "-o", str(elf)]
    proc = _run_tool(link, "linking")
    if proc.returncode != 0:
        raise _link_error(target, proc.stderr)

    lib_sizes, harness_sizes = parse_map_sizes(map_path.read_text(encoding="utf-8", errors="replace"),
                                               lib_objects, weights_section)  # fmt: skip
    return BuildResult(elf=elf, map=map_path, lib=lib_sizes, harness=harness_sizes,
                       lib_stack=stack_usage([obj.with_suffix(".su") for obj in lib_objects]))
