"""OUT/lib compiles at every optimisation level (issue "hardened front door", item 8): the ISA kernels'
inline assembly used to need -O1 or more ('asm' operand has impossible constraints in ecc_dsp.h, an
internal compiler error for the Helium GEMM at -O0). The digits example's library (DSP, Helium and
NEON kernels: conv2d, 1x1, depthwise 3x3, fully connected, pools, add) is compiled on its own with the
board's compiler at -O0, -Og and -Os with -Wall -Wextra -Werror. Bit-exactness at -O0 is checked by
the kernel tests under EDGECC_KERNEL_TEST_OPT=-O0 (tests/kernels/isa_harness.py); the -O2 code is
unchanged (tests/e2e/expected_counts.json).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

LEVELS = ["-O0", "-Og", "-Os"]
# board -> (compiler, its architecture flags; as boards.yaml without the -O level)
BOARDS = {
    "mps2-an386": ("arm-none-eabi-gcc", ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]),
    "mps3-an547": ("arm-none-eabi-gcc", ["-mthumb", "-mcpu=cortex-m55", "-mfloat-abi=hard"]),
    "aarch64": ("aarch64-linux-gnu-gcc", ["-march=armv8.2-a+dotprod"]),
}
ISA = {"mps2-an386": "dsp", "mps3-an547": "helium", "aarch64": "neon"}


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_library_compiles_at_every_level(digits_build, tmp_path, board):
    lib = tmp_path / "lib"  # a copy: the session's build stays as it is
    shutil.copytree(digits_build(board) / "lib", lib)
    cc, arch = BOARDS[board]
    sources = sorted(p.name for p in lib.glob("*.c"))
    assert any(s.startswith(f"ecc_{ISA[board]}_") for s in sources), f"no {ISA[board]} kernel in {sources}"
    for level in LEVELS:
        cmd = [cc, *arch, level, "-Wall", "-Wextra", "-Werror", "-std=c99", "-I.", "-c", *sources]
        p = subprocess.run(cmd, cwd=lib, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"{board} {level}:\n$ {' '.join(cmd)}\n{p.stderr[-3000:]}"
