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
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, KernelVariant

DSP_HEADERS = ("dsp/ecc_dsp_kernels.h", "dsp/ecc_dsp.h")
INT32_LIMIT = 2**31
MODES = ("relu", "full", "clamp")  # requantization modes of the dsp kernels (ECC_DSP_* in ecc_dsp.h)


def dsp_variant(op: str, variant: str = "", *, mode: str = "full", applies: Callable[[Node, Graph], bool],
                scratch_bytes: Callable[[Node, Graph], int],
                args: Callable[[Node, Graph], list[CArg]] | None = None, **kw: Any) -> KernelVariant:
    """The dsp/<op>[_<variant>]_s8.c.j2 kernel entry point for one requantization mode: function
    ecc_dsp_<op>[_<variant>][_relu|_clamp]_s8, reported as kernel "dsp[_<variant>][_relu|_clamp]".
    args None: the op's portable argument list; kw: further KernelVariant fields."""
    stem = f"{op}_{variant}" if variant else op
    tail = "" if mode == "full" else f"_{mode}"
    return KernelVariant(f"dsp{'_' + variant if variant else ''}{tail}", "dsp", f"dsp/{stem}_s8.c.j2",
                         f"ecc_dsp_{stem}{tail}_s8", applies, scratch_bytes, args, DSP_HEADERS, **kw)


def lane_safe(w: np.ndarray) -> bool:
    """Weights inside [-127, 127] (BL-04). SMLAD keeps each product in 32 bits, so our kernels would
    stay exact with -128, but the rule of the project is that a variant pairing products in 16-bit
    lanes is only chosen for weights the TFLite int8 spec allows; imported weights are checked here."""
    return bool(w.size == 0 or int(np.min(w)) >= -127)


def gemm_groups(k: int) -> int:
    """Number of 4-k groups of a GEMM row of k int8: rows are zero-padded to a multiple of 8, so the
    count is even (the kernels' inner loop takes two or four groups per iteration, no single one)."""
    return 2 * -(-k // 8)


def pack_gemm_weights(w2d: np.ndarray) -> list[np.ndarray]:
    """[O, K] int8 -> the GEMM weight order: K zero-padded to a multiple of 8 (gemm_groups); rows in
    pairs, the two rows interleaved per 4-k group (8 bytes); an odd last row alone (4 bytes per
    group). Returns [ceil(O / 2)] blocks of int8 (pairs of 8 * groups bytes, an odd row 4 * groups)."""
    o, k = w2d.shape
    g = gemm_groups(k)
    wp = np.zeros((o, 4 * g), np.int8)
    wp[:, :k] = w2d
    even = o - o % 2
    blocks = list(wp[:even].reshape(even // 2, 2, g, 4).transpose(0, 2, 1, 3).reshape(even // 2, 8 * g))
    return blocks + ([wp[even]] if o % 2 else [])


def _words(values) -> np.ndarray:
    """int32 words (the low 32 bits, two's complement) as little-endian int8 bytes."""
    return ((np.asarray(values, np.int64) + 2**31) % 2**32 - 2**31).astype("<i4").view(np.int8)


def pack_gemm_blob(w2d: np.ndarray, f: "Folded", mode: str) -> np.ndarray:
    """The weight blob of the dsp GEMM kernels (ecc_dsp.h "GEMM over packed weights"), int8: per pair
    of output channels the two folded biases, the interleaved weights, the two multipliers and
    sk = shift0 | shift1 << 8 | k << 16 (the shifts of `mode`); an odd last row: bias, weights, mult, sk."""
    o = w2d.shape[0]
    sh = f.shift(mode).astype(np.int64) & 0xFF
    parts = []
    for i, block in enumerate(pack_gemm_weights(w2d)):
        rows = range(2 * i, min(2 * i + 2, o))
        sk = ((f.k & 0xFFFF) << 16) | sum(int(sh[r]) << (8 * j) for j, r in enumerate(rows))
        parts += [_words([f.bias[r] for r in rows]), block, _words([*(f.mult[r] for r in rows), sk])]
    return np.concatenate(parts)


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
    "clamp": always)."""

    bias: np.ndarray
    mult: np.ndarray
    e: np.ndarray
    k: int
    modes: tuple[str, ...]

    def shift(self, mode: str) -> np.ndarray:
        """The int8 shift array of a mode: e, or e - 1 for relu."""
        return (np.maximum(self.e - 1, 0) if mode == "relu" else self.e).astype(np.int8)


def fold_layer(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int, mult: np.ndarray, shift: np.ndarray,
               output_offset: int, act_range: tuple[int, int], *, doubled: bool = False) -> Folded | None:
    """Fold the input zero point into the bias and check the requantization of a layer whose output
    channel o computes sum_k x_k * w2d[o, k] over raw int8 x. None when the dsp kernels would not be
    exact: weights holding -128 (lane_safe), a positive shift (multiplier >= 1) or a shift below -31,
    or an accumulator that could overflow int32 once doubled (|acc| <= |bias'| + 128 sum |w|).
    doubled: return 2 * bias' (kernels that widen their weights doubled)."""
    if not lane_safe(w2d):
        return None
    o = w2d.shape[0]
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (o,))
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (o,))
    if np.any(shift > 0) or np.any(shift < -31) or np.any(mult < 0) or np.any(mult >= INT32_LIMIT):
        return None
    # A channel with multiplier 0 outputs its zero point whatever it accumulates (dead channels of
    # real models carry saturated biases): its bias and bound do not matter.
    live = mult != 0
    b = np.where(live, fold_bias(w2d, bias, input_offset), 0)
    bound = np.where(live, np.abs(b) + 128 * np.abs(w2d.astype(np.int64)).sum(axis=1), 0)
    if np.any(2 * bound + 512 >= INT32_LIMIT):
        return None
    e = np.where(live, -shift, 1)
    full = tuple(act_range) == (-128, 127)
    modes = (("relu",) if full and output_offset == -128 and np.all(e >= 1) else ()) + (("full",) if full else ())
    return Folded((b * (2 if doubled else 1)).astype(np.int32), mult.astype(np.int32), e, 2 * int(output_offset) + 1,
                  (*modes, "clamp"))
