"""The OUT folder (review findings): edgecc replaces only a folder it wrote (marker file, or an older
OUT holding nothing but edgecc's files), never one holding the job's inputs; a bad OUT path is a
one-line exit 2 that leaves nothing behind; OUT gets the user's umask; the firmware does not
depend on the temporary build folder's name."""
from __future__ import annotations

from pathlib import Path

from e2e_helpers import DIGITS, DIGITS_YAML, assert_rejected, leftovers

MARKER_NAME = ".edgecc"  # toolchain.out_folder.MARKER


def _user_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("years of work\n")
    return path


def test_out_naming_a_foreign_folder_is_refused_and_kept(edgecc, tmp_path):
    """`--out DIR` once renamed DIR away and deleted it: a folder edgecc did not write is refused."""
    out = _user_folder(tmp_path / "mine")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and "mine" in res.err and "not written by edgecc" in res.err
    assert (out / "thesis.tex").read_text() == "years of work\n"
    assert leftovers(out) == []


def test_out_dot_is_refused_in_a_user_folder(edgecc, tmp_path, monkeypatch):
    """`--out .` would have wiped the current directory."""
    here = _user_folder(tmp_path / "work")
    monkeypatch.chdir(here)
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", ".")
    assert res.code == 2 and "not written by edgecc" in res.err, res.err
    assert sorted(p.name for p in here.iterdir()) == ["thesis.tex"]


def test_out_holding_the_model_is_refused(edgecc, tmp_path):
    """`edgecc run ex/pipeline.yaml --out ex` wiped the user's model and data."""
    ex = tmp_path / "ex"
    ex.mkdir()
    for name in ("model.onnx", "calibration.npy"):
        (ex / name).write_bytes((DIGITS / name).read_bytes())
    (ex / "pipeline.yaml").write_text("model: model.onnx\ncalibration: calibration.npy\n"
                                      "preprocess: {scale: 0.0625, layout: NCHW}\n")
    (ex / MARKER_NAME).write_text("even if marked\n")  # a marker does not make the inputs disposable
    res = edgecc("build", ex / "pipeline.yaml", "--board", "host", "--out", ex)
    assert res.code == 2 and "holds the input" in res.err and "Traceback" not in res.err, res.err
    assert sorted(p.name for p in ex.iterdir()) == [MARKER_NAME, "calibration.npy", "model.onnx", "pipeline.yaml"]



def test_out_written_by_edgecc_is_marked_replaced_and_umask_honoured(edgecc, need_board, tmp_path):
    need_board("host")
    import os

    out = tmp_path / "out"
    old = os.umask(0o027)
    try:
        res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    finally:
        os.umask(old)
    assert res.code == 0, res.err
    assert (out / MARKER_NAME).is_file()
    assert out.stat().st_mode & 0o777 == 0o750  # not mkdtemp's 0700
    (out / "stale.txt").write_text("from the previous job\n")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert res.code == 0, res.err
    assert not (out / "stale.txt").exists() and (out / "lib" / "model.h").is_file()
    assert leftovers(out) == []


def test_out_of_an_older_edgecc_without_marker_is_replaced(edgecc, need_board, tmp_path):
    need_board("host")
    out = tmp_path / "out"
    (out / "lib").mkdir(parents=True)
    (out / "lib" / "model.h").write_text("/* old */\n")
    (out / "report.json").write_text("{}\n")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert res.code == 0, res.err
    assert (out / MARKER_NAME).is_file() and not (out / "report.json").exists()
    assert "/* old */" not in (out / "lib" / "model.h").read_text()


def test_projects_that_merely_hold_lib_model_h_are_not_taken_for_an_older_out(edgecc, tmp_path):
    """A firmware workspace holding copies of OUT/lib (as the README suggests) beside its own sources,
    alone or as board-like subfolders, is not an older edgecc OUT: refused, nothing removed."""
    ws = tmp_path / "ws"
    for app in ("app1", "app2"):
        (ws / app / "lib").mkdir(parents=True)
        (ws / app / "lib" / "model.h").write_text("/* copied */\n")
        (ws / app / "src").mkdir()
        (ws / app / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (ws / "summary.json").write_text("{}\n")
    proj = ws / "app1"
    (proj / "report.json").write_text("{}\n")
    for out in (ws, proj):
        res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
        assert res.code == 2 and "not written by edgecc" in res.err, res.err
    assert (ws / "app2" / "src" / "main.c").is_file() and (proj / "src" / "main.c").is_file()


def test_a_sibling_named_like_the_backup_of_out_is_kept(edgecc, need_board, tmp_path):
    """Replacing an OUT once deleted any `.<OUT>.old` folder beside it without a check."""
    need_board("host")
    out = tmp_path / "o"
    assert edgecc("build", DIGITS_YAML, "--board", "host", "--out", out, "--quiet").code == 0
    precious = tmp_path / ".o.old"
    precious.mkdir()
    (precious / "keep.txt").write_text("precious\n")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert res.code == 0, res.err
    assert (precious / "keep.txt").read_text() == "precious\n"
    assert leftovers(out) == [".o.old"]


def test_out_under_a_regular_file_is_one_line(edgecc, tmp_path):
    f = tmp_path / "file"
    f.write_text("data\n")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", f / "sub")
    assert res.code == 2 and "Traceback" not in res.err and res.out == "", res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and f"{f} is a file, not a folder" in lines[0] and "--out" in lines[0], res.err
    assert f.read_text() == "data\n" and sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_out_on_a_read_only_filesystem_is_one_line(edgecc, tmp_path, monkeypatch):
    import errno
    import tempfile

    def erofs(*a, **kw):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkdtemp", erofs)
    out = tmp_path / "new" / "deeper" / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    assert_rejected(res, out, str(out), "Read-only file system", "--out")
    assert not (tmp_path / "new").exists(), "the parents made for the temporary folder were left behind"


def test_bad_input_leaves_no_parent_folders(edgecc, tmp_path):
    out = tmp_path / "a" / "b" / "out"
    res = edgecc("build", "--model", tmp_path / "nope.onnx", "--out", out)
    assert_rejected(res, out, "nope.onnx")
    assert not (tmp_path / "a").exists()


def test_firmware_elf_is_reproducible_and_names_no_temp_folder(edgecc, need_board, tmp_path):
    """The DWARF of firmware.elf named the deleted `.OUT.tmp-XXXX` build folder."""
    need_board("mps2-an386")
    elves = []
    for name in ("first", "second"):
        out = tmp_path / name
        res = edgecc("build", DIGITS_YAML, "--board", "mps2-an386", "--out", out, "--quiet")
        assert res.code == 0, res.err
        elves.append((out / "fw" / "firmware.elf").read_bytes())
    assert b".first.tmp-" not in elves[0] and b".second.tmp-" not in elves[1]
    assert elves[0] == elves[1]
