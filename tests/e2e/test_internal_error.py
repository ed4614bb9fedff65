"""The last line of defence (issue 12 item 2): an exception edgecc did not expect, or generated C
that does not build, is edgecc's own fault: exit 4 and one line `edgecc: internal error: ...`
saying where and whom to tell, never a traceback, nothing written (no OUT, no temp folder).
EDGECC_DEBUG=1 shows the traceback instead and keeps the temporary build folder."""
from __future__ import annotations

import pytest
from e2e_helpers import DIGITS_YAML, leftovers

import toolchain.pipeline
from toolchain.errors import one_line


def _assert_internal(res, out, *needles: str) -> str:
    assert "Traceback" not in res.err, res.err
    assert res.code == 4, f"exit {res.code}; stderr:\n{res.err}"
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgecc: internal error: "), res.err
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]}"
    assert "report it" in lines[0]
    assert not out.exists(), "OUT written on an internal error"
    assert not out.parent.exists() or leftovers(out) == [], leftovers(out)
    return lines[0]


def test_unexpected_exception_is_one_line_exit_4(edgecc, monkeypatch, tmp_path):
    def broken(*_a, **_k):
        return {}[("no", "such", "key")]

    monkeypatch.setattr(toolchain.pipeline, "compile_model", broken)
    out = tmp_path / "o" / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    line = _assert_internal(res, out, "KeyError", "test_internal_error.py:")
    assert not (tmp_path / "o").exists(), "the parent folder made for OUT was left behind"
    assert len(line) < 500


def test_debug_shows_the_traceback_and_keeps_the_temp_folder(edgecc, monkeypatch, tmp_path):
    monkeypatch.setattr(toolchain.pipeline, "compile_model", lambda *a, **k: 1 / 0)
    monkeypatch.setenv("EDGECC_DEBUG", "1")
    out = tmp_path / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    assert "Traceback" in res.err and "ZeroDivisionError" in res.err
    assert "kept in" in res.err and len(leftovers(out)) == 1


def test_generated_c_that_does_not_compile_is_an_internal_error(edgecc, need_board, monkeypatch, tmp_path):
    need_board("host")
    emit = toolchain.pipeline.emit_library

    def emit_broken(ctx, lib_dir, *args, **kwargs):
        sources = emit(ctx, lib_dir, *args, **kwargs)
        with (lib_dir / "model.c").open("a") as f:
            f.write("\nint ecc_broken(void) { return undeclared_symbol; }\n")
        return sources

    monkeypatch.setattr(toolchain.pipeline, "emit_library", emit_broken)
    out = tmp_path / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    _assert_internal(res, out, "the generated C does not build", "model.c", "undeclared_symbol")


@pytest.mark.parametrize("text, expected", [
    ("a\nb", "a\\nb"),
    ("bell\x07 and esc\x1b[31m", "bell\\x07 and esc\\x1b[31m"),
    ("x" * 1000, None),
    ("y" * 499, "y" * 499),
])
def test_one_line_escapes_and_bounds(text, expected):
    line = one_line(text)
    assert "\n" not in line and all(c.isprintable() for c in line)
    assert len(line) <= 500
    if expected is not None:
        assert line == expected
    else:
        assert " … " in line
