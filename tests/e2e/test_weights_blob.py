"""Weights as data (issue 17 item 1): `weights_format: blob` ships weights.bin and a weights.S that
places it with `.incbin`, instead of weights.c. The digits example is run with both forms on host,
mps2-an386 (QEMU) and aarch64 (QEMU user): the blob run is bit-exact, its report counts the same
bytes (map-file sections, weights breakdown, flash) and the same instructions, and the linked weights
section (objcopy -O binary) and every weights symbol (nm: address, size, type) are byte for byte the
C form's. Two blob builds are byte-identical; a weights.bin in the folder edgecc runs from is not
taken; the library alone builds with a user's Makefile and a CMake project; a named library with its
own section keeps both; the ELF notes of weights.S equal weights.c's under -fcf-protection /
-mbranch-protection; `auto` picks the blob above 256 KiB only."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from e2e_helpers import DIGITS, DIGITS_YAML, finish

BOARDS = {"host": "", "mps2-an386": "arm-none-eabi-", "aarch64": "aarch64-linux-gnu-"}  # board -> binutils prefix
AD_MODEL = DIGITS.parents[1].parent / "shared" / "models" / "mlperf_tiny" / "ad_autoencoder_int8.tflite"


def _tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


def _sh(cmd: list, cwd: Path | None = None) -> str:
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def blob_run(tmp_path_factory, edgecc, need_board):
    """blob_run(board) -> Job of `edgecc run digits --weights-format blob --board BOARD` (cached)."""
    cache = {}

    def get(board: str):
        need_board(board)
        if board not in cache:
            out = tmp_path_factory.mktemp(f"blob-{board}") / "out"
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", DIGITS_YAML, "--board", board, "--weights-format", "blob", "--out", out, "--quiet")
            cache[board] = finish(res, out)
            assert cache[board].code == 0, f"exit {res.code}: {res.err}"
        return cache[board]

    return get


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_blob_run_is_bit_exact_and_reports_the_same_bytes(board, blob_run, digits_run):
    blob, c = blob_run(board), digits_run(board)
    lib = sorted(p.name for p in (blob.out / "lib").iterdir() if p.name.startswith("weights"))
    assert lib == ["weights.S", "weights.bin", "weights.h"]
    assert (c.out / "lib" / "weights.c").is_file()  # the digits' 2.5 KB: auto keeps the readable C
    assert blob.report["status"] == "pass" and blob.report["verification"]["bit_exact"] is True
    for key in ("sections", "weights_breakdown", "flash_bytes", "weights_bytes", "arena_bytes", "cost_unit"):
        assert blob.report[key] == c.report[key], key
    assert blob.report["sections"]["weights"] > 2000
    if c.report["cost_unit"] == "instructions":
        assert blob.report["total_instructions"] == c.report["total_instructions"]
    mk = (blob.out / "lib" / "edgecc.mk").read_text()
    assert re.search(r"^EDGECC_SRCS := \$\(EDGECC_DIR\)model\.c \$\(EDGECC_DIR\)weights\.S ", mk, re.M), mk


def _weights_symbols(nm: str, elf: Path) -> list[str]:
    """`nm -S` lines (address, size, type, name) of the weights arrays, by address."""
    return sorted(ln for ln in _sh([nm, "-S", elf]).splitlines() if re.search(r" ecc_[wp]_\w+$", ln))


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_linked_weights_section_and_symbols_are_the_c_forms(board, blob_run, digits_run, tmp_path):
    pre = BOARDS[board]
    _tools(f"{pre}objcopy", f"{pre}nm")
    blob, c = blob_run(board), digits_run(board)
    sections = {}
    for name, job in (("c", c), ("blob", blob)):
        _sh([f"{pre}objcopy", "-O", "binary", "-j", ".weights", job.out / "fw" / "firmware.elf", tmp_path / name])
        sections[name] = (tmp_path / name).read_bytes()
    assert len(sections["c"]) == blob.report["sections"]["weights"]
    assert sections["blob"] == sections["c"]
    syms = _weights_symbols(f"{pre}nm", blob.out / "fw" / "firmware.elf")
    assert syms == _weights_symbols(f"{pre}nm", c.out / "fw" / "firmware.elf")
    assert len(syms) >= 8 and all(" R " in s or " r " in s for s in syms), syms  # read-only data, sized
    # the library's only weights: the section is weights.bin, which is what the assembler placed
    assert sections["blob"] == (blob.out / "lib" / "weights.bin").read_bytes()


def test_two_blob_builds_are_byte_identical(edgecc, need_board, tmp_path):
    need_board("aarch64")
    outs = [tmp_path / "a", tmp_path / "second_build_in_a_longer_named_folder"]
    for out in outs:
        res = edgecc("build", DIGITS_YAML, "--board", "aarch64", "--weights-format", "blob", "--out", out, "--quiet")
        assert res.code == 0, res.err
    files = [{p.relative_to(o).as_posix(): p.read_bytes() for p in sorted((o / "lib").rglob("*"))} for o in outs]
    assert sorted(files[0]) == sorted(files[1]) and "lib/weights.bin" in files[0]
    assert [k for k in files[0] if files[0][k] != files[1][k]] == []
    assert (outs[0] / "fw" / "firmware.elf").read_bytes() == (outs[1] / "fw" / "firmware.elf").read_bytes()


def test_a_weights_bin_where_edgecc_runs_is_not_taken(edgecc, need_board, tmp_path, monkeypatch):
    """GNU as looks for an .incbin file in the current folder first: edgecc assembles weights.S in its
    own folder, so a stray weights.bin where edgecc was started (here 10 KB of other bytes) changes nothing."""
    need_board("host")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights.bin").write_bytes(bytes(range(256)) * 40)
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--weights-format", "blob", "--out", tmp_path / "out",
                 "--quiet")
    job = finish(res, tmp_path / "out")
    assert job.code == 0 and job.report["verification"]["bit_exact"] is True, res.err


APP_MAIN = """\
#include <stdio.h>
#include "model.h"

