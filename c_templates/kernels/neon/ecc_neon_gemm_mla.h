/* edgecc NEON helpers: the Armv8.0 (SMULL/SMLAL + SADALP) GEMM tiles.
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_GEMM_MLA_H
#define ECC_NEON_GEMM_MLA_H

#include "ecc_neon_requant.h"

/* GEMM tiles as in ecc_neon_gemm_dot.h: up to 4 rows x one tile of 4 output channels. */

/* Armv8.0 tile: 4 rows x 4 channels, 16 k per step (SMULL + SMLAL2 or two SMULL, then SADALP). */
#define ECC_NEON_MLA16(ACC, X, W)                                                             \
    do {                                                                                      \
        if (mode & ECC_NEON_PAIR) {                                                                           \
            ACC = vpadalq_s16(ACC, vmlal_high_s8(vmull_s8(vget_low_s8(X), vget_low_s8(W)), X, W)); \
        } else {                                                                              \
            ACC = vpadalq_s16(ACC, vmull_s8(vget_low_s8(X), vget_low_s8(W)));                 \
            ACC = vpadalq_s16(ACC, vmull_high_s8(X, W));                                      \
        }                                                                                     \
    } while (0)

#define ECC_NEON_MLA_ROW(A, X)                    \
    do {                                          \
        ECC_NEON_MLA16(A[0], X, w0);              \
        ECC_NEON_MLA16(A[1], X, w1);              \
        ECC_NEON_MLA16(A[2], X, w2);              \
        ECC_NEON_MLA16(A[3], X, w3);              \
    } while (0)

#define ECC_NEON_MLA_ROW8(A, Y)                                                      \
    do {                                                                             \
        A[0] = vpadalq_s16(A[0], vmull_s8(Y, vget_low_s8(wv.val[0])));               \
        A[1] = vpadalq_s16(A[1], vmull_s8(Y, vget_high_s8(wv.val[0])));              \
        A[2] = vpadalq_s16(A[2], vmull_s8(Y, vget_low_s8(wv.val[1])));               \
        A[3] = vpadalq_s16(A[3], vmull_s8(Y, vget_high_s8(wv.val[1])));              \
    } while (0)

/* the four channel sums of one row: lanes of A[c] summed, as [c0, c1, c2, c3] */
#define ECC_NEON_HSUM4(A) vpaddq_s32(vpaddq_s32(A[0], A[1]), vpaddq_s32(A[2], A[3]))

ECC_NEON_INLINE const int8_t *ecc_neon_mla_tile(const int8_t *const *rows, int32_t K, const int8_t *w,
                                                const int32_t *q, int8_t *out, int32_t out_stride, int32_t m,
                                                int32_t n, const ecc_neon_out_t *o, const int mode)
{
    int32x4_t a0[4], a1[4], a2[4], a3[4], s0, s1, s2, s3;
    const int8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
    int32_t k, c;
#pragma GCC unroll 4
    for (c = 0; c < 4; ++c) {
        a0[c] = a1[c] = a2[c] = a3[c] = vdupq_n_s32(0);
    }
    for (k = 0; k + 16 <= K; k += 16, w += 64) {
        int8x16_t w0, w1, w2, w3;
        if (mode & ECC_NEON_F32) { /* four loads: with one LD1 of four registers GCC 12 spills them here */
            w0 = vld1q_s8(w);
            w1 = vld1q_s8(w + 16);
            w2 = vld1q_s8(w + 32);
            w3 = vld1q_s8(w + 48);
        } else {
            const int8x16x4_t wv = vld1q_s8_x4(w);
            w0 = wv.val[0];
            w1 = wv.val[1];
            w2 = wv.val[2];
            w3 = wv.val[3];
        }
        const int8x16_t x0 = vld1q_s8(r0 + k), x1 = vld1q_s8(r1 + k), x2 = vld1q_s8(r2 + k), x3 = vld1q_s8(r3 + k);
        ECC_NEON_MLA_ROW(a0, x0);
        ECC_NEON_MLA_ROW(a1, x1);
        ECC_NEON_MLA_ROW(a2, x2);
        ECC_NEON_MLA_ROW(a3, x3);
    }
    if (K & 8) {
        const int8x16x2_t wv = vld1q_s8_x2(w);
        const int8x8_t y0 = vld1_s8(r0 + k), y1 = vld1_s8(r1 + k), y2 = vld1_s8(r2 + k), y3 = vld1_s8(r3 + k);
        ECC_NEON_MLA_ROW8(a0, y0);
        ECC_NEON_MLA_ROW8(a1, y1);
        ECC_NEON_MLA_ROW8(a2, y2);
        ECC_NEON_MLA_ROW8(a3, y3);
        w += 32;
    }
    if (mode & ECC_NEON_F32) { /* {bias', scale}: the two vectors it reads (fewer live registers) */
        const int32x4_t bias = vld1q_s32(q), scale = vld1q_s32(q + 4);
        s0 = ecc_neon_rq_f32(vaddq_s32(ECC_NEON_HSUM4(a0), bias), scale);
        s1 = ecc_neon_rq_f32(vaddq_s32(ECC_NEON_HSUM4(a1), bias), scale);
        s2 = ecc_neon_rq_f32(vaddq_s32(ECC_NEON_HSUM4(a2), bias), scale);
        s3 = ecc_neon_rq_f32(vaddq_s32(ECC_NEON_HSUM4(a3), bias), scale);
    } else {
        const int32x4x4_t qv = vld1q_s32_x4(q);
        s0 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a0), qv.val[0]), qv, mode);
        s1 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a1), qv.val[0]), qv, mode);
        s2 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a2), qv.val[0]), qv, mode);
        s3 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a3), qv.val[0]), qv, mode);
    }
    {
        const int8x8_t v01 = ecc_neon_out8(s0, s1, o->off, o->lo, o->hi);
        const int8x8_t v23 = ecc_neon_out8(s2, s3, o->off, o->lo, o->hi);
        ecc_neon_store_n(out, v01, n);
        if (m > 1) {
            ecc_neon_store_n(out + out_stride, vext_s8(v01, v01, 4), n);
        }
        if (m > 2) {
            ecc_neon_store_n(out + 2 * out_stride, v23, n);
        }
        if (m > 3) {
            ecc_neon_store_n(out + 3 * out_stride, vext_s8(v23, v23, 4), n);
        }
    }
    return w;
}

/* All output channels of up to 4 rows (Armv8.0), in tiles of 4 channels. */
ECC_NEON_INLINE void ecc_neon_mla_gemm(const int8_t *const *rows, int32_t K, const int8_t *w, const int32_t *q,
                                       int32_t out_c, int8_t *out, int32_t out_stride, int32_t m,
                                       const ecc_neon_out_t *o, const int mode)
{
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 4, q += 16) {
        w = ecc_neon_mla_tile(rows, K, w, q, out + oc, out_stride, m, out_c - oc < 4 ? out_c - oc : 4, o, mode);
    }
}

#endif /* ECC_NEON_GEMM_MLA_H */
