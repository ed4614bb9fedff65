"""Shared by tests/e2e and tests/golden: tool gating (skip locally, FAIL when CI=true) and the
`edgecc` command line run in-process (fast; an escaping exception is recorded as the traceback
the console script would print)."""
from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(REPO)]:  # before tests/ (on sys.path for this file), whose targets/ would shadow ours
    sys.path.insert(0, str(REPO))


def _need_board(name: str) -> None:
    """Skip the calling test when `name`'s compiler/QEMU are missing; fail instead under CI=true."""
    from targets import load_target
    from targets.toolchain_check import missing_tools

    missing = missing_tools(load_target(name))
    if missing:
        msg = f"board {name}: missing tools: {', '.join(missing)}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " (CI=true: tools are required)")
        pytest.skip(msg)


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str | Path) -> CliResult:
    """`edgecc ARGS...` in-process: exit status, stdout, stderr."""
    from toolchain.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse usage errors
            code = e.code if isinstance(e.code, int) else 2
        except Exception:  # what the console script would show: a traceback and exit 1
            traceback.print_exc()
            code = 1
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def need_board():
    """need_board(name): skip when the board's compiler/QEMU are missing (fail when CI=true)."""
    return _need_board


@pytest.fixture(scope="session")
def edgecc():
    """The in-process `edgecc` runner: edgecc("run", yaml, "--out", d) -> CliResult."""
    return run_cli
