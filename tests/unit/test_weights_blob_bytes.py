"""Weights as data (issue 17 item 1), the Python half: toolchain.codegen.weights_blob's bytes, layout
and format choice, and the `weights_format` key / --weights-format flag. That the assembled blob
equals what GCC makes of weights.c is tests/e2e/test_weights_blob.py's."""
from __future__ import annotations

import doctest

import numpy as np
import pytest

from toolchain.codegen import weights_blob
from toolchain.codegen.weights_blob import (BLOB_MIN_BYTES, BlobEntry, array_bytes, blob_bytes, blob_layout,
                                            resolve_format)
from toolchain.config import load_config
from toolchain.errors import InputError


def test_doctests():
    res = doctest.testmod(weights_blob, verbose=False)
    assert res.attempted >= 4 and res.failed == 0


@pytest.mark.parametrize("ctype, values, want", [
    ("int8_t", [-128, -1, 0, 127], "80ff007f"),
    ("uint8_t", [0, 200, 255], "00c8ff"),
    ("int16_t", [-32768, 32767, -2], "0080ff7ffeff"),
    ("uint16_t", [65535, 256], "ffff0001"),
    ("int32_t", [-(2**31), 2**31 - 1, 258], "00000080ffffff7f02010000"),
    ("int64_t", [-1, 2**40], "ffffffffffffffff0000000000010000"),
])
def test_array_bytes_are_the_little_endian_c_values(ctype, values, want):
    assert array_bytes(ctype, np.array(values, np.int64)).hex() == want


def test_array_bytes_are_row_major():
    assert array_bytes("int16_t", np.array([[1, 2], [3, 4]], np.int16)).hex() == "0100020003000400"
    assert array_bytes("int16_t", np.array([[1, 2], [3, 4]], np.int16).T).hex() == "0100030002000400"


@pytest.mark.parametrize("ctype, values, match", [
    ("int8_t", [128], "out of range of int8_t"),
    ("uint16_t", [-1], "out of range of uint16_t"),
    ("int32_t", [2**31], "out of range of int32_t"),
    ("float", [1], "no binary form for C type 'float'"),
])
def test_array_bytes_refuses_what_c_would_not_compile(ctype, values, match):
    with pytest.raises(ValueError, match=match):
        array_bytes(ctype, np.array(values, np.int64))


def test_layout_is_last_defined_first_each_aligned():
    """weights.h order a, b, c; GCC 12 at -O2 emits c, b, a, each at a multiple of the alignment."""
    assert blob_layout([("a", 5), ("b", 16), ("c", 1)], 16) == (
        BlobEntry("c", 0, 1), BlobEntry("b", 16, 16), BlobEntry("a", 32, 5))
    assert blob_layout([("a", 5), ("b", 6), ("c", 1)], 4) == (
        BlobEntry("c", 0, 1), BlobEntry("b", 4, 6), BlobEntry("a", 12, 5))
    assert blob_layout([], 16) == ()


@pytest.mark.parametrize("alignment", [0, 3, 24, -16])
def test_layout_needs_a_power_of_two(alignment):
    with pytest.raises(ValueError, match="power of two"):
        blob_layout([("a", 1)], alignment)


def test_blob_holds_each_array_at_its_offset_and_zeros_between():
    arrays = [("w", array_bytes("int8_t", np.array([1, -1, 2]))), ("b", array_bytes("int32_t", np.array([-5, 7])))]
    layout, blob = blob_bytes(arrays, 16)
    assert layout == (BlobEntry("b", 0, 8), BlobEntry("w", 16, 3))
    assert blob.hex() == "fbffffff07000000" + "00" * 8 + "01ff02"
    assert blob_bytes([], 16) == ((), b"")


def test_auto_is_c_up_to_the_threshold_then_blob():
    assert BLOB_MIN_BYTES == 256 * 1024
    assert [resolve_format("auto", n) for n in (0, BLOB_MIN_BYTES, BLOB_MIN_BYTES + 1)] == ["c", "c", "blob"]
    assert resolve_format("blob", 1) == "blob" and resolve_format("c", 1 << 30) == "c"
    with pytest.raises(ValueError, match="weights_format must be auto or c or blob"):
        resolve_format("bin", 1)


def test_weights_format_key_and_flag(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("model: m.onnx\nweights_format: c\n")
    assert load_config(p, {}).weights_format == "c"
    assert load_config(p, {"weights_format": "blob"}).weights_format == "blob"  # the flag wins
    p.write_text("model: m.onnx\n")
    assert load_config(p, {}).weights_format == "auto"
    p.write_text("model: m.onnx\nweights_format: bin\n")
    with pytest.raises(InputError, match=r"p\.yaml: weights_format must be auto or c or blob, not 'bin'"):
        load_config(p, {})
    with pytest.raises(InputError, match=r"command line --weights-format: weights_format must be auto or c or blob"):
        load_config(None, {"model": "m.onnx", "weights_format": "C"})
