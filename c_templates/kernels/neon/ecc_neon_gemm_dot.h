/* edgecc NEON helpers: the SDOT (dotprod) GEMM tiles.
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_GEMM_DOT_H
#define ECC_NEON_GEMM_DOT_H

#include "ecc_neon_requant.h"

/* ---- GEMM tiles: up to 4 rows (output pixels / batch rows) x one tile of output channels ----
 * rows: the rows' first int8 (K readable bytes each; rows past `m` repeat a valid row, their outputs
 * are not stored); out: output of row 0, rows out_stride apart; n: channels stored of this tile. */

/* SDOT tile, NQ = channel quads of the tile (4, 2 or 1). */
#define ECC_NEON_DOT_STEP(G)                                                         \
    do {                                                                             \
        _Pragma("GCC unroll 4") for (c = 0; c < NQ; ++c) {                           \
            const int8x16_t wv = vld1q_s8(w + 16 * c);                               \
            a0[c] = vdotq_laneq_s32(a0[c], wv, x0, G);                               \
            a1[c] = vdotq_laneq_s32(a1[c], wv, x1, G);                               \
            a2[c] = vdotq_laneq_s32(a2[c], wv, x2, G);                               \
            a3[c] = vdotq_laneq_s32(a3[c], wv, x3, G);                               \
        }                                                                            \
        w += 16 * NQ;                                                                \
    } while (0)

#define ECC_NEON_DOT_STEP8(G)                                                        \
    do {                                                                             \
        _Pragma("GCC unroll 4") for (c = 0; c < NQ; ++c) {                           \
            const int8x16_t wv = vld1q_s8(w + 16 * c);                               \
            a0[c] = vdotq_lane_s32(a0[c], wv, y0, G);                                \
            a1[c] = vdotq_lane_s32(a1[c], wv, y1, G);                                \
            a2[c] = vdotq_lane_s32(a2[c], wv, y2, G);                                \
            a3[c] = vdotq_lane_s32(a3[c], wv, y3, G);                                \
        }                                                                            \
        w += 16 * NQ;                                                                \
    } while (0)

/* four int8 at p, broadcast to both 32-bit lanes of a d register */
ECC_NEON_INLINE int8x8_t ecc_neon_ld4x2(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return vreinterpret_s8_s32(vdup_n_s32(v));
}

ECC_NEON_INLINE ECC_NEON_DOT const int8_t *ecc_neon_dot_tile(
    const int8_t *const *rows, int32_t K, const int8_t *w, const int32_t *q, int8_t *out, int32_t out_stride,
    int32_t m, int32_t n, const ecc_neon_out_t *o, const int NQ, const int mode)
{
    int32x4_t a0[4], a1[4], a2[4], a3[4];
    const int8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
    int32_t k, c;
#pragma GCC unroll 4
    for (c = 0; c < NQ; ++c) { /* the accumulators start at the bias */
        a0[c] = a1[c] = a2[c] = a3[c] = vld1q_s32(q + 16 * c);
    }
    for (k = 0; k + 16 <= K; k += 16) {
        const int8x16_t x0 = vld1q_s8(r0 + k), x1 = vld1q_s8(r1 + k), x2 = vld1q_s8(r2 + k), x3 = vld1q_s8(r3 + k);
        ECC_NEON_DOT_STEP(0);
        ECC_NEON_DOT_STEP(1);
        ECC_NEON_DOT_STEP(2);
        ECC_NEON_DOT_STEP(3);
    }
    if (K & 8) {
        const int8x8_t y0 = vld1_s8(r0 + k), y1 = vld1_s8(r1 + k), y2 = vld1_s8(r2 + k), y3 = vld1_s8(r3 + k);
        ECC_NEON_DOT_STEP8(0);
        ECC_NEON_DOT_STEP8(1);
        k += 8;
    }
    if (K & 4) {
        const int8x8_t y0 = ecc_neon_ld4x2(r0 + k), y1 = ecc_neon_ld4x2(r1 + k), y2 = ecc_neon_ld4x2(r2 + k),
                       y3 = ecc_neon_ld4x2(r3 + k);
        ECC_NEON_DOT_STEP8(0);
    }
#pragma GCC unroll 4
    for (c = 0; c < NQ; ++c) {
        const int32x4x4_t qv = vld1q_s32_x4(q + 16 * c);
        a0[c] = ecc_neon_rq(a0[c], qv, mode);
        a1[c] = ecc_neon_rq(a1[c], qv, mode);
        a2[c] = ecc_neon_rq(a2[c], qv, mode);
        a3[c] = ecc_neon_rq(a3[c], qv, mode);
    }
    ecc_neon_store_tile(a0, NQ, out, n, o);
    if (m > 1) {
        ecc_neon_store_tile(a1, NQ, out + out_stride, n, o);
    }
    if (m > 2) {
        ecc_neon_store_tile(a2, NQ, out + 2 * out_stride, n, o);
    }
    if (m > 3) {
        ecc_neon_store_tile(a3, NQ, out + 3 * out_stride, n, o);
    }
    return w;
}

/* All output channels of up to 4 rows (SDOT): tiles of 16, then one of 8, then of 4 channels. */
ECC_NEON_INLINE ECC_NEON_DOT void ecc_neon_dot_gemm(const int8_t *const *rows, int32_t K, const int8_t *w,
                                                    const int32_t *q, int32_t out_c, int8_t *out, int32_t out_stride,
                                                    int32_t m, const ecc_neon_out_t *o, const int mode)
{
    int32_t oc = 0;
    for (; oc + 16 <= out_c; oc += 16, q += 64) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, 16, o, 4, mode);
    }
    if (out_c - oc >= 8) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, 8, o, 2, mode);
        oc += 8;
        q += 32;
    }
    for (; oc < out_c; oc += 4, q += 16) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, out_c - oc < 4 ? out_c - oc : 4, o, 1, mode);
    }
}

#endif /* ECC_NEON_GEMM_DOT_H */
