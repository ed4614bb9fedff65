"""Render the templates of c_templates/ into files: the model library (OUT/lib) and the test
harness (OUT/fw). Files are written in a fixed order with fixed content for fixed inputs, so
identical inputs give byte-identical C (golden tests rely on it). ecc_kernels.h is derived from the
portable kernel sources (kernel_header): a new kernel needs no hand-kept prototype."""
from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined

from toolchain.codegen.context import BoardFlags, ModelContext
from toolchain.codegen.filters import FILTERS, c_comment
from toolchain.codegen.weights_blob import array_bytes, blob_bytes

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "c_templates"  # package data (a link to the repo's c_templates/)
KERNEL_HEADERS = ("kernels/portable/ecc_fixed_point.h",)  # + ecc_kernels.h, generated (kernel_header)


@cache
def template_env() -> Environment:
    """The one Jinja environment: StrictUndefined, trim/lstrip blocks, trailing newline kept; compiled
    templates cached between runs (template_cache)."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(FILTERS)
    env.bytecode_cache = template_cache(env)
    return env


class _QuietCache(FileSystemBytecodeCache):
    """A cache write that fails (a full disk) costs the next run a compile, never this run."""

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def template_cache(env: Environment) -> FileSystemBytecodeCache | None:
    """Jinja's bytecode cache for `env`, as Python keeps .pyc files: a build compiles every portable
    kernel template (kernel_header), about 0.1 s of CPU that a compiled template spares. In Jinja's
    per-user temporary folder (mode 0700, owner checked); a template is recompiled when its source
    changes (Jinja checks a hash of it), and the file names carry a hash of the options that shape
    the compiled code, so another configuration never reads these. None (compile every run) when
    that folder cannot be made."""
    options = (env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
               env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
               env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
               env.autoescape, env.optimized, sorted(env.extensions))
    tag = hashlib.sha256(repr(options).encode()).hexdigest()[:12]
    try:
        return _QuietCache(pattern=f"__edgecc_{tag}_%s.cache")
    except (OSError, RuntimeError):  # no temporary folder, or one another user owns
        return None


KERNEL_HEADER = "ecc_kernels.h"
# a definition starts at column 0 with `int ecc_name(` and ends with `)` then `{` on the next line
_DEFINITION = re.compile(r"^int (ecc_\w+)\((.*?)\)\s*\n\{", re.MULTILINE | re.DOTALL)
_FLOAT_EDGE = "ecc_float_edge_kernels.h"


def prototypes(source: str) -> list[str]:
    """`int ecc_f(args);` for every non-static function defined in rendered kernel C `source`, in
    source order, argument lists verbatim (comments and line breaks kept).

    >>> prototypes("static int ecc_h(int a)\\n{\\n}\\nint ecc_f(int8_t *s,\\n    int32_t n)\\n{\\n}\\n")
    ['int ecc_f(int8_t *s,\\n    int32_t n);']
    """
    return [f"int {m.group(1)}({m.group(2)});" for m in _DEFINITION.finditer(source)]


@cache
def kernel_header() -> str:
    """The text of ecc_kernels.h: the conventions (c_templates/kernels/ecc_kernels.h.j2) and the
    prototypes of every portable kernel template, templates in name order. Deterministic."""
    env = template_env()
    protos = []
    for path in sorted((TEMPLATE_DIR / "kernels" / "portable").glob("*.c.j2")):
        source = env.get_template(f"kernels/portable/{path.name}").render()
        if f'#include "{_FLOAT_EDGE}"' not in source:
            protos += prototypes(source)
    return env.get_template(f"kernels/{KERNEL_HEADER}.j2").render(prototypes=protos)


def write_kernel_headers(out_dir: Path) -> list[Path]:
    """Write ecc_kernels.h (generated) and the portable folder's headers into out_dir, as a program
    compiling the portable kernels needs them (the kernel tests); returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [_write(out_dir / KERNEL_HEADER, kernel_header())]
    for h in sorted((TEMPLATE_DIR / "kernels" / "portable").glob("*.h")):
        written.append(_write(out_dir / h.name, h.read_text(encoding="utf-8")))
    return written


def kernel_file(template: str) -> str:
    """Library file name of a kernel template: 'portable/conv2d_s8.c.j2' -> 'ecc_portable_conv2d_s8.c'."""
    isa, name = template.split("/")
    return f"ecc_{isa}_{name.removesuffix('.j2')}"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


_LOCAL_INCLUDE = re.compile(r'^#include "([^"/]+)"', re.MULTILINE)


