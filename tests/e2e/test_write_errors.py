"""A full disk (or quota, or read-only file system) while edgecc writes OUT: exit 2 with one line
naming the path under OUT and the reason, no traceback, no OUT and no temporary folder left."""
from __future__ import annotations

import errno
import os

import pytest
from e2e_helpers import DIGITS_YAML, assert_rejected


def _raiser(code: int, with_name: bool):
    def fail(path, *args, **kwargs):
        raise OSError(code, os.strerror(code), str(path) if with_name else None)
    return fail


@pytest.mark.parametrize("code, reason", [(errno.ENOSPC, "no space left on device"),
                                          (errno.EDQUOT, "quota exceeded"),
                                          (errno.EROFS, "read-only file system")])
def test_a_failing_write_while_emitting_c_is_one_line(edgecc, monkeypatch, tmp_path, code, reason):
    from toolchain.codegen import emit

    out = tmp_path / "results" / "out"
    monkeypatch.setattr(emit, "_write", _raiser(code, with_name=True))
    res = edgecc("build", DIGITS_YAML, "--out", out)
    line = assert_rejected(res, out, str(out / "lib"), reason)
    assert ".tmp-" not in line  # the temporary folder is not what the user asked for


def test_a_full_disk_while_writing_the_report_is_one_line(edgecc, need_board, monkeypatch, tmp_path):
    from profiler import outputs

    need_board("host")
    out = tmp_path / "out"
    monkeypatch.setattr(outputs, "write_json", _raiser(errno.ENOSPC, with_name=False))
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert_rejected(res, out, str(out), "no space left on device", "free some space")


def test_a_full_disk_while_writing_inputs_bin_is_one_line(edgecc, need_board, monkeypatch, tmp_path):
    from toolchain import runner

    need_board("host")
    out = tmp_path / "out"
    monkeypatch.setattr(runner, "write_inputs", _raiser(errno.ENOSPC, with_name=True))
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert_rejected(res, out, "no space left on device")
