"""Issue 15 item 5: OUT/lib/edgecc.mk and edgecc.cmake export the board's compiler and flags, and every
ISA kernel file starts with an #error naming the architecture it needs. A user's Makefile built only
from the exported variables links a Cortex-M4 image (hard-float ABI, DSP kernels); a CMake project
including edgecc.cmake compiles the library for the M4 with a bare arm-none-eabi-gcc; the same DSP
library compiled for a Cortex-M0 or M3 stops at our #error (it used to fail on `implicit declaration
of function '__sxtb16'`); each guard of c_templates/kernels/isa_guard.j2 fires exactly on the cores
that lack its feature."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from targets import load_target
from targets.target import KNOWN_FEATURES
from toolchain.codegen.context import BoardFlags
from toolchain.codegen.emit import template_env

ARM, A64 = "arm-none-eabi-gcc", "aarch64-linux-gnu-gcc"
GUARD_TEXT = "edgecc: this kernel needs the Arm DSP extension"


def _tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


def _sh(cmd: list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    if ok:
        assert p.returncode == 0, f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}"
    return p


@pytest.fixture(scope="module")
def m4_lib(digits_build, tmp_path_factory) -> Path:
    """A copy of the digits OUT/lib built for mps2-an386 (DSP kernels), alone in a fresh folder."""
    dest = tmp_path_factory.mktemp("flags") / "lib"
    shutil.copytree(digits_build("mps2-an386") / "lib", dest)
    return dest


def test_make_fragment_exports_the_boards_flags(m4_lib):
    mk = (m4_lib / "edgecc.mk").read_text()
    target = load_target("mps2-an386")
    arch = [f for f in target.cflags if f.startswith("-m")]
    assert arch == ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]
    assert f"EDGECC_ARCH_FLAGS := {' '.join(arch)}\n" in mk
    assert "EDGECC_CC := arm-none-eabi-gcc\n" in mk and "EDGECC_OPT_FLAGS := -O2\n" in mk
    assert "EDGECC_CFLAGS := $(EDGECC_ARCH_FLAGS) $(EDGECC_DEFINES) $(EDGECC_INC)\n" in mk
    cmake = (m4_lib / "edgecc.cmake").read_text()
    assert 'set(EDGECC_ARCH_FLAGS "-mthumb" "-mcpu=cortex-m4" "-mfpu=fpv4-sp-d16" "-mfloat-abi=hard")' in cmake
    assert "target_compile_options(edgecc_model PRIVATE ${EDGECC_ARCH_FLAGS} ${EDGECC_DEFINES})" in cmake


MAKEFILE = """\
include ../lib/edgecc.mk
CFLAGS := -std=c99 -pedantic -Wall -Wextra -Werror $(EDGECC_OPT_FLAGS) $(EDGECC_CFLAGS)

