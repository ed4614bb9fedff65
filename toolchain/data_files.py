"""Reading DATA files without trusting them: .npy / .npz arrays and image files, checked before
anything large is allocated or anything blocking is opened.

Refused, each as one InputError line naming the file: anything but a regular file (/dev/null, a FIFO
that would block the read, a socket, a device); files over MAX_DATA_BYTES; empty files; .npy / .npz
members whose header is corrupt, holds Python objects (pickles are never loaded) or claims more or
less data than the file holds (a truncated file, or a header claiming terabytes); zip members over
the size limit (a zip bomb) or whose compressed data are corrupt; images over MAX_IMAGE_PIXELS or
that Pillow cannot decode. Not here: dtype, shape and value checks (toolchain.data.preprocess).
"""
from __future__ import annotations

import math
import os
import stat
import warnings
import zipfile
import zlib
from pathlib import Path
from tokenize import TokenError
from typing import IO, Any

import numpy as np

from toolchain.clip import clip_text
from toolchain.errors import InputError

MAX_DATA_BYTES = 1 << 30           # 1 GiB of array data per file (and per image folder)
MAX_IMAGE_PIXELS = 4096 * 4096     # one image; Pillow's own bomb limit is ~179 M pixels
MAX_IMAGES = 100_000               # files in an image folder
NPY_MAGIC, ZIP_MAGIC = b"\x93NUMPY", b"PK\x03\x04"
# what a damaged zip member raises while it is read (CRC mismatch, bad deflate stream, an
# encrypted or unsupported member)
_ZIP_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError)


def shown(path: Path) -> str:
    """`path` for a message: control characters escaped, at most 200 characters."""
    return clip_text(str(path), 200)


def regular_file(path: Path, what: str = "data file") -> int:
    """The size of `path` in bytes if it is a regular file within MAX_DATA_BYTES.

    Raises InputError for a missing file, a non-regular one (reading a FIFO blocks forever,
    /dev/zero never ends, /dev/null is empty), an unreadable one, an empty one or one too large.
    """
    try:
        st = path.stat()
    except OSError as e:
        raise InputError(f"{shown(path)}: cannot read the {what} ({e.strerror or e}); check the path") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{shown(path)}: not a regular file (a device, pipe or socket); pass a .npy, .npz or "
                         "a folder of images")
    if st.st_size == 0:
        raise InputError(f"{shown(path)}: the {what} is empty (0 bytes); pass a .npy, .npz or a folder of images")
    if st.st_size > MAX_DATA_BYTES:
        raise InputError(f"{shown(path)}: {st.st_size} bytes, more than {MAX_DATA_BYTES} bytes of data; "
                         "use fewer samples")
    if not os.access(path, os.R_OK):
        raise InputError(f"{shown(path)}: the {what} is not readable (permission denied); check its permissions")
    return st.st_size


def _header(f: IO[bytes], where: str, member_bytes: int) -> tuple[tuple[int, ...], bool, np.dtype]:
    """shape, fortran_order and dtype of the .npy at f's position, checked against the bytes it has."""
    start = f.tell()
    try:
        major, _ = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = reader(f)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, TokenError, RecursionError, MemoryError) as e:
        # numpy parses the header text with tokenize and ast.literal_eval: a damaged one raises any of these
        raise InputError(f"{where}: not a valid .npy array (bad header: {clip_text(str(e), 60)}); "
                         "write it with numpy.save") from None
    if any(d < 0 for d in shape):
        raise InputError(f"{where}: not a valid .npy array (negative dimension in shape {list(shape)[:8]}); "
                         "write it with numpy.save")
    if dtype.hasobject:
        raise InputError(f"{where}: holds Python objects (dtype {clip_text(str(dtype), 40)}), which edgecc never "
                         "unpickles; save a numeric array (numpy.save of an int or float array)")
    expected = math.prod(shape) * dtype.itemsize
    held = member_bytes - (f.tell() - start)
    if expected > MAX_DATA_BYTES:
        raise InputError(f"{where}: the header claims shape {list(shape)[:8]} ({expected} bytes), more than "
                         f"{MAX_DATA_BYTES} bytes of data; use fewer samples")
    if expected != held:
        state = "truncated" if held < expected else "longer than its header says"
        raise InputError(f"{where}: {state} (shape {list(shape)[:8]} of {clip_text(str(dtype), 40)} needs {expected} bytes of data, "
                         f"the file holds {held}); write it again with numpy.save")
    return shape, fortran, dtype


