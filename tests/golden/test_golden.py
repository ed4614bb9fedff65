"""Process replay (architecture P17): the C that `edgecc build` emits for the digits example is
compared byte for byte with the committed snapshots in tests/golden/digits_<board>/. A refactor
must leave it unchanged; a codegen change updates it on purpose with tests/golden/update.py.
Execution twin: tests/e2e/test_digits.py runs and verifies the same model on the same boards."""
from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import re
import socket
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("edgecc_golden_update", HERE / "update.py")
update = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(update)

HINT = ("If this change of the generated C is intended, regenerate the snapshots on purpose:\n"
        "    python tests/golden/update.py\n"
        "then review `git diff tests/golden/` and commit them with the change that caused it.")


@pytest.fixture(scope="module", params=update.BOARDS)
def emitted(request, need_board, tmp_path_factory):
    board = request.param
    need_board(board)
    return board, update.emit(board, tmp_path_factory.mktemp(f"golden-{board}") / "out")


def _diff(want: bytes, got: bytes, rel: str, limit: int = 40) -> str:
    d = list(difflib.unified_diff(want.decode(errors="replace").splitlines(), got.decode(errors="replace").splitlines(),
                                  f"golden/{rel}", f"emitted/{rel}", lineterm="", n=1))
    return "\n".join(d[:limit] + ([f"... ({len(d) - limit} more diff lines)"] if len(d) > limit else []))


@pytest.mark.parametrize("rel", update.FILES)
def test_emitted_c_matches_the_snapshot(emitted, rel):
    board, out = emitted
    golden = update.golden_dir(board) / rel
    assert golden.is_file(), f"no snapshot {golden}.\n{HINT}"
    want, got = golden.read_bytes(), (out / rel).read_bytes()
    assert got == want, f"emitted {rel} for digits on {board} differs from {golden}:\n{_diff(want, got, rel)}\n{HINT}"


def test_stamp_has_version_and_model_hash_only(emitted):
    from toolchain import __version__

    board, out = emitted
    digest = hashlib.sha256((update.DIGITS_YAML.parent / "model.onnx").read_bytes()).hexdigest()[:16]
    stamp = f"edgecc {__version__} | model model.onnx sha256:{digest} | board {board}"
    for rel in ("lib/model.c", "lib/model.h", "lib/weights.c", "lib/weights.h", "fw/main.c"):
        first = (out / rel).read_text().splitlines()[0]
        assert first == f"/* {stamp}", f"{rel}: unexpected stamp line {first!r}"
    for rel in ("lib/edgecc.mk", "lib/edgecc.cmake"):
        assert (out / rel).read_text().splitlines()[0] == f"# {stamp}", rel


def test_emitted_text_is_machine_independent(emitted):
    """No absolute path, host name, user folder or date in anything written for the user to keep."""
    board, out = emitted
    files = sorted(p for p in (out / "lib").iterdir() if p.is_file())
    files += [out / "fw" / "main.c", *sorted((out / "fw").glob("*.ld"))]
    needles = {str(out), str(out.parent), str(update.REPO), os.path.expanduser("~"), "/tmp/", "/home/"}
    host = socket.gethostname()
    if len(host) >= 4:
        needles.add(host)
    hits = []
    for f in files:
        text = f.read_text()
        hits += [f"{f.relative_to(out)}: contains {n!r}" for n in sorted(needles) if n and n in text]
        if re.search(r"\b(19|20)\d\d-[01]\d-[0-3]\d\b|\b\d\d:\d\d:\d\d\b", text):
            hits.append(f"{f.relative_to(out)}: contains a date or time")
    assert hits == [], "machine-specific content in emitted files:\n" + "\n".join(hits)
