/* edgecc DSP depthwise helpers (ACLE, Cortex-M4/M7/M33), used by dsp/depthwise_conv2d*_s8:
 * doubled q15 weights widened into scratch, per-tap multiply-accumulate of four channels in two
 * SMLAD lanes, and the four-channel requantized store. Conventions: ecc_dsp.h. */
#ifndef ECC_DSP_DEPTHWISE_H
#define ECC_DSP_DEPTHWISE_H

#include "ecc_dsp.h"
/* ---- depthwise: four channels per step, lanes (c0, c2) and (c1, c3) ---- */

/* Widen the weights of the first n channels (n % 4 == 0), doubled (the accumulators hold 2 acc),
 * into scratch: [quad][tap] -> {(2 w0, 2 w2), (2 w1, 2 w3)}. weights are [taps][out_c] int8. */
static inline void ecc_dsp_dw_widen_weights(const int8_t *weights, int32_t taps, int32_t out_c, int32_t n,
                                            int32_t *ws)
{
    int32_t q, t;
    for (q = 0; q < n; q += 4) {
        for (t = 0; t < taps; ++t, ws += 2) {
            const int32_t v = ecc_dsp_ld4(weights + t * out_c + q);
            const int32_t e = __sxtb16(v), o = ecc_dsp_sxtb16_ror8(v);
            ws[0] = __sadd16(e, e);
            ws[1] = __sadd16(o, o);
        }
    }
}

/* a0..a3 (channels c0..c3, scalars of the caller) += the q15 pair {xe, xo} of one tap times the
 * widened weights wq. A macro so the accumulators stay in registers. */
#define ECC_DSP_DW_MAC(xe, xo, wq)          \
    do {                                    \
        const int32_t we_ = (wq)[0];        \
        const int32_t wo_ = (wq)[1];        \
        a0 = __smlabb((xe), we_, a0);       \
        a2 = __smlatt((xe), we_, a2);       \
        a1 = __smlabb((xo), wo_, a1);       \
        a3 = __smlatt((xo), wo_, a3);       \
    } while (0)

/* the same from four int8 (one per channel) */
#define ECC_DSP_DW_TAP(x4, wq)                                           \
    do {                                                                 \
        const int32_t xv_ = (x4);                                        \
        ECC_DSP_DW_MAC(__sxtb16(xv_), ecc_dsp_sxtb16_ror8(xv_), (wq));   \
    } while (0)

/* One tap of ecc_dsp_dw3_mac: q15 pair at [x, #xo], widened weights at [w, #wo]. */
#define ECC_DSP_DW3_TAP(x, xo, wo) \
    "ldrd %[p], %[q], [%[" x "], #" xo "]\n\t" \
    "ldrd %[u], %[v], [%[w], #" wo "]\n\t" \
    "smlabb %[a0], %[p], %[u], %[a0]\n\t" \
    "smlatt %[a2], %[p], %[u], %[a2]\n\t" \
    "smlabb %[a1], %[q], %[v], %[a1]\n\t" \
    "smlatt %[a3], %[q], %[v], %[a3]\n\t"

/* a0..a3 += the 3x3 window of one channel quad: rows row0..row2 of widened input ([column][2 words],
 * three consecutive columns), widened weights wts ([9 taps][2 words]). Assembly: GCC spills the
 * 36 loads of this block otherwise. */
#define ECC_DSP_DW3_MAC(row0, row1, row2, wts)                                                                  \
    do {                                                                                                 \
        int32_t p_, q_, u_, v_;                                                                          \
        __asm__(ECC_DSP_DW3_TAP("x0", "0", "0") ECC_DSP_DW3_TAP("x0", "8", "8") ECC_DSP_DW3_TAP("x0", "16", "16") \
                ECC_DSP_DW3_TAP("x1", "0", "24") ECC_DSP_DW3_TAP("x1", "8", "32") ECC_DSP_DW3_TAP("x1", "16", "40") \
                ECC_DSP_DW3_TAP("x2", "0", "48") ECC_DSP_DW3_TAP("x2", "8", "56") ECC_DSP_DW3_TAP("x2", "16", "64") \
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p] "=&r"(p_), [q] "=&r"(q_),      \
                  [u] "=&r"(u_), [v] "=&r"(v_)                                                           \
                : [x0] "r"(row0), [x1] "r"(row1), [x2] "r"(row2), [w] "r"(wts)                            \
                  ECC_DSP_DW3_READS(row0, row1, row2, wts)); \
    } while (0)
/* The memory the block reads, as operands for the optimiser. At -O0 GCC gives each "m" operand an
 * address register of its own (16 registers with the 12 above): there a "memory" clobber says it. */
#ifdef __OPTIMIZE__
#define ECC_DSP_DW3_READS(row0, row1, row2, wts)                                                        \
    , "m"(*(const int32_t(*)[18])(wts)), "m"(*(const int32_t(*)[6])(row0)),                             \
    "m"(*(const int32_t(*)[6])(row1)), "m"(*(const int32_t(*)[6])(row2))
#else
#define ECC_DSP_DW3_READS(row0, row1, row2, wts) : "memory"
#endif

/* requantize, clamp and store four consecutive channels (a* = 2 acc) */
static inline __attribute__((always_inline)) void ecc_dsp_store4(
    int32_t a0, int32_t a1, int32_t a2, int32_t a3, const int32_t *mult, const int8_t *shift, int32_t k,
    int32_t lo, int32_t hi, int8_t *out, const int mode)
{
    out[0] = ecc_dsp_out(a0, mult[0], shift[0], k, lo, hi, mode);
    out[1] = ecc_dsp_out(a1, mult[1], shift[1], k, lo, hi, mode);
    out[2] = ecc_dsp_out(a2, mult[2], shift[2], k, lo, hi, mode);
    out[3] = ecc_dsp_out(a3, mult[3], shift[3], k, lo, hi, mode);
}

#endif /* ECC_DSP_DEPTHWISE_H */