def _array(f: IO[bytes], where: str, member_bytes: int) -> np.ndarray:
    """The checked .npy array at f's position (read only once its header is known to be sound)."""
    start = f.tell()
    _header(f, where, member_bytes)
    f.seek(start)
    try:
        return np.lib.format.read_array(f, allow_pickle=False)
    except (*_ZIP_ERRORS, MemoryError) as e:
        raise InputError(f"{where}: cannot read the array ({clip_text(str(e) or type(e).__name__, 60)}); "
                         "write it again with numpy.save") from None


def read_data_file(path: Path) -> np.ndarray | dict[str, np.ndarray]:
    """A .npy (its array) or a .npz ({key: array}, keys without `.npy`), whichever the file's
    magic bytes say; raises InputError (see the module docstring) for anything else."""
    size = regular_file(path)
    where = shown(path)
    try:
        with path.open("rb") as f:
            magic = f.read(len(NPY_MAGIC))
            f.seek(0)
            if magic == NPY_MAGIC:
                return _array(f, where, size)
    except OSError as e:
        raise InputError(f"{where}: cannot read the data file ({e.strerror or e})") from None
    if magic[:4] != ZIP_MAGIC:
        raise InputError(f"{where}: not a .npy/.npz file (it starts with {clip_text(repr(magic), 30)}); "
                         "write the data with numpy.save or numpy.savez")
    return _read_npz(path, where)


def _read_npz(path: Path, where: str) -> dict[str, np.ndarray]:
    try:
        with zipfile.ZipFile(path) as z:
            members = [i for i in z.infolist() if i.filename.endswith(".npy") and not i.is_dir()]
            if not members:
                raise InputError(f"{where}: the .npz holds no arrays; write it with numpy.savez")
            if sum(i.file_size for i in members) > MAX_DATA_BYTES:
                raise InputError(f"{where}: the .npz unpacks to more than {MAX_DATA_BYTES} bytes; use fewer samples")
            out: dict[str, Any] = {}
            for info in members:
                key = info.filename[:-len(".npy")]
                with z.open(info) as raw:
                    out[key] = _array(raw, f"{where} (array {clip_text(key, 40)!r})", info.file_size)
            return out
    except InputError:
        raise
    except _ZIP_ERRORS as e:
        raise InputError(f"{where}: a corrupt .npz ({clip_text(str(e) or type(e).__name__, 60)}); "
                         "write it again with numpy.savez") from None


def open_image(path: Path, mode: str) -> Any:
    """The image file at `path` decoded and converted to Pillow mode `mode` ("L" or "RGB").

    Raises InputError for a non-regular or oversized file, more than MAX_IMAGE_PIXELS pixels, or
    data Pillow cannot decode.
    """
    from PIL import Image

    regular_file(path, "image")
    try:
        with warnings.catch_warnings():  # Pillow warns on stderr past ~89 M pixels; the limit below says it in one line
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(path)
        with img:
            w, h = img.size
            if w * h > MAX_IMAGE_PIXELS:
                raise InputError(f"{shown(path)}: {w} x {h} pixels, more than {MAX_IMAGE_PIXELS}; resize the "
                                 "images before compiling")
            return img.convert(mode)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - Pillow's decoders raise OSError, ValueError, SyntaxError, struct.error,
        # EOFError, DecompressionBombError... for damaged files; every one means "this file is not a usable image"
        raise InputError(f"{shown(path)}: cannot decode the image ({clip_text(str(e) or type(e).__name__, 60)}); "
                         "remove or replace the file") from None
