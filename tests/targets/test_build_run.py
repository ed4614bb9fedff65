"""Build tiny C programs for real boards and run them (host gcc, cross gcc, QEMU).

Skipped when a board's tools are missing, except under CI=true where that is a failure.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from targets import BuildError, RunError, Target, load_target
from targets.build import build_firmware
from targets.plugin import plugin_path
from targets.qemu import run_firmware
from targets.toolchain_check import missing_tools

LOOP = 1000
IO_PROGRAM = f"""
#include <stdint.h>
#include <stdio.h>
#include "ecc_board.h"

__attribute__((noinline, noipa)) void ecc_mark_op(void) {{ __asm volatile("" ::: "memory"); }}
volatile int32_t sink;

int main(void)
{{
    unsigned char buf[64];
    FILE *f = fopen("in.bin", "rb");
    if (!f) return 10;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(buf[i] ^ 0x5a);
    ecc_current_op = 0;
    ecc_mark_op();
    for (volatile int i = 0; i < {LOOP}; i++) sink += i;
    ecc_mark_op();
    FILE *o = fopen("out.bin", "wb");
    if (!o) return 11;
    fwrite(buf, 1, n, o);
    fclose(o);
    printf("done\\n");
    return 3;
}}
"""

UNALIGNED_PROGRAM = """
#include <stdint.h>
#include "ecc_board.h"
static uint8_t buf[16] __attribute__((aligned(8)));
__attribute__((noinline)) uint32_t ld2(const uint8_t *p)
{
    uint32_t a, b;
    __asm volatile("ldrd %0, %1, [%2]" : "=&r"(a), "=&r"(b) : "r"(p) : "memory");  /* UNALIGNED on M4 */
    return a + b;
}
int main(void) { ecc_current_op = 7; return (int)ld2(buf + 1); }
"""

BAD_CALL_PROGRAM = """
#include <stdint.h>
#include "ecc_board.h"
volatile uintptr_t bad = 16;
int main(void) { ecc_current_op = 5; ((void (*)(void))bad)(); return 0; }
"""

SPIN_PROGRAM = "int main(void) { for (;;) { __asm volatile(\"\"); } }\n"

LIB_SOURCE = """
#include <stdint.h>
const int8_t w[1000] __attribute__((section(WSEC), aligned(16))) = {1, 2, 3};
int8_t arena[ARENA] __attribute__((section(".arena"), aligned(16)));
int lib_run(void) { int s = 0; for (int i = 0; i < 1000; i++) s += w[i] * arena[i]; return s; }
"""
LIB_MAIN = "int lib_run(void);\nint main(void) { return lib_run() & 1; }\n"


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


@pytest.mark.needs_qemu
@pytest.mark.parametrize(
    "board", ["host", "mps2-an386", "mps3-an547", "aarch64", "mps2-an500", "mps2-an505", "aarch64-v80"]
)
def test_file_io_exit_code_and_marks(board: str, tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board(board)
    src = _write(tmp_path, "prog.c", IO_PROGRAM)
    result = build_firmware(target, [src], [], tmp_path / "build")
    assert result.elf.is_file() and result.map.is_file() and result.harness.text > 0
    data = bytes(range(40))
    (tmp_path / "in.bin").write_bytes(data)
    runs = []
    for _ in range(2):
        (tmp_path / "out.bin").unlink(missing_ok=True)
        log = run_firmware(target, result.elf, cwd=tmp_path, timeout_s=20, marks=["ecc_mark_op"])
        assert (log.returncode, log.timed_out, log.fault) == (3, False, None), log.stderr
        assert "done" in log.stdout
        assert (tmp_path / "out.bin").read_bytes() == bytes(b ^ 0x5A for b in data)
        runs.append(log)
    if target.run.time_source.value == "plugin":
        marks = runs[0].marks
        assert [m for m, _ in marks] == [0, 0]
        delta = marks[1][1] - marks[0][1]
        assert 3 * LOOP <= delta <= 30 * LOOP, delta  # a few instructions per loop iteration
        assert runs[0].total_instructions is not None and runs[0].total_instructions > marks[1][1]
        assert (runs[1].marks, runs[1].total_instructions) == (marks, runs[0].total_instructions)  # deterministic
    else:
        assert runs[0].marks == [] and runs[0].total_instructions is None


@pytest.mark.needs_qemu
def test_cortex_m_fault_reports_op(tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board("mps2-an386")
    elf = build_firmware(target, [_write(tmp_path, "f.c", UNALIGNED_PROGRAM)], [], tmp_path / "b").elf
    log = run_firmware(target, elf, cwd=tmp_path, timeout_s=20)
    assert log.returncode == 99 and log.fault is not None
    assert (log.fault.reason, log.fault.op, log.fault.cfsr) == ("UNALIGNED", 7, 0x01000000)
    nm = subprocess.run([target.nm, str(elf)], capture_output=True, text=True, check=True).stdout
    ld2 = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" ld2"))
    assert ld2 <= log.fault.pc < ld2 + 16


@pytest.mark.needs_gcc
@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_bad_call_fault(board: str, tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board(board)
    elf = build_firmware(target, [_write(tmp_path, "f.c", BAD_CALL_PROGRAM)], [], tmp_path / "b").elf
    log = run_firmware(target, elf, cwd=tmp_path, timeout_s=20)
    assert log.returncode == 99 and log.fault is not None and log.fault.op == 5
    assert log.fault.reason in ("SIGSEGV", "INVSTATE")


@pytest.mark.needs_qemu
def test_spin_times_out(tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board("mps2-an386")
    elf = build_firmware(target, [_write(tmp_path, "s.c", SPIN_PROGRAM)], [], tmp_path / "b").elf
    log = run_firmware(target, elf, cwd=tmp_path, timeout_s=1.0, marks=[])
    assert log.timed_out and log.returncode is None and log.total_instructions is None
    assert log.wall_s < 5


@pytest.mark.needs_qemu
def test_sizes_weights_section_and_overflow(tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board("mps3-an547")
    lib = _write(tmp_path, "model.c", LIB_SOURCE)
    main = _write(tmp_path, "main.c", LIB_MAIN)
    defines = ['WSEC=".model_w"', "ARENA=4096"]
    result = build_firmware(target, [main], [], tmp_path / "ok", lib_sources=[lib], defines=defines,
                            weights_section=".model_w")  # fmt: skip
    assert (result.lib.weights, result.lib.arena, result.lib.rodata) == (1000, 4096, 0)
    assert result.lib.text > 0 and result.harness.weights == 0 and result.harness.text > result.lib.text
    nm = subprocess.run([target.nm, str(result.elf)], capture_output=True, text=True, check=True).stdout
    addr = {line.split()[2]: int(line.split()[0], 16) for line in nm.splitlines() if len(line.split()) == 3}
    assert target.memory.region("SRAM").address <= addr["w"] < target.memory.region("SRAM").end
    assert addr["arena"] == target.memory.region("ISRAM").address and addr["w"] % 16 == 0
    assert run_firmware(target, result.elf, cwd=tmp_path, timeout_s=20).returncode == 0

    big = ['WSEC=".model_w"', f"ARENA={(4 << 20) + 1}"]
    with pytest.raises(BuildError) as e:
        build_firmware(target, [main], [], tmp_path / "big", lib_sources=[lib], defines=big, weights_section=".model_w")
    assert "region 'ISRAM' (arena) overflowed by 1 byte" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.needs_gcc
def test_compile_error_is_one_line(tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board("host")
    src = _write(tmp_path, "bad.c", "int main(void) { int unused; return missing_symbol; }\n")
    with pytest.raises(BuildError, match=r"compiling bad.c failed: .*error: 'missing_symbol' undeclared") as e:
        build_firmware(target, [src], [], tmp_path / "b")
    assert "\n" not in str(e.value)


@pytest.mark.needs_qemu
def test_missing_mark_symbol(tmp_path: Path, require_board: Callable[[str], Target]) -> None:
    target = require_board("mps2-an386")
    elf = build_firmware(target, [_write(tmp_path, "s.c", "int main(void) { return 0; }\n")], [], tmp_path / "b").elf
    with pytest.raises(RunError, match="mark symbol.*ecc_mark_op.*not found"):
        run_firmware(target, elf, cwd=tmp_path, timeout_s=20, marks=["ecc_mark_op"])


def test_missing_tools_reported(tmp_path: Path) -> None:
    fake = dataclasses.replace(load_target("mps2-an386"), compiler="no-such-gcc-xyz")
    assert "no-such-gcc-xyz" in missing_tools(fake)
    with pytest.raises(BuildError, match="compiler 'no-such-gcc-xyz' not found"):
        build_firmware(fake, [], [], tmp_path)  # it makes obj/ before the check


@pytest.mark.needs_gcc
def test_plugin_built_once_into_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require_board: Callable[[str], Target]
) -> None:
    require_board("host")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = plugin_path()
    assert path.parent == tmp_path / "edgecc" and path.suffix == ".so"
    mtime = path.stat().st_mtime_ns
    assert plugin_path() == path and path.stat().st_mtime_ns == mtime
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left behind
