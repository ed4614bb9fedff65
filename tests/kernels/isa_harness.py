"""The ISA-independent half of the kernel test harnesses (dsp_harness.py, helium_harness.py,
neon_harness.py): one test program per board for all kernel cases of one ISA: build it, feed it
cases, read the results.

A case is one call of one ISA entry point (c_templates/kernels/<isa>/) with its argument list as the
compiler's Python glue builds it (re-packed weights, folded bias, requantization arrays) and the
expected output of the numpy reference. All cases of a run travel to the program in one file
(cases.bin); the program calls each kernel, checks guard bytes after its output and its scratch
(scratch_bytes must be exact), and writes results.bin.

cases.bin (little-endian u32 words): number of cases; per case: function index, number of
arguments, then per argument a tag and its payload: 0 int (value), 1 data (byte count, bytes padded
to 4), 2 scratch (byte count), 3 output (byte count), 4 NULL.
results.bin per case: return code, output byte count, guards intact (0/1), output bytes padded to 4.

The per-ISA modules pass their differences as data: the prototype header and name prefix, the
headers to copy, the pool placement and buffer alignment, the marks around each call.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from toolchain.ops.registry import CArg

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "c_templates" / "kernels"
POOL_BYTES = 1 << 20
GUARD = 16


@dataclass(frozen=True)
class Case:
    """One kernel call: id, C function, resolved arguments, expected output bytes."""

    name: str
    function: str
    args: tuple[tuple, ...]
    expected: bytes


def headers(isa: str, prototypes: Path) -> tuple[Path, ...]:
    """The headers a kernel program of `isa` compiles against: the portable three, then every header of
    the ISA folder (ecc_<isa>.h may include parts, e.g. neon/ecc_neon_gemm_dot.h) and the prototypes."""
    own = [h for h in sorted((KERNELS / isa).glob("*.h")) if h != prototypes]
    return (KERNELS / "portable" / "ecc_fixed_point.h", KERNELS / "portable" / "ecc_requant_f32.h", *own, prototypes)


def prototypes(path: Path, isa: str, keep: Callable[[str], bool] = lambda name: True) -> dict[str, list[str]]:
    """function name -> C parameter types of every `ecc_<isa>_*` entry point declared in `path` that
    `keep`s, in header order. Declarations: `int name(params);`, a twin `__typeof__(other) name;`, and
    a mode macro's entry points `MODES(kernel, (params));` after `#define MODES(kernel, params) int
    ecc_<isa>_##kernel##<mode>_s8 params; ...` (one name per <mode> of the definition)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S).replace("\\\n", " ")
    modes = {m: re.findall(r"##kernel##(\w*?)_s8 params", body)
             for m, body in re.findall(r"^#define (\w+)\(kernel, params\)(.*)$", text, flags=re.M)}
    decl = re.compile(rf"^(?:int (ecc_{isa}_\w+)\(([^;]*)\)|__typeof__\((ecc_\w+)\) (ecc_{isa}_\w+)"
                      rf"|(\w+)\((\w+), \(([^;]*)\)\));", re.M)
    found: dict[str, list[str]] = {}
    for name, params, twin_of, twin, macro, kernel, macro_params in decl.findall(text):
        types = [re.sub(r"\s*\b\w+$", "", p.strip()) for p in (params or macro_params).split(",")]
        if twin:
            found[twin] = found[twin_of]
        elif macro:
            found.update({f"ecc_{isa}_{kernel}{mode}_s8": types for mode in modes[macro]})
        else:
            found[name] = types
    return {name: types for name, types in found.items() if keep(name)}


def case(name: str, function: str, args: list[CArg], tensors: dict[str, np.ndarray], output: str,
         scratch: int, expected: np.ndarray) -> Case:
    """Resolve a kernel argument list (after the scratch pointer) like toolchain/codegen/context.py
    does: "act" names index `tensors` (the one named `output` is the output buffer), "array" /
    "const" values become int8 or int32 data."""
    resolved: list[tuple] = [("scratch", scratch) if scratch else ("null",)]
    for a in args:
        if a.kind == "int":
            resolved.append(("int", int(a.value)))
        elif a.kind == "act" and a.value == output:
            resolved.append(("out", int(np.asarray(expected).size)))
        elif a.kind == "act":
            resolved.append(("data", np.ascontiguousarray(tensors[a.value], np.int8).tobytes()))
        elif a.kind in ("array", "const"):
            v = np.asarray(a.value)
            resolved.append(("data", np.ascontiguousarray(v, np.int8 if v.dtype == np.int8 else np.int32).tobytes()))
        else:
            resolved.append(("null",))
    return Case(name, function, tuple(resolved), np.ascontiguousarray(expected, np.int8).tobytes())


