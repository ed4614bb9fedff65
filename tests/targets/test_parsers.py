"""Linker-script generation, map/plugin-log/fault parsing and the fit check (no tools needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from targets import BuildError, RunError, load_target
from targets.build import Footprint, check_fits
from targets.linker import linker_script, memory_script, write_linker_script
from targets.mapfile import SectionSizes, classify, parse_map_sizes
from targets.runlog import decode_cfsr, parse_fault, parse_plugin_log


def test_memory_script_from_boards_yaml() -> None:
    text = memory_script(load_target("mps3-an547"))
    assert "CODE (rx) : ORIGIN = 0x10000000, LENGTH = 512K" in text
    assert "SRAM (rwx) : ORIGIN = 0x11000000, LENGTH = 2M" in text
    assert "ISRAM (rwx) : ORIGIN = 0x31000000, LENGTH = 4M" in text
    assert 'REGION_ALIAS("REGION_WEIGHTS", SRAM);' in text and 'REGION_ALIAS("REGION_ARENA", ISRAM);' in text
    assert "STACK_SIZE = 0x8000;" in text and "BUFFER_ALIGN = 16;" in text


def test_linker_script_sections(tmp_path: Path) -> None:
    target = load_target("mps2-an386")
    text = linker_script(target, ".model_weights")
    assert "KEEP(*(.model_weights .model_weights.*))" in text and "@WEIGHTS_SECTION@" not in text
    assert ".arena (NOLOAD) : ALIGN(BUFFER_ALIGN)" in text and "> REGION_ARENA AT > REGION_ARENA" in text
    # model.c's arena section is a .bss.* name (NOBITS): ld gives it to the first statement that
    # matches, so .arena must come before .bss's "*(.bss .bss.*)"
    # (".bss.*_arena": every library's, ".bss.ecc_arena" by default, ".bss.kws_arena" for `name: kws`)
    assert "KEEP(*(.bss.*_arena .arena .arena.*))" in text
    assert text.index("KEEP(*(.bss.*_arena") < text.index("*(.bss .bss.*)")
    assert 'REGION_ALIAS("REGION_WEIGHTS", CODE);' in text
    path = write_linker_script(target, tmp_path)
    assert path == tmp_path / "mps2-an386.ld" and path.read_text() == linker_script(target)
    with pytest.raises(BuildError, match="weights section"):
        linker_script(target, ".data")
    with pytest.raises(BuildError, match="default script"):
        linker_script(load_target("host"))


MAP = """\
Discarded input sections

 .text.unused   0x00000000       0x40 /b/obj/000_model.o

Memory Configuration

Linker script and memory map

LOAD /b/obj/000_model.o
.text           0x00000000     0x2420
 *(.text .text.*)
 .text.model_run_with_a_very_long_name
                0x00000000       0x14 /b/obj/000_model.o
                0x00000000                model_run_with_a_very_long_name
 .text.main     0x00000014        0x8 /b/obj/001_main.o
 .text          0x0000001c       0xa4 /usr/lib/libc_nano.a(lib_a-memset.o)
 *fill*         0x000000c0        0x4
 .rodata.str1.1
                0x000000c4        0x6 /b/obj/001_main.o
 .rodata        0x000000ca        0x2 /b/obj/000_model.o
.weights        0x00000100      0x100
 .weights       0x00000100      0x100 /b/obj/000_model.o
.data           0x20000000        0x8
 .data.x        0x20000000        0x8 /b/obj/001_main.o
.bss            0x20000008       0x14
 .bss.y         0x20000008        0x4 /b/obj/000_model.o
 COMMON         0x2000000c       0x10 /b/obj/001_main.o
.arena          0x21000000     0x1010
 .bss.ecc_arena
                0x21000000     0x1000 /b/obj/000_model.o
 .arena         0x21001000       0x10 /b/obj/000_model.o
/DISCARD/
 .ARM.attributes 0x0 0x20 /b/obj/000_model.o
.debug_info     0x00000000      0x200
 .debug_info    0x00000000      0x200 /b/obj/000_model.o
