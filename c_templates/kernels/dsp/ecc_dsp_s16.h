/* edgecc DSP helpers of the 16x8 kernels (int16 activations, zero point 0; int8 weights; int64 biases):
 * dsp/conv2d_s16, conv2d_1x1_s16, depthwise_conv2d_s16, fully_connected_s16. Bit-exact with the portable
 * *_s16 kernels (TFLM's int64 accumulator and 64-bit MultiplyByQuantizedMultiplier).
 *
 * Conventions prepared offline by toolchain/isa/dsp_s16.py:
 * - Weights are int8 with each group of four k stored w0 w2 w1 w3, so that SXTB16 gives the int16
 *   pair (w0, w1) and SXTB16 ROR 8 the pair (w2, w3), matching the int16 pairs (x0, x1), (x2, x3) of
 *   the activations as 32-bit loads read them: SMLAD sums two products. A last partial group is padded
 *   with zero weights (the kernels never read activations beyond K).
 * - Accumulation, chosen per layer from the actual weights and biases (|w x| <= 2^22 per product):
 *   narrow (chunk 0): every |bias| + 32768 * sum |w| < 2^31, so TFLM's int64 accumulator always holds
 *   an int32, and every t = 15 - shift >= 17: SMLAD sums from the int32 bias, and the requantization
 *   is one SMMLA and one ASR (ecc_dsp_s16_rq32). Wide (chunk >= 1): int32 partial sums of `chunk` 4-k
 *   groups at most (32768 * sum |w| < 2^31 over each chunk of each channel), each added to the int64
 *   accumulator, which starts at the int64 bias; the requantization takes the 64-bit form
 *   (ecc_dsp_s16_rq64). Either way the int64 sum is TFLM's exactly.
 * - Requantization: TFLM's (int32)((acc * m15 + 2^(t-1)) >> t), m15 the Q15 multiplier, t = 15 - shift
 *   in [8, 46]. Narrow record (3 words: M, A, S): (hi32(A * 2^32 + acc * M)) >> S, one SMMLA:
 *   t <= 32: M = m15 << (33 - t) (< 2^31 as t >= 17), A = 1, S = 1 (the high word is
 *   floor((P + 2^(t-1)) / 2^(t-1)) for P = acc m15, below 2^30; one more halving floors it by 2^t);
 *   t > 32: M = m15, A = 2^(t-33), S = t - 32. Wide record (5 words: M_lo, M_hi, R_lo, R_hi, S):
 *   (int32)(hi32(acc * M + R) >> S) mod 2^64, one UMLAL and two MLAs: t <= 32: M = m15 << (32 - t)
 *   (64-bit), R = 2^31, S = 0 (the high word is bits t..t+31 of the exact sum, TFLM's int32 cast
 *   included); t > 32: M = m15, R = 2^(t-1), S = t - 32. Numpy twins: dsp_s16.requant_records,
 *   emulate_rq (wide) and narrow_records, emulate_narrow.
 * - Output clamp: ECC_DSP_S16_FULL (the int16 range: SSAT), _RELU ([0, 32767]: USAT), _CLAMP (any).
 * - GEMM blob (conv2d, conv2d_1x1, fully_connected), read front to back with one pointer, word
 *   aligned: per pair of output channels the two biases (narrow: int32 each; wide: int64 each, lo and
 *   hi words), the two rows interleaved per 4-k group (8 bytes per group, a partial last group
 *   padded), the two requantization records; an odd last channel: its bias, its groups (4 bytes each),
 *   its record.
 * 32-bit loads of activations are LDR (the 2-byte alignment of odd channel counts is fine for LDR,
 * not for LDRD/LDM).
 */
#ifndef ECC_DSP_S16_H
#define ECC_DSP_S16_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#include "ecc_dsp.h"

#define ECC_DSP_S16_RQ_WORDS 5     /* wide record */
#define ECC_DSP_S16_RQ32_WORDS 3   /* narrow record */
#define ECC_DSP_S16_FULL 0
#define ECC_DSP_S16_RELU 1
#define ECC_DSP_S16_CLAMP 2