def write_cases(cases: list[Case], path: Path, protos: dict[str, list[str]]) -> None:
    """cases.bin for a program whose switch has one case per entry of `protos`, in order."""
    index = {f: i for i, f in enumerate(protos)}
    out = [struct.pack("<I", len(cases))]
    for c in cases:
        out.append(struct.pack("<II", index[c.function], len(c.args)))
        for a in c.args:
            if a[0] == "int":
                out.append(struct.pack("<Ii", 0, a[1]))
            elif a[0] == "data":
                out.append(struct.pack("<II", 1, len(a[1])) + a[1] + b"\0" * (-len(a[1]) % 4))
            elif a[0] == "scratch":
                out.append(struct.pack("<II", 2, a[1]))
            elif a[0] == "out":
                out.append(struct.pack("<II", 3, a[1]))
            else:
                out.append(struct.pack("<I", 4))
    path.write_bytes(b"".join(out))


def read_results(path: Path, n: int) -> list[tuple[int, bool, bytes]]:
    """(return code, guards intact, output bytes) per case."""
    data, at, res = path.read_bytes(), 0, []
    for _ in range(n):
        rc, size, guards = struct.unpack_from("<iII", data, at)
        at += 12
        res.append((rc, bool(guards), data[at:at + size]))
        at += size + (-size % 4)
    return res


@dataclass(frozen=True)
class MainStyle:
    """The per-ISA pieces of main.c (each a verbatim C fragment, "" for none)."""

    title: str                                   # the first comment line
    pool_attr: str = "aligned(16)"               # attributes of the buffer pool
    globals: str = ""                            # after g_used
    decls: str = ""                              # after the arg_t typedef
    align: str = "    g_used = (g_used + 15u) & ~15u;\n"  # the start of every buffer
    after_take: str = ""                         # before call()
    pre_call: str = ""                           # around each kernel call
    post_call: str = ""


_MAIN = r"""%(title)s
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ecc_kernels.h"
#include "ecc_%(isa)s_kernels.h"

#define POOL_BYTES %(pool)d
#define GUARD %(guard)d
#define MAX_ARGS 40
static uint8_t g_pool[POOL_BYTES] __attribute__((%(pool_attr)s));
static uint32_t g_used;
%(globals)s
typedef struct { int32_t v; void *p; uint32_t n; int guarded; } arg_t;
%(decls)s
static uint32_t rd(FILE *f) { uint32_t v = 0; if (fread(&v, 4, 1, f) != 1) v = 0xFFFFFFFFu; return v; }

static void *take(uint32_t n)
{
    void *p;
%(align)s    if (g_used + n + GUARD > POOL_BYTES) return NULL;
    p = g_pool + g_used;
    g_used += n + GUARD;
    return p;
}

%(after_take)sstatic int call(uint32_t fn, arg_t *a)
{
    switch (fn) {
%(cases)s
    default: return -99;
    }
}

int main(void)
{
    FILE *fi = fopen("cases.bin", "rb"), *fo = fopen("results.bin", "wb");
    arg_t a[MAX_ARGS];
    uint32_t n, c, i;
    if (fi == NULL || fo == NULL) { printf("ECC_ERROR files\n"); return 2; }
    n = rd(fi);
    for (c = 0; c < n; c++) {
        uint32_t fn = rd(fi), na = rd(fi), out = 0, guards = 1;
        int32_t rc;
        g_used = 0;
        if (na > MAX_ARGS) { printf("ECC_ERROR args\n"); return 3; }
        for (i = 0; i < na; i++) {
            uint32_t tag = rd(fi);
            memset(&a[i], 0, sizeof a[i]);
            if (tag == 0) {
                a[i].v = (int32_t)rd(fi);
            } else if (tag == 4) {
                a[i].p = NULL;
            } else {
                a[i].n = rd(fi);
                a[i].p = take(a[i].n);
                if (a[i].p == NULL) { printf("ECC_ERROR pool\n"); return 4; }
                if (tag == 1) {
                    uint32_t padded = (a[i].n + 3u) & ~3u;
                    if (fread(a[i].p, 1, padded, fi) != padded) { printf("ECC_ERROR read\n"); return 5; }
                } else {
                    memset(a[i].p, 0x5A, a[i].n + GUARD);
                    a[i].guarded = 1;
                    if (tag == 3) out = i;
                }
            }
        }
%(pre_call)s        rc = call(fn, a);
%(post_call)s        for (i = 0; i < na; i++)
            if (a[i].guarded)
                for (uint32_t g = 0; g < GUARD; g++)
                    if (((uint8_t *)a[i].p)[a[i].n + g] != 0x5A) guards = 0;
        fwrite(&rc, 4, 1, fo);
        fwrite(&a[out].n, 4, 1, fo);
        fwrite(&guards, 4, 1, fo);
        fwrite(a[out].p, 1, (a[out].n + 3u) & ~3u, fo);
    }
    fclose(fi);
    fclose(fo);
    printf("%(done)s %%u\n", (unsigned)n);
    return 0;
}
"""


