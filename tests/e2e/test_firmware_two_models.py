"""Issue 15 items 1 and 2: two namespaced libraries in one firmware, and the application's own arena.

The digits example (`--name digits`) and the MLPerf Tiny DS-CNN keyword spotter (`--name kws`) are
each compiled, run and verified alone by `edgecc run` for the board; then the test suite's own
firmware (firmware/two_models.c) links both OUT/lib folders into one image: on mps2-an386 with the
board's build (startup, linker script, --gc-sections), on aarch64 with a user's Makefile that
includes both edgecc.mk fragments. Under QEMU, both models' outputs on every sample, in their
static arenas and in one shared caller-provided arena, equal their single-model runs (which
verification proved bit-exact), and init_ctx refuses NULL, too small and misaligned buffers. `nm`
of the image and of the library objects shows every library symbol prefixed and none twice.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS_YAML, Job, finish

HERE = Path(__file__).resolve().parent
MAIN = HERE / "firmware" / "two_models.c"
KWS_YAML = HERE.parent / "models" / "kws_dscnn_int8.yaml"
NAMES = ("digits", "kws")
BOARDS = ("mps2-an386", "aarch64")
# kws_model.h: the init_ctx refusals (c_templates/model.h.j2)
ERR_NULL, ERR_TOO_SMALL, ERR_MISALIGNED = -2, -3, -4


@pytest.fixture(scope="module")
def single(tmp_path_factory, edgecc, need_board):
    """single(name, board) -> Job of `edgecc run <its YAML> --name NAME --board BOARD` (cached)."""
    cache: dict[tuple[str, str], Job] = {}

    def get(name: str, board: str) -> Job:
        need_board(board)
        yaml = {"digits": DIGITS_YAML, "kws": KWS_YAML}[name]
        if name == "kws" and not (KWS_YAML.parent / "../../../shared/models/mlperf_tiny").is_dir():
            pytest.skip("no shared/models/mlperf_tiny beside the repository")
        if (name, board) not in cache:
            out = tmp_path_factory.mktemp(f"{name}-{board}") / "out"
            res = edgecc("run", yaml, "--board", board, "--name", name, "--out", out, "--quiet")
            job = finish(res, out)
            assert job.code == 0, f"edgecc run {name} on {board}: exit {job.code}\n{job.err}"
            cache[(name, board)] = job
        return cache[(name, board)]

    return get


def _sh(cmd: list[str], cwd: Path) -> str:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}"
    return p.stdout


MAKEFILE = """\
include digits/edgecc.mk
include kws/edgecc.mk
CFLAGS := -std=c99 -pedantic -Wall -Wextra -Werror {flags} $(DIGITS_INC) $(KWS_INC)

