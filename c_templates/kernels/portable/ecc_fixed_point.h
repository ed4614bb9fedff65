/* edgecc fixed-point helpers shared by every int8 kernel, so that all kernels round one way.
 *
 * Semantics follow gemmlowp / TFLite (double rounding in multiply-by-quantized-multiplier); the
 * `_rne` helpers are the output stage of `rounding: onnx` (one rounding, ties to even). Every helper
 * has a numpy twin of the same name without `ecc_` in toolchain/ops/fixed_point.py, the oracle.
 * Right shifts of negative values assume an arithmetic shift (GCC, as TFLite does).
 * Fixed-point formats are written Qm.n (m integer bits, n fractional bits, 32 bits in all).
 */
#ifndef ECC_FIXED_POINT_H
#define ECC_FIXED_POINT_H

#include <stdint.h>

static inline int32_t ecc_clamp_i32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* gemmlowp SaturatingRoundingDoublingHighMul (ARM VQRDMULH): round(a * b / 2^31), half up,
 * saturating the single overflow case INT32_MIN * INT32_MIN.
 * floor((a*b + 2^30) / 2^31) equals gemmlowp's nudge-then-truncate formulation for both signs. */
static inline int32_t ecc_sat_rounding_doubling_high_mul(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero.
 * exponent must be in [0, 31]. */
static inline int32_t ecc_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((uint32_t)1u << exponent) - 1u);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0);
    return (x >> exponent) + (remainder > threshold);
}

/* gemmlowp SaturatingRoundingMultiplyByPOT for a non-negative exponent in [0, 31]:
 * x * 2^exponent saturated to int32. */
static inline int32_t ecc_saturating_left_shift(int32_t x, int32_t exponent)
{
    if (x > (INT32_MAX >> exponent)) {
        return INT32_MAX;
    }
    if (x < (INT32_MIN >> exponent)) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/* TFLite MultiplyByQuantizedMultiplier (double rounding; TFLite allows shift in [-31, 30]):
 * shift > 0 shifts left before the high multiply, shift < 0 is a rounding right shift after it.
 * The left shift saturates to int32 (TFLite's int32 multiply would overflow there: undefined
 * behaviour); whenever TFLite's result is defined, this one is identical. Out-of-range shifts
 * stay exact: a left shift of 31 already saturates every x outside {-1, 0}, and a right shift of
 * 32 or more rounds every int32 to 0 except INT32_MIN / 2^32 = -0.5 -> -1. */
static inline int32_t ecc_multiply_by_quantized_multiplier(int32_t x, int32_t mult, int32_t shift)
{
    int32_t high;
    if (shift > 0) {
        return ecc_sat_rounding_doubling_high_mul(ecc_saturating_left_shift(x, shift > 31 ? 31 : shift), mult);
    }
    high = ecc_sat_rounding_doubling_high_mul(x, mult);
    if (shift < -31) {
        return (shift == -32 && high == INT32_MIN) ? -1 : 0;
    }
    return ecc_rounding_divide_by_pot(high, -shift);
}

/* Requantize an int32 accumulator to int8: MBQM, add output offset, clamp to [act_min, act_max]. */
static inline int8_t ecc_requantize_s8(int32_t acc, int32_t mult, int32_t shift, int32_t output_offset,
                                       int32_t act_min, int32_t act_max)
{
    const int32_t v = ecc_multiply_by_quantized_multiplier(acc, mult, shift) + output_offset;
    return (int8_t)ecc_clamp_i32(v, act_min, act_max);
}

/* rounding: onnx. x * mult * 2^(shift - 31) rounded once to nearest, ties to even, saturated to
 * int32: the real product rounded the way ONNX QuantizeLinear rounds (onnxruntime's float simulation
 * of a QDQ model). Integer only: p = x * mult is exact in int64; q = floor(p / 2^t), t = 31 - shift
 * (at most 62: shift >= -31 from QuantizeMultiplier), plus 1 when the remainder is above half, or
 * exactly half with q odd. shift > 31 (a real multiplier >= 2^31) saturates any non-zero product.
 * Numpy twin: multiply_by_quantized_multiplier_rne. BL-01: (7984, 1583594044, -9) -> 11, (1, 2^30, -1) -> 0. */
static inline int32_t ecc_multiply_by_quantized_multiplier_rne(int32_t x, int32_t mult, int32_t shift)
{
    const int64_t p = (int64_t)x * mult;
    const int32_t t = shift < -31 ? 62 : 31 - shift;
    int64_t q = p;
    if (shift > 31) {
        return p > 0 ? INT32_MAX : (p < 0 ? INT32_MIN : 0);
    }
    if (t > 0) {
        const uint64_t rem = (uint64_t)p & (((uint64_t)1 << t) - 1u);
        const uint64_t half = (uint64_t)1 << (t - 1);
        q = p >> t; /* arithmetic shift: floor */
        q += (rem > half) || (rem == half && (q & 1) != 0);
    }
    return q > INT32_MAX ? INT32_MAX : (q < INT32_MIN ? INT32_MIN : (int32_t)q);
}

/* rounding: onnx twin of ecc_requantize_s8: one rounding (ties to even), offset, clamp. */
static inline int8_t ecc_requantize_s8_rne(int32_t acc, int32_t mult, int32_t shift, int32_t output_offset,
                                           int32_t act_min, int32_t act_max)
{
    const int32_t v = ecc_multiply_by_quantized_multiplier_rne(acc, mult, shift) + output_offset;
    return (int8_t)ecc_clamp_i32(v, act_min, act_max);
}

#include "ecc_requant_f32.h" /* ecc_requantize_s8_f32: the only float code of the int8 kernels */

/* num / den (den > 0) rounded to nearest, ties to even: average pooling under rounding: onnx.
 * Numpy twin: rounding_divide(num, den, "onnx"). */
static inline int32_t ecc_rounding_divide_rne(int32_t num, int32_t den)
{
    int32_t q = num / den;
    int32_t r = num - q * den;
    if (r < 0) { /* C truncates toward zero: step to the floor */
        q -= 1;
        r += den;
    }
    if (2 * r > den || (2 * r == den && (q & 1) != 0)) {
        q += 1;
    }
    return q;
}

/* sum_i (x[i] + x_offset) * w[i] over n int8 pairs (int32 accumulation, 4x unrolled). */
static inline int32_t ecc_dot_s8_offset(const int8_t *x, const int8_t *w, int32_t n, int32_t x_offset)
{
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        acc += (x[i] + x_offset) * w[i];
        acc += (x[i + 1] + x_offset) * w[i + 1];
        acc += (x[i + 2] + x_offset) * w[i + 2];
        acc += (x[i + 3] + x_offset) * w[i + 3];
    }
    for (; i < n; ++i) {
        acc += (x[i] + x_offset) * w[i];
    }
    return acc;
}

