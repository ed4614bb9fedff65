"""The fixed-point helpers: rounding mode pinned (BL-01), quantize_multiplier round trip incl.
multipliers >= 1 (BL-02), gemmlowp int32 edge cases, Prepare-time parameter helpers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from toolchain.ops.fixed_point import (INT32_MAX, INT32_MIN, activation_range, add_params, mul_params,
                                       multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_single,
                                       quantize_multiplier, rounding_divide_by_pot,
                                       saturating_rounding_doubling_high_mul, softmax_params)


@pytest.mark.parametrize("acc, mult, shift, double, single", [
    (7984, 1583594044, -9, 12, 11),        # BL-01, numbers of tensorflow#25087
    (7984, 1583593984, -9, 12, 11),        # same with the float32 y_scale multiplier
    (1, 1 << 30, -1, 1, 0),                # ruy discussion: real 0.25
])
def test_bl01_double_vs_single_rounding(acc, mult, shift, double, single):
    assert int(multiply_by_quantized_multiplier(acc, mult, shift)) == double
    assert int(multiply_by_quantized_multiplier_single(acc, mult, shift)) == single


def test_bl01_float32_y_scale_gives_that_multiplier():
    # The real multiplier a_scale*b_scale/y_scale is formed in float32, as TFLite/ORT do.
    y_scale = np.float32(1 / 0.0014402703931141053)
    assert quantize_multiplier(float(np.float32(1.0) / y_scale)) == (1583593984, -9)
    assert quantize_multiplier(0.0014402703931141053) == (1583594044, -9)


def test_quantize_multiplier_round_trip():
    rng = np.random.default_rng(0)
    reals = np.concatenate([10 ** rng.uniform(-6, 2, 2000), [1e-6, 0.5, 1.0, 1.5, 2.0, 99.99, 0.25]])
    for r in reals:
        m, s = quantize_multiplier(float(r))
        assert (1 << 30) <= m < (1 << 31)
        assert abs(m * 2.0 ** (s - 31) - r) <= r * 2.0 ** -31 + 1e-300
        if r >= 1:
            assert s > 0
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(2.0 ** -40) == (0, 0)       # shift < -31 -> 0, as TFLite
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    # mantissa rounding up to 2^31 renormalises
    assert quantize_multiplier(1.0 - 2.0 ** -40) == (1 << 30, 1)
    with pytest.raises(ValueError):
        quantize_multiplier(-0.5)


def test_mbqm_matches_real_multiply_within_one():
    rng = np.random.default_rng(1)
    x = rng.integers(-(2**20), 2**20, 5000)
    for r in (0.0013, 0.37, 0.99, 1.0, 3.7, 100.0):
        m, s = quantize_multiplier(r)
        got = multiply_by_quantized_multiplier(x, m, s)
        assert np.max(np.abs(got - x * r)) <= 1.0


def test_mbqm_positive_shift_saturates():
    m, s = quantize_multiplier(1000.0)
    got = multiply_by_quantized_multiplier(np.array([2**30, -(2**30), 3]), m, s)
    assert got[0] > 2**30 and got[1] < -(2**30) and got[2] == 3000
    assert np.all(np.abs(got) <= INT32_MAX)


def test_srdhm_edges():
    assert int(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN)) == INT32_MAX
    assert int(saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MAX)) == -INT32_MAX
    assert int(saturating_rounding_doubling_high_mul(INT32_MAX, INT32_MAX)) == INT32_MAX - 1
    assert int(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30)) == 1 << 29
    # gemmlowp's nudge (1 - 2^30 for negatives, then truncation) rounds ties toward +inf:
    # +0.5 -> 1, -0.5 -> 0, -1.5 -> -1 (unlike RoundingDivideByPOT, which goes away from zero)
    assert int(saturating_rounding_doubling_high_mul(1 << 30, 1)) == 1
    assert int(saturating_rounding_doubling_high_mul(-(1 << 30), 1)) == 0
    assert int(saturating_rounding_doubling_high_mul(-3 * (1 << 30), 1)) == -1
    assert int(saturating_rounding_doubling_high_mul(-3 * (1 << 29), 1)) == -1   # -0.75


def test_rounding_divide_by_pot_ties_away_from_zero():
    x = np.array([5, -5, 6, -6, 7, -7, 4, -4, 0, -1, 1, INT32_MIN, INT32_MAX])
    got = rounding_divide_by_pot(x, 1)
    assert got.tolist() == [3, -3, 3, -3, 4, -4, 2, -2, 0, -1, 1, -(2**30), 2**30]
    assert rounding_divide_by_pot(np.array([-3, -2, -1, 3, 2]), 2).tolist() == [-1, -1, 0, 1, 1]
    assert int(rounding_divide_by_pot(-12, 3)) == -2       # -1.5 -> -2
    assert int(rounding_divide_by_pot(12, 3)) == 2
    assert int(rounding_divide_by_pot(-11, 3)) == -1
    assert rounding_divide_by_pot(np.array([7, 7]), np.array([0, 31])).tolist() == [7, 0]


def test_add_params_cmsis_add_set_and_bl02():
    p = add_params(1.0, -128, 1.0, -128, 2.0**-19 * 2.0**-0, -128)
    assert (p.input1_mult, p.input1_shift, p.left_shift) == (1 << 30, 0, 20)
    assert (p.input1_offset, p.output_offset) == (128, -128)
    q = add_params(1.0, 0, 1.0, 0, 1e-6, 0)                # BL-02: output factor 1.907
    assert q.output_shift == 1 and q.output_mult * 2.0 ** (q.output_shift - 31) == pytest.approx(2 / (2**20 * 1e-6))


def test_mul_params():
    p = mul_params(0.5, 3, 0.25, -2, 0.1, 7)
    assert (p.input1_offset, p.input2_offset, p.output_offset) == (-3, 2, 7)
    assert p.output_mult * 2.0 ** (p.output_shift - 31) == pytest.approx(1.25, rel=1e-9)


def test_softmax_params():
    p = softmax_params(1 / 16)
    assert p.input_left_shift >= 0 and p.diff_min < 0
    assert p.input_multiplier * 2.0 ** (p.input_left_shift - 31) == pytest.approx(2**26 / 16)
    # diff_min = -floor(31 * 2^26 / 2^left_shift)
    assert p.diff_min == -math.floor(31 * 2**26 / 2**p.input_left_shift)
    big = softmax_params(1e6)                               # capped at 2^31 - 1
    assert big.input_left_shift == 31


@pytest.mark.parametrize("act, scale, zp, expect", [
    ("none", 0.1, 5, (-128, 127)),
    ("relu", 0.1, -20, (-20, 127)),                         # BL-27: clamp at the zero point
    ("relu6", 0.05, -128, (-128, -8)),
    ("relu6", 1 / 255, -128, (-128, 127)),
    ((-1.0, 1.0), 0.1, -20, (-30, -10)),
    ((0.0, math.inf), 0.1, 127, (127, 127)),
    ((-math.inf, 0.25), 0.1, 0, (-128, 3)),                 # 2.5 rounds away from zero -> 3
])
def test_activation_range(act, scale, zp, expect):
    assert activation_range(act, scale, zp) == expect
