/* edgecc NEON helpers: im2col, one output pixel's receptive field as one GEMM row.
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_IM2COL_H
#define ECC_NEON_IM2COL_H

#include "ecc_neon_base.h"

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

#endif /* ECC_NEON_IM2COL_H */