/* The clamp mode of the output range [lo, hi]. */
static inline int ecc_dsp_s16_sat_mode(int32_t lo, int32_t hi)
{
    if (hi == 32767 && (lo == -32768 || lo == 0)) {
        return lo == 0 ? ECC_DSP_S16_RELU : ECC_DSP_S16_FULL;
    }
    return ECC_DSP_S16_CLAMP;
}

/* y clamped to [lo, hi] for clamp mode `sat` */
#define ECC_DSP_S16_SAT(y, sat, lo, hi) \
    ((sat) == ECC_DSP_S16_FULL ? __ssat((y), 16) : (sat) == ECC_DSP_S16_RELU ? (int32_t)__usat((y), 15) \
     : (y) < (lo) ? (lo) : (y) > (hi) ? (hi) : (y))

/* two int16 from any even address as one word (x0 low, x1 high) */
static inline int32_t ecc_dsp_s16_ld2(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* the int64 at p (two words) */
static inline int64_t ecc_dsp_s16_ld8(const void *p)
{
    int64_t b;
    memcpy(&b, p, 8);
    return b;
}

/* TFLM's MultiplyByQuantizedMultiplier of an accumulator known to fit int32 (narrow layers) from its
 * narrow record q = (M, A, S): hi32(A * 2^32 + acc * M) >> S, one SMMLA. */
static inline int32_t ecc_dsp_s16_rq32(int32_t acc, const int32_t *q)
{
    int32_t h;
    __asm__("smmla %0, %1, %2, %3" : "=r"(h) : "r"(acc), "r"(q[0]), "r"(q[1]));
    return h >> q[2];
}

/* The same of an int64 accumulator (wide layers) from its wide record: UMLAL of its low word, MLAs of
 * its high word and of the multiplier's high word, modulo 2^64 as TFLM's int64 arithmetic and int32
 * cast. */
static inline int32_t ecc_dsp_s16_rq64(int64_t acc, const int32_t *q)
{
    const uint32_t a_lo = (uint32_t)acc, a_hi = (uint32_t)((uint64_t)acc >> 32);
    uint64_t r = (uint64_t)ecc_dsp_s16_ld8(q + 2);
    r += (uint64_t)a_lo * (uint32_t)q[0];
    return (int32_t)((uint32_t)(r >> 32) + a_hi * (uint32_t)q[0] + a_lo * (uint32_t)q[1]) >> q[4];
}

/* the int8 weight word w (reordered) as the int16 pairs e = (w0, w1), o = (w2, w3) */
#define ECC_DSP_S16_WIDEN(w, e, o) \
    const int32_t e = __sxtb16(w), o = ecc_dsp_sxtb16_ror8(w)

/* the last k & 3 products of one column x (after its full groups) against the widened pairs e, o */
static inline int32_t ecc_dsp_s16_tail(const int16_t *x, int32_t tail, int32_t e, int32_t o, int32_t s)
{
    if (tail & 2) {
        s = __smlad(e, ecc_dsp_s16_ld2(x), s);
        x += 2;
        e = o;
    }
    if (tail & 1) {
        s = __smlabb(e, (int32_t)*x, s);
    }
    return s;
}

/* Four int32 sums of a 2x2 block: output channels 0, 1 (the pair's interleaved rows at w) against
 * columns A (pa) and B (pb). */
typedef struct {
    int32_t a0, a1, b0, b1;
} ecc_dsp_s16_sums_t;

/* n >= 1 groups of the 2x2 block into s; advances w by 8 n bytes and pa, pb by 4 n values */
static inline __attribute__((always_inline)) void ecc_dsp_s16_mac_2x2(
    const int8_t **wp, const int16_t **pap, const int16_t **pbp, int32_t n, ecc_dsp_s16_sums_t *s)
{
    const int8_t *w = *wp;
    const int16_t *pa = *pap, *pb = *pbp;
    int32_t a0 = s->a0, a1 = s->a1, b0 = s->b0, b1 = s->b1;
#if ECC_DSP_GEMM_ASM
    int32_t t0, t1, t2, t3, x0, x1;
    __asm__ volatile(
        "1:\n\t"
        "ldrd %[t0], %[t1], [%[w]], #8\n\t"
        "ldr %[x0], [%[pa]], #4\n\t"
        "ldr %[x1], [%[pa]], #4\n\t"
        "sxtb16 %[t2], %[t0]\n\t"
        "sxtb16 %[t0], %[t0], ror #8\n\t"
        "sxtb16 %[t3], %[t1]\n\t"
        "sxtb16 %[t1], %[t1], ror #8\n\t"
        "smlad %[a0], %[t2], %[x0], %[a0]\n\t"
        "smlad %[a1], %[t3], %[x0], %[a1]\n\t"
        "ldr %[x0], [%[pb]], #4\n\t"
        "smlad %[a0], %[t0], %[x1], %[a0]\n\t"
        "smlad %[a1], %[t1], %[x1], %[a1]\n\t"
        "ldr %[x1], [%[pb]], #4\n\t"
        "smlad %[b0], %[t2], %[x0], %[b0]\n\t"
        "smlad %[b1], %[t3], %[x0], %[b1]\n\t"
        "smlad %[b0], %[t0], %[x1], %[b0]\n\t"
        "smlad %[b1], %[t1], %[x1], %[b1]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [b0] "+r"(b0), [b1] "+r"(b1), [w] "+r"(w), [pa] "+r"(pa), [pb] "+r"(pb),
          [n] "+r"(n), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [x0] "=&r"(x0),
          [x1] "=&r"(x1)
        :
        : "cc", "memory");
#else
    for (; n > 0; --n, w += 8, pa += 4, pb += 4) {
        const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
        const int32_t xa0 = ecc_dsp_s16_ld2(pa), xa1 = ecc_dsp_s16_ld2(pa + 2);
        const int32_t xb0 = ecc_dsp_s16_ld2(pb), xb1 = ecc_dsp_s16_ld2(pb + 2);
        ECC_DSP_S16_WIDEN(w0, e0, o0);
        ECC_DSP_S16_WIDEN(w1, e1, o1);
        a0 = __smlad(o0, xa1, __smlad(e0, xa0, a0));
        a1 = __smlad(o1, xa1, __smlad(e1, xa0, a1));
        b0 = __smlad(o0, xb1, __smlad(e0, xb0, b0));
        b1 = __smlad(o1, xb1, __smlad(e1, xb0, b1));
    }
#endif
    s->a0 = a0;
    s->a1 = a1;
    s->b0 = b0;
    s->b1 = b1;
    *wp = w;
    *pap = pa;
    *pbp = pb;
}

/* n >= 1 groups of two channels against column A only (s->a0, s->a1) */
static inline __attribute__((always_inline)) void ecc_dsp_s16_mac_2x1(
    const int8_t **wp, const int16_t **pap, int32_t n, ecc_dsp_s16_sums_t *s)
{
    const int8_t *w = *wp;
    const int16_t *pa = *pap;
    int32_t a0 = s->a0, a1 = s->a1;
#if ECC_DSP_GEMM_ASM
    int32_t t0, t1, t2, t3, x0, x1;
    __asm__ volatile(
        "1:\n\t"
        "ldrd %[t0], %[t1], [%[w]], #8\n\t"
        "ldr %[x0], [%[pa]], #4\n\t"
        "ldr %[x1], [%[pa]], #4\n\t"
        "sxtb16 %[t2], %[t0]\n\t"
        "sxtb16 %[t0], %[t0], ror #8\n\t"
        "sxtb16 %[t3], %[t1]\n\t"
        "sxtb16 %[t1], %[t1], ror #8\n\t"
        "smlad %[a0], %[t2], %[x0], %[a0]\n\t"
        "smlad %[a1], %[t3], %[x0], %[a1]\n\t"
        "smlad %[a0], %[t0], %[x1], %[a0]\n\t"
        "smlad %[a1], %[t1], %[x1], %[a1]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [w] "+r"(w), [pa] "+r"(pa), [n] "+r"(n), [t0] "=&r"(t0), [t1] "=&r"(t1),
          [t2] "=&r"(t2), [t3] "=&r"(t3), [x0] "=&r"(x0), [x1] "=&r"(x1)
        :
        : "cc", "memory");
#else
    for (; n > 0; --n, w += 8, pa += 4) {
        const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
        const int32_t xa0 = ecc_dsp_s16_ld2(pa), xa1 = ecc_dsp_s16_ld2(pa + 2);
        ECC_DSP_S16_WIDEN(w0, e0, o0);
        ECC_DSP_S16_WIDEN(w1, e1, o1);
        a0 = __smlad(o0, xa1, __smlad(e0, xa0, a0));
        a1 = __smlad(o1, xa1, __smlad(e1, xa0, a1));
    }
#endif
    s->a0 = a0;
    s->a1 = a1;
    *wp = w;
    *pap = pa;
}

/* The sums of one channel pair (cols 2) or of its column A (cols 1) over groups [0, n) of the pair's
 * rows and the tail; w at the pair's first group, left after its last (tail included). */
static inline __attribute__((always_inline)) void ecc_dsp_s16_pair_sums(
    const int8_t **w, const int16_t **pa, const int16_t **pb, int32_t n, int32_t tail, ecc_dsp_s16_sums_t *s,
    const int cols)
{
    if (n > 0) {
        if (cols == 2) {
            ecc_dsp_s16_mac_2x2(w, pa, pb, n, s);
        } else {
            ecc_dsp_s16_mac_2x1(w, pa, n, s);
        }
    }
    if (tail) {
        const int32_t w0 = ecc_dsp_ld4(*w), w1 = ecc_dsp_ld4(*w + 4);
        ECC_DSP_S16_WIDEN(w0, e0, o0);
        ECC_DSP_S16_WIDEN(w1, e1, o1);
        s->a0 = ecc_dsp_s16_tail(*pa, tail, e0, o0, s->a0);
        s->a1 = ecc_dsp_s16_tail(*pa, tail, e1, o1, s->a1);
        if (cols == 2) {
            s->b0 = ecc_dsp_s16_tail(*pb, tail, e0, o0, s->b0);
            s->b1 = ecc_dsp_s16_tail(*pb, tail, e1, o1, s->b1);
        }
        *w += 8;
    }
}

/* The sums of the odd last channel (one row, 4 bytes per group) for columns A (and B: cols 2). */
static inline __attribute__((always_inline)) void ecc_dsp_s16_row_sums(
    const int8_t **wp, const int16_t **pap, const int16_t **pbp, int32_t n, int32_t tail, int32_t *sa, int32_t *sb,
    const int cols)
{
    const int8_t *w = *wp;
    const int16_t *pa = *pap, *pb = *pbp;
    int32_t a = *sa, b = *sb;
    for (; n > 0; --n, w += 4, pa += 4, pb += 4) {
        const int32_t w0 = ecc_dsp_ld4(w);
        ECC_DSP_S16_WIDEN(w0, e0, o0);
        a = __smlad(o0, ecc_dsp_s16_ld2(pa + 2), __smlad(e0, ecc_dsp_s16_ld2(pa), a));
        if (cols == 2) {
            b = __smlad(o0, ecc_dsp_s16_ld2(pb + 2), __smlad(e0, ecc_dsp_s16_ld2(pb), b));
        }
    }
    if (tail) {
        const int32_t w0 = ecc_dsp_ld4(w);
        ECC_DSP_S16_WIDEN(w0, e0, o0);
        a = ecc_dsp_s16_tail(pa, tail, e0, o0, a);
        if (cols == 2) {
            b = ecc_dsp_s16_tail(pb, tail, e0, o0, b);
        }
        w += 4;
    }
    *sa = a;
    *sb = b;
    *wp = w;
    *pap = pa;
    *pbp = pb;
}

/* One GEMM pass over all out_c channels of the blob w for one or two int16 columns (cols; xb and ob
 * unused for 1) of k values (k >> 2 full groups, then k & 3 more): outputs of column A at oa, of B at
 * ob. chunk: 0 narrow, else the wide chunk (see above); sat: ecc_dsp_s16_sat_mode(lo, hi). */
static inline __attribute__((always_inline)) void ecc_dsp_s16_gemm(
    const int16_t *xa, const int16_t *xb, int32_t k, int32_t chunk, const int8_t *w, int32_t lo, int32_t hi,
    int sat, int32_t out_c, int16_t *oa, int16_t *ob, const int cols)
{
    const int32_t groups = k >> 2, tail = k & 3;
    int32_t oc;
    for (oc = 0; oc + 2 <= out_c; oc += 2) {
        const int16_t *pa = xa, *pb = xb;
        const int32_t *q;
        int32_t y0, y1, z0, z1;
        if (chunk == 0) { /* narrow: int32 from the biases' low words */
            ecc_dsp_s16_sums_t s;
            s.a0 = s.b0 = ecc_dsp_ld4(w);
            s.a1 = s.b1 = ecc_dsp_ld4(w + 4);
            w += 8;
            ecc_dsp_s16_pair_sums(&w, &pa, &pb, groups, tail, &s, cols);
            q = (const int32_t *)(const void *)w;
            y0 = ecc_dsp_s16_rq32(s.a0, q);
            y1 = ecc_dsp_s16_rq32(s.a1, q + ECC_DSP_S16_RQ32_WORDS);
            z0 = cols == 2 ? ecc_dsp_s16_rq32(s.b0, q) : 0;
            z1 = cols == 2 ? ecc_dsp_s16_rq32(s.b1, q + ECC_DSP_S16_RQ32_WORDS) : 0;
            w += 8 * ECC_DSP_S16_RQ32_WORDS;
        } else { /* wide: int32 partial sums of `chunk` groups into the int64 accumulators */
            int64_t a0 = ecc_dsp_s16_ld8(w), a1 = ecc_dsp_s16_ld8(w + 8), b0 = a0, b1 = a1;
            int32_t g = 0;
            w += 16;
            for (;;) {
                const int32_t n = groups - g < chunk ? groups - g : chunk;
                ecc_dsp_s16_sums_t s = {0, 0, 0, 0};
                g += n;
                ecc_dsp_s16_pair_sums(&w, &pa, &pb, n, g == groups ? tail : 0, &s, cols);
                a0 += s.a0;
                a1 += s.a1;
                b0 += s.b0;
                b1 += s.b1;
                if (g == groups) {
                    break;
                }
            }
            q = (const int32_t *)(const void *)w;
            y0 = ecc_dsp_s16_rq64(a0, q);
            y1 = ecc_dsp_s16_rq64(a1, q + ECC_DSP_S16_RQ_WORDS);
            z0 = cols == 2 ? ecc_dsp_s16_rq64(b0, q) : 0;
            z1 = cols == 2 ? ecc_dsp_s16_rq64(b1, q + ECC_DSP_S16_RQ_WORDS) : 0;
            w += 8 * ECC_DSP_S16_RQ_WORDS;
        }
        oa[oc] = (int16_t)ECC_DSP_S16_SAT(y0, sat, lo, hi);
        oa[oc + 1] = (int16_t)ECC_DSP_S16_SAT(y1, sat, lo, hi);
        if (cols == 2) {
            ob[oc] = (int16_t)ECC_DSP_S16_SAT(z0, sat, lo, hi);
            ob[oc + 1] = (int16_t)ECC_DSP_S16_SAT(z1, sat, lo, hi);
        }
    }
    if (oc < out_c) { /* odd last channel: bias, row, record */
        const int16_t *pa = xa, *pb = xb;
        const int32_t *q;
        int32_t y, z;
        if (chunk == 0) {
            int32_t sa = ecc_dsp_ld4(w), sb = sa;
            w += 4;
            ecc_dsp_s16_row_sums(&w, &pa, &pb, groups, tail, &sa, &sb, cols);
            q = (const int32_t *)(const void *)w;
            y = ecc_dsp_s16_rq32(sa, q);
            z = cols == 2 ? ecc_dsp_s16_rq32(sb, q) : 0;
        } else {
            int64_t a = ecc_dsp_s16_ld8(w), b = a;
            int32_t g = 0;
            w += 8;
            for (;;) {
                const int32_t n = groups - g < chunk ? groups - g : chunk;
                int32_t sa = 0, sb = 0;
                g += n;
                ecc_dsp_s16_row_sums(&w, &pa, &pb, n, g == groups ? tail : 0, &sa, &sb, cols);
                a += sa;
                b += sb;
                if (g == groups) {
                    break;
                }
            }
            q = (const int32_t *)(const void *)w;
            y = ecc_dsp_s16_rq64(a, q);
            z = cols == 2 ? ecc_dsp_s16_rq64(b, q) : 0;
        }
        oa[oc] = (int16_t)ECC_DSP_S16_SAT(y, sat, lo, hi);
        if (cols == 2) {
            ob[oc] = (int16_t)ECC_DSP_S16_SAT(z, sat, lo, hi);
        }
    }
}

#endif /* ECC_DSP_S16_H */
