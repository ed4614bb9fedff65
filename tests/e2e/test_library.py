"""OUT/lib, the deployable model library (issue 2 point 6 and "Done when"): it compiles on its own
with -Wall -Wextra -Werror with each board's compiler (host gcc; arm-none-eabi-gcc for the M4); it holds no mutable data but the
arena, no stdio/malloc/float/semihosting; its Make fragment works; profiling hooks vanish without
ECC_PROFILE; and two builds of the same inputs are byte-identical (P17 needs determinism)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

WARN = ["-Wall", "-Wextra", "-Werror", "-std=c99"]
M4 = ["-mthumb", "-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", "-O2"]
# (board whose OUT/lib is compiled, compiler, flags, size tool, nm tool)
COMPILES = {
    "host-gcc": ("host", "gcc", ["-O2"], "size", "nm"),
    "mps2-an386-armgcc": ("mps2-an386", "arm-none-eabi-gcc", M4, "arm-none-eabi-size", "arm-none-eabi-nm"),
}
# The M4 library carries ACLE DSP kernels (arm_acle.h), so it is compiled with the board's own
# compiler only; the host library is the portable C.
# symbols the library may take from outside itself: <string.h> and integer compiler helpers
ALLOWED_EXTERNAL = re.compile(r"^(memcpy|memset|memmove|__stack_chk_fail|__stack_chk_guard"
                              r"|__aeabi_(u?idiv(mod)?|u?ldivmod|lmul|llsl|llsr|lasr|mem(cpy|set|clr|move)\d*))$")
FORBIDDEN = re.compile(r"\b(printf|fprintf|sprintf|snprintf|puts|putchar|fopen|fwrite|fread|FILE|malloc|calloc"
                       r"|realloc|free|float|double|stdio\.h|stdlib\.h|math\.h|semihost\w*|bkpt|__builtin_trap)\b")


def _tools(*names: str) -> None:
    import os

    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        msg = f"missing tools: {', '.join(missing)}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " (CI=true: tools are required)")
        pytest.skip(msg)


def _sh(cmd: list[str], cwd: Path) -> str:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}"
    return p.stdout


def _lib_copy(lib: Path, dest: Path) -> Path:
    """Only the files of OUT/lib, alone in a fresh folder (nothing from fw/ or the repo reachable)."""
    shutil.copytree(lib, dest)
    return dest


def _compile_alone(lib: Path, cc: str, flags: list[str], *extra: str) -> list[Path]:
    sources = sorted(p.name for p in lib.glob("*.c"))
    assert {"model.c", "weights.c"} <= set(sources)
    _sh([cc, *WARN, *flags, *extra, "-I.", "-c", *sources], cwd=lib)
    return [lib / (Path(s).stem + ".o") for s in sources]


@pytest.fixture(params=sorted(COMPILES))
def compiled(request, digits_run, tmp_path):
    board, cc, flags, size_tool, nm_tool = COMPILES[request.param]
    _tools(cc, size_tool, nm_tool)
    lib = _lib_copy(digits_run(board).out / "lib", tmp_path / "lib")
    return lib, _compile_alone(lib, cc, flags), size_tool, nm_tool, cc


def test_lib_compiles_on_its_own_without_warnings(compiled):
    _, objs, *_ = compiled
    assert all(o.is_file() for o in objs)


def test_lib_has_no_mutable_data_but_the_arena(compiled):
    lib, objs, size_tool, nm_tool, _ = compiled
    arena = int(re.search(r"#define ECC_ARENA_SIZE (\d+)u", (lib / "model.h").read_text()).group(1))
    arena_seen = 0
    for obj in objs:
        for line in _sh([size_tool, "-A", obj.name], cwd=lib).splitlines():
            parts = line.split()
            if len(parts) != 3 or not parts[1].isdigit():
                continue
            name, size = parts[0], int(parts[1])
            if name == ".bss.ecc_arena":
                arena_seen += size
            elif re.match(r"^\.(data|bss|sdata|sbss|tdata|tbss)\b", name):
                assert size == 0, f"{obj.name}: mutable section {name} of {size} B (only the arena may hold data)"
        commons = [ln for ln in _sh([nm_tool, obj.name], cwd=lib).splitlines() if re.search(r"\s[Cc]\s", ln)]
        assert commons == [], f"{obj.name}: common symbols {commons}"
    assert arena_seen == arena, f".bss.ecc_arena sections hold {arena_seen} B, model.h says ECC_ARENA_SIZE {arena}"


def test_lib_needs_nothing_but_string_h(compiled):
    lib, objs, _, nm_tool, _ = compiled
    defined, undefined = set(), set()
    for obj in objs:
        for line in _sh([nm_tool, obj.name], cwd=lib).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined.add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDRB":
                defined.add(parts[2])
    external = sorted(s for s in undefined - defined if not ALLOWED_EXTERNAL.match(s))
    assert external == [], f"the library needs symbols from outside itself: {external}"


def _strip_c_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


@pytest.mark.parametrize("board", ["mps2-an386", "host"])
def test_lib_sources_use_no_stdio_malloc_float(board, digits_run):
    lib = digits_run(board).out / "lib"
    files = sorted(p for p in lib.iterdir() if p.suffix in (".c", ".h"))
    assert files
    hits = []
    for f in files:
        if f.name.endswith("_f32.h"):  # onnxruntime's float32 requantization, reached by `_onnx` twins only
            continue
        for n, line in enumerate(_strip_c_comments(f.read_text()).splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{f.name}:{n}: {line.strip()}")
    assert hits == [], "OUT/lib must not use stdio, malloc, float or semihosting:\n" + "\n".join(hits)


def test_m4_lib_objects_have_no_float_instructions(digits_run, tmp_path):
    _tools("arm-none-eabi-gcc", "arm-none-eabi-objdump")
    lib = _lib_copy(digits_run("mps2-an386").out / "lib", tmp_path / "lib")
    objs = _compile_alone(lib, "arm-none-eabi-gcc", M4)
    dis = _sh(["arm-none-eabi-objdump", "-d", *[o.name for o in objs]], cwd=lib)
    fp, fn, onnx_fp = [], "", 0
    for ln in dis.splitlines():
        head = re.match(r"^[0-9a-f]+ <(\w+)>:", ln)
        fn = head.group(1) if head else fn
        if re.search(r"\bv\w+\.f(16|32|64)\b|\bvcvt", ln):
            if "_onnx" in fn or "_f32" in fn:  # rounding onnx: onnxruntime's float32 requantization
                onnx_fp += 1
            else:
                fp.append(f"{fn}: {ln.strip()}")
    assert fp == [], "floating-point instructions in the M4 library's TFLM-rounding code:\n" + "\n".join(fp[:20])
    assert onnx_fp > 0, "sanity: the `_onnx` twins of Conv / FC requantize on the FPU"


def test_release_model_c_has_no_profiling_hooks(digits_run, tmp_path):
    _tools("gcc", "nm")
    lib = _lib_copy(digits_run("host").out / "lib", tmp_path / "lib")
    _sh(["gcc", *WARN, "-O2", "-I.", "-c", "model.c", "-o", "release.o"], cwd=lib)
    _sh(["gcc", *WARN, "-O2", "-I.", "-DECC_PROFILE", "-c", "model.c", "-o", "profiled.o"], cwd=lib)
    release = _sh(["nm", "release.o"], cwd=lib)
    profiled = _sh(["nm", "profiled.o"], cwd=lib)
    assert "ecc_profile_begin" in profiled, "sanity: with ECC_PROFILE model.c calls the hooks"
    assert "ecc_profile_begin" not in release and "ecc_profile_end" not in release, \
        "model.c compiled without ECC_PROFILE still references the profiling hooks"


MAKEFILE = """\
include {lib}/edgecc.mk
CFLAGS := -std=c99 -Wall -Wextra -Werror -O2 $(EDGECC_INC)