/* Kernel-window clipping: taps t in [*start, *end) satisfy 0 <= origin + t * dilation < in_size
 * (t < k). An empty window gives *start == *end. dilation >= 1. */
static inline void ecc_window_bounds(int32_t origin, int32_t dilation, int32_t k, int32_t in_size,
                                     int32_t *start, int32_t *end)
{
    int32_t s = 0;
    int32_t e = 0;
    if (origin < 0) {
        s = (dilation - 1 - origin) / dilation;
    }
    if (origin < in_size) {
        e = (in_size - 1 - origin) / dilation + 1;
    }
    if (e > k) {
        e = k;
    }
    if (s > e) {
        s = e;
    }
    *start = s;
    *end = e;
}

/* ---- softmax helpers (gemmlowp fixed point, TFLite int8 softmax) ---- */

/* Leading zero bits of a 32-bit word (32 for 0). Portable, branch-light. */
static inline int32_t ecc_count_leading_zeros(uint32_t x)
{
    int32_t n = 0;
    if (x == 0u) {
        return 32;
    }
    if ((x & 0xFFFF0000u) == 0u) { n += 16; x <<= 16; }
    if ((x & 0xFF000000u) == 0u) { n += 8; x <<= 8; }
    if ((x & 0xF0000000u) == 0u) { n += 4; x <<= 4; }
    if ((x & 0xC0000000u) == 0u) { n += 2; x <<= 2; }
    if ((x & 0x80000000u) == 0u) { n += 1; }
    return n;
}

