"""gemmlowp fixed-point transcendentals as vectorised numpy, bit-exact with gemmlowp/fixedpoint.h:
exp on negative values for any integer-bit count, logistic and tanh, and the input rescaling that
TFLM's int8 LOGISTIC and TANH share (kInputIntegerBits = 4, CalculateInputRadius).

Values are raw int32 quantities held in int64 arrays; `_mul` is SaturatingRoundingDoublingHighMul.
Owns only the arithmetic; the ops are logistic.py and tanh.py (softmax.py keeps its Q5.26 exp).
"""
from __future__ import annotations

import math

import numpy as np

from toolchain.ops.fixed_point import INT32_MAX, rounding_divide_by_pot, saturating_left_shift, wrap_int32
from toolchain.ops.fixed_point import saturating_rounding_doubling_high_mul as _mul
from toolchain.ops.softmax import exp_on_interval_neg_quarter_to_0, one_over_one_plus_x_for_x_in_0_1

# (exponent e, Q0.31 raw of exp(-2^e)): gemmlowp's barrel shifter
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))
INPUT_INTEGER_BITS = 4  # TFLM int8 LOGISTIC / TANH: the rescaled input is Q4.27


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values for FixedPoint<int32, integer_bits>: raw (<= 0) -> raw Q0.31."""
    a = np.asarray(a, np.int64)
    frac = 31 - integer_bits
    one_quarter = 1 << (frac - 2)
    a_mod = (a & (one_quarter - 1)) - one_quarter
    result = exp_on_interval_neg_quarter_to_0(saturating_left_shift(a_mod, integer_bits))  # Rescale<0>
    remainder = wrap_int32(a_mod - a)
    for e, mult in _EXP_BARREL:
        if integer_bits > e:
            result = np.where(remainder & (1 << (frac + e)), _mul(result, mult), result)
    if integer_bits > 5:  # below -32 the result is 0
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp (1 - x) / (1 + x) for x in [0, 1): raw Q0.31 in and out, Newton-Raphson, 3 steps."""
    a = np.asarray(a, np.int64)
    s = a + INT32_MAX
    half_den = np.where(s >= 0, (s + 1) // 2, -((-s + 1) // 2))   # RoundingHalfSum(a, One)
    x = 1515870810 + _mul(half_den, -1010580540)                  # Q2.29: 48/17 - 32/17 * d
    for _ in range(3):
        one_minus = (1 << 29) - _mul(half_den, x)
        x = x + saturating_left_shift(_mul(x, one_minus), 2)
    return saturating_left_shift(x - (1 << 29), 2)               # Rescale<0>(x - One)


def logistic_q4(a: np.ndarray) -> np.ndarray:
    """gemmlowp logistic of a raw Q4.27 value -> raw Q0.31."""
    a = np.asarray(a, np.int64)
    r_pos = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-np.abs(a), INPUT_INTEGER_BITS))
    r = np.where(a > 0, r_pos, INT32_MAX - r_pos)
    return np.where(a == 0, 1 << 30, r)


def tanh_q4(a: np.ndarray) -> np.ndarray:
    """gemmlowp tanh of a raw Q4.27 value -> raw Q0.31 (exp of 2a, read as Q5.26: ExactMulByPot<1>)."""
    a = np.asarray(a, np.int64)
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(-np.abs(a), 5))
    return np.where(a == 0, 0, np.where(a < 0, -t, t))


def input_rescale_params(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) of TFLM's int8 LOGISTIC/TANH Prepare:
    frexp(scale * 2^27) rounded half away to Q31, radius = floor(15 * 2^27 / 2^left_shift)."""
    q, shift = math.frexp(float(input_scale) * float(1 << (31 - INPUT_INTEGER_BITS)))
    mult = math.floor(abs(q) * (1 << 31) + 0.5)
    if mult == 1 << 31:  # only when q rounds up to 1.0 (TFLM would overflow the cast)
        mult, shift = mult // 2, shift + 1
    radius = math.floor(((1 << INPUT_INTEGER_BITS) - 1) * float(1 << (31 - INPUT_INTEGER_BITS)) / 2.0 ** shift)
    return int(mult), int(shift), int(radius)


def rescale_input(x: np.ndarray, zero_point: int, mult: int, left_shift: int) -> np.ndarray:
    """(x - zp) as raw Q4.27: MultiplyByQuantizedMultiplier with a left shift (saturating)."""
    from toolchain.ops.fixed_point import multiply_by_quantized_multiplier

    return multiply_by_quantized_multiplier(np.asarray(x, np.int64) - zero_point, mult, left_shift)


def to_int8(raw_q0: np.ndarray, shift: int, offset: int) -> np.ndarray:
    """RoundingDivideByPOT(raw Q0.31, shift) + offset, clamped to int8."""
    return np.clip(rounding_divide_by_pot(raw_q0, shift) + offset, -128, 127)
