/* edgecc NEON helpers: the depthwise convolution blocks (NHWC, depth multiplier 1).
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_DEPTHWISE_H
#define ECC_NEON_DEPTHWISE_H

#include "ecc_neon_requant.h"

/* ---- depthwise convolution (NHWC, depth multiplier 1, in_c % 8 == 0) ----
 * Per output pixel the taps' input pointers (a tap outside the input points at a row of the zero
 * point), then per block of 16 channels (8 for a last block) the taps accumulated in int32 lanes:
 * "pair" mode multiplies two taps into one int16 lane (SMULL + SMLAL, no lane pairs two -128 weights) before
 * widening (SADDW), "nopair" widens every product. Weights per block, taps in order (ecc_neon.h
 * top); qparams as for the GEMM kernels. */
typedef struct {
    int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w, in_h, in_w, in_c, k_h, k_w;
} ecc_neon_dw_t;

/* acc[0..3] += taps t0 (and t1) of 16 channels */
#define ECC_NEON_DW16_PAIR(X0, W0, X1, W1)                                                   \
    do {                                                                                     \
        const int16x8_t l_ = vmlal_s8(vmull_s8(vget_low_s8(X0), vget_low_s8(W0)), vget_low_s8(X1), vget_low_s8(W1)); \
        const int16x8_t h_ = vmlal_high_s8(vmull_high_s8(X0, W0), X1, W1);                    \
        a0 = vaddw_s16(a0, vget_low_s16(l_));                                                \
        a1 = vaddw_high_s16(a1, l_);                                                         \
        a2 = vaddw_s16(a2, vget_low_s16(h_));                                                \
        a3 = vaddw_high_s16(a3, h_);                                                         \
    } while (0)
#define ECC_NEON_DW16_ONE(X0, W0)                                                            \
    do {                                                                                     \
        const int16x8_t l_ = vmull_s8(vget_low_s8(X0), vget_low_s8(W0));                     \
        const int16x8_t h_ = vmull_high_s8(X0, W0);                                          \
        a0 = vaddw_s16(a0, vget_low_s16(l_));                                                \
        a1 = vaddw_high_s16(a1, l_);                                                         \
        a2 = vaddw_s16(a2, vget_low_s16(h_));                                                \
        a3 = vaddw_high_s16(a3, h_);                                                         \
    } while (0)
#define ECC_NEON_DW8_PAIR(X0, W0, X1, W1)                                                    \
    do {                                                                                     \
        const int16x8_t l_ = vmlal_s8(vmull_s8(X0, W0), X1, W1);                             \
        a0 = vaddw_s16(a0, vget_low_s16(l_));                                                \
        a1 = vaddw_high_s16(a1, l_);                                                         \
    } while (0)
#define ECC_NEON_DW8_ONE(X0, W0)                                                             \
    do {                                                                                     \
        const int16x8_t l_ = vmull_s8(X0, W0);                                               \
        a0 = vaddw_s16(a0, vget_low_s16(l_));                                                \
        a1 = vaddw_high_s16(a1, l_);                                                         \
    } while (0)

/* One output pixel: every channel block. ptrs: the taps' pixel pointers; T: number of taps (a
 * constant for the specialised kernels); out: the pixel's in_c outputs. */
ECC_NEON_INLINE void ecc_neon_dw_pixel(const int8_t *const *ptrs, int32_t T, int32_t in_c, const int8_t *w,
                                       const int32_t *q, int8_t *out, const ecc_neon_out_t *o, const int mode)
{
    int32_t c0 = 0, t;
    for (; c0 + 16 <= in_c; c0 += 16, w += 16 * T, q += 64) {
        int32x4_t a0 = vld1q_s32(q), a1 = vld1q_s32(q + 16), a2 = vld1q_s32(q + 32), a3 = vld1q_s32(q + 48);
        t = 0;
        if (mode & ECC_NEON_PAIR) {
#pragma GCC unroll 8
            for (; t + 2 <= T; t += 2) {
                const int8x16_t x0 = vld1q_s8(ptrs[t] + c0), x1 = vld1q_s8(ptrs[t + 1] + c0);
                ECC_NEON_DW16_PAIR(x0, vld1q_s8(w + 16 * t), x1, vld1q_s8(w + 16 * t + 16));
            }
        }
#pragma GCC unroll 9
        for (; t < T; ++t) {
            ECC_NEON_DW16_ONE(vld1q_s8(ptrs[t] + c0), vld1q_s8(w + 16 * t));
        }
        {
            const int32x4x4_t q0 = vld1q_s32_x4(q), q1 = vld1q_s32_x4(q + 16), q2 = vld1q_s32_x4(q + 32),
                              q3 = vld1q_s32_x4(q + 48);
            vst1q_s8(out + c0, ecc_neon_out16(ecc_neon_rq(a0, q0, mode), ecc_neon_rq(a1, q1, mode),
                                              ecc_neon_rq(a2, q2, mode), ecc_neon_rq(a3, q3, mode), o->off, o->lo,
                                              o->hi));
        }
    }
    if (c0 < in_c) { /* a last block of 8 */
        int32x4_t a0 = vld1q_s32(q), a1 = vld1q_s32(q + 16);
        t = 0;
        if (mode & ECC_NEON_PAIR) {
#pragma GCC unroll 8
            for (; t + 2 <= T; t += 2) {
                ECC_NEON_DW8_PAIR(vld1_s8(ptrs[t] + c0), vld1_s8(w + 8 * t), vld1_s8(ptrs[t + 1] + c0),
                                  vld1_s8(w + 8 * t + 8));
            }
        }
#pragma GCC unroll 9
        for (; t < T; ++t) {
            ECC_NEON_DW8_ONE(vld1_s8(ptrs[t] + c0), vld1_s8(w + 8 * t));
        }
        vst1_s8(out + c0, ecc_neon_out8(ecc_neon_rq(a0, vld1q_s32_x4(q), mode),
                                        ecc_neon_rq(a1, vld1q_s32_x4(q + 16), mode),
                                        o->off, o->lo, o->hi));
    }
}

/* The taps' pointers of the output pixel whose window starts at (iy0, ix0); zrow: in_c zero points. */
ECC_NEON_INLINE void ecc_neon_dw_taps(const ecc_neon_dw_t *d, const int8_t *in, const int8_t *zrow, int32_t iy0,
                                      int32_t ix0, const int8_t **ptrs, int32_t k_h, int32_t k_w)
{
    int32_t ky, kx;
#pragma GCC unroll 3
    for (ky = 0; ky < k_h; ++ky) {
        const int32_t iy = iy0 + ky * d->dilation_h;
        const int32_t row_ok = iy >= 0 && iy < d->in_h;
#pragma GCC unroll 3
        for (kx = 0; kx < k_w; ++kx) {
            const int32_t ix = ix0 + kx * d->dilation_w;
            ptrs[ky * k_w + kx] = row_ok && ix >= 0 && ix < d->in_w ? in + (iy * d->in_w + ix) * d->in_c : zrow;
        }
    }
}

#endif /* ECC_NEON_DEPTHWISE_H */