/* gemmlowp RoundingHalfSum for int32: (a + b) / 2 rounded half away from zero. */
static inline int32_t ecc_rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + b;
    return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* exp(a) for a in [-1/4, 0), a and result in Q0.31: Taylor expansion around -1/8. */
static inline int32_t ecc_exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668; /* exp(-1/8), Q0.31 */
    const int32_t one_third = 715827883;             /* 1/3, Q0.31 */
    const int32_t x = a + ((int32_t)1 << 28);        /* a + 1/8 */
    const int32_t x2 = ecc_sat_rounding_doubling_high_mul(x, x);
    const int32_t x3 = ecc_sat_rounding_doubling_high_mul(x2, x);
    const int32_t x4 = ecc_sat_rounding_doubling_high_mul(x2, x2);
    const int32_t x4_over_4 = ecc_rounding_divide_by_pot(x4, 2);
    const int32_t poly = ecc_rounding_divide_by_pot(
        ecc_sat_rounding_doubling_high_mul(x4_over_4 + x3, one_third) + x2, 1);
    return exp_minus_one_eighth + ecc_sat_rounding_doubling_high_mul(exp_minus_one_eighth, x + poly);
}

/* exp(a) for a <= 0 given in Q5.26; result in Q0.31 (exp(0) saturates to INT32_MAX). */
static inline int32_t ecc_exp_on_negative_values_q5(int32_t a)
{
    const int32_t one_quarter = (int32_t)1 << 24;   /* 1/4 in Q5.26 */
    const int32_t a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter;
    const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
    int32_t result = ecc_exp_on_interval_between_negative_one_quarter_and_0_excl(
        ecc_saturating_left_shift(a_mod_quarter_minus_one_quarter, 5));
    /* barrel shifter over the integer part: multiply by exp(-2^k) for every set bit k = -2 .. 4 */
    if (remainder & ((int32_t)1 << 24)) { result = ecc_sat_rounding_doubling_high_mul(result, 1672461947); }
    if (remainder & ((int32_t)1 << 25)) { result = ecc_sat_rounding_doubling_high_mul(result, 1302514674); }
    if (remainder & ((int32_t)1 << 26)) { result = ecc_sat_rounding_doubling_high_mul(result, 790015084); }
    if (remainder & ((int32_t)1 << 27)) { result = ecc_sat_rounding_doubling_high_mul(result, 290630308); }
    if (remainder & ((int32_t)1 << 28)) { result = ecc_sat_rounding_doubling_high_mul(result, 39332535); }
    if (remainder & ((int32_t)1 << 29)) { result = ecc_sat_rounding_doubling_high_mul(result, 720401); }
    if (remainder & ((int32_t)1 << 30)) { result = ecc_sat_rounding_doubling_high_mul(result, 242); }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + a) for a in [0, 1) in Q0.31: three Newton-Raphson steps in Q2.29. */
static inline int32_t ecc_one_over_one_plus_x_for_x_in_0_1(int32_t a)
{
    const int32_t half_denominator = ecc_rounding_half_sum(a, INT32_MAX);
    const int32_t one_q2 = (int32_t)1 << 29;
    int32_t x = 1515870810 + ecc_sat_rounding_doubling_high_mul(half_denominator, -1010580540); /* 48/17 - 32/17 d */
    int32_t i;
    for (i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = ecc_sat_rounding_doubling_high_mul(half_denominator, x);
        const int32_t one_minus = one_q2 - half_denominator_times_x;
        x = x + ecc_saturating_left_shift(ecc_sat_rounding_doubling_high_mul(x, one_minus), 2);
    }
    return ecc_saturating_left_shift(x, 1);
}

/* TFLite GetReciprocal: x > 0 with x_integer_digits integer bits; returns 1/x scaled into Q0.31
 * and the number of bits the true reciprocal lies above that scale. */
static inline int32_t ecc_get_reciprocal(int32_t x, int32_t x_integer_digits, int32_t *num_bits_over_unit)
{
    const int32_t headroom_plus_one = ecc_count_leading_zeros((uint32_t)x);
    const int32_t shifted_sum_minus_one =
        (int32_t)(((uint32_t)x << headroom_plus_one) - ((uint32_t)1u << 31));
    *num_bits_over_unit = x_integer_digits - headroom_plus_one;
    return ecc_one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
}

#endif /* ECC_FIXED_POINT_H */
