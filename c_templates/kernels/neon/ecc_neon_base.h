/* edgecc NEON helpers: intrinsics, function attributes, requantization modes and
 * the byte moves (partial stores, copies, fills) every kernel uses.
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_BASE_H
#define ECC_NEON_BASE_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#define ECC_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#define ECC_NEON_INLINE static inline __attribute__((always_inline))

/* Mode of a kernel body (one entry point each), a compile-time constant of the always-inlined helpers:
 * flags ORed together. */
#define ECC_NEON_NOPAIR 0 /* one product per int16 lane: any weights; rounding: tflm */
#define ECC_NEON_PAIR 1   /* two products per int16 lane: no lane pairs two -128 weights (Armv8.0) */
#define ECC_NEON_RNE 2    /* rounding: onnx, neon/add: the exact product rounded once (ecc_neon_mbqm_rne) */
#define ECC_NEON_TIES 4   /* with ECC_NEON_RNE: the multiplier may requantize an exact tie (ecc_neon_rne_lanes) */
#define ECC_NEON_F32 8    /* rounding: onnx, Conv / depthwise / FC: the float32 output stage (ecc_neon_rq_f32) */

/* the first n (1..4) bytes of v to dst (any alignment) */
ECC_NEON_INLINE void ecc_neon_store_n(int8_t *dst, int8x8_t v, int32_t n)
{
    if (n == 4) {
        vst1_lane_s32((int32_t *)(void *)dst, vreinterpret_s32_s8(v), 0);
        return;
    }
    dst[0] = vget_lane_s8(v, 0);
    if (n > 1) {
        dst[1] = vget_lane_s8(v, 1);
    }
    if (n > 2) {
        dst[2] = vget_lane_s8(v, 2);
    }
}

/* n int8 from src to dst (small n, any alignment) */
ECC_NEON_INLINE void ecc_neon_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n >= 16; n -= 16, dst += 16, src += 16) {
        vst1q_s8(dst, vld1q_s8(src));
    }
    if (n & 8) {
        vst1_s8(dst, vld1_s8(src));
        dst += 8;
        src += 8;
    }
    if (n & 4) {
        memcpy(dst, src, 4);
        dst += 4;
        src += 4;
    }
    if (n & 2) {
        memcpy(dst, src, 2);
        dst += 2;
        src += 2;
    }
    if (n & 1) {
        *dst = *src;
    }
}

/* n bytes of the value z (broadcast in zv) at dst */
ECC_NEON_INLINE void ecc_neon_fill(int8_t *dst, int8x16_t zv, int32_t n)
{
    for (; n >= 16; n -= 16, dst += 16) {
        vst1q_s8(dst, zv);
    }
    if (n & 8) {
        vst1_s8(dst, vget_low_s8(zv));
        dst += 8;
    }
    for (n &= 7; n > 0; --n) {
        *dst++ = vgetq_lane_s8(zv, 0);
    }
}

#endif /* ECC_NEON_BASE_H */
