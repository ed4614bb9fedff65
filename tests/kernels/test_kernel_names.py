"""Issue 15 item 1: a named library's kernels carry its name. Every kernel template of every ISA
folder and every header they include, renamed for `name: kws` as emit_library ships them
(toolchain/codegen/libnames.py), compiles with its board's compiler (-std=c99 -pedantic -Wall
-Wextra -Werror), and `nm` of the objects shows no symbol, global or static, defined or referenced,
without the prefix: two libraries of the same ISA with the same kernels link into one image.
Symbols made by macros (the NEON `_onnx` twins) and inline-assembly labels (numeric local labels
only) are covered because the objects are checked, not the text."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from toolchain.codegen.emit import TEMPLATE_DIR, kernel_file, kernel_header, template_env
from toolchain.codegen.libnames import LibNames

BOARD_OF_ISA = {"portable": "host", "dsp": "mps2-an386", "helium": "mps3-an547", "neon": "aarch64"}
NAMES = LibNames.of("kws")


def _tool(name: str) -> None:
    if shutil.which(name) is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} not found (required when CI=true)")
        pytest.skip(f"{name} not found")


@pytest.mark.parametrize("isa", sorted(BOARD_OF_ISA))
def test_every_kernel_symbol_carries_the_library_name(isa, tmp_path):
    from targets import load_target

    target = load_target(BOARD_OF_ISA[isa])
    _tool(target.compiler)
    _tool(target.nm)
    env = template_env()
    (tmp_path / NAMES.file("ecc_kernels.h")).write_text(NAMES.rename(kernel_header()))
    for folder in ("portable", isa):
        for h in sorted((TEMPLATE_DIR / "kernels" / folder).glob("*.h")):
            (tmp_path / NAMES.file(h.name)).write_text(NAMES.rename(h.read_text()))
    (tmp_path / NAMES.file("ecc_profile.h")).write_text(NAMES.rename((TEMPLATE_DIR / "ecc_profile.h").read_text()))
    sources = []
    for tpl in sorted((TEMPLATE_DIR / "kernels" / isa).glob("*.c.j2")):
        text = NAMES.rename(env.get_template(f"kernels/{isa}/{tpl.name}").render())
        left = sorted(set(re.findall(r"\b(?:ecc|ECC)_\w+", text)))
        assert left == [], f"{isa}/{tpl.name}: names left unrenamed: {left}"
        src = tmp_path / NAMES.file(kernel_file(f"{isa}/{tpl.name}"))
        src.write_text(text)
        sources.append(src.name)
    assert len(sources) >= 10, sources
    # -O0: the least compile time (15 s of CPU for all four folders against 25 s at the boards' -O2), and
    # every static helper a call uses stays a local symbol for nm to see
    flags = [f for f in target.cflags if not f.startswith("-g") and not f.startswith("-O")] + ["-O0"]
    cmd = [target.compiler, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", *flags, "-I.", "-c", *sources]
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    objs = [Path(s).with_suffix(".o").name for s in sources]
    nm = subprocess.run([target.nm, *objs], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and not re.match(r"^(\$|\.L)", parts[2]):
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    assert len(defined) >= len(sources)
    assert sorted(s for s in defined if not s.startswith("kws_")) == []
    # what the kernels take from outside themselves: their own library's kernels, libc's string.h
    # and the compiler's helpers, never an unprefixed edgecc name
    assert sorted(s for s in undefined if s.startswith("ecc_") or s.startswith("ECC_")) == []