two_models.elf: two_models.c $(DIGITS_SRCS) $(KWS_SRCS)
\t{cc} $(CFLAGS) -o $@ $^ {ldflags}
"""


def _build(target, libs: dict[str, Path], work: Path) -> Path:
    """The two-model ELF: the board's own build for Cortex-M (startup, linker script), a user's
    Makefile including both edgecc.mk fragments for the hosted AArch64 board."""
    shutil.copy(MAIN, work / MAIN.name)
    if target.support == "cortex_m":
        from targets.build import build_firmware

        sources = [p for name in NAMES for p in sorted(libs[name].glob("*.c"))]
        fw = build_firmware(target, [work / MAIN.name], [libs[n] for n in NAMES], work / "fw", lib_sources=sources)
        return fw.elf
    flags = " ".join(f for f in target.cflags if not f.startswith("-g"))
    (work / "Makefile").write_text(MAKEFILE.format(cc=target.compiler, flags=flags, ldflags=" ".join(target.ldflags)))
    _sh(["make", "-s"], cwd=work)
    return work / "two_models.elf"


def _nm(target, *files: Path) -> list[tuple[str, str]]:
    """(type letter, name) of every defined symbol of `files`, compiler-made local labels left out."""
    out = _sh([target.nm, "--defined-only", *map(str, files)], cwd=files[0].parent)
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and not re.match(r"^(\$|\.L|__)", parts[2]):
            syms.append((parts[1], parts[2]))
    return syms


@pytest.fixture(scope="module", params=BOARDS)
def two_models(request, single, tmp_path_factory):
    """(target, work folder, image, the single-model jobs, the run's stdout) for one board."""
    from targets import load_target
    from targets.qemu import run_firmware

    board = request.param
    jobs = {name: single(name, board) for name in NAMES}
    target = load_target(board)
    if target.support != "cortex_m" and shutil.which("make") is None:
        pytest.skip("make not found")
    work = tmp_path_factory.mktemp(f"two-models-{board}")
    libs = {name: shutil.copytree(jobs[name].out / "lib", work / name) for name in NAMES}
    elf = _build(target, libs, work)
    for name in NAMES:
        shutil.copy(jobs[name].out / "fw" / "inputs.bin", work / f"{name}_in.bin")
    log = run_firmware(target, elf, cwd=work, timeout_s=120)
    assert log.returncode == 0 and not log.timed_out, f"exit {log.returncode}\n{log.stdout}\n{log.stderr}"
    return target, work, elf, jobs, log.stdout


@pytest.mark.parametrize("arena", ["static", "ctx"])
@pytest.mark.parametrize("name", NAMES)
def test_both_models_match_their_single_model_runs(two_models, name, arena):
    _, work, _, jobs, stdout = two_models
    want = np.fromfile(jobs[name].out / "fw" / "outputs.bin", np.int8)
    samples = jobs[name].report["verification"]["samples"]
    assert f"{name}={samples}" in stdout and "status=0" in stdout, stdout
    got = np.fromfile(work / f"{name}{'_ctx' if arena == 'ctx' else ''}_out.bin", np.int8)
    assert got.size == want.size > 0 and got.tolist() == want.tolist(), \
        f"{name} ({arena} arena) in the two-model image differs from its single-model run"


def test_init_ctx_refuses_null_too_small_and_misaligned_arenas(two_models):
    stdout = two_models[4]
    for name in NAMES:
        line = next(ln for ln in stdout.splitlines() if ln.startswith(f"REFUSED {name} "))
        codes = dict(kv.split("=") for kv in line.split()[2:])
        assert codes == {"null": str(ERR_NULL), "ctx_null": str(ERR_NULL), "too_small": str(ERR_TOO_SMALL),
                         "misaligned": str(ERR_MISALIGNED), "run": str(ERR_NULL), "arena_after": "0"}, line


def test_every_library_symbol_is_prefixed_and_defined_once(two_models):
    target, work, elf, _, _ = two_models
    image = _nm(target, elf)
    public = [s for t, s in image if t.isupper()]
    assert len(public) == len(set(public)), "a public symbol is defined twice in the image"
    seen: dict[str, set[str]] = {}
    for name in NAMES:
        objs = sorted((work / "fw" / "obj").glob(f"*_{name}_*.o")) if target.support == "cortex_m" else []
        if not objs:  # the Makefile build compiles each library alone: objects from its sources
            objs = [work / name / f"{c.stem}.o" for c in sorted((work / name).glob("*.c"))]
            flags = [f for f in target.cflags if not f.startswith("-g")]
            _sh([target.compiler, *flags, "-c", *(c.name for c in sorted((work / name).glob("*.c")))], cwd=work / name)
        lib_syms = _nm(target, *objs)
        assert lib_syms, f"{name}: no symbols in {objs}"
        bad = sorted({s for _, s in lib_syms if not s.startswith(f"{name}_")})
        assert bad == [], f"{name}: library symbols without the {name}_ prefix: {bad[:20]}"
        lib_public = {s for t, s in lib_syms if t.isupper()}
        assert {f"{name}_model_run", f"{name}_model_init_ctx", f"{name}_model_run_ctx"} <= lib_public
        # (--gc-sections drops the kernels' unused twins from the Cortex-M image)
        assert {f"{name}_model_run", f"{name}_model_run_ctx"} <= lib_public & set(public)
        seen[name] = lib_public
    assert seen["digits"] & seen["kws"] == set()
    # the same kernels in both libraries (what used to be `multiple definition`), each under its own name
    both = ({s.removeprefix("digits_") for s in public if s.startswith("digits_")}
            & {s.removeprefix("kws_") for s in public if s.startswith("kws_")})
    assert any("conv2d" in k for k in both) and "softmax_s8" in both, sorted(both)
    # what is left with the old prefix is the board support's (startup, fault handler), not a library's
    lib_objs = {o for name in NAMES for o in (work / "fw" / "obj").glob(f"*_{name}_*.o")}
    others = sorted(set((work / "fw" / "obj").glob("*.o")) - lib_objs)
    support = {s for _, s in _nm(target, *others)} if others else set()
    assert sorted(s for s in public if s.startswith("ecc_") and s not in support) == []


def test_named_libraries_ship_no_ecc_names(two_models):
    """Every file of a named library spells the name: no `ecc_` / `ECC_` identifier, no model.h."""
    work = two_models[1]
    for name in NAMES:
        files = sorted(p for p in (work / name).iterdir() if p.is_file() and p.suffix in (".c", ".h", ".mk", ".cmake"))
        assert {f"{name}_model.h", f"{name}_model.c", f"{name}_weights.c"} <= {f.name for f in files}
        assert all(f.name.startswith((f"{name}_", "edgecc.")) for f in files), [f.name for f in files]
        hits = [f"{f.name}: {m}" for f in files for m in re.findall(r"\b(?:ecc|ECC)_\w+", f.read_text())]
        assert hits == [], hits[:20]
        mk = (work / name / "edgecc.mk").read_text()
        srcs = re.search(rf"^{name.upper()}_SRCS := (.*)$", mk, re.M).group(1).split()
        assert sorted(s.rsplit(")", 1)[1] for s in srcs) == sorted(p.name for p in (work / name).glob("*.c"))
        assert f"add_library({name}_model STATIC" in (work / name / "edgecc.cmake").read_text()
