"""Weights as data (issue 17 item 1): the constant arrays of weights.h as one binary file,
weights.bin, that a generated weights.S places with `.incbin` into the same section, under the same
symbols, with the same sizes, types and alignment as weights.c would. GCC takes about 1.5 s per MB of
C array initialiser (measured: aarch64-linux-gnu-gcc 12, -O2 -g, 2 cores; ~20 s for a ResNet-18's
11.8 MB); the assembler copies the bytes.

The layout follows what GCC 12 makes of weights.c at -O1 and above (-ftoplevel-reorder: a unit's
variables come out last-defined first, each at the `aligned(N)` of ECC_CONST, zero bytes between),
so switching the form leaves the linked weights section byte for byte the same on every board of
boards.yaml (tests/e2e/test_weights_blob.py compares them). At -O0 GCC keeps source order: each
array still holds the same bytes, the section's order differs.

All boards are little-endian: each array is its C type's little-endian bytes.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FORMATS = ("auto", "c", "blob")
# auto: a readable weights.c up to this many bytes of arrays (GCC: ~0.4 s there), weights.S + .bin above
BLOB_MIN_BYTES = 256 * 1024
# the little-endian numpy type of each C element type weights.h declares (context.array_ctype, Tensor dtypes)
LE_TYPES = {"int8_t": "<i1", "uint8_t": "<u1", "int16_t": "<i2", "uint16_t": "<u2", "int32_t": "<i4",
            "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}


def resolve_format(requested: str, array_bytes: int) -> str:
    """"c" or "blob" for config `weights_format` `requested` ("auto", "c" or "blob") and the total
    bytes of the constant arrays: auto is "blob" above BLOB_MIN_BYTES. ValueError for another value.

    >>> resolve_format("auto", 256 * 1024), resolve_format("auto", 256 * 1024 + 1), resolve_format("c", 1 << 30)
    ('c', 'blob', 'c')
    """
    if requested not in FORMATS:
        raise ValueError(f"weights_format must be {' or '.join(FORMATS)}, not {requested!r}")
    if requested == "auto":
        return "blob" if array_bytes > BLOB_MIN_BYTES else "c"
    return requested


@dataclass(frozen=True)
class BlobEntry:
    """One array in weights.bin: its symbol, `offset` in the file (bytes, a multiple of the
    alignment) and `nbytes`, its own bytes (sizeof the C array)."""

    symbol: str
    offset: int
    nbytes: int


def array_bytes(ctype: str, values: np.ndarray) -> bytes:
    """The bytes of C array `ctype name[] = {values}` on a little-endian target, row-major.
    ValueError for a type without a fixed little-endian form or a value the type cannot hold (the C
    initialiser would not compile under -Werror either).

    >>> array_bytes("int32_t", np.array([1, -2])).hex(), array_bytes("int8_t", np.array([[-1], [2]])).hex()
    ('01000000feffffff', 'ff02')
    """
    if ctype not in LE_TYPES:
        raise ValueError(f"no binary form for C type {ctype!r} (known: {', '.join(LE_TYPES)})")
    flat = np.asarray(values).ravel()
    out = flat.astype(LE_TYPES[ctype])
    if not np.array_equal(out, flat):
        raise ValueError(f"values out of range of {ctype}")
    return out.tobytes()


def blob_layout(arrays: Sequence[tuple[str, int]], alignment: int) -> tuple[BlobEntry, ...]:
    """Where each (symbol, nbytes) of weights.h's order goes in weights.bin: GCC's order (last
    defined first), each offset rounded up to `alignment` (a power of two).

    >>> blob_layout([("a", 3), ("b", 20)], 16)
    (BlobEntry(symbol='b', offset=0, nbytes=20), BlobEntry(symbol='a', offset=32, nbytes=3))
    """
    if alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, not {alignment}")
    out, end = [], 0
    for symbol, nbytes in reversed(arrays):
        offset = -(-end // alignment) * alignment
        out.append(BlobEntry(symbol, offset, nbytes))
        end = offset + nbytes
    return tuple(out)


def blob_bytes(arrays: Sequence[tuple[str, bytes]], alignment: int) -> tuple[tuple[BlobEntry, ...], bytes]:
    """(layout, weights.bin) for (symbol, bytes) in weights.h's order: the arrays at their layout
    offsets, zero bytes between, none after the last.

    >>> blob_bytes([("a", b"\\x01"), ("b", b"\\x02\\x03")], 4)[1].hex()
    '0203000001'
    """
    layout = blob_layout([(s, len(b)) for s, b in arrays], alignment)
    data = dict(arrays)
    blob = bytearray(layout[-1].offset + layout[-1].nbytes if layout else 0)
    for e in layout:
        blob[e.offset:e.offset + e.nbytes] = data[e.symbol]
    return layout, bytes(blob)