int main(void)
{
    static int8_t in[ECC_INPUT0_SIZE], out[ECC_OUTPUT0_SIZE];
    FILE *f = fopen("sample0.bin", "rb");
    if (f == NULL || fread(in, 1, ECC_INPUT0_SIZE, f) != ECC_INPUT0_SIZE)
        return 2;
    fclose(f);
    if (ecc_model_init() != 0 || ecc_model_run(in, out) != 0)
        return 3;
    f = fopen("out0.bin", "wb");
    fwrite(out, 1, ECC_OUTPUT0_SIZE, f);
    fclose(f);
    return 0;
}
"""
MAKEFILE = """\
include ../deploy/lib/edgecc.mk
CFLAGS := -std=c99 -pedantic -Wall -Wextra -Werror -O2 $(EDGECC_CFLAGS)

app: main.c $(EDGECC_SRCS)
\tgcc $(CFLAGS) -o $@ $^
"""
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.13)
project(app C)
include(../deploy/lib/edgecc.cmake)
add_executable(app main.c)
target_link_libraries(app PRIVATE edgecc_model)
"""


def test_blob_library_builds_alone_with_make_and_cmake(blob_run, tmp_path):
    """OUT/lib moved elsewhere: a user's Makefile (edgecc.mk) and a CMake project (edgecc.cmake, which
    enables ASM) build an app whose output on sample 0 is the verified firmware's."""
    _tools("make", "gcc", "cmake")
    job = blob_run("host")
    lib = tmp_path / "deploy" / "lib"
    shutil.copytree(job.out / "lib", lib)
    model_h = (lib / "model.h").read_text()
    n_in, n_out = (int(re.search(rf"#define ECC_{k}0_SIZE (\d+)u", model_h)[1]) for k in ("INPUT", "OUTPUT"))
    want = np.fromfile(job.out / "fw" / "outputs.bin", np.int8)[:n_out].tolist()
    for tool, files in (("make", {"Makefile": MAKEFILE}), ("cmake", {"CMakeLists.txt": CMAKELISTS})):
        app = tmp_path / tool
        app.mkdir()
        for name, text in {**files, "main.c": APP_MAIN}.items():
            (app / name).write_text(text)
        (app / "sample0.bin").write_bytes((job.out / "fw" / "inputs.bin").read_bytes()[:n_in])
        if tool == "make":
            _sh(["make", "-s"], app)
            exe = app / "app"
        else:
            _sh(["cmake", "-S", app, "-B", app / "build", "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"], app)
            _sh(["cmake", "--build", app / "build"], app)
            exe = app / "build" / "app"
        _sh([exe], app)
        assert np.fromfile(app / "out0.bin", np.int8).tolist() == want, tool


