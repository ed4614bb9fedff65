/* edgecc DSP helpers (ACLE, Cortex-M4/M7/M33: __ARM_FEATURE_DSP) shared by the kernels in dsp/.
 *
 * Conventions the Python side (toolchain/ops/packing.py) prepares offline:
 * - The input zero point is folded into the bias: acc = bias' + sum x * w with raw int8 x, so a
 *   tap in the padding must read the zero point itself (im2col fills padding with it).
 * - q15 columns: every 4 int8 x0..x3 become two words (x0, x2) and (x1, x3) (SXTB16 and SXTB16
 *   ROR 8). Int8 weights in natural order expand the same way, so SMLAD pairs them directly.
 *   Two columns A, B are interleaved per 4-k group: A0 A1 B0 B1 (16 bytes).
 * - GEMM weights: output channels in pairs, the two rows interleaved per 4-k group (8 bytes),
 *   K zero-padded to a multiple of 4; an odd last row follows alone (4 bytes per group).
 * - Requantization per channel is three int32 {mult, c, e1} (ecc_dsp_requant), exact against
 *   the double-rounding reference when Python's bound check on the accumulator holds.
 * 32-bit loads from int8 tensors go through memcpy (LDR tolerates misalignment, LDRD/LDM fault).
 */
#ifndef ECC_DSP_H
#define ECC_DSP_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

/* four int8 from any address as one word (little endian) */
static inline int32_t ecc_dsp_ld4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline void ecc_dsp_st4(int8_t *p, int32_t v)
{
    memcpy(p, &v, 4);
}

/* bytes 1 and 3 sign-extended into two int16 lanes; GCC 12 has no __ror and would emit a
 * separate ROR before SXTB16 */
static inline int32_t ecc_dsp_sxtb16_ror8(int32_t v)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

