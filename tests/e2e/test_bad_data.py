"""Bad DATA files at the door (toolchain.data_files, toolchain.data): every kind a fuzz campaign
found is exit 2 with one line naming the file, no traceback, nothing written, and never a hang
(a FIFO) or an allocation the header merely claims. Also the pipeline YAML through the CLI."""
from __future__ import annotations

import os
import pickle
import struct
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS, DIGITS_YAML, assert_rejected

CALIB = DIGITS / "calibration.npy"


@pytest.fixture
def out(tmp_path):
    return tmp_path / "results" / "out"


def _digits() -> np.ndarray:
    return np.load(CALIB)


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _build(edgecc, data: Path, out: Path, *extra: str | Path):
    return edgecc("build", DIGITS_YAML, "--calibration", data, "--out", out, *extra)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG signature and IHDR claiming width x height (8-bit gray), no pixel data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk


CORRUPT_NPY = {
    "empty": lambda: b"",
    "truncated": lambda: _npy_bytes(_digits())[:-100],
    "truncated_header": lambda: _npy_bytes(_digits())[:30],
    "trailing_bytes": lambda: _npy_bytes(_digits()) + b"\0" * 64,
    "bad_header": lambda: b"\x93NUMPY\x01\x00\x20\x00{'descr': <f4, 'shape': ((( }   \n",
    "claims_terabytes": lambda: _npy_bytes(np.zeros((2, 1, 8, 8), np.float32)).replace(
        b"(2, 1, 8, 8), }" + b" " * 12, b"(2000000000000, 1, 8, 8), }"),
    "object_array": lambda: _npy_object_array(),
    "pickle": lambda: pickle.dumps([[0.0] * 64] * 4),
    "text": lambda: b"0 1 2 3\n4 5 6 7\n",
}


def _npy_object_array() -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.array([np.zeros(64), "x"], dtype=object), allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize("kind", sorted(CORRUPT_NPY))
def test_corrupt_npy_files_are_one_line(edgecc, tmp_path, out, kind):
    bad = tmp_path / f"calib_{kind}.npy"
    bad.write_bytes(CORRUPT_NPY[kind]())
    assert_rejected(_build(edgecc, bad, out), out, bad.name)


def test_a_header_claiming_terabytes_is_refused_before_allocating(edgecc, tmp_path, out):
    bad = tmp_path / "huge.npy"
    bad.write_bytes(CORRUPT_NPY["claims_terabytes"]())
    assert b"2000000000000" in bad.read_bytes()
    assert_rejected(_build(edgecc, bad, out), out, "huge.npy", "bytes")


def test_pickled_objects_are_never_loaded(edgecc, tmp_path, out):
    bad = tmp_path / "objects.npy"
    bad.write_bytes(_npy_object_array())
    assert_rejected(_build(edgecc, bad, out), out, "objects.npy", "Python objects")


@pytest.mark.parametrize("kind", ["truncated", "empty_zip", "object_member", "not_npy_members", "crc"])
def test_corrupt_npz_files_are_one_line(edgecc, tmp_path, out, kind):
    import zipfile

    bad = tmp_path / f"calib_{kind}.npz"
    np.savez(bad, x=_digits())
    if kind == "truncated":
        bad.write_bytes(bad.read_bytes()[:200])
    elif kind == "empty_zip":
        zipfile.ZipFile(bad, "w").close()
    elif kind == "object_member":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("x.npy", _npy_object_array())
    elif kind == "not_npy_members":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("readme.txt", "hello")
    else:  # flip a data byte of the stored member: the CRC check fails on reading
        data = bytearray(bad.read_bytes())
        data[400] ^= 0xFF
        bad.write_bytes(bytes(data))
    assert_rejected(_build(edgecc, bad, out), out, bad.name)


def test_an_npz_unpacking_past_the_limit_is_refused(edgecc, monkeypatch, tmp_path, out):
    import toolchain.data_files as df

    bad = tmp_path / "bomb.npz"
    np.savez_compressed(bad, x=np.zeros((4000, 1, 8, 8), np.float32))  # 1 MB of zeros in ~1 KB
    monkeypatch.setattr(df, "MAX_DATA_BYTES", bad.stat().st_size * 10)
    assert_rejected(_build(edgecc, bad, out), out, "bomb.npz", "more than")


def test_dev_null_is_not_a_data_file(edgecc, out):
    assert_rejected(_build(edgecc, Path("/dev/null"), out), out, "/dev/null", "not a regular file")


