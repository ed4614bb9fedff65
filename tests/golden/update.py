#!/usr/bin/env python
"""Regenerate the golden snapshots of the emitted C (architecture P17, "process replay") ON PURPOSE.

    python tests/golden/update.py            # every board in BOARDS
    python tests/golden/update.py host       # one board

Run it only when a change of the generated C is intended (a codegen change, not a refactor), review
`git diff tests/golden/` and commit the snapshots with the change that caused them. The execution
twin of each snapshot is tests/e2e/test_digits.py (the same model, run and verified bit for bit).
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DIGITS_YAML = REPO / "examples" / "digits" / "pipeline.yaml"
BOARDS = ("mps2-an386", "host")
FILES = ("lib/model.c", "lib/model.h", "lib/weights.c", "fw/main.c")


def golden_dir(board: str) -> Path:
    return HERE / f"digits_{board}"


def emit(board: str, out: Path) -> Path:
    """`edgecc build examples/digits/pipeline.yaml --board BOARD --out OUT` in-process; returns OUT."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from toolchain.cli import main

    saved = os.environ.pop("EDGECC_DEBUG_FAULT_AT_OP", None)
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["build", str(DIGITS_YAML), "--board", board, "--out", str(out), "--quiet"])
    finally:
        if saved is not None:
            os.environ["EDGECC_DEBUG_FAULT_AT_OP"] = saved
    if code != 0:
        raise RuntimeError(f"edgecc build --board {board} failed with exit {code}: {err.getvalue().strip()}")
    return out


def update(board: str) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="edgecc-golden-") as tmp:
        out = emit(board, Path(tmp) / "out")
        dest = golden_dir(board)
        shutil.rmtree(dest, ignore_errors=True)
        written = []
        for rel in FILES:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / rel, dest / rel)
            written.append(dest / rel)
        return written


def main(argv: list[str]) -> int:
    boards = argv or list(BOARDS)
    unknown = sorted(set(boards) - set(BOARDS))
    if unknown:
        print(f"update.py: unknown board(s) {unknown}; snapshots exist for {list(BOARDS)}", file=sys.stderr)
        return 2
    for board in boards:
        for p in update(board):
            print(f"wrote {p.relative_to(REPO)} ({p.stat().st_size} B)")
    print("review with `git diff tests/golden/` and commit with the change that caused it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