/* round(a * b / 2^32), half up (SMMULR) */
static inline int32_t ecc_dsp_smmulr(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

/* TFLite MultiplyByQuantizedMultiplier (double rounding, shift = -(e1 - 1) <= 0) plus the output
 * offset: h = SRDHM(acc, mult) = SMMULR(2 acc, mult); RoundingDivideByPOT(h, e) + off equals
 * (2h + 2^e + (h < 0 ? -1 : 0) + (off << (e + 1))) >> (e + 1), and c = 2^e + (off << (e + 1)). */
static inline int32_t ecc_dsp_requant(int32_t acc, int32_t mult, int32_t c, int32_t e1)
{
    const int32_t h = ecc_dsp_smmulr(acc << 1, mult);
    return (c + (h << 1) + (h >> 31)) >> e1;
}

/* Clamp to [lo, hi] (inside int8). full = (lo, hi) == (-128, 127): one SSAT. */
static inline int8_t ecc_dsp_clamp(int32_t v, int32_t lo, int32_t hi, int32_t full)
{
    if (full) {
        return (int8_t)__ssat(v, 8);
    }
    v = v < lo ? lo : v;
    return (int8_t)(v > hi ? hi : v);
}

/* 4 int8 (one word) -> the two q15 words of ecc_dsp's column order */
static inline void ecc_dsp_q15x4(int32_t v, int32_t *dst)
{
    dst[0] = __sxtb16(v);
    dst[1] = ecc_dsp_sxtb16_ror8(v);
}

/* A word-aligned int8 tensor read as int32 words (may_alias: no strict-aliasing assumption). */
typedef int32_t ecc_dsp_w32 __attribute__((may_alias, aligned(4)));

/* Widen k int8 (k % 4 == 0, src word aligned) into one slot of an interleaved q15 column
 * starting at dst (stride 4 words per 4-k group); returns dst after the last group. */
static inline int32_t *ecc_dsp_widen_a(const int8_t *src, int32_t k, int32_t *dst)
{
    const ecc_dsp_w32 *s = (const ecc_dsp_w32 *)(const void *)src;
    for (; k >= 8; k -= 8, s += 2, dst += 8) {
        const int32_t a = s[0], b = s[1];
        dst[0] = __sxtb16(a);
        dst[1] = ecc_dsp_sxtb16_ror8(a);
        dst[4] = __sxtb16(b);
        dst[5] = ecc_dsp_sxtb16_ror8(b);
    }
    if (k) {
        ecc_dsp_q15x4(s[0], dst);
        dst += 4;
    }
    return dst;
}

/* The same from any address (memcpy loads). */
static inline int32_t *ecc_dsp_widen_u(const int8_t *src, int32_t k, int32_t *dst)
{
    for (; k >= 4; k -= 4, src += 4, dst += 4) {
        ecc_dsp_q15x4(ecc_dsp_ld4(src), dst);
    }
    return dst;
}

/* k values (k % 4 == 0) of one slot set to the q15 pair zq; returns dst after them. */
static inline int32_t *ecc_dsp_fill(int32_t *dst, int32_t k, int32_t zq)
{
    for (; k >= 4; k -= 4, dst += 4) {
        dst[0] = zq;
        dst[1] = zq;
    }
    return dst;
}

/* acc[2 rows][2 columns] += over n pairs of 4-k groups (8 k per iteration, n >= 1).
 * w: two interleaved weight rows (8 bytes per group, word aligned); x: two interleaved q15
 * columns (16 bytes per group). Written in assembly so the 13 live values stay in registers. */
#define ECC_DSP_MAC_GROUP(xa, xb) \
    "ldrd %[w0], %[w1], [%[w]], #8\n\t" \
    "sxtb16 %[e0], %[w0]\n\t" \
    "sxtb16 %[w0], %[w0], ror #8\n\t" \
    "sxtb16 %[e1], %[w1]\n\t" \
    "sxtb16 %[w1], %[w1], ror #8\n\t" \
    "ldrd %[p], %[q], [%[x]], #8\n\t" \
    "smlad %[" xa "0], %[e0], %[p], %[" xa "0]\n\t" \
    "smlad %[" xa "0], %[w0], %[q], %[" xa "0]\n\t" \
    "smlad %[" xa "1], %[e1], %[p], %[" xa "1]\n\t" \
    "smlad %[" xa "1], %[w1], %[q], %[" xa "1]\n\t" \
    "ldrd %[p], %[q], [%[x]], #8\n\t" \
    "smlad %[" xb "0], %[e0], %[p], %[" xb "0]\n\t" \
    "smlad %[" xb "0], %[w0], %[q], %[" xb "0]\n\t" \
    "smlad %[" xb "1], %[e1], %[p], %[" xb "1]\n\t" \
    "smlad %[" xb "1], %[w1], %[q], %[" xb "1]\n\t"

static inline void ecc_dsp_mac_2x2(int32_t *acc, const int32_t *x, const int8_t *w, int32_t n)
{
    int32_t a0 = acc[0], a1 = acc[1], b0 = acc[2], b1 = acc[3];
    int32_t w0, w1, e0, e1, p, q;
    __asm__ volatile(
        "1:\n\t"
        ECC_DSP_MAC_GROUP("a", "b")
        ECC_DSP_MAC_GROUP("a", "b")
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [b0] "+r"(b0), [b1] "+r"(b1), [x] "+r"(x), [w] "+r"(w), [n] "+r"(n),
          [w0] "=&r"(w0), [w1] "=&r"(w1), [e0] "=&r"(e0), [e1] "=&r"(e1), [p] "=&r"(p), [q] "=&r"(q)
        :
        : "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = b0; acc[3] = b1;
}

/* One GEMM pass over all output channels for two q15 columns (interleaved, `groups` 4-k groups)
 * whose outputs go to out_a and out_b (out_c int8 each). bias and rq per channel. */
static inline void ecc_dsp_gemm_2col(const int32_t *cols, int32_t groups, const int8_t *w, const int32_t *bias,
                                     const int32_t *rq, int32_t out_c, int32_t lo, int32_t hi,
                                     int8_t *out_a, int8_t *out_b)
{
    const int32_t full = lo == -128 && hi == 127;
    int32_t oc;
    for (oc = 0; oc + 2 <= out_c; oc += 2) {
        /* acc layout for ecc_dsp_mac_2x2: {row0 colA, row1 colA, row0 colB, row1 colB} */
        int32_t acc[4];
        const int32_t *x = cols;
        acc[0] = acc[2] = bias[oc];
        acc[1] = acc[3] = bias[oc + 1];
        if (groups >= 2) {
            ecc_dsp_mac_2x2(acc, x, w, groups >> 1);
            x += (groups & ~1) * 4;
            w += (groups & ~1) * 8;
        }
        if (groups & 1) {
            const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            const int32_t e1 = __sxtb16(w1), o1 = ecc_dsp_sxtb16_ror8(w1);
            acc[0] = __smlad(e0, x[0], __smlad(o0, x[1], acc[0]));
            acc[1] = __smlad(e1, x[0], __smlad(o1, x[1], acc[1]));
            acc[2] = __smlad(e0, x[2], __smlad(o0, x[3], acc[2]));
            acc[3] = __smlad(e1, x[2], __smlad(o1, x[3], acc[3]));
            w += 8;
        }
        out_a[oc] = ecc_dsp_clamp(ecc_dsp_requant(acc[0], rq[0], rq[1], rq[2]), lo, hi, full);
        out_b[oc] = ecc_dsp_clamp(ecc_dsp_requant(acc[2], rq[0], rq[1], rq[2]), lo, hi, full);
        out_a[oc + 1] = ecc_dsp_clamp(ecc_dsp_requant(acc[1], rq[3], rq[4], rq[5]), lo, hi, full);
        out_b[oc + 1] = ecc_dsp_clamp(ecc_dsp_requant(acc[3], rq[3], rq[4], rq[5]), lo, hi, full);
        rq += 6;
    }
    if (oc < out_c) { /* odd last row: 4 bytes per group */
        int32_t a = bias[oc], b = a, g;
        const int32_t *x = cols;
        for (g = 0; g < groups; ++g, w += 4, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            a = __smlad(e0, x[0], __smlad(o0, x[1], a));
            b = __smlad(e0, x[2], __smlad(o0, x[3], b));
        }
        out_a[oc] = ecc_dsp_clamp(ecc_dsp_requant(a, rq[0], rq[1], rq[2]), lo, hi, full);
        out_b[oc] = ecc_dsp_clamp(ecc_dsp_requant(b, rq[0], rq[1], rq[2]), lo, hi, full);
    }
}

/* The same for one q15 column (slot A of the interleaved buffer; slot B is not read). */
static inline void ecc_dsp_gemm_1col(const int32_t *cols, int32_t groups, const int8_t *w, const int32_t *bias,
                                     const int32_t *rq, int32_t out_c, int32_t lo, int32_t hi, int8_t *out)
{
    const int32_t full = lo == -128 && hi == 127;
    int32_t oc, g;
    for (oc = 0; oc + 2 <= out_c; oc += 2) {
        int32_t a0 = bias[oc], a1 = bias[oc + 1];
        const int32_t *x = cols;
        for (g = 0; g < groups; ++g, w += 8, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
            a0 = __smlad(__sxtb16(w0), x[0], __smlad(ecc_dsp_sxtb16_ror8(w0), x[1], a0));
            a1 = __smlad(__sxtb16(w1), x[0], __smlad(ecc_dsp_sxtb16_ror8(w1), x[1], a1));
        }
        out[oc] = ecc_dsp_clamp(ecc_dsp_requant(a0, rq[3 * oc], rq[3 * oc + 1], rq[3 * oc + 2]), lo, hi, full);
        out[oc + 1] = ecc_dsp_clamp(ecc_dsp_requant(a1, rq[3 * oc + 3], rq[3 * oc + 4], rq[3 * oc + 5]), lo, hi, full);
    }
    if (oc < out_c) {
        int32_t a0 = bias[oc];
        const int32_t *x = cols;
        for (g = 0; g < groups; ++g, w += 4, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w);
            a0 = __smlad(__sxtb16(w0), x[0], __smlad(ecc_dsp_sxtb16_ror8(w0), x[1], a0));
        }
        out[oc] = ecc_dsp_clamp(ecc_dsp_requant(a0, rq[3 * oc], rq[3 * oc + 1], rq[3 * oc + 2]), lo, hi, full);
    }
}

/* ---- depthwise: four channels per step, lanes (c0, c2) and (c1, c3) ---- */

/* Widen the weights of the first n channels (n % 4 == 0) into scratch: [quad][tap] ->
 * {(w0, w2), (w1, w3)}. weights are [taps][out_c] int8. */
static inline void ecc_dsp_dw_widen_weights(const int8_t *weights, int32_t taps, int32_t out_c, int32_t n,
                                            int32_t *ws)
{
    int32_t q, t;
    for (q = 0; q < n; q += 4) {
        for (t = 0; t < taps; ++t, ws += 2) {
            ecc_dsp_q15x4(ecc_dsp_ld4(weights + t * out_c + q), ws);
        }
    }
}

/* a0..a3 (channels c0..c3, scalars in the caller) += x4 (one int8 per channel) * the widened
 * weights wq of one tap. A macro so the accumulators stay in registers. */
#define ECC_DSP_DW_TAP(x4, wq)                                   \
    do {                                                         \
        const int32_t xv_ = (x4);                                \
        const int32_t xe_ = __sxtb16(xv_);                       \
        const int32_t xo_ = ecc_dsp_sxtb16_ror8(xv_);            \
        a0 = __smlabb(xe_, (wq)[0], a0);                         \
        a2 = __smlatt(xe_, (wq)[0], a2);                         \
        a1 = __smlabb(xo_, (wq)[1], a1);                         \
        a3 = __smlatt(xo_, (wq)[1], a3);                         \
    } while (0)

/* requantize, clamp and store four consecutive channels */
static inline void ecc_dsp_store4(int32_t a0, int32_t a1, int32_t a2, int32_t a3, const int32_t *rq, int32_t lo,
                                  int32_t hi, int32_t full, int8_t *out)
{
    out[0] = ecc_dsp_clamp(ecc_dsp_requant(a0, rq[0], rq[1], rq[2]), lo, hi, full);
    out[1] = ecc_dsp_clamp(ecc_dsp_requant(a1, rq[3], rq[4], rq[5]), lo, hi, full);
    out[2] = ecc_dsp_clamp(ecc_dsp_requant(a2, rq[6], rq[7], rq[8]), lo, hi, full);
    out[3] = ecc_dsp_clamp(ecc_dsp_requant(a3, rq[9], rq[10], rq[11]), lo, hi, full);
}

#endif /* ECC_DSP_H */
