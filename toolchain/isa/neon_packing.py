"""Offline parts of the NEON kernel variants (isa/neon.py): the weight re-packing each kernel
reads (SDOT tiles, SMLAL pairs, depthwise), the input zero point folded into the bias, the
requantization blob and the predicates on weights and shifts. Conventions on the C side:
c_templates/kernels/neon/ecc_neon.h.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa.packing import ConstantSplit
from toolchain.ops.fixed_point import f32_scale, graph_rounding

SHIFT_RANGE = (-31, 30)  # TFLite's range; ecc_neon_rq is exact over it
# neon/add's `_onnx` twin (ecc_neon_mbqm_rne) divides x * 2^lsh * mult by 2^(31 + s) with s >= RNE_PRESHIFT
# (2^s then lies above the low byte of the lsh lane, the shift SQSHL reads); a saturated x * 2^lsh stays
# exact after the int8 clamp for multipliers of at least RNE_MIN_MULT (the result is then >= 511 in
# magnitude, like the real one)
RNE_PRESHIFT = 8
RNE_MIN_MULT = 2**17
# ecc_neon_avg_div_rne's float32 quotient decides every tie exactly up to this many window cells
AVG_ONNX_CELLS = 32768


def gemm_pair_safe(w2d: np.ndarray) -> bool:
    """Whether the Armv8.0 GEMM's pairing (ECC_NEON_MLA16: the products of k and k + 8 of each 16-k
    chunk summed in one int16 lane) stays exact for [O, K] weights w2d: x w is in [-16256, 16384] for
    int8 x, w, so a pair overflows int16 only as (-128)(-128) + (-128)(-128) = 32768; that needs both
    weights of the pair at -128 (BL-04). A single -128 weight, or -128s in unpaired places, is exact."""
    o, k = w2d.shape
    full = k_padded(k, False) // 16 * 16
    w = np.zeros((o, full), np.int64)
    w[:, :min(k, full)] = w2d[:, :full]
    c = w.reshape(o, -1, 2, 8) == -128
    return not bool(np.any(c[:, :, 0] & c[:, :, 1]))


def taps_pair_safe(taps: np.ndarray) -> bool:
    """gemm_pair_safe for the depthwise kernels ([T, C] weights, taps in window order): they pair taps
    (0, 1), (2, 3), ... of one channel in an int16 lane (ECC_NEON_DW16_PAIR), the last odd tap alone."""
    t = taps[:taps.shape[0] // 2 * 2].reshape(-1, 2, taps.shape[1]) == -128
    return not bool(np.any(t[:, 0] & t[:, 1]))


def lane_safe(w: np.ndarray) -> bool:
    """Every weight in [-127, 127]: a kernel pairing two products in one int16 lane stays exact
    (|x w + x' w'| <= 2 * 128 * 127 < 2^15). BL-04: imported weights may hold -128."""
    return bool(w.size == 0 or int(np.min(w)) >= -127)


def wrap32(v: np.ndarray) -> np.ndarray:
    """int64 -> int32 with two's complement wrap-around (the C accumulator's arithmetic)."""
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def fold_bias(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int) -> np.ndarray:
    """bias + input_offset * sum_k w[o, k], wrapped to int32 like the accumulator."""
    b = np.zeros(w2d.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    return wrap32(b + int(input_offset) * w2d.astype(np.int64).sum(axis=1))


def requant_ok(shift, mult, onnx: bool = False) -> bool:
    """The shifts are inside SHIFT_RANGE and the multipliers in [0, 2^31) (TFLite's are; ecc_neon_mbqm
    relies on it); `onnx` (neon/add's output, ecc_neon_mbqm_rne): besides, every multiplier of a shift
    above -RNE_PRESHIFT is 0 or at least RNE_MIN_MULT (QuantizeMultiplier's are >= 2^30). The weighted
    kernels' `_onnx` twins (float32 scale, ecc_neon_rq_f32) take any multiplier: no check."""
    s, m = np.asarray(shift, np.int64).reshape(-1), np.asarray(mult, np.int64).reshape(-1)
    if not (s.size and m.size and s.min() >= SHIFT_RANGE[0] and s.max() <= SHIFT_RANGE[1]
            and m.min() >= 0 and m.max() < 2**31):
        return False
    if not onnx:
        return True
    n = max(s.size, m.size)
    s, m = np.broadcast_to(s, (n,)), np.broadcast_to(m, (n,))
    return not bool(np.any((s > -RNE_PRESHIFT) & (m != 0) & (m < RNE_MIN_MULT)))


def rq_lanes(mult, shift, n: int, onnx: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The requantization lanes {mult, lsh, rsh} of n channels (int64), as ecc_neon_rq reads them:
    tflm (ecc_neon_mbqm): mult, max(shift, 0), min(shift, 0); onnx (ecc_neon_rq_f32, the output stage
    of Conv / depthwise / FC under rounding "onnx"): the bits of the float32 scale
    fixed_point.f32_scale(mult, shift) as an int32, then two unused zero lanes."""
    m = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (n,))
    sh = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (n,))
    if not onnx:
        return m, np.maximum(sh, 0), np.minimum(sh, 0)
    bits = np.ascontiguousarray(f32_scale(m, sh), np.float32).view(np.int32).astype(np.int64)
    return bits, np.zeros(n, np.int64), np.zeros(n, np.int64)


def qblob(bias: np.ndarray, mult, shift, n: int, onnx: bool = False) -> np.ndarray:
    """The requantization blob (ecc_neon.h): per quad of output channels {bias', mult, lsh, rsh}
    as four int32 vectors (rq_lanes; `onnx`: {bias', float32 scale bits, 0, 0}, ecc_neon_rq_f32);
    channels padded to a multiple of 4 with zeros (multiplier 0, scale +0.0)."""
    np4 = -(-n // 4) * 4
    cols = np.zeros((4, np4), np.int64)
    cols[0, :n] = bias
    for i, lane in enumerate(rq_lanes(mult, shift, n, onnx), 1):
        cols[i, :n] = lane
    return wrap32(cols.reshape(4, np4 // 4, 4).transpose(1, 0, 2).reshape(-1))


def k_padded(k: int, dot: bool) -> int:
    """GEMM row length: a multiple of 4 (SDOT groups) or 8 (Armv8.0 chunks of 16, then 8)."""
    a = 4 if dot else 8
    return -(-k // a) * a


def dot_tiles(n: int) -> list[int]:
    """Output-channel tile widths of the SDOT kernels: 16s, then an 8 if >= 8 remain, then 4s."""
    tiles = [16] * (n // 16)
    rest = n - 16 * len(tiles)
    if rest >= 8:
        tiles.append(8)
        rest -= 8
    return tiles + [4] * -(-rest // 4)


def pack_dot(w2d: np.ndarray) -> np.ndarray:
    """[O, K] int8 -> the SDOT GEMM weight order: per channel tile (dot_tiles), per 4-k group, per
    channel of the tile its 4 int8; K and the last tile zero-padded."""
    o, k = w2d.shape
    kp = k_padded(k, True)
    parts, oc = [], 0
    for t in dot_tiles(o):
        blk = np.zeros((t, kp), np.int8)
        n = min(t, o - oc)
        blk[:n, :k] = w2d[oc:oc + n]
        parts.append(blk.reshape(t, kp // 4, 4).transpose(1, 0, 2).reshape(-1))
        oc += t
    return np.concatenate(parts)


def pack_mla(w2d: np.ndarray) -> np.ndarray:
    """[O, K] int8 -> the Armv8.0 GEMM weight order: per tile of 4 channels, per 16-k chunk the
    four channels' 16 int8, then for a last 8-k chunk their 8 int8; zero-padded."""
    o, k = w2d.shape
    kp = k_padded(k, False)
    op = -(-o // 4) * 4
    wp = np.zeros((op, kp), np.int8)
    wp[:o, :k] = w2d
    full = kp // 16 * 16
    parts = []
    for t in range(op // 4):
        rows = wp[4 * t:4 * t + 4]
        parts.append(rows[:, :full].reshape(4, full // 16, 16).transpose(1, 0, 2).reshape(-1))
        if kp > full:
            parts.append(rows[:, full:].reshape(-1))
    return np.concatenate(parts)


def pack_depthwise(w: np.ndarray) -> np.ndarray:
    """[1, KH, KW, C] int8 (C % 8 == 0) -> per block of 16 channels (8 for a last block), per tap,
    the block's int8."""
    c = w.shape[3]
    taps = w.reshape(-1, c)
    parts, c0 = [], 0
    while c0 < c:
        n = 16 if c - c0 >= 16 else 8
        parts.append(taps[:, c0:c0 + n].reshape(-1))
        c0 += n
    return np.concatenate(parts)


def pack_sparse_map(split: ConstantSplit) -> np.ndarray:
    """The map of the output channels proven constant that starts the weight blob of the sparse 1x1
    kernels (ecc_neon_requant.h, ecc_neon_sparse_merge), int8: per block of 16 channels (the last one zero-padded) the
    constant row (split.row) and 16 TBL indices (a live channel's rank among the block's live
    channels, -1 = 0xFF at constant channels, where TBL gives 0); then per block the number of live
    channels before it (int32, little-endian), zero-padded to a multiple of 16 bytes."""
    nb = -(-split.row.size // 16)
    live = np.zeros(16 * nb, bool)
    live[split.live] = True
    live = live.reshape(nb, 16)
    perm = np.where(live, np.cumsum(live, axis=1) - 1, -1).astype(np.int8)
    starts = np.zeros(-(-nb // 4) * 4, np.int64)
    starts[1:nb] = np.cumsum(live.sum(axis=1))[:-1]
    return np.concatenate([np.stack([split.row_padded(16).reshape(nb, 16), perm], axis=1).reshape(-1),
                           wrap32(starts).astype("<i4").view(np.int8)])


def avg_window_ok(kernel) -> bool:
    """Windows neon/avg_pool2d sums exactly: rows of at most 256 cells (int16 lanes, added into int32
    between rows) and at most 65536 cells (the float32 division stays exact below 2^24)."""
    return kernel[1] <= 256 and kernel[0] * kernel[1] <= 65536


def for_rounding(rounding: str | None, pred: Callable[[Node, Graph], Any] | None,
                 otherwise: Any = False) -> Callable[[Node, Graph], Any] | None:
    """`pred` on graphs whose rounding (fixed_point.graph_rounding) is `rounding`, else `otherwise`
    (False for `applies`, None for `why_not`: the twin of the other rounding speaks for the kernel
    there); `pred` itself when rounding is None (a kernel that does not round)."""
    if rounding is None or pred is None:
        return pred
    return lambda node, graph: pred(node, graph) if graph_rounding(graph) == rounding else otherwise