def test_a_fifo_is_refused_without_blocking(edgecc, tmp_path, out):
    fifo = tmp_path / "calib.npy"
    os.mkfifo(fifo)  # no writer: opening it for reading would block forever
    result = []
    t = threading.Thread(target=lambda: result.append(_build(edgecc, fifo, out)), daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():  # unblock the reader so the thread can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("edgecc blocked reading a FIFO")
    assert_rejected(result[0], out, "calib.npy", "not a regular file")


@pytest.mark.parametrize("kind", ["no_images", "corrupt", "truncated", "huge_header", "fifo", "folder_named_png"])
def test_bad_image_folders_are_one_line(edgecc, tmp_path, out, kind):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    good = folder / "a.png"
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(good)
    name = "b.png"
    if kind == "no_images":
        good.unlink()
        (folder / "notes.txt").write_text("no images here\n")
        name = "images"
    elif kind == "corrupt":
        (folder / name).write_bytes(os.urandom(300))
    elif kind == "truncated":
        (folder / name).write_bytes(good.read_bytes()[:40])
    elif kind == "huge_header":
        (folder / name).write_bytes(_png_header_only(100_000, 100_000))
    elif kind == "fifo":
        os.mkfifo(folder / name)
    else:
        (folder / name).mkdir()
    assert_rejected(_build(edgecc, folder, out), out, name)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("fmt", ["npy", "npz"])
def test_non_finite_values_anywhere_are_refused(edgecc, tmp_path, out, value, fmt):
    arr = _digits().astype(np.float32)
    arr[-1, 0, 7, 7] = value
    bad = tmp_path / f"nonfinite.{fmt}"
    np.save(bad, arr) if fmt == "npy" else np.savez(bad, x=arr)
    assert_rejected(_build(edgecc, bad, out), out, bad.name, "NaN or inf")


def test_float64_beyond_float32_is_refused(edgecc, tmp_path, out):
    arr = _digits().astype(np.float64)
    arr[0, 0, 0, 0] = 1e300
    bad = tmp_path / "big64.npy"
    np.save(bad, arr)
    assert_rejected(_build(edgecc, bad, out), out, "big64.npy", "inf")


def test_overflow_in_preprocessing_is_refused(edgecc, tmp_path, out):
    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"model: {DIGITS / 'model.onnx'}\ncalibration: {CALIB}\n"
                    "preprocess: {scale: 1.0e+38, layout: NCHW}\n")
    assert_rejected(edgecc("build", yaml, "--out", out), out, "calibration.npy", "overflow")


@pytest.mark.parametrize("shape", [(0, 1, 8, 8), (0,), (5, 0, 8, 8)])
def test_zero_samples_are_refused(edgecc, tmp_path, out, shape):
    bad = tmp_path / "zero.npy"
    np.save(bad, np.zeros(shape, np.float32))
    assert_rejected(_build(edgecc, bad, out), out, "zero.npy", "sample")


def test_bad_verification_data_is_refused_after_the_build(edgecc, need_board, out):
    need_board("host")
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--verify", "/dev/null", "--out", out)
    assert_rejected(res, out, "/dev/null", "not a regular file")


# ---- the pipeline YAML through the CLI (details in tests/unit/test_config_yaml.py)

@pytest.mark.parametrize("text, needles", [
    ("model: m.onnx\n# caf\xe9\n".encode("latin-1"), ("not UTF-8", "byte 19")),
    (("model: m.onnx\nl0: &l0 [" + ",".join(['"lol"'] * 9) + "]\n"
      + "".join(f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))).encode(),
     ("alias", "expand")),
    (b"model: m.onnx\nx: " + b"[" * 3000 + b"]" * 3000 + b"\n", ("levels",)),
    (b"model: a.onnx\nmodel: b.onnx\n", ("duplicate key", "lines 1 and 2")),
    (b"model: m.onnx\npreprocess: {mean: .nan}\n", ("mean",)),
])
def test_bad_yaml_through_the_cli(edgecc, tmp_path, out, text, needles):
    yaml = tmp_path / "bad.yaml"
    yaml.write_bytes(text)
    assert_rejected(edgecc("build", yaml, "--out", out), out, "bad.yaml", *needles)


def test_a_structured_dtype_is_named_briefly(edgecc, tmp_path, out):
    bad = tmp_path / "struct.npy"
    np.save(bad, np.zeros((4,), np.dtype([(f"field_{i}", "<f4") for i in range(200)])))
    line = assert_rejected(_build(edgecc, bad, out), out, "struct.npy", "integers or floats")
    assert len(line) < 300, line
