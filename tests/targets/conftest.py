"""Fixtures for the targets tests: tool gating (skip locally, fail under CI=true) and tmp boards."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # until the package is installed editable
    sys.path.insert(0, str(REPO))

from targets import Target, load_target  # noqa: E402
from targets.toolchain_check import missing_tools  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_gcc: needs the host C compiler")
    config.addinivalue_line("markers", "needs_qemu: needs a cross compiler and QEMU")


def _require_board(name: str) -> Target:
    target = load_target(name)
    missing = missing_tools(target)
    if missing:
        msg = f"board {name}: missing tools: {', '.join(missing)}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " (CI=true: tools are required)")
        pytest.skip(msg)
    return target


@pytest.fixture
def require_board() -> Callable[[str], Target]:
    """`require_board(name)`: load the board; skip the test if its tools are missing (fail when CI=true)."""
    return _require_board