def done_tag(isa: str) -> str:
    """What the program prints after its last case (followed by the case count)."""
    return f"ECC_{isa.upper()}_DONE"


def harness_source(isa: str, protos: dict[str, list[str]], style: MainStyle) -> str:
    """The program's main.c: one switch case per entry point, arguments cast to their types."""
    lines = []
    for i, (name, types) in enumerate(protos.items()):
        args = ", ".join(f"({t})a[{j}].p" if "*" in t else f"a[{j}].v" for j, t in enumerate(types))
        lines.append(f"    case {i}: return {name}({args});")
    return _MAIN % {"pool": POOL_BYTES, "guard": GUARD, "cases": "\n".join(lines), "isa": isa, "done": done_tag(isa),
                    **{f: getattr(style, f) for f in MainStyle.__dataclass_fields__}}


def write_sources(out: Path, isa: str, header_files: tuple[Path, ...], main_source: str,
                  keep: Callable[[str], bool] = lambda template: True) -> tuple[list[Path], list[Path]]:
    """Render every `isa` kernel template that `keep`s next to the headers; returns (harness sources,
    kernel sources)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from toolchain.codegen.emit import KERNEL_HEADER, kernel_header

    out.mkdir(parents=True, exist_ok=True)
    (out / KERNEL_HEADER).write_text(kernel_header())  # generated from the portable kernels
    for h in header_files:
        (out / h.name).write_text(h.read_text())
    env = Environment(loader=FileSystemLoader(str(KERNELS)), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    kernels = []
    for tpl in sorted((KERNELS / isa).glob("*.c.j2")):
        if not keep(tpl.name):
            continue
        path = out / f"ecc_{isa}_{tpl.name.removesuffix('.j2')}"
        path.write_text(env.get_template(f"{isa}/{tpl.name}").render())
        kernels.append(path)
    main = out / "main.c"
    main.write_text(main_source)
    return [main], kernels


def build(board: str, sources: list[Path], kernels: list[Path], out: Path) -> Path:
    """The test program for `board` through the project's own build path (targets.build), at the
    board's -O level or at EDGECC_KERNEL_TEST_OPT (e.g. -O0: the kernels' inline assembly must build
    and stay bit-exact at every level)."""
    import os

    from targets import load_target
    from targets.build import build_firmware

    opt = os.environ.get("EDGECC_KERNEL_TEST_OPT")
    return build_firmware(load_target(board), sources, [out / "src"], out / "fw", lib_sources=kernels,
                          opt_flags=[opt] if opt else None).elf


def run(board: str, elf: Path, cases: list[Case], work: Path, write: Callable[[Path], None], isa: str, *,
        what: str = "firmware", timeout_s: int = 120, marks: tuple[str, ...] = ()):
    """Write cases.bin with `write`, run the program on the board under QEMU and check it finished;
    returns (read_results(), the run log)."""
    from targets import load_target
    from targets.qemu import run_firmware

    work.mkdir(parents=True, exist_ok=True)
    write(work / "cases.bin")
    log = run_firmware(load_target(board), elf, cwd=work, timeout_s=timeout_s, marks=marks)
    if f"{done_tag(isa)} {len(cases)}" not in log.stdout:
        raise RuntimeError(f"{board}: test {what} failed (rc {log.returncode}): "
                           f"{log.stdout[-500:]} {log.stderr[-500:]}")
    return read_results(work / "results.bin", len(cases)), log
