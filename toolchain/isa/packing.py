"""Offline specialisation for the DSP kernel variants (c_templates/kernels/dsp/): weight re-packing
into the order the kernels read, the input zero point folded into the bias, the requantization
rewrite (per channel multiplier and shift, per layer k and mode), and the checks under which all of
that stays bit-exact with the portable kernels. Also `dsp_variant`, the KernelVariant factory of the
dsp folder.

Owns the numbers only; which op uses which piece (and the kernel argument lists) stays in the op
modules. The C side of these conventions is documented in c_templates/kernels/dsp/ecc_dsp.h.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import f32_scale, graph_rounding, requantize_s8_f32, rescale
from toolchain.ops.registry import CArg, KernelVariant

DSP_HEADERS = ("dsp/ecc_dsp_kernels.h", "dsp/ecc_dsp.h")
INT32_LIMIT = 2**31
# requantization modes of the dsp kernels, fastest first: TFLM's double rounding (MODES); under rounding
# onnx, Conv / depthwise / FC take onnxruntime's float32 output stage (F32, entry points `_onnx`, needs the
# FPU) and transpose conv the exact product rounded once, ties to even (ONNX_MODES); C_MODES in the order
# of their ECC_DSP_* numbers (ecc_dsp.h)
MODES = ("relu", "full", "clamp")
ONNX_MODES = ("onnx", "onnx_tie", "onnx_clamp")
F32 = "f32"
C_MODES = (*MODES, "onnx", "onnx_clamp", "onnx_tie", F32)
ALL_MODES = MODES + ONNX_MODES  # the order the variants of transpose conv are tried in
WEIGHTED_MODES = MODES + (F32,)  # those of conv2d, depthwise and the fully connected GEMM fallback
F32_FEATURES = frozenset({"fpu"})  # KernelVariant.requires of the F32 entry points
F32_WHY = "needs the FPU for onnxruntime's float32 requantization"
# F32 scale stored per kernel: S * 2^-j for kernels whose sums are 2^j acc (ecc_dsp.h ecc_dsp_f32)
F32_GEMM, F32_DOUBLED, F32_FC = 0, 1, 8
LIVE = 999  # constant_channels' mark of a channel whose output depends on the input
TIE_FREE_ODD = 511  # ecc_dsp.h ECC_DSP_RNE: with an odd multiplier part this large no tie changes an int8 output


def mode_rounding(mode: str) -> str:
    """The `rounding` ("tflm" or "onnx") a requantization mode implements."""
    return "onnx" if mode in ONNX_MODES or mode == F32 else "tflm"


def mode_tail(mode: str) -> str:
    """The suffix of a mode's entry points: "" for "full", "_onnx" for F32, else "_<mode>"."""
    return "" if mode == "full" else "_onnx" if mode == F32 else f"_{mode}"


def rounding_modes(rounding: str) -> tuple[str, ...]:
    """The requantization modes of one rounding, fastest first."""
    return ONNX_MODES if rounding == "onnx" else MODES


def dsp_variant(op: str, variant: str = "", *, mode: str = "full", applies: Callable[[Node, Graph], bool],
                scratch_bytes: Callable[[Node, Graph], int],
                args: Callable[[Node, Graph], list[CArg]] | None = None, headers: tuple[str, ...] = (),
                why_not: Callable[[Node, Graph], str | None] | None = None,
                roundings: tuple[str, ...] | None = None, **kw: Any) -> KernelVariant:
    """The dsp/<op>[_<variant>]_s8.c.j2 kernel entry point for one requantization mode: function
    ecc_dsp_<op>[_<variant>][_relu|_clamp|_onnx|_onnx_clamp]_s8 (mode_tail), reported as kernel
    "dsp[_<variant>][_relu|...]". It applies only to graphs whose `rounding` (graph_rounding) is the
    mode's (mode_rounding), or one of `roundings` (kernels that round nothing). args None: the op's
    portable argument list; headers: dsp/ headers beyond DSP_HEADERS; why_not: the reason it does not
    apply to a node (None for a graph of the other rounding: that variant is not a candidate there);
    kw: further KernelVariant fields. Mode F32 requires the board's `fpu` (F32_FEATURES, F32_WHY)."""
    stem = f"{op}_{variant}" if variant else op
    tail = mode_tail(mode)
    ours = roundings or (mode_rounding(mode),)
    if mode == F32:
        kw = dict(requires=F32_FEATURES, requires_why=F32_WHY, **kw)

    def gated(node: Node, graph: Graph) -> bool:
        return graph_rounding(graph) in ours and applies(node, graph)

    def reason(node: Node, graph: Graph) -> str | None:
        return why_not(node, graph) if why_not and graph_rounding(graph) in ours else None

    return KernelVariant(f"dsp{'_' + variant if variant else ''}{tail}", "dsp", f"dsp/{stem}_s8.c.j2",
                         f"ecc_dsp_{stem}{tail}_s8", gated, scratch_bytes, args, (*DSP_HEADERS, *headers),
                         why_not=reason, **kw)