def with_local_includes(headers: tuple[str, ...]) -> list[str]:
    """`headers` (paths under c_templates/) plus every header they include with #include "name" from
    their own folder, recursively, each once, in first-seen order (an ISA's umbrella header, e.g.
    neon/ecc_neon.h, pulls in its parts without every KernelVariant listing them)."""
    out: list[str] = []
    todo = list(headers)
    while todo:
        h = todo.pop(0)
        if h in out:
            continue
        out.append(h)
        folder = h.rsplit("/", 1)[0] + "/" if "/" in h else ""
        for name in _LOCAL_INCLUDE.findall((TEMPLATE_DIR / h).read_text(encoding="utf-8")):
            if (TEMPLATE_DIR / folder / name).is_file():
                todo.append(folder + name)
    return out


def emit_library(ctx: ModelContext, lib_dir: Path, board: BoardFlags | None = None) -> list[Path]:
    """Write the deployable model library; returns the sources (model.c, weights.c or weights.S,
    kernels). Files and identifiers carry the library's name (ctx.names: `ecc` and today's file names
    by default). `board`: the compiler and flags edgecc.mk / edgecc.cmake export and the ISA kernels'
    guards name."""
    env = template_env()
    names = ctx.names
    board = board or BoardFlags()
    features = dict(ctx.kernel_features)
    lib_dir.mkdir(parents=True, exist_ok=True)
    stamp = f"/* {c_comment(ctx.stamp)} */\n"  # every shipped file says which generator made it
    # kernels and headers are written for the `ecc` names; names.rename gives them the library's
    # (before the stamp, which holds the model's file name)
    _write(lib_dir / names.file(KERNEL_HEADER), stamp + names.rename(kernel_header()))
    # variant headers are paths under c_templates/kernels/ (KernelVariant.headers)
    for header in with_local_includes((*KERNEL_HEADERS, *(f"kernels/{h}" for h in ctx.kernel_headers), "ecc_profile.h")):
        text = (TEMPLATE_DIR / header).read_text(encoding="utf-8")
        _write(lib_dir / names.file(Path(header).name), stamp + names.rename(text))
    for name in ("model.h", "weights.h"):
        _write(lib_dir / names.file(name), env.get_template(f"{name}.j2").render(ctx=ctx))
    sources = [_write(lib_dir / names.file("model.c"), env.get_template("model.c.j2").render(ctx=ctx)),
               _write_weights(ctx, lib_dir)]
    kernels = [names.file(kernel_file(t)) for t in ctx.kernel_templates]
    for tpl, file in zip(ctx.kernel_templates, kernels, strict=True):
        # an ISA kernel first checks the compiler targets a core with its instructions (#error naming them)
        guard = env.get_template("kernels/isa_guard.j2").render(features=features[tpl], board=board) \
            if tpl in features else ""
        sources.append(_write(lib_dir / file, stamp + guard + names.rename(env.get_template(f"kernels/{tpl}").render())))
    _write(lib_dir / "edgecc.mk", env.get_template("edgecc.mk.j2").render(ctx=ctx, sources=kernels, board=board))
    _write(lib_dir / "edgecc.cmake", env.get_template("edgecc.cmake.j2").render(ctx=ctx, sources=kernels, board=board))
    return sources


def _write_weights(ctx: ModelContext, lib_dir: Path) -> Path:
    """Write the constant arrays in ctx.weights_format: weights.c (C initialisers), or weights.bin
    and the weights.S that places it (codegen.weights_blob); returns the source to compile."""
    if ctx.weights_format != "blob":
        return _write(lib_dir / ctx.weights_source, template_env().get_template("weights.c.j2").render(ctx=ctx))
    bin_name = ctx.names.file("weights.bin")
    layout, blob = blob_bytes([(c.symbol, array_bytes(c.ctype, c.values)) for c in ctx.consts], ctx.alignment)
    (lib_dir / bin_name).write_bytes(blob)
    text = template_env().get_template("weights.S.j2").render(ctx=ctx, layout=layout, bin_name=bin_name)
    return _write(lib_dir / ctx.weights_source, text)


def emit_harness(ctx: ModelContext, fw_dir: Path, timer: str, repeats: int = 5, warmup: int = 1) -> Path:
    """Write the test harness main.c for a board's time source (plugin, clock, systick or pmu;
    c_templates/timers/); measured timers run `warmup` untimed and `repeats` timed runs of sample 0."""
    fw_dir.mkdir(parents=True, exist_ok=True)
    text = template_env().get_template("main.c.j2").render(ctx=ctx, timer=timer, repeats=repeats, warmup=warmup)
    return _write(fw_dir / "main.c", text)