app.elf: main.c $(EDGECC_SRCS)
\t$(EDGECC_CC) $(CFLAGS) --specs=nosys.specs -Wl,--gc-sections -o $@ $^
"""
MAIN = """\
#include "model.h"
static int8_t in[ECC_INPUT0_SIZE], out[ECC_OUTPUT0_SIZE];
int main(void) { return ecc_model_init() | ecc_model_run(in, out); }
"""


def test_a_users_makefile_builds_an_m4_image_from_the_exported_flags_alone(m4_lib):
    _tools("make", ARM, "arm-none-eabi-readelf")
    app = m4_lib.parent / "app"
    app.mkdir()
    (app / "Makefile").write_text(MAKEFILE)
    (app / "main.c").write_text(MAIN)
    _sh(["make", "-s"], app)
    attrs = _sh(["arm-none-eabi-readelf", "-A", "app.elf"], app).stdout
    assert "Tag_CPU_arch: v7E-M" in attrs, attrs  # the M4's architecture (DSP instructions included)
    assert "Tag_ABI_HardFP_use: SP only" in attrs and "Tag_ABI_VFP_args: VFP registers" in attrs  # fpv4-sp, hard


def test_cmake_fragment_compiles_the_library_for_the_boards_core(m4_lib):
    """A bare arm-none-eabi-gcc (no -mcpu: Armv4T, no DSP) compiles the DSP kernels only with the flags
    edgecc.cmake applies to edgecc_model."""
    _tools("cmake", "ninja", ARM, "arm-none-eabi-readelf")
    proj = m4_lib.parent / "cmake_app"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
                                         f"include({m4_lib.as_posix()}/edgecc.cmake)\n")
    build = proj / "build"
    _sh(["cmake", "-S", str(proj), "-B", str(build), "-G", "Ninja", "-DCMAKE_SYSTEM_NAME=Generic",
         f"-DCMAKE_C_COMPILER={ARM}", "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY"], proj)
    _sh(["cmake", "--build", str(build), "--target", "edgecc_model"], proj)
    lib = build / "libedgecc_model.a"
    attrs = _sh(["arm-none-eabi-readelf", "-A", str(lib)], proj).stdout
    objects = attrs.count("File: ")
    assert objects >= 4 and attrs.count("Tag_CPU_arch: v7E-M") == objects, attrs[:400]
    assert attrs.count("Tag_ABI_VFP_args: VFP registers") == objects


@pytest.mark.parametrize("cpu", ["cortex-m0", "cortex-m3"])
def test_dsp_library_for_a_core_without_dsp_stops_at_the_named_error(m4_lib, cpu):
    _tools(ARM)
    dsp = sorted(p.name for p in m4_lib.glob("ecc_dsp_*.c"))
    assert len(dsp) >= 4
    for src in dsp:
        p = _sh([ARM, "-mthumb", f"-mcpu={cpu}", "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                 "-I.", "-c", src, "-o", "/dev/null"], m4_lib, ok=False)
        assert p.returncode != 0
        first = next(ln for ln in p.stderr.splitlines() if "error:" in ln)
        assert f"{src}:3:2: error: #error \"{GUARD_TEXT}" in first, first
        assert "-mthumb -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard, board mps2-an386" in first
    # the portable kernels and model.c need no DSP
    _sh([ARM, "-mthumb", f"-mcpu={cpu}", "-O2", "-std=c99", "-I.", "-c", "model.c", "-o", "/dev/null"], m4_lib)


# feature -> (compiler, flags of a core without it, flags of a core with it)
CORES = {
    "dsp": (ARM, ["-mthumb", "-mcpu=cortex-m3"], ["-mthumb", "-mcpu=cortex-m4"]),
    "mve": (ARM, ["-mthumb", "-mcpu=cortex-m4"], ["-mthumb", "-march=armv8.1-m.main+mve", "-mfloat-abi=hard"]),
    "mve_fp": (ARM, ["-mthumb", "-march=armv8.1-m.main+mve", "-mfloat-abi=hard"],
               ["-mthumb", "-mcpu=cortex-m55", "-mfloat-abi=hard"]),
    "fpu": (ARM, ["-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=soft"],
            ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]),
    "fpu_dp": (ARM, ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
               ["-mthumb", "-mcpu=cortex-m7", "-mfpu=fpv5-d16", "-mfloat-abi=hard"]),
    "neon": (A64, ["-march=armv8-a+nosimd"], ["-march=armv8-a"]),
    "dotprod": (A64, ["-march=armv8-a"], ["-march=armv8.2-a+dotprod"]),
    "i8mm": (A64, ["-march=armv8.2-a+dotprod"], ["-march=armv8.6-a+i8mm"]),
}


def test_every_board_feature_has_a_guard():
    assert set(CORES) == set(KNOWN_FEATURES)


@pytest.mark.parametrize("feature", sorted(CORES))
def test_guard_fires_exactly_without_its_feature(feature, tmp_path):
    cc, without, with_ = CORES[feature]
    _tools(cc)
    board = BoardFlags("b1", "cc", ("-mthumb", "-mcpu=x"))
    src = tmp_path / "k.c"
    src.write_text(template_env().get_template("kernels/isa_guard.j2").render(features=[feature], board=board)
                   + "int ecc_k(void) { return 0; }\n")
    assert src.read_text().count("#error") == 1
    bad = _sh([cc, *without, "-std=c99", "-pedantic", "-c", str(src), "-o", "/dev/null"], tmp_path, ok=False)
    assert bad.returncode != 0 and '#error "edgecc: this kernel needs' in bad.stderr
    assert "EDGECC_ARCH_FLAGS in edgecc.mk / edgecc.cmake (-mthumb -mcpu=x, board b1)" in bad.stderr
    _sh([cc, *with_, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", str(src), "-o", "/dev/null"],
        tmp_path)