app: main.c $(EDGECC_SRCS)
\tgcc $(CFLAGS) -o $@ $^
"""

APP_MAIN = """\
#include <stdio.h>
#include "model.h"

int main(void)
{
    static int8_t in[ECC_INPUT0_SIZE + 1], out[ECC_OUTPUT0_SIZE + 1];
    FILE *f = fopen("sample0.bin", "rb");
    if (f == NULL || fread(in + 1, 1, ECC_INPUT0_SIZE, f) != ECC_INPUT0_SIZE)
        return 2;
    fclose(f);
    if (ecc_model_init() != 0 || ecc_model_run(in + 1, out + 1) != 0) /* odd addresses on purpose */
        return 3;
    f = fopen("out0.bin", "wb");
    fwrite(out + 1, 1, ECC_OUTPUT0_SIZE, f);
    fclose(f);
    return 0;
}
"""


def test_make_fragment_builds_an_app_that_matches_the_firmware(digits_run, tmp_path):
    """A user's Makefile that includes OUT/lib/edgecc.mk builds with host gcc; the app's output on
    sample 0 equals the firmware's (which verification proved equal to the reference)."""
    _tools("make", "gcc")
    job = digits_run("host")
    lib = _lib_copy(job.out / "lib", tmp_path / "deploy" / "edgecc_lib")
    app = tmp_path / "app"
    app.mkdir()
    (app / "Makefile").write_text(MAKEFILE.format(lib="../deploy/edgecc_lib"))
    (app / "main.c").write_text(APP_MAIN)
    _sh(["make", "-s"], cwd=app)
    model_h = (lib / "model.h").read_text()
    n_in = int(re.search(r"#define ECC_INPUT0_SIZE (\d+)u", model_h).group(1))
    n_out = int(re.search(r"#define ECC_OUTPUT0_SIZE (\d+)u", model_h).group(1))
    (app / "sample0.bin").write_bytes((job.out / "fw" / "inputs.bin").read_bytes()[:n_in])
    _sh(["./app"], cwd=app)
    got = np.fromfile(app / "out0.bin", np.int8)
    want = np.fromfile(job.out / "fw" / "outputs.bin", np.int8)[:n_out]
    assert got.tolist() == want.tolist()


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _assert_same_tree(a: Path, b: Path, what: str) -> None:
    ta, tb = _tree(a), _tree(b)
    assert sorted(ta) == sorted(tb), f"{what}: different file lists"
    differ = [k for k in ta if ta[k] != tb[k]]
    assert differ == [], f"{what}: files differ between two builds of the same inputs: {differ}"