def _named_build(edgecc, tmp_path: Path, form: str) -> Path:
    cfg = yaml.safe_load(DIGITS_YAML.read_text())
    cfg.update({"model": str(DIGITS / cfg["model"]), "calibration": str(DIGITS / cfg["calibration"]),
                "weights_section": ".rodata.dg$w", "weights_format": form, "name": "dg", "board": "host"})
    cfg.pop("verify", None)
    (tmp_path / f"{form}.yaml").write_text(yaml.safe_dump(cfg))
    res = edgecc("build", tmp_path / f"{form}.yaml", "--out", tmp_path / form, "--quiet")
    assert res.code == 0, res.err
    return tmp_path / form


def test_named_library_with_its_own_section(edgecc, need_board, tmp_path):
    """`name: dg`, `weights_section: .rodata.dg$w`: dg_weights.S places dg_weights.bin into that section,
    and its object holds the same section bytes and symbols as dg_weights.c's."""
    need_board("host")
    c, blob = _named_build(edgecc, tmp_path, "c"), _named_build(edgecc, tmp_path, "blob")
    files = sorted(p.name for p in (blob / "lib").glob("dg_weights*"))
    assert files == ["dg_weights.S", "dg_weights.bin", "dg_weights.h"]
    text = (blob / "lib" / "dg_weights.S").read_text()
    assert '\t.section ".rodata.dg$w","a"\n' in text and '\t.incbin "dg_weights.bin", 0, ' in text
    objs = {}
    for form, out in (("c", c), ("blob", blob)):
        (obj,) = (out / "fw" / "obj").glob("*_dg_weights.o")
        _sh(["objcopy", "-O", "binary", "-j", ".rodata.dg$w", obj, tmp_path / f"{form}.sec"])
        syms = sorted(ln for ln in _sh(["nm", "-S", obj]).splitlines() if " dg_" in ln)
        objs[form] = ((tmp_path / f"{form}.sec").read_bytes(), syms)
    assert objs["blob"] == objs["c"] and objs["c"][0] == (blob / "lib" / "dg_weights.bin").read_bytes()
    assert len(objs["c"][1]) >= 8 and all(re.fullmatch(r"[0-9a-f]+ [0-9a-f]+ R dg_[wp]_\w+", s) for s in objs["c"][1])


@pytest.mark.parametrize("cc, readelf, flag", [
    ("gcc", "readelf", "-fcf-protection=full"),
    ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-readelf", "-mbranch-protection=standard"),
    ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-readelf", "-mbranch-protection=pac-ret"),
    ("arm-none-eabi-gcc", "arm-none-eabi-readelf", "-mthumb -mcpu=cortex-m55"),
])
def test_weights_s_has_the_elf_notes_of_weights_c(cc, readelf, flag, blob_run, digits_run, tmp_path):
    """Linked in place of weights.o, weights.S's object must not drop a property the C objects carry
    (IBT / SHSTK, BTI / PAC: the linker keeps one only if every object has it) nor ask for an
    executable stack."""
    _tools(cc, readelf)
    for src in (digits_run("host").out / "lib" / "weights.c", blob_run("host").out / "lib" / "weights.S"):
        shutil.copy(src, tmp_path)
    shutil.copy(blob_run("host").out / "lib" / "weights.bin", tmp_path)
    shutil.copy(digits_run("host").out / "lib" / "weights.h", tmp_path)
    notes = {}
    for src in ("weights.c", "weights.S"):
        _sh([cc, *flag.split(), "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I.", "-c", src,
             "-o", f"{src[-1]}.o"], tmp_path)
        notes[src] = _sh([readelf, "-n", "-W", f"{src[-1]}.o"], tmp_path)
        sections = _sh([readelf, "-S", "-W", f"{src[-1]}.o"], tmp_path)
        assert ("GNU-stack" in sections) == (cc != "arm-none-eabi-gcc"), sections
    assert notes["weights.S"] == notes["weights.c"]
    if cc != "arm-none-eabi-gcc":
        assert re.search(r"(x86 feature: IBT, SHSTK|AArch64 feature: (BTI, PAC|PAC))", notes["weights.c"]), notes


def test_auto_ships_a_blob_above_256_kib_only(edgecc, need_board, tmp_path, digits_build):
    need_board("host")
    if not AD_MODEL.is_file():
        pytest.skip(f"{AD_MODEL} missing")
    res = edgecc("build", "--model", AD_MODEL, "--board", "host", "--out", tmp_path / "ad", "--quiet")
    assert res.code == 0, res.err
    lib = tmp_path / "ad" / "lib"
    assert (lib / "weights.S").is_file() and not (lib / "weights.c").exists()
    assert (lib / "weights.bin").stat().st_size > 256 * 1024  # MLPerf Tiny's autoencoder: 279 KB of arrays
    assert (digits_build("host") / "lib" / "weights.c").is_file()
