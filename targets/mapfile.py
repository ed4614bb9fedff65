"""Section sizes from a GNU ld map file (after --gc-sections), split by owner object.

Reads only the "Linker script and memory map" part, so discarded input sections are not counted.
Each input section is classified by its name (text, rodata, weights, data, bss, arena) and
attributed to the model library if its object file is one of `lib_objects`, else to the harness
(which includes board support, libc and libgcc). Padding (*fill*) and debug sections are ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

# " .text.f   0x<addr>   0x<size> <object>", or the name alone when it is long (rest on next line).
_INPUT_RE = re.compile(
    r"^ (?P<name>\.[^\s]*|COMMON)(?:\s+0x(?P<addr>[0-9a-fA-F]+)\s+0x(?P<size>[0-9a-fA-F]+)\s+(?P<file>\S.*))?$"
)
_CONT_RE = re.compile(r"^\s{8,}0x(?P<addr>[0-9a-fA-F]+)\s+0x(?P<size>[0-9a-fA-F]+)\s+(?P<file>\S.*)$")

_TEXT = (".text", ".init", ".fini", ".glue_7", ".glue_7t", ".vfp11_veneer", ".v4_bx", ".plt", ".iplt")
_RODATA = (".rodata", ".vectors", ".ARM.exidx", ".ARM.extab", ".eh_frame", ".gcc_except_table",
           ".init_array", ".fini_array", ".preinit_array", ".srodata")  # fmt: skip
_DATA = (".data", ".tdata", ".sdata", ".got")
_BSS = (".bss", ".tbss", ".sbss", "COMMON")
# the tensor arena of model.c (c_templates/model.c.j2): ".bss.<library name>_arena" (".bss.ecc_arena" unless
# the library is named, toolchain/codegen/libnames.py), and on a board whose arena spans several memory
# regions its parts ".bss.<library name>_arena.<REGION>" (region names are C identifiers, targets/target.py);
# ".arena" is its name before the rename
_ARENA_RE = re.compile(r"\.bss\.[a-z][a-z0-9]*_arena(?:\.[A-Za-z_][A-Za-z0-9_]*)?")


@dataclass(frozen=True)
class SectionSizes:
    """Bytes per kind of section. `arena` is the NOLOAD tensor arena (not part of `bss`)."""

    text: int = 0
    rodata: int = 0
    weights: int = 0
    data: int = 0
    bss: int = 0
    arena: int = 0

    def __add__(self, other: SectionSizes) -> SectionSizes:
        return SectionSizes(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def flash(self) -> int:
        """Bytes that must be stored in the image (text + rodata + weights + data load image)."""
        return self.text + self.rodata + self.weights + self.data


def _matches(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def classify(section: str, weights_section: str = ".weights") -> str | None:
    """The SectionSizes field an input section counts towards, or None if it is not counted."""
    if _matches(section, (weights_section,)):
        return "weights"
    if _ARENA_RE.fullmatch(section) or _matches(section, (".arena",)):  # before bss: the arena is a .bss.* name
        return "arena"
    for kind, prefixes in (("text", _TEXT), ("rodata", _RODATA), ("data", _DATA), ("bss", _BSS)):
        if _matches(section, prefixes):
            return kind
    return None  # debug info, notes, relocations, attributes, ...


def _input_sections(map_text: str) -> Iterator[tuple[str, int, str]]:
    """(input section name, size in bytes, object file) for every placed input section."""
    lines = map_text.splitlines()
    try:
        start = lines.index("Linker script and memory map") + 1
    except ValueError:
        raise ValueError("not a GNU ld map file: no 'Linker script and memory map' line") from None
    pending: str | None = None
    discard = False
    for line in lines[start:]:
        if line and not line[0].isspace():
            discard = line.startswith("/DISCARD/")  # an output section header line
            pending = None
            continue
        if pending is not None:
            m = _CONT_RE.match(line)
            if m and not discard:
                yield pending, int(m["size"], 16), m["file"].strip()
            pending = None
            continue
        m = _INPUT_RE.match(line)
        if not m or discard:
            continue
        if m["size"] is None:
            pending = m["name"]  # long name: address/size/file follow on the next line
        else:
            yield m["name"], int(m["size"], 16), m["file"].strip()


def parse_map_sizes(
    map_text: str, lib_objects: Iterable[Path], weights_section: str = ".weights"
) -> tuple[SectionSizes, SectionSizes]:
    """(library sizes, harness sizes) in bytes from GNU ld map text.

    `lib_objects` are the object paths exactly as passed to the linker. Raises ValueError if the
    text is not a GNU ld map.
    """
    lib_set = {os.path.normpath(str(p)) for p in lib_objects}
    totals: dict[bool, dict[str, int]] = {True: {}, False: {}}
    for name, size, obj in _input_sections(map_text):
        kind = classify(name, weights_section)
        if kind is None or size == 0:
            continue
        is_lib = os.path.normpath(obj) in lib_set
        totals[is_lib][kind] = totals[is_lib].get(kind, 0) + size
    return SectionSizes(**totals[True]), SectionSizes(**totals[False])
