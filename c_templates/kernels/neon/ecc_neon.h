/* edgecc NEON helpers (AArch64 Advanced SIMD) shared by the kernels in neon/.
 *
 * Conventions prepared offline by toolchain/ops/neon_variants.py (NHWC kernels; the CHWN kernels,
 * *_chwn_s8, vectorise across the batch and keep TFLM's input offset, see toolchain/ops/neon_chwn.py):
 * - The input zero point is folded into the bias (bias' = bias + input_offset * sum w, wrapping like
 *   the int32 accumulator), so the kernels multiply raw int8 values and a padded tap reads the zero
 *   point itself (im2col fills padding with it; the depthwise kernels point such taps at a row of it).
 * - Requantization parameters travel as one int32 blob, per quad of output channels four vectors:
 *   bias', multiplier, left shift max(shift, 0), right shift min(shift, 0) (ecc_neon_rq; one LD1 of
 *   four registers). Output channels are padded to a multiple of 4 (multiplier 0).
 * - GEMM weights (conv2d, conv2d_1x1, fully_connected), K = the row length padded to a multiple of 4
 *   (dotprod) or 8 (Armv8.0). Output channels are cut into tiles of 16, then one of 8 if at least 8
 *   remain, then tiles of 4 (the last one zero-padded):
 *     dotprod (SDOT by element): per tile, per 4-k group, per channel of the tile, its 4 int8
 *       (tile width * 4 bytes per group): one SDOT multiplies a 4x4 block (4 channels x 4 k) by the
 *       4 k of one pixel broadcast from a lane;
 *     Armv8.0 (SMULL/SMLAL2 + SADALP): tiles of 4 channels only; per tile, per 16-k chunk, the four
 *       channels' 16 int8 (64 bytes), and for a last 8-k chunk their 8 int8 (32 bytes).
 *   The weight rows of the ISA's K padding are zero, so whatever the padded activation bytes hold
 *   adds nothing.
 * - Armv8.0 kernels that pair two products in one 16-bit lane (SMULL + SMLAL, "pair" mode) are
 *   chosen only when every weight is in [-127, 127] (BL-04): |x w + x' w'| <= 2 * 128 * 127 fits
 *   int16. With a -128 weight the compiler picks the "nopair" entry points (one product per lane).
 *   No kernel here multiplies two activations.
 * - Dotprod kernels carry ECC_NEON_DOT (function-level target attribute), so a build for plain
 *   Armv8.0 never emits SDOT outside them; the compiler only chooses them for boards declaring the
 *   `dotprod` feature (KernelVariant.requires).
 */
#ifndef ECC_NEON_H
#define ECC_NEON_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#define ECC_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#define ECC_NEON_INLINE static inline __attribute__((always_inline))

/* Requantization mode of the Armv8.0 kernels (one entry point each). */
#define ECC_NEON_PAIR 1   /* two products per int16 lane: weights in [-127, 127] */
#define ECC_NEON_NOPAIR 0 /* one product per int16 lane: any weights */

/* TFLite MultiplyByQuantizedMultiplier (double rounding) of four int32 values x, per lane: a
 * saturating left shift by lsh >= 0 (SQSHL, = the portable ecc_saturating_left_shift),
 * SaturatingRoundingDoublingHighMul by mult (SQRDMULH), then RoundingDivideByPOT by -rsh with ties
 * away from zero: SRSHL rounds ties up, so negative values first move down by one (gemmlowp's
 * fix-up: (h & rsh) >> 31 is -1 exactly when h < 0 and rsh != 0; rsh in [-31, 0]). With mult >= 0,
 * h > INT32_MIN, so the fix-up cannot overflow and a plain accumulate (SSRA) does it. */
ECC_NEON_INLINE int32x4_t ecc_neon_mbqm(int32x4_t x, int32x4_t mult, int32x4_t lsh, int32x4_t rsh)
{
    x = vqrdmulhq_s32(vqshlq_s32(x, lsh), mult);
    x = vsraq_n_s32(x, vandq_s32(x, rsh), 31);
    return vrshlq_s32(x, rsh);
}

/* ecc_neon_mbqm of four accumulators (the bias already in them) with one channel quad q of the
 * requantization blob {bias', mult, lsh, rsh}. */
ECC_NEON_INLINE int32x4_t ecc_neon_rq(int32x4_t acc, int32x4x4_t q)
{
    return ecc_neon_mbqm(acc, q.val[1], q.val[2], q.val[3]);
}

/* The output stage of 16 requantized values: + output offset, clamp, int8. Saturating to int16
 * first is exact: a value outside int16 stays outside [act_min, act_max] after the offset. */
