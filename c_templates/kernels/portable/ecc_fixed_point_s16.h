/* edgecc 16x8 fixed-point helpers (TFLite 16x8 quantization: int16 activations with zero point 0,
 * int8 weights, int64 biases), shared by the portable *_s16 kernels so that all round one way.
 * Numpy twins in toolchain/ops/quant16.py (same names without `ecc_`). Right shifts of negative
 * values assume an arithmetic shift (GCC, as TFLite does).
 */
#ifndef ECC_FIXED_POINT_S16_H
#define ECC_FIXED_POINT_S16_H

#include <stdint.h>
#include "ecc_fixed_point.h"

/* TFLite MultiplyByQuantizedMultiplier(int64_t x, int32_t mult, int shift) (kernels/internal/common.cc,
 * the requantization of TFLM's int16 conv / depthwise / FC): mult reduced to Q15 with rounding (0x7FFF
 * from 0x7FFF0000 up), one rounding half up: (x * m15 + 2^(14 - shift)) >> (15 - shift), truncated to
 * int32. The compiler guarantees |x| < 2^47 and shift in [-31, 7] (TFLM's assumptions).
 * Numpy twin: multiply_by_quantized_multiplier_s64. */
static inline int32_t ecc_mbqm_s64(int64_t x, int32_t mult, int32_t shift)
{
    const int64_t reduced = mult < 0x7FFF0000 ? (int64_t)((mult + (1 << 15)) >> 16) : (int64_t)0x7FFF;
    const int32_t total = 15 - shift;
    return (int32_t)((x * reduced + ((int64_t)1 << (total - 1))) >> total);
}

/* The 16x8 output stage: ecc_mbqm_s64, clamp to [act_min, act_max] (inside int16; no output offset).
 * Numpy twin: requantize_s16. */
static inline int16_t ecc_requantize_s16(int64_t acc, int32_t mult, int32_t shift, int32_t act_min, int32_t act_max)
{
    return (int16_t)ecc_clamp_i32(ecc_mbqm_s64(acc, mult, shift), act_min, act_max);
}

#endif /* ECC_FIXED_POINT_S16_H */