"""


def test_parse_map_sizes() -> None:
    lib, harness = parse_map_sizes(MAP, [Path("/b/obj/000_model.o")])
    assert lib == SectionSizes(text=0x14, rodata=2, weights=0x100, data=0, bss=4, arena=0x1010)
    assert harness == SectionSizes(text=0x8 + 0xA4, rodata=6, weights=0, data=8, bss=0x10, arena=0)
    assert (lib + harness).flash == 0x14 + 0xAC + 8 + 0x100 + 8
    with pytest.raises(ValueError, match="not a GNU ld map"):
        parse_map_sizes("hello", [])


def test_classify() -> None:
    assert classify(".model_w.conv1", ".model_w") == "weights"
    assert classify(".text.startup.main") == "text" and classify(".ARM.exidx.text.f") == "rodata"
    assert classify(".debug_line") is None and classify(".textual") is None
    assert classify(".bss.ecc_arena") == "arena" and classify(".arena") == "arena"  # before and after the rename
    assert classify(".bss.ecc_arena_x") == "bss" and classify(".bss.y") == "bss"
    assert classify(".bss.kws_arena") == "arena" and classify(".bss.kws2_arena") == "arena"  # named libraries
    # the arena's parts in a board's other arena regions (`arena: [DTCM, SRAM]`), of any library
    assert classify(".bss.ecc_arena.SRAM") == "arena" and classify(".bss.kws_arena.AXI_SRAM1") == "arena"
    assert classify(".bss.kws_arena.") == "bss" and classify(".bss.kws_arena.SRAM.x") == "bss"


def test_check_fits() -> None:
    m4 = load_target("mps2-an386")
    check_fits(m4, Footprint(code=1 << 20, weights=2 << 20, arena=16 << 20, ram=1 << 20))
    check_fits(m4, Footprint(code=1 << 20, weights=3 << 20, arena=100))  # exactly full still fits
    overflow = r"region PSRAM needs 16777217 bytes \(arena\) but has 16777216 .*arena 16777217"
    with pytest.raises(BuildError, match=overflow):
        check_fits(m4, Footprint(arena=(16 << 20) + 1))
    with pytest.raises(BuildError, match=r"region CODE needs 4194305 bytes \(code \+ weights\)"):
        check_fits(m4, Footprint(code=1 << 20, weights=(3 << 20) + 1))
    with pytest.raises(BuildError, match=r"region SRAM needs 2097153 bytes \(weights\)"):
        check_fits(load_target("mps3-an547"), Footprint(weights=(2 << 20) + 1))


def test_parse_plugin_log() -> None:
    text = "tcount: v2 total_insns=500 marks=3 dropped=0 exact=1\n" + "".join(
        f"tcount: mark {i} which={w} insns={n}\n" for i, (w, n) in enumerate([(0, 10), (1, 20), (0, 400)])
    )
    counts = parse_plugin_log(text, 2)
    assert counts.total_instructions == 500 and counts.marks == [(0, 10), (1, 20), (0, 400)]
    bad = [
        "",
        "garbage\n",
        text.replace("marks=3", "marks=4"),  # truncated
        text + "tcount: something else\n",
        text.replace("mark 2 ", "mark 5 "),
        text.replace("insns=400", "insns=600"),  # beyond total
        text.replace("insns=20", "insns=5"),  # decreasing
        text.replace("dropped=0", "dropped=2"),
    ]
    for b in bad:
        with pytest.raises(RunError, match="tcount log"):
            parse_plugin_log(b, 2)
    with pytest.raises(RunError, match="mark index 1 but only 1"):
        parse_plugin_log(text, 1)


def test_parse_fault() -> None:
    f = parse_fault("hello\nFAULT: CFSR=01000000 HFSR=40000000 BFAR=00000000 PC=00000148 OP=7\n")
    assert f is not None and (f.reason, f.op, f.pc, f.cfsr) == ("UNALIGNED", 7, 0x148, 0x01000000)
    assert f.as_dict()["reason"] == "UNALIGNED"
    f = parse_fault("FAULT: SIGNAL=11 ADDR=0000000000000010 OP=-1\n")
    assert f is not None and (f.reason, f.op, f.address) == ("SIGSEGV", -1, 16)
    f = parse_fault("FAULT: unexpected exception OP=3\n")
    assert f is not None and (f.reason, f.op) == ("UNEXPECTED_EXCEPTION", 3)
    assert parse_fault("all good\n") is None
    assert decode_cfsr(0x00080000) == "NOCP" and decode_cfsr(0x00010000) == "UNDEFINSTR"
    assert decode_cfsr(0x00008200) == "PRECISERR" and decode_cfsr(0x300) == "IBUSERR/PRECISERR"
    assert decode_cfsr(0, 0x2) == "VECTTBL" and decode_cfsr(0) == "UNKNOWN"