ECC_NEON_INLINE int8x16_t ecc_neon_out16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d, int16x8_t off,
                                         int8x16_t lo, int8x16_t hi)
{
    const int16x8_t ab = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(a), b), off);
    const int16x8_t cd = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(c), d), off);
    return vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(ab), cd), lo), hi);
}

/* 8 values (a: channels 0-3, b: 4-7) */
ECC_NEON_INLINE int8x8_t ecc_neon_out8(int32x4_t a, int32x4_t b, int16x8_t off, int8x16_t lo, int8x16_t hi)
{
    const int16x8_t ab = vqaddq_s16(vqmovn_high_s32(vqmovn_s32(a), b), off);
    return vmin_s8(vmax_s8(vqmovn_s16(ab), vget_low_s8(lo)), vget_low_s8(hi));
}

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

/* ---- im2col: one output pixel's receptive field as one GEMM row ---- */
typedef struct {
    const int8_t *in;  /* this batch's input (NHWC) */
    const int8_t *end; /* the end of the whole input: 16-byte loads must stay below it */
    int32_t dilation_h, dilation_w, in_h, in_w, in_c, k_h, k_w;
    int8x16_t zv; /* the input zero point in every lane */
} ecc_neon_im2col_t;

/* k_h * k_w * in_c int8 (tap order ky, kx, c) of the window starting at input (iy0, ix0) to dst;
 * taps outside the input read the zero point. Rows of taps of at most 16 bytes are copied as one
 * 16-byte vector: the bytes past the row land where the next row, or the next pixel's row, or the
 * GEMM padding (zero weights) goes, and 16 bytes of scratch slack follow the last row. */
ECC_NEON_INLINE void ecc_neon_im2col(const ecc_neon_im2col_t *g, int32_t iy0, int32_t ix0, int8_t *dst)
{
    const int32_t in_c = g->in_c, k_w = g->k_w, dw = g->dilation_w, row = k_w * in_c;
    const int32_t whole = dw == 1 && ix0 >= 0 && ix0 + k_w <= g->in_w;
    const int32_t step = g->dilation_h * g->in_w * in_c;
    const int8_t *src = g->in + (iy0 * g->in_w + ix0) * in_c;
    int32_t ky, kx, iy = iy0;
    if (whole && row <= 16 && iy0 >= 0 && iy0 + (g->k_h - 1) * g->dilation_h < g->in_h &&
        src + (g->k_h - 1) * step + 16 <= g->end) { /* the whole window inside: one vector per row */
        for (ky = 0; ky < g->k_h; ++ky, dst += row, src += step) {
            vst1q_s8(dst, vld1q_s8(src));
        }
        return;
    }
    for (ky = 0; ky < g->k_h; ++ky, dst += row, src += step, iy += g->dilation_h) {
        if (iy < 0 || iy >= g->in_h) {
            ecc_neon_fill(dst, g->zv, row);
        } else if (whole) {
            ecc_neon_copy(dst, src, row);
        } else {
            for (kx = 0; kx < k_w; ++kx) {
                const int32_t ix = ix0 + kx * dw;
                if (ix >= 0 && ix < g->in_w) {
                    ecc_neon_copy(dst + kx * in_c, src + kx * dw * in_c, in_c);
                } else {
                    ecc_neon_fill(dst + kx * in_c, g->zv, in_c);
                }
            }
        }
    }
}

/* ---- GEMM tiles: up to 4 rows (output pixels / batch rows) x one tile of output channels ----
 * rows: the rows' first int8 (K readable bytes each; rows past `m` repeat a valid row, their outputs
 * are not stored); out: output of row 0, rows out_stride apart; n: channels stored of this tile. */
typedef struct {
    int16x8_t off;
    int8x16_t lo, hi;
} ecc_neon_out_t;

ECC_NEON_INLINE void ecc_neon_store_tile(int32x4_t *acc, int32_t nq, int8_t *out, int32_t n,
                                         const ecc_neon_out_t *o)
{
    if (nq == 4) {
        vst1q_s8(out, ecc_neon_out16(acc[0], acc[1], acc[2], acc[3], o->off, o->lo, o->hi));
    } else if (nq == 2) {
        vst1_s8(out, ecc_neon_out8(acc[0], acc[1], o->off, o->lo, o->hi));
    } else {
        ecc_neon_store_n(out, ecc_neon_out8(acc[0], acc[0], o->off, o->lo, o->hi), n);
    }
}

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
    int32_t m, int32_t n, const ecc_neon_out_t *o, const int NQ)
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
        a0[c] = ecc_neon_rq(a0[c], qv);
        a1[c] = ecc_neon_rq(a1[c], qv);
        a2[c] = ecc_neon_rq(a2[c], qv);
        a3[c] = ecc_neon_rq(a3[c], qv);
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
                                                    int32_t m, const ecc_neon_out_t *o)
{
    int32_t oc = 0;
    for (; oc + 16 <= out_c; oc += 16, q += 64) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, 16, o, 4);
    }
    if (out_c - oc >= 8) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, 8, o, 2);
        oc += 8;
        q += 32;
    }
    for (; oc < out_c; oc += 4, q += 16) {
        w = ecc_neon_dot_tile(rows, K, w, q, out + oc, out_stride, m, out_c - oc < 4 ? out_c - oc : 4, o, 1);
    }
}

