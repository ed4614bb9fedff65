"""The offline half of the Helium (MVE) kernels (c_templates/kernels/helium/ecc_helium.h): the input
zero point folded into the bias, the per-layer requantization record and which entry points are
exact for it (helium_rq), and the weight blobs the GEMM and depthwise kernels read. The variants
that use them: toolchain/isa/helium.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from toolchain.isa.helium_rq import ONNX, modes_and_reasons
from toolchain.isa.packing import ConstantSplit
from toolchain.ops.fixed_point import f32_scale


def wrap32(v) -> np.ndarray:
    """int64 -> int32 with two's complement wrap-around (the C accumulator's arithmetic)."""
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def lane_safe(w: np.ndarray) -> bool:
    """Every weight in [-127, 127]: two products of one int16 lane stay exact
    (|x w + x' w'| <= 2 * 128 * 127 < 2^15). BL-04: imported weights may hold -128 (the depthwise
    kernel then widens every product alone)."""
    return bool(w.size == 0 or int(np.min(w)) >= -127)


@dataclass(frozen=True)
class Folded:
    """A layer's offline requantization for the helium kernels.

    bias: int32, bias + input_offset * sum(w) wrapped; mult, shift: int32 per channel (the VRSHL
    amount; as_mode(f, "onnx"): the float32 scale's bits and 0); modes: the entry points that are
    exact for this layer ("relu": the clamp starts at or above the output zero point, or no live
    channel shifts, so the round-half-away fix-up cannot change an output; "full": any shift <= 0;
    "onnx": always, see helium_rq); why: mode -> the reason it is not among them."""

    bias: np.ndarray
    mult: np.ndarray
    shift: np.ndarray
    modes: tuple[str, ...]
    why: dict = field(default_factory=dict)


def fold_or_reason(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult, shift, output_offset: int,
                   act_range: tuple[int, int]) -> Folded | str:
    """Fold the input offset into the bias of a layer whose output channel o computes
    sum_k x_k * w2d[o, k] over raw int8 x; the reason (user's words) when no entry point is exact:
    a shift below -31 or a multiplier outside [0, 2^31), or each mode's own reason (helium_rq)."""
    o = w2d.shape[0]
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (o,))
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (o,))
    if np.any(mult < 0) or np.any(mult >= 2**31):
        return "a requantization multiplier outside [0, 2^31)"
    if np.any(shift < -31) or np.any(shift > 31):
        return "a requantization multiplier below 2^-32 or above 2^31"
    b = np.zeros(o, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    modes, why = modes_and_reasons(mult, shift, output_offset, act_range[0])
    b = wrap32(b + int(input_offset) * w2d.astype(np.int64).sum(axis=1))
    return Folded(b, mult.astype(np.int32), shift.astype(np.int32), modes, why)


def fold(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult, shift, output_offset: int,
         act_range: tuple[int, int]) -> Folded | None:
    """fold_or_reason, None when no entry point is exact for the layer (a shift below -31, a
    multiplier outside [0, 2^31), or neither TFLM's nor onnx's epilogue applies)."""
    f = fold_or_reason(w2d, bias, input_offset, mult, shift, output_offset, act_range)
    return f if isinstance(f, Folded) and f.modes else None


def as_mode(f: Folded, mode: str) -> Folded:
    """The record words the `mode` entry point reads: f itself for TFLM's modes; for "onnx"
    (ECC_HELIUM_F32) mult holds the bits of the float32 scale fixed_point.f32_scale(mult, shift)
    (the reference's S bit for bit) and shift 0 (unused)."""
    if mode != ONNX:
        return f
    scale = f32_scale(f.mult, f.shift).astype("<f4")
    return replace(f, mult=scale.view(np.int32).copy(), shift=np.zeros_like(f.shift))


def mode_reason(f: Folded | str, mode: str) -> str | None:
    """Why the folded layer f has no `mode` entry point (None: it has)."""
    if isinstance(f, str):
        return f
    return None if mode in f.modes else f.why[mode]


def n_chunks(k: int) -> int:
    """16-byte chunks of a GEMM row of k int8 (at least one)."""
    return max(1, -(-k // 16))


def _words(values) -> np.ndarray:
    """int32 values as little-endian int8 bytes."""
    return wrap32(values).astype("<i4").view(np.int8)


def pack_gemm(w2d: np.ndarray, f: Folded) -> np.ndarray:
    """[O, K] int8 + its Folded -> the quad-packed GEMM blob (ecc_helium.h), int8: per quad of output
    channels, per 16-k chunk the four channels' 16 int8, then bias'[4], mult[4], shift[4] (int32);
    K zero-padded to whole chunks, O to whole quads (padding channels: all zero)."""
    o, k = w2d.shape
    nk, op = n_chunks(k), -(-o // 4) * 4
    wp = np.zeros((op, 16 * nk), np.int8)
    wp[:o, :k] = w2d
    rec = np.zeros((3, op), np.int64)
    rec[0, :o], rec[1, :o], rec[2, :o] = f.bias, f.mult, f.shift
    parts = []
    for q in range(op // 4):
        parts += [wp[4 * q:4 * q + 4].reshape(4, nk, 16).transpose(1, 0, 2).reshape(-1),
                  _words(rec[:, 4 * q:4 * q + 4].reshape(-1))]
    return np.concatenate(parts)


def pack_sparse_gemm(w2d: np.ndarray, f: Folded, split: ConstantSplit) -> np.ndarray:
    """The blob of helium conv2d_1x1_sparse (channels proven constant neither stored nor computed),
    int8: the constant row (split.row: each constant channel's value, 0 at live channels) zero-padded
    to a multiple of 16, then pack_gemm of the live rows only (their order kept, out_c padded to
    whole quads by repeating the last live row: its output is stored twice at one place), each quad
    followed by its four output channels as uint32 (the scatter store's byte offsets)."""
    n = split.live.size
    if n == 0:
        return split.row_padded(16)
    idx = np.concatenate([split.live, np.full(-n % 4, split.live[-1])])
    dense = pack_gemm(w2d[idx], replace(f, bias=f.bias[idx], mult=f.mult[idx], shift=f.shift[idx]))
    quad = dense.size // (idx.size // 4)
    parts = [split.row_padded(16)]
    for q in range(idx.size // 4):
        parts += [dense[q * quad:(q + 1) * quad], _words(idx[4 * q:4 * q + 4])]
    return np.concatenate(parts)


# ---- depthwise ----------------------------------------------------------------------------------
DW_LANES = np.array([0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15])  # ecc_helium_dw_group's lanes


def lanes_px(c: int, stride_w: int) -> int:
    """Output pixels per 16-lane vector of the depthwise kernel: 16 / c for c in 1, 2, 4, 8 at
    stride_w 1 (neighbouring pixels are contiguous), else 1 (16 channels per vector)."""
    return 16 // c if c in (1, 2, 4, 8) and stride_w == 1 else 1


def pack_depthwise(w: np.ndarray, f: Folded, px: int = 1) -> np.ndarray:
    """[1, KH, KW, C] int8 + its Folded -> the depthwise blob (ecc_helium.h), int8: per group of 16
    lanes bias', mult and shift as int32 in the accumulator lane order DW_LANES (64 bytes each),
    then per tap the group's 16 int8. px = 1: lane l of group g is channel 16 g + l, zero-padded to
    whole groups; px > 1 (px * C == 16): one group, lane l is channel l % C of pixel l // C."""
    taps = w.reshape(-1, w.shape[3])
    rec = np.stack([f.bias, f.mult, f.shift]).astype(np.int64)
    if px > 1:
        taps, rec = np.tile(taps, (1, px)), np.tile(rec, (1, px))
    cp = -(-taps.shape[1] // 16) * 16
    wp = np.zeros((taps.shape[0], cp), np.int8)
    wp[:, :taps.shape[1]] = taps
    recp = np.zeros((3, cp), np.int64)
    recp[:, :rec.shape[1]] = rec
    parts = []
    for g in range(cp // 16):
        parts += [_words(recp[:, 16 * g:16 * g + 16][:, DW_LANES].reshape(-1)), wp[:, 16 * g:16 * g + 16].reshape(-1)]
    return np.concatenate(parts)


def pack_depthwise_3x3(w: np.ndarray, f: Folded) -> np.ndarray:
    """[1, 3, 3, C] int8 + its Folded -> the blob of helium depthwise_conv2d_3x3 (its template's
    header), int8: the window's column offsets in bytes, {0, 4, 8, 12} * C as uint32, then per block
    of four channels (C zero-padded) the weight vectors W0 of channels 0, 2,
    1, 3: the taps at columns 0..2 of a 4 x 4 window of 32-bit words (byte 4 col + row; row 3 and
    column 3 zero, the kernel's W1 is W0 moved up one column); then bias', mult and shift as
    int32[4]."""
    c = w.shape[3]
    cp = -(-c // 4) * 4
    vecs = np.zeros((cp, 4, 4), np.int8)  # [channel, column, row]
    vecs[:c, :3, :3] = w[0].transpose(2, 1, 0)  # [C, kx, ky]
    rec = np.zeros((3, cp), np.int64)
    rec[:, :c] = np.stack([f.bias, f.mult, f.shift])
    parts = [_words(np.arange(4) * 4 * c)]
    for q in range(cp // 4):
        parts += [vecs[4 * q + np.array([0, 2, 1, 3])].reshape(-1), _words(rec[:, 4 * q:4 * q + 4].reshape(-1))]
    return np.concatenate(parts)