def test_two_builds_are_byte_identical(digits_build):
    a = digits_build("mps2-an386", "a")
    b = digits_build("mps2-an386", "second_build_in_a_longer_named_folder")
    _assert_same_tree(a / "lib", b / "lib", "OUT/lib")
    assert (a / "fw" / "main.c").read_bytes() == (b / "fw" / "main.c").read_bytes(), "fw/main.c differs"


def test_run_and_build_emit_the_same_library(digits_build, digits_run):
    """Profiling is a compile-time define of the firmware: `run` and `build` ship the same lib/."""
    _assert_same_tree(digits_build("mps2-an386", "a") / "lib", digits_run("mps2-an386").out / "lib",
                      "OUT/lib of build vs run")


STOCK_APP = """\
#include "model.h"
static int8_t in[ECC_INPUT0_SIZE], out[ECC_OUTPUT0_SIZE];
int main(void) { return ecc_model_init() | ecc_model_run(in, out); }
"""


def _sections(readelf_out: str) -> dict[str, tuple[str, int, int]]:
    """name -> (type, address, size) from `readelf -S -W`."""
    out = {}
    for m in re.finditer(r"\]\s+(\S+)\s+(\S+)\s+([0-9a-f]{8,})\s+[0-9a-f]+\s+([0-9a-f]+)\s", readelf_out):
        out[m[1]] = (m[2], int(m[3], 16), int(m[4], 16))
    return out


def test_arena_takes_no_flash_with_a_stock_linker_script(digits_run, tmp_path):
    """A user's firmware linked with the toolchain's own script (--specs=nosys.specs, no edgecc .ld):
    the arena's section is NOBITS in model.o, lands in .bss, and the flashable image
    (objcopy -O binary) ends before it: no zeros stored in flash and copied at start-up."""
    tools = ("arm-none-eabi-gcc", "arm-none-eabi-readelf", "arm-none-eabi-objcopy", "arm-none-eabi-nm")
    _tools(*tools)
    lib = _lib_copy(digits_run("mps2-an386").out / "lib", tmp_path / "lib")
    arena = int(re.search(r"#define ECC_ARENA_SIZE (\d+)u", (lib / "model.h").read_text()).group(1))
    (lib / "app.c").write_text(STOCK_APP)
    _sh(["arm-none-eabi-gcc", *WARN, *M4, "-I.", "-c", "model.c"], cwd=lib)
    obj = _sections(_sh(["arm-none-eabi-readelf", "-S", "-W", "model.o"], cwd=lib))
    assert obj[".bss.ecc_arena"][0] == "NOBITS" and obj[".bss.ecc_arena"][2] == arena, obj
    sources = sorted(p.name for p in lib.glob("*.c"))
    _sh(["arm-none-eabi-gcc", *WARN, *M4, "--specs=nosys.specs", "-I.", *sources, "-o", "app.elf"], cwd=lib)
    elf = _sections(_sh(["arm-none-eabi-readelf", "-S", "-W", "app.elf"], cwd=lib))
    addr = int(next(ln.split()[0] for ln in _sh(["arm-none-eabi-nm", "app.elf"], cwd=lib).splitlines()
                    if ln.endswith(" ecc_arena")), 16)
    home = [n for n, (_, a, s) in elf.items() if a <= addr < a + s and n in (".bss", ".data", ".arena")]
    assert home == [".bss"] and elf[".bss"][0] == "NOBITS", (home, elf)
    _sh(["arm-none-eabi-objcopy", "-O", "binary", "app.elf", "app.bin"], cwd=lib)
    image = (lib / "app.bin").stat().st_size
    start = min(a for t, a, s in elf.values() if t == "PROGBITS" and a and s)
    # (with the old PROGBITS section ".arena" ld put it after .data: the image grew by the arena's size)
    assert start + image <= addr, f"the image ({image} B from 0x{start:x}) covers the arena at 0x{addr:x}"


def test_no_static_arena_leaves_only_the_callers_arena_api(digits_run, tmp_path):
    """-DECC_NO_STATIC_ARENA (issue 15 item 2): the application owns all memory; the library keeps no
    arena and no ecc_model_init / ecc_model_run, only the caller's-arena API (model.h)."""
    _tools("gcc", "nm", "size")
    lib = _lib_copy(digits_run("host").out / "lib", tmp_path / "lib")
    objs = _compile_alone(lib, "gcc", ["-O2"], "-pedantic", "-DECC_NO_STATIC_ARENA")
    syms = {ln.split()[-1] for o in objs for ln in _sh(["nm", o.name], cwd=lib).splitlines() if ln.strip()}
    assert {"ecc_model_init_ctx", "ecc_model_run_ctx"} <= syms
    assert syms & {"ecc_arena", "ecc_model_init", "ecc_model_run"} == set()
    assert ".bss.ecc_arena" not in _sh(["size", "-A", "model.o"], cwd=lib)