/* Armv8.0 tile: 4 rows x 4 channels, 16 k per step (SMULL + SMLAL2 or two SMULL, then SADALP). */
#define ECC_NEON_MLA16(ACC, X, W)                                                             \
    do {                                                                                      \
        if (pair) {                                                                           \
            ACC = vpadalq_s16(ACC, vmlal_high_s8(vmull_s8(vget_low_s8(X), vget_low_s8(W)), X, W)); \
        } else {                                                                              \
            ACC = vpadalq_s16(ACC, vmull_s8(vget_low_s8(X), vget_low_s8(W)));                 \
            ACC = vpadalq_s16(ACC, vmull_high_s8(X, W));                                      \
        }                                                                                     \
    } while (0)

#define ECC_NEON_MLA_ROW(A, X)                    \
    do {                                          \
        ECC_NEON_MLA16(A[0], X, wv.val[0]);       \
        ECC_NEON_MLA16(A[1], X, wv.val[1]);       \
        ECC_NEON_MLA16(A[2], X, wv.val[2]);       \
        ECC_NEON_MLA16(A[3], X, wv.val[3]);       \
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
                                                int32_t n, const ecc_neon_out_t *o, const int pair)
{
    int32x4_t a0[4], a1[4], a2[4], a3[4], s0, s1, s2, s3;
    const int8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
    int32x4x4_t qv;
    int32_t k, c;
#pragma GCC unroll 4
    for (c = 0; c < 4; ++c) {
        a0[c] = a1[c] = a2[c] = a3[c] = vdupq_n_s32(0);
    }
    for (k = 0; k + 16 <= K; k += 16, w += 64) {
        const int8x16x4_t wv = vld1q_s8_x4(w);
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
    qv = vld1q_s32_x4(q);
    s0 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a0), qv.val[0]), qv);
    s1 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a1), qv.val[0]), qv);
    s2 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a2), qv.val[0]), qv);
    s3 = ecc_neon_rq(vaddq_s32(ECC_NEON_HSUM4(a3), qv.val[0]), qv);
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
                                       const ecc_neon_out_t *o, const int pair)
{
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 4, q += 16) {
        w = ecc_neon_mla_tile(rows, K, w, q, out + oc, out_stride, m, out_c - oc < 4 ? out_c - oc : 4, o, pair);
    }
}

/* ---- depthwise convolution (NHWC, depth multiplier 1, in_c % 8 == 0) ----
 * Per output pixel the taps' input pointers (a tap outside the input points at a row of the zero
 * point), then per block of 16 channels (8 for a last block) the taps accumulated in int32 lanes:
 * "pair" mode multiplies two taps into one int16 lane (SMULL + SMLAL, weights in [-127, 127]) before
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
                                       const int32_t *q, int8_t *out, const ecc_neon_out_t *o, const int pair)
{
    int32_t c0 = 0, t;
    for (; c0 + 16 <= in_c; c0 += 16, w += 16 * T, q += 64) {
        int32x4_t a0 = vld1q_s32(q), a1 = vld1q_s32(q + 16), a2 = vld1q_s32(q + 32), a3 = vld1q_s32(q + 48);
        t = 0;
        if (pair) {
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
            vst1q_s8(out + c0, ecc_neon_out16(ecc_neon_rq(a0, q0), ecc_neon_rq(a1, q1), ecc_neon_rq(a2, q2),
                                              ecc_neon_rq(a3, q3), o->off, o->lo, o->hi));
        }
    }
    if (c0 < in_c) { /* a last block of 8 */
        int32x4_t a0 = vld1q_s32(q), a1 = vld1q_s32(q + 16);
        t = 0;
        if (pair) {
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
        vst1_s8(out + c0, ecc_neon_out8(ecc_neon_rq(a0, vld1q_s32_x4(q)), ecc_neon_rq(a1, vld1q_s32_x4(q + 16)),
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

ECC_NEON_INLINE ecc_neon_out_t ecc_neon_out_params(int32_t output_offset, int32_t act_min, int32_t act_max)
{
    ecc_neon_out_t o;
    o.off = vdupq_n_s16((int16_t)output_offset);
    o.lo = vdupq_n_s8((int8_t)act_min);
    o.hi = vdupq_n_s8((int8_t)act_max);
    return o;
}

#endif /* ECC_NEON_H */
