"""Render the templates of c_templates/ into files: the model library (OUT/lib) and the test
harness (OUT/fw). Files are written in a fixed order with fixed content for fixed inputs, so
identical inputs give byte-identical C (golden tests rely on it)."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from toolchain.codegen.context import ModelContext
from toolchain.codegen.filters import FILTERS, c_comment

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "c_templates"
KERNEL_HEADERS = ("kernels/ecc_kernels.h", "kernels/portable/ecc_fixed_point.h")


@cache
def template_env() -> Environment:
    """The one Jinja environment: StrictUndefined, trim/lstrip blocks, trailing newline kept."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(FILTERS)
    return env


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


def emit_library(ctx: ModelContext, lib_dir: Path) -> list[Path]:
    """Write the deployable model library; returns the C sources (model, weights, kernels)."""
    env = template_env()
    lib_dir.mkdir(parents=True, exist_ok=True)
    stamp = f"/* {c_comment(ctx.stamp)} */\n"  # every shipped file says which generator made it
    # variant headers are paths under c_templates/kernels/ (KernelVariant.headers)
    for header in with_local_includes((*KERNEL_HEADERS, *(f"kernels/{h}" for h in ctx.kernel_headers), "ecc_profile.h")):
        _write(lib_dir / Path(header).name, stamp + (TEMPLATE_DIR / header).read_text(encoding="utf-8"))
    for name in ("model.h", "weights.h"):
        _write(lib_dir / name, env.get_template(f"{name}.j2").render(ctx=ctx))
    sources = [_write(lib_dir / "model.c", env.get_template("model.c.j2").render(ctx=ctx)),
               _write(lib_dir / "weights.c", env.get_template("weights.c.j2").render(ctx=ctx))]
    for tpl in ctx.kernel_templates:
        sources.append(_write(lib_dir / kernel_file(tpl), stamp + env.get_template(f"kernels/{tpl}").render()))
    kernels = [kernel_file(t) for t in ctx.kernel_templates]
    _write(lib_dir / "edgecc.mk", env.get_template("edgecc.mk.j2").render(ctx=ctx, sources=kernels))
    _write(lib_dir / "edgecc.cmake", env.get_template("edgecc.cmake.j2").render(ctx=ctx, sources=kernels))
    return sources


def emit_harness(ctx: ModelContext, fw_dir: Path, timer: str, repeats: int = 5, warmup: int = 1) -> Path:
    """Write the test harness main.c for a board's time source (plugin, clock, systick or pmu;
    c_templates/timers/); measured timers run `warmup` untimed and `repeats` timed runs of sample 0."""
    fw_dir.mkdir(parents=True, exist_ok=True)
    text = template_env().get_template("main.c.j2").render(ctx=ctx, timer=timer, repeats=repeats, warmup=warmup)
    return _write(fw_dir / "main.c", text)
