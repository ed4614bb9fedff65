"""tests/e2e: the whole job (`edgecc run` / `edgecc build`) on the bundled digits example, run
in-process once per board and shared by the tests of this folder (architecture P19: needs the
board's compiler and QEMU; skipped when missing, a failure when CI=true)."""
from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import DIGITS_YAML, Job, finish


@pytest.fixture(scope="session")
def digits_run(tmp_path_factory, edgecc, need_board):
    """digits_run(board) -> Job of `edgecc run examples/digits/pipeline.yaml --board BOARD`
    (cached per session). mps2-an386 runs with --quiet, host prints the table."""
    cache: dict[str, Job] = {}

    def get(board: str) -> Job:
        need_board(board)
        if board not in cache:
            out = tmp_path_factory.mktemp(f"digits-run-{board}") / "out"
            quiet = ["--quiet"] if board != "host" else []
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", DIGITS_YAML, "--board", board, "--out", out, *quiet)
            cache[board] = finish(res, out)
        return cache[board]

    return get


@pytest.fixture(scope="session")
def digits_build(tmp_path_factory, edgecc, need_board):
    """digits_build(board, name) -> OUT of `edgecc build examples/digits/pipeline.yaml` (cached per
    (board, name); different names give independent builds into different folders)."""
    cache: dict[tuple[str, str], Path] = {}

    def get(board: str, name: str = "a") -> Path:
        need_board(board)
        if (board, name) not in cache:
            out = tmp_path_factory.mktemp(f"digits-build-{board}-{name}") / f"out_{name}"
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("build", DIGITS_YAML, "--board", board, "--out", out, "--quiet")
            assert res.code == 0, f"edgecc build failed ({res.code}): {res.err}"
            cache[(board, name)] = out
        return cache[(board, name)]

    return get