def lane_safe(w: np.ndarray) -> bool:
    """Weights inside [-127, 127] (BL-04). Only dsp/fully_connected needs it (pack_fc_blob stores
    w1 - [w0 < 0] in an int8); the GEMM and depthwise kernels widen each weight to its own int16 lane
    and SMLAD / SMLABB keep each product in 32 bits, exact with -128."""
    return bool(w.size == 0 or int(np.min(w)) >= -127)


def gemm_groups(k: int, pad: int = 8) -> int:
    """Number of 4-k groups of a GEMM row of k int8, rows zero-padded to a multiple of `pad` (8: an even
    count, for the 2x2 kernels whose inner loop takes two or four groups per iteration, no single one;
    4: any count >= 1, the 2x3 kernels of dsp/ecc_dsp_gemm3.h, conv2d and conv2d_1x1)."""
    return pad // 4 * -(-k // pad)


def pack_gemm_weights(w2d: np.ndarray, pad: int = 8) -> list[np.ndarray]:
    """[O, K] int8 -> the GEMM weight order: K zero-padded to a multiple of `pad` (gemm_groups); rows in
    pairs, the two rows interleaved per 4-k group (8 bytes); an odd last row alone (4 bytes per
    group). Returns [ceil(O / 2)] blocks of int8 (pairs of 8 * groups bytes, an odd row 4 * groups)."""
    o, k = w2d.shape
    g = gemm_groups(k, pad)
    wp = np.zeros((o, 4 * g), np.int8)
    wp[:, :k] = w2d
    even = o - o % 2
    blocks = list(wp[:even].reshape(even // 2, 2, g, 4).transpose(0, 2, 1, 3).reshape(even // 2, 8 * g))
    return blocks + ([wp[even]] if o % 2 else [])


def _words(values) -> np.ndarray:
    """int32 words (the low 32 bits, two's complement) as little-endian int8 bytes."""
    return ((np.asarray(values, np.int64) + 2**31) % 2**32 - 2**31).astype("<i4").view(np.int8)


def pack_gemm_blob(w2d: np.ndarray, f: "Folded", mode: str, index: np.ndarray | None = None,
                   pad: int = 8) -> np.ndarray:
    """The weight blob of the dsp GEMM kernels (ecc_dsp.h "GEMM over packed weights"), int8: per pair
    of output channels the two folded biases, the interleaved weights, the two multipliers (F32: the
    float32 bits of S, Folded.multipliers) and sk = shift0 | shift1 << 8 | k << 16 (the shifts of
    `mode`; F32: the output offset, k >> 1); an odd last row: bias, weights, mult, sk.
    index (the sparse kernels, pack_sparse_gemm_blob): the output channel of each row; every record
    then ends with one more word, channel0 | channel1 << 16 (uint16 each; an odd last row: channel0).
    pad: K's padding (gemm_groups)."""
    o = w2d.shape[0]
    sh = f.shift(mode).astype(np.int64) & 0xFF
    mult = f.multipliers(mode, F32_GEMM)
    parts = []
    for i, block in enumerate(pack_gemm_weights(w2d, pad)):
        rows = range(2 * i, min(2 * i + 2, o))
        sk = ((f.k & 0xFFFF) << 16) | sum(int(sh[r]) << (8 * j) for j, r in enumerate(rows))
        sk = f.k >> 1 if mode == F32 else sk
        parts += [_words([f.bias[r] for r in rows]), block, _words([*(mult[r] for r in rows), sk])]
        if index is not None:
            parts.append(_words([sum(int(index[r]) << (16 * j) for j, r in enumerate(rows))]))
    return np.concatenate(parts)


def pack_sparse_gemm_blob(f: "Folded", mode: str) -> np.ndarray | None:
    """The weight blob of the dsp sparse 1x1 kernel (conv2d_1x1_sparse_s8.c.j2), int8, or None when
    no channel of f is proven constant (f.const; the dense blob then, so such layers emit what
    they did before) or the channels do not fit uint16. First the constant row: out_c int8 (each
    constant channel's value, 0 at live channels), zero-padded to a multiple of 4, copied into every
    output pixel before the GEMM overwrites the live channels; then pack_gemm_blob of the live rows
    only (their order kept) with their output channels as index. Dead rows are neither stored nor
    computed: the kernel's cost and the blob scale with the live channels."""
    s = split_constants(f.const)
    if s is None or f.const.size >= 1 << 16:
        return None
    live = s.live
    sub = replace(f, bias=f.bias[live], mult=f.mult[live], e=f.e[live], w=f.w[live], const=None)
    return np.concatenate([s.row_padded(4), pack_gemm_blob(sub.w, sub, mode, live) if live.size
                           else np.zeros(0, np.int8)])


@dataclass(frozen=True)
class ConstantSplit:
    """The output channels of a layer split by constant_channels, for the sparse kernels of every ISA
    (dsp, helium, neon conv2d_1x1 *_sparse): live (int64, ascending: the channels computed, their
    order kept) and row (int8 [O]: each constant channel's value, 0 at live channels)."""

    live: np.ndarray
    row: np.ndarray

    def row_padded(self, multiple: int) -> np.ndarray:
        """row zero-padded to a multiple of `multiple` bytes (int8)."""
        out = np.zeros(-(-self.row.size // multiple) * multiple, np.int8)
        out[:self.row.size] = self.row
        return out

    def skipped(self, k: int, has_bias: bool) -> tuple[int, int]:
        """(int8 weight bytes, int32 bias bytes) of the model's parameters a sparse kernel does not
        store: the dead rows of K weights and their biases (CArg.skipped -> weights_skipped_bytes)."""
        dead = self.row.size - self.live.size
        return dead * int(k), 4 * dead * bool(has_bias)


def split_constants(const: np.ndarray | None) -> ConstantSplit | None:
    """const (constant_channels: per channel its int8 output, LIVE when it depends on the input) as a
    ConstantSplit; None when no channel is constant (the dense kernel then: such layers emit the C
    they emitted before the sparse kernels existed)."""
    if const is None or not np.any(const != LIVE):
        return None
    return ConstantSplit(np.flatnonzero(const == LIVE), np.where(const == LIVE, 0, const).astype(np.int8))


def layer_constants(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult, shift, output_offset: int,
                    act_range: tuple[int, int], rounding: str = "tflm") -> np.ndarray:
    """constant_channels of a layer given as the model has it (bias not folded; mult / shift per channel
    or per tensor): the input zero point folded into the bias, a multiplier-0 channel's bias zeroed (its
    output is the zero point, clamped, whatever it accumulates). int64 [O]."""
    o = w2d.shape[0]
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (o,))
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (o,))
    b = np.where(mult != 0, fold_bias(w2d, bias, input_offset), 0)
    return constant_channels(w2d, b, mult, shift, output_offset, act_range, rounding)


def fc_blocks(k: int) -> int:
    """Number of 8-k blocks of a fully connected row of k int8 (K zero-padded, at least one)."""
    return max(1, -(-k // 8))


FC_SCALED_LIMIT = 2**23  # |acc| bound of dsp/fully_connected, whose accumulators hold 256 acc


def pack_fc_blob(f: "Folded", mode: str) -> np.ndarray | None:
    """The weight blob of dsp/fully_connected (4 output rows per pass, 3 instructions per 4 MACs;
    fully_connected_s8.c.j2 ECC_DSP_FC_ROW), int8, or None when an accumulator bound
    |bias'| + 128 sum |w| reaches FC_SCALED_LIMIT (the kernel's 256 acc would not fit int32). Rows
    of f.w in quads (the last padded with zero rows: bias 0, multiplier 0), K zero-padded to
    fc_blocks; per quad the four words 256 bias' - 127 (w0 + w2 summed over the 4-k groups), per 8-k
    block the four rows' 8 int8 with w1 - [w0 < 0] and w3 - [w2 < 0] in place of each group's odd
    weights (in [-128, 127] as every weight is in [-127, 127]), the four multipliers (int32; F32: the
    float32 bits of S / 256, the kernel's sums being 256 acc) and the four shifts of `mode` (int8).
    36 + 32 * blocks bytes per quad."""
    o, k = f.w.shape
    w = f.w.astype(np.int64)
    if fc_blob_why_not(f) is not None:
        return None
    nb, nq = fc_blocks(k), -(-o // 4)
    wp = np.zeros((4 * nq, 8 * nb), np.int64)
    wp[:o, :k] = w
    g = wp.reshape(4 * nq, 2 * nb, 4)
    packed = g.copy()
    packed[:, :, 1] -= g[:, :, 0] < 0
    packed[:, :, 3] -= g[:, :, 2] < 0
    packed = packed.reshape(4 * nq, 8 * nb).astype(np.int8)
    rec = np.zeros((3, 4 * nq), np.int64)
    rec[0, :o], rec[1, :o], rec[2, :o] = f.bias, f.multipliers(mode, F32_FC), f.shift(mode)
    rec[0] = 256 * rec[0] - 127 * (g[:, :, 0] + g[:, :, 2]).sum(axis=1)
    parts = []
    for q in range(nq):
        rows = slice(4 * q, 4 * q + 4)
        parts += [_words(rec[0, rows]), packed[rows].reshape(4, nb, 8).transpose(1, 0, 2).reshape(-1),
                  _words(rec[1, rows]), rec[2, rows].astype(np.int8)]
    return np.concatenate(parts)


def fc_blob_why_not(f: "Folded") -> str | None:
    """Why pack_fc_blob cannot pack f (the first reason), None when it can."""
    if not lane_safe(f.w):
        return "weights hold -128"
    if np.any(np.abs(f.bias.astype(np.int64)) + 128 * np.abs(f.w.astype(np.int64)).sum(axis=1) >= FC_SCALED_LIMIT):
        return "accumulator may reach 2^23"
    return None


def fold_bias(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int) -> np.ndarray:
    """bias + input_offset * sum_k w[o, k] (int64): sum (x + off) w = sum x w + off sum w."""
    b = np.zeros(w2d.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    return b + int(input_offset) * w2d.astype(np.int64).sum(axis=1)


@dataclass(frozen=True)
class Folded:
    """A layer's offline parts for the dsp kernels (see ecc_dsp_out in ecc_dsp.h).

    bias: int32, the input zero point folded in (doubled when the kernel accumulates 2 acc);
    mult: int32 per channel; e: the right shift per channel (-shift); k = 2 * output_offset + 1;
    modes: the requantization modes that are exact for this layer, fastest first ("relu": output
    range [-128, 127] with zero point -128 and every live e >= 1; "full": range [-128, 127];
    "clamp": always); w: the [O, K] int8 weights to pack (the input's, except that the rows of
    channels proven constant are zero, see constant_channels); const (fold_layer with constants):
    int64 [O], per channel the int8 output constant_channels proves for every input, LIVE otherwise
    (the sparse kernels skip the constant channels); None without constants."""

    bias: np.ndarray
    mult: np.ndarray
    e: np.ndarray
    k: int
    modes: tuple[str, ...]
    w: np.ndarray
    const: np.ndarray | None = None

    def shift(self, mode: str) -> np.ndarray:
        """The int8 shift array of a mode: e, or e - 1 for relu, onnx and onnx_tie (ecc_dsp.h; F32 does not
        read it)."""
        return (np.maximum(self.e - 1, 0) if mode in ("relu", "onnx", "onnx_tie") else self.e).astype(np.int8)

    def multipliers(self, mode: str, j: int = 0) -> np.ndarray:
        """The int32 multiplier words of a mode: mult, or for F32 the float32 bits of
        f32_scale(mult, -e) * 2^-j (exact: a power of two, the result stays normal) for a kernel whose
        sums are 2^j acc (F32_GEMM, F32_DOUBLED, F32_FC; ecc_dsp.h ecc_dsp_f32). Channels of multiplier 0
        get +0.0, constant channels (fold_layer_why) their rewritten scale."""
        if mode != F32:
            return self.mult
        s = f32_scale(self.mult, np.where(self.mult != 0, -self.e, 0)) * np.float32(2.0 ** -j)
        return s.astype(np.float32).view(np.int32)


def constant_channels(w2d: np.ndarray, folded_bias: np.ndarray, mult: np.ndarray, shift: np.ndarray,
                      output_offset: int, act_range: tuple[int, int], rounding: str = "tflm") -> np.ndarray:
    """Per output channel, the int8 output it gives for every possible input, or LIVE (999) when that is
    not one value. Over raw int8 x in [-128, 127] (padding taps read the zero point, also int8),
    acc = folded_bias + sum_k x_k w[o, k] spans exactly [lo, hi] with lo / hi taking each x_k at its
    extreme; the output rescale of `rounding` (fixed_point.rescale; multiplier >= 0), the offset and the
    clamp are monotone non-decreasing in acc, so the output is constant iff the two ends agree. A range leaving int32
    (where TFLM's accumulator would wrap) is never constant. int64 [O]."""
    w = w2d.astype(np.int64)
    b = np.asarray(folded_bias, np.int64)
    lo = b + np.where(w > 0, -128 * w, 127 * w).sum(axis=1)
    hi = b + np.where(w > 0, 127 * w, -128 * w).sum(axis=1)
    inside = (lo >= -INT32_LIMIT) & (hi < INT32_LIMIT)
    y = [_output_stage(np.clip(v, -INT32_LIMIT, INT32_LIMIT - 1), mult, shift, output_offset, act_range, rounding)
         for v in (lo, hi)]
    return np.where(inside & (y[0] == y[1]), y[0], LIVE)


def _output_stage(acc: np.ndarray, mult, shift, output_offset: int, act_range: tuple[int, int],
                  rounding: str) -> np.ndarray:
    """The int8 output (int64 [O]) of a weighted layer for accumulators acc: rounding "onnx" is the
    float32 output stage (requantize_s8_f32, also monotone: float32 conversion, multiply by S >= 0 and
    rint all are), "tflm" rescale + offset + clamp."""
    if rounding == "onnx":
        return requantize_s8_f32(acc, mult, shift, output_offset, *act_range).astype(np.int64)
    return np.clip(rescale(acc, mult, shift, rounding) + int(output_offset), *act_range)


def fold_layer(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult: np.ndarray, shift: np.ndarray,
               output_offset: int, act_range: tuple[int, int], *, doubled: bool = False,
               constants: bool = False, rounding: str = "tflm") -> Folded | None:
    """fold_layer_why with the reason dropped: the Folded layer, or None when the dsp kernels would not
    be exact."""
    f = fold_layer_why(w2d, bias, input_offset, mult, shift, output_offset, act_range, doubled=doubled,
                       constants=constants, rounding=rounding)
    return None if isinstance(f, str) else f


def tie_free(mult: np.ndarray) -> np.ndarray:
    """Per channel (int64 multipliers > 0): whether no tie of the onnx rounding can change an int8
    output, whatever the accumulator: mult = m_odd 2^a with m_odd >= TIE_FREE_ODD (ecc_dsp.h
    ECC_DSP_RNE has the proof). bool [O]."""
    m = np.asarray(mult, np.int64)
    return m // (m & -m) >= TIE_FREE_ODD


def fold_layer_why(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult: np.ndarray, shift: np.ndarray,
                   output_offset: int, act_range: tuple[int, int], *, doubled: bool = False,
                   constants: bool = False, rounding: str = "tflm") -> Folded | str:
    """Fold the input zero point into the bias and check the requantization of a layer whose output
    channel o computes sum_k x_k * w2d[o, k] over raw int8 x (weights of -128 included: the kernels
    using fold_layer keep each product in its own 32-bit sum). Returns the reason, a string, when the
    dsp kernels would not be exact: a positive shift (multiplier >= 1) or, rounding "tflm", a shift below
    -31, or an accumulator that could overflow int32 once doubled (|acc| <= |bias'| + 128 sum |w|).
    rounding "onnx": a shift below -31 gives 0 (the value is below one half: multiply_by_quantized_multiplier_rne
    divides by at most 2^62, and the bound |acc mult| <= 2^61 is checked), so such a channel becomes
    multiplier 0.
    doubled: return 2 * bias' (kernels that widen their weights doubled).
    constants (kernels that pack Folded.w): a channel failing only the doubling bound whose output
    is one value c for every input (constant_channels; real models have such channels, with biases
    saturated near +-2^30) is rewritten exactly: zero weights, bias' 4 (c - output_offset),
    multiplier 2^30, shift -1, so that ecc_dsp_out gives c in every mode (h = 2 (c - off), e = 1; onnx:
    the product is 2 (c - off) 2^32, no rounding at all);
    Folded.const then holds constant_channels of every channel (the sparse kernels skip them all).
    Folded.modes: the modes of `rounding` (rounding_modes) that are exact for the layer."""
    o = w2d.shape[0]
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (o,)).copy()
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (o,)).copy()
    if rounding == "onnx":
        tiny = shift < -31
        w_abs = np.abs(w2d.astype(np.int64)).sum(axis=1)
        acc_max = np.minimum(np.abs(fold_bias(w2d, bias, input_offset)) + 128 * w_abs, INT32_LIMIT)
        if np.any(tiny & (acc_max * mult > 2**61)):  # the oracle rounds p / 2^62 there (its shift clipped)
            return "requantization multiplier out of range (< 2^-32)"
        mult[tiny], shift[tiny] = 0, 0
    if np.any(shift > 0) or np.any(mult < 0) or np.any(mult >= INT32_LIMIT):
        return "requantization multiplier out of range (>= 1)"
    if np.any(shift < -31):
        return "requantization multiplier out of range (< 2^-32)"
    # A channel with multiplier 0 outputs its zero point whatever it accumulates (dead channels of
    # real models carry saturated biases): its bias and bound do not matter.
    live = mult != 0
    b = np.where(live, fold_bias(w2d, bias, input_offset), 0)
    bound = np.where(live, np.abs(b) + 128 * np.abs(w2d.astype(np.int64)).sum(axis=1), 0)
    over = 2 * bound + 512 >= INT32_LIMIT
    # exact over raw int8 inputs (never calibration data); a multiplier-0 channel's zeroed bias keeps
    # its proof exact (its output is the zero point, clamped, whatever it accumulates)
    const = (layer_constants(w2d, bias, input_offset, mult, shift, output_offset, act_range, rounding)
             if constants else None)
    if np.any(over) and constants:
        c = const[over]
        if np.any(c == LIVE):
            return "accumulator may overflow int32"
        w2d = w2d.copy()
        w2d[over] = 0
        b[over], mult[over], shift[over] = 4 * (c - int(output_offset)), 1 << 30, -1
    elif np.any(over):
        return "accumulator may overflow int32"
    e = np.where(live, -shift, 1)
    full = tuple(act_range) == (-128, 127)
    if rounding == "onnx":
        # the rewritten constant channels round nothing (exact products), so only the others count;
        # F32 (onnxruntime's float32 stage of Conv / depthwise / FC) is exact for every layer here
        ties = live & ~over & ~tie_free(np.where(live, mult, 1))
        modes = ((() if np.any(ties) else ("onnx",)) + ("onnx_tie",)) if full and np.all(e >= 1) else ()
        modes += ("onnx_clamp", F32)
    else:
        modes = (("relu",) if full and output_offset == -128 and np.all(e >= 1) else ()) + (("full",) if full else ())
        modes += ("clamp",)
    return Folded((b * (2 if doubled else 1)).astype(np.int32), mult.astype(np.int32), e, 2 * int(output_offset) + 1,
                  modes, w2d, const)
