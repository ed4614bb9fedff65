"""Which requantization entry points of the Helium kernels are exact for a layer, decided offline:
TFLM's MultiplyByQuantizedMultiplier (gemmlowp double rounding: `relu` without and `full` with the
round-half-away fix-up) and rounding "onnx" (`onnx`: x * mult * 2^(shift - 31) rounded once, ties
to even, toolchain.ops.fixed_point.multiply_by_quantized_multiplier_rne).

The onnx epilogue (c_templates/kernels/helium/ecc_helium.h, ECC_HELIUM_RNE) is vqdmulh + vrshl:
floor(p / 2^31) with p = x * mult, then rounded half up by s = -shift >= 1 bits, which is exactly
the real value rounded half up. It differs from ties to even only at an exact tie: p an odd
multiple of 2^(30 + s), i.e. x an odd multiple of 2^(30 + s - v), v the trailing zero bits of mult.
A layer gets the entry point when no accumulator of any channel can be such a multiple: its
largest magnitude (bias plus the largest input times the absolute weight sum) is below 2^(30 + s - v)
and below 2^31 (so the int32 sum never wraps). Real layers are far from that bound (accumulators
of 2^16..2^22 against 2^31 and more); layers that could tie (e.g. power-of-two scale ratios) take
the `onnx_ties` entry points (ECC_HELIUM_RNE_TIES: the tie test, and a saturating pre-shift for
shifts >= 0 that needs a normalised multiplier), listed after the `onnx` ones.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import AddParams

TFLM_MODES = ("relu", "full")  # ECC_HELIUM_NOFIX, ECC_HELIUM_FIX
ONNX = "onnx"                  # ECC_HELIUM_RNE: no tie can occur
ONNX_TIES = "onnx_ties"        # ECC_HELIUM_RNE_TIES: any layer (a tie test, slower)
MODES = (*TFLM_MODES, ONNX, ONNX_TIES)


def trailing_zeros(m: int) -> int:
    """The number of trailing zero bits of a positive int."""
    return (m & -m).bit_length() - 1


def tie_free(mult, shift, bound) -> bool:
    """Whether no int32 x with |x| <= bound (per channel, int) makes x * mult * 2^(shift - 31) an
    exact tie, for every channel with a non-zero multiplier and shift <= -1 (see the module
    docstring); bound >= 2^31 (the sum may wrap) counts as a possible tie."""
    for m, sh, b in zip(np.asarray(mult).reshape(-1).tolist(), np.asarray(shift).reshape(-1).tolist(),
                        np.asarray(bound).reshape(-1).tolist()):
        if m == 0:
            continue
        if b >= 2**31 or b >= 2 ** (30 - sh - trailing_zeros(int(m))):
            return False
    return True


def accumulator_bound(w2d: np.ndarray, bias: np.ndarray | None, input_offset: int) -> np.ndarray:
    """Per output channel o, the largest |bias[o] + sum_k (x_k + input_offset) * w2d[o, k]| over int8
    x (Python ints in an object array: no overflow)."""
    a = max(abs(-128 + int(input_offset)), abs(127 + int(input_offset)))
    wsum = np.abs(w2d.astype(np.int64)).sum(axis=1).astype(object)
    b = np.zeros(w2d.shape[0], np.int64) if bias is None else np.abs(np.asarray(bias, np.int64).reshape(-1))
    b = b.astype(object)
    return b + a * wsum


def modes_and_reasons(mult: np.ndarray, shift: np.ndarray, bound: np.ndarray, output_offset: int,
                      act_min: int) -> tuple[tuple[str, ...], dict[str, str]]:
    """(the entry points exact for a layer, the reason each other one is not), given per-channel
    multipliers in [0, 2^31) and shifts in [-31, 31] and accumulator bounds."""
    live = mult != 0
    why: dict[str, str] = {}
    if np.any(shift[live] > 0):
        why["full"] = why["relu"] = "a requantization multiplier of 1 or more (TFLM rounding needs shift <= 0)"
    elif not (act_min >= output_offset or not np.any(shift[live] != 0)):
        why["relu"] = "the clamp starts below the output zero point (the round-half-away fix-up is needed)"
    if np.any(shift[live] > -1):
        why[ONNX] = "a requantization multiplier of 1/2 or more (the fast onnx epilogue needs shift <= -1)"
    elif not tie_free(mult, shift, bound):
        why[ONNX] = "an accumulator could fall exactly halfway between two outputs (the tie-testing kernel takes it)"
    if np.any(shift[live] > 30) or np.any((shift >= 0) & live & (mult < 2**30)):
        why[ONNX_TIES] = "a requantization multiplier of 2^31 or more, or one of 1/2 or more not normalised"
    return tuple(m for m in MODES if m not in why), why


def add_onnx_reason(p: AddParams) -> str | None:
    """Why helium/add_onnx (ECC_HELIUM_RNE_TIES on the output) is not exact for AddParams p (None: it
    is): with shift 0 its pre-shift needs a normalised multiplier (>= 2^30, ecc_helium.h)."""
    if p.output_shift == 0 and 0 < p.output_mult < 2**30:
        return "an output multiplier in [1/4, 1/2) not normalised (the onnx epilogue's pre-shift needs >= 2^30)"
    return None
