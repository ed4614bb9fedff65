/* edgecc DSP 2x3-blocked int8 GEMM (conv2d, conv2d_1x1): three q15 columns per pass over the packed
 * weights of ecc_dsp.h ("GEMM over packed weights", unchanged blob), so each 4-k group of a channel pair
 * is loaded and widened once for three output pixels: per group 1 LDRD of weights, 4 SXTB16, 3 LDRD of
 * columns and 12 SMLAD (20 instructions for 24 MACs instead of 15 for 16 in the 2x2 block).
 *
 * Column layout: the three columns A, B, C interleaved per 4-k group as A0 A1 B0 B1 C0 C1 (24 bytes,
 * ECC_DSP_C3 = 6 words per group), each slot in the q15 order of ecc_dsp.h; the widen / fill helpers
 * below write one slot of it. */
#ifndef ECC_DSP_GEMM3_H
#define ECC_DSP_GEMM3_H

#include "ecc_dsp.h"

#define ECC_DSP_C3 6 /* words per 4-k group of the three interleaved columns */

/* one word of 4 int8 (register a) into the slot at dst, dst advancing by one group (t: scratch) */
#define ECC_DSP_WIDEN3_WORD(a) \
    "sxtb16 %[t], %[" a "]\n\t" \
    "sxtb16 %[" a "], %[" a "], ror #8\n\t" \
    "strd %[t], %[" a "], [%[d]], #24\n\t"

/* Widen k int8 (k % 4 == 0, src word aligned) into one slot of the 3-column layout at dst, 16 per loop
 * iteration (2 LDRD, 8 SXTB16, 4 STRD); returns dst after the last group. */
static inline int32_t *ecc_dsp_widen3_a(const int8_t *src, int32_t k, int32_t *dst)
{
    const ecc_dsp_w32 *s = (const ecc_dsp_w32 *)(const void *)src;
    int32_t n = k >> 4;
    if (n > 0) {
        int32_t a, b, t;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[a], %[b], [%[s]], #8\n\t"
            ECC_DSP_WIDEN3_WORD("a") ECC_DSP_WIDEN3_WORD("b")
            "ldrd %[a], %[b], [%[s]], #8\n\t"
            ECC_DSP_WIDEN3_WORD("a") ECC_DSP_WIDEN3_WORD("b")
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [s] "+r"(s), [d] "+r"(dst), [n] "+r"(n), [a] "=&r"(a), [b] "=&r"(b), [t] "=&r"(t)
            :
            : "cc", "memory");
    }
    for (k &= 15; k > 0; k -= 4, ++s, dst += ECC_DSP_C3) {
        ecc_dsp_q15x4(s[0], dst);
    }
    return dst;
}

/* The same from any address (k % 4 == 0). */
static inline int32_t *ecc_dsp_widen3_u(const int8_t *src, int32_t k, int32_t *dst)
{
    for (; k >= 4; k -= 4, src += 4, dst += ECC_DSP_C3) {
        ecc_dsp_q15x4(ecc_dsp_ld4(src), dst);
    }
    return dst;
}

/* k values (k % 4 == 0) of one slot set to the q15 pair zq; returns dst after them. */
static inline int32_t *ecc_dsp_fill3(int32_t *dst, int32_t k, int32_t zq)
{
    for (; k >= 4; k -= 4, dst += ECC_DSP_C3) {
        dst[0] = zq;
        dst[1] = zq;
    }
    return dst;
}

/* one 4-k group of the 2x3 block: the two rows (t0, t1 widened to t2/t0, t3/t1) x columns A, B, C
 * (each read into t4/t5), added to the sums in i0 / i1 (the accumulators themselves, or the biases in c0 / c1
 * for a pass's first group, which therefore takes column C last) */
#define ECC_DSP_MAC3_COL(r0, r1, i0, i1) \
    "ldrd %[t4], %[t5], [%[x]], #8\n\t" \
    "smlad %[" r0 "], %[t2], %[t4], %[" i0 "]\n\t" \
    "smlad %[" r0 "], %[t0], %[t5], %[" r0 "]\n\t" \
    "smlad %[" r1 "], %[t3], %[t4], %[" i1 "]\n\t" \
    "smlad %[" r1 "], %[t1], %[t5], %[" r1 "]\n\t"
#define ECC_DSP_MAC3_WIDEN \
    "ldrd %[t0], %[t1], [%[w]], #8\n\t" \
    "sxtb16 %[t2], %[t0]\n\t" \
    "sxtb16 %[t0], %[t0], ror #8\n\t" \
    "sxtb16 %[t3], %[t1]\n\t" \
    "sxtb16 %[t1], %[t1], ror #8\n\t"
#define ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_WIDEN \
    ECC_DSP_MAC3_COL("a0", "a1", "a0", "a1") ECC_DSP_MAC3_COL("b0", "b1", "b0", "b1") \
    ECC_DSP_MAC3_COL("c0", "c1", "c0", "c1")
#define ECC_DSP_MAC3_FIRST ECC_DSP_MAC3_WIDEN \
    ECC_DSP_MAC3_COL("a0", "a1", "c0", "c1") ECC_DSP_MAC3_COL("b0", "b1", "c0", "c1") \
    ECC_DSP_MAC3_COL("c0", "c1", "c0", "c1")

/* The requantization of one record's pair for the six accumulators (row 0: a0 b0 c0, row 1: a1 b1 c1).
 * ECC_DSP_RELU with k folded into the multiply: ((h >> sh) + k) = (h + (k << sh)) >> sh, h + (k << sh) by
 * SMMLAR with t4 = k << sh of the row; exact while |h| + 255 * 2^sh < 2^31, which dsp.conv2d_plan_why
 * ensures for the relu entry points (|acc| < 2^30 - 256 by packing.fold_layer_why, and sh <= 22) */
#define ECC_DSP_OUT3_RELU(acc, m) \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smmlar %[" acc "], %[" acc "], %[" m "], %[t4]\n\t" \
    "asr %[" acc "], %[" acc "], %[t2]\n\t" \
    "ssat %[" acc "], #8, %[" acc "], asr #1\n\t"
#define ECC_DSP_EPI3_RELU \
    "ldrd %[t0], %[t1], [%[w]], #8\n\t" \
    "ldr %[t2], [%[w]], #4\n\t" \
    "asr %[t3], %[t2], #16\n\t" \
    "lsl %[t4], %[t3], %[t2]\n\t" \
    ECC_DSP_OUT3_RELU("a0", "t0") ECC_DSP_OUT3_RELU("b0", "t0") ECC_DSP_OUT3_RELU("c0", "t0") \
    "lsr %[t2], %[t2], #8\n\t" \
    "lsl %[t4], %[t3], %[t2]\n\t" \
    ECC_DSP_OUT3_RELU("a1", "t1") ECC_DSP_OUT3_RELU("b1", "t1") ECC_DSP_OUT3_RELU("c1", "t1")
/* ECC_DSP_FULL the same way: with e >= 1, (((2h + s) >> e) + k) >> 1 = (h + (k << (e - 1)) + s) >> e for
 * s = -1 when h < 0 (the numerator 2h + k 2^e is even, so 2s and s floor alike), and s may be the sign of
 * acc (h = 0 whenever they differ, and then both give floor(k / 2)); t4 = k << (e - 1) of the row. Exact
 * for e in [1, 23] (|h| < 2^30, |k| <= 255), which dsp.conv2d_plan_why requires of the full entry points. */
#define ECC_DSP_OUT3_FULL(acc, m) \
    "add %[t5], %[t4], %[" acc "], asr #31\n\t" \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smmlar %[" acc "], %[" acc "], %[" m "], %[t5]\n\t" \
    "asr %[" acc "], %[" acc "], %[t2]\n\t" \
    "ssat %[" acc "], #8, %[" acc "]\n\t"
#define ECC_DSP_EPI3_FULL \
    "ldrd %[t0], %[t1], [%[w]], #8\n\t" \
    "ldr %[t2], [%[w]], #4\n\t" \
    "asr %[t3], %[t2], #16\n\t" \
    "lsl %[t4], %[t3], %[t2]\n\t" \
    "asr %[t4], %[t4], #1\n\t" \
    ECC_DSP_OUT3_FULL("a0", "t0") ECC_DSP_OUT3_FULL("b0", "t0") ECC_DSP_OUT3_FULL("c0", "t0") \
    "lsr %[t2], %[t2], #8\n\t" \
    "lsl %[t4], %[t3], %[t2]\n\t" \
    "asr %[t4], %[t4], #1\n\t" \
    ECC_DSP_OUT3_FULL("a1", "t1") ECC_DSP_OUT3_FULL("b1", "t1") ECC_DSP_OUT3_FULL("c1", "t1")
/* ECC_DSP_F32 of the six sums, output range [-128, 127] (ECC_DSP_EPI_F32 of ecc_dsp.h, three columns):
 * values in s0..s5, the two scales in s6, s7 */
#define ECC_DSP_F32_CVT3(op) op " s0, s0\n\t" op " s1, s1\n\t" op " s2, s2\n\t" op " s3, s3\n\t" \
    op " s4, s4\n\t" op " s5, s5\n\t"
#define ECC_DSP_F32_FIN3(r) "qadd %[" r "], %[" r "], %[t3]\n\tssat %[" r "], #8, %[" r "]\n\t"
#define ECC_DSP_EPI3_F32 \
    "vldmia %[w]!, {s6-s7}\n\t" \
    "ldr %[t3], [%[w]], #4\n\t" \
    "vmov s0, s1, %[a0], %[b0]\n\t" \
    "vmov s2, s3, %[a1], %[b1]\n\t" \
    "vmov s4, s5, %[c0], %[c1]\n\t" \
    ECC_DSP_F32_CVT3("vcvt.f32.s32") \
    "vmul.f32 s0, s0, s6\n\t" \
    "vmul.f32 s1, s1, s6\n\t" \
    "vmul.f32 s2, s2, s7\n\t" \
    "vmul.f32 s3, s3, s7\n\t" \
    "vmul.f32 s4, s4, s6\n\t" \
    "vmul.f32 s5, s5, s7\n\t" \
    ECC_DSP_F32_CVT3("vcvtr.s32.f32") \
    "vmov %[a0], %[b0], s0, s1\n\t" \
    "vmov %[a1], %[b1], s2, s3\n\t" \
    "vmov %[c0], %[c1], s4, s5\n\t" \
    ECC_DSP_F32_FIN3("a0") ECC_DSP_F32_FIN3("b0") ECC_DSP_F32_FIN3("c0") \
    ECC_DSP_F32_FIN3("a1") ECC_DSP_F32_FIN3("b1") ECC_DSP_F32_FIN3("c1")
#if ECC_DSP_FPU
#define ECC_DSP_VFP3_CLOBBERS , "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"
#else
#define ECC_DSP_VFP3_CLOBBERS
#endif

/* Every output-channel pair of one 2x3 pass. All 14 allocatable registers hold the block (six
 * accumulators, four widened weights, two column words, the blob and column pointers), so the loop
 * state lives in memory (m). A pair's first group starts from the biases (ECC_DSP_MAC3_FIRST); the
 * others go through a loop of eight groups per iteration that ends when the column pointer reaches
 * m.xend, entered at group 8 - (groups - 1) % 8 (8: at the test, for groups - 1 a multiple of 8), whose
 * address (every group is 20 32-bit instructions, 80 bytes; m.skip holds that offset plus the Thumb
 * bit) is computed once into m.entry. The pair loop ends when the output pointer m.oa reaches m.oend. */
#define ECC_DSP_GEMM3_PAIRS(EPI)                                                                   \
    __asm__ volatile(                                                                              \
        "adr %[t0], 1f\n\t"                                                                        \
        "ldr %[t1], %[msk]\n\t"                                                                    \
        "add %[t0], %[t0], %[t1]\n\t"                                                              \
        "str %[t0], %[ment]\n\t"                                                                   \
        "2:\n\t"                                                                                   \
        "ldrd %[c0], %[c1], [%[w]], #8\n\t"                                                        \
        "ldr %[x], %[mc]\n\t"                                                                      \
        ECC_DSP_MAC3_FIRST                                                                         \
        "ldr %[t0], %[ment]\n\t"                                                                   \
        "bx %[t0]\n\t"                                                                             \
        "1:\n\t" ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP       \
        ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP ECC_DSP_MAC3_GROUP                \
        ".ifne (. - 1b) - 640\n\t.error \"ecc_dsp_gemm3: a group is not 80 bytes\"\n\t.endif\n\t"        \
        "ldr %[t0], %[me]\n\t"                                                                     \
        "cmp %[x], %[t0]\n\t"                                                                      \
        "bne 1b\n\t"                                                                               \
        EPI                                                                                        \
        "ldr %[t0], %[moa]\n\t"                                                                    \
        "ldr %[t1], %[mob]\n\t"                                                                    \
        "ldr %[t2], %[moc]\n\t"                                                                    \
        "strb %[b0], [%[t0], %[t1]]\n\t"                                                           \
        "strb %[c0], [%[t0], %[t2]]\n\t"                                                           \
        "strb %[a0], [%[t0]], #1\n\t"                                                              \
        "strb %[b1], [%[t0], %[t1]]\n\t"                                                           \
        "strb %[c1], [%[t0], %[t2]]\n\t"                                                           \
        "strb %[a1], [%[t0]], #1\n\t"                                                              \
        "str %[t0], %[moa]\n\t"                                                                    \
        "ldr %[t1], %[mend]\n\t"                                                                   \
        "cmp %[t0], %[t1]\n\t"                                                                     \
        "bne 2b\n\t"                                                                               \
        : [a0] "=&r"(a0), [a1] "=&r"(a1), [b0] "=&r"(b0), [b1] "=&r"(b1), [c0] "=&r"(c0), [c1] "=&r"(c1), \
          [x] "=&r"(x), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), \
          [t5] "=&r"(t5), [w] "+r"(w), [moa] "+m"(m.oa), [ment] "=m"(m.entry)                      \
        : [mc] "m"(m.cols), [msk] "m"(m.skip), [me] "m"(m.xend), [mob] "m"(m.ob), [moc] "m"(m.oc), \
          [mend] "m"(m.oend)                                                                       \
        : "cc", "memory" ECC_DSP_VFP3_CLOBBERS)

/* requantize one 3-column row sum set in C: the stores of the C walk */
#define ECC_DSP_PUT3(o, acc_a, acc_b, acc_c, mult, which)                                          \
    do {                                                                                           \
        (o)[0] = ecc_dsp_out_sk(acc_a, mult, sk, which, lo, hi, mode);                             \
        (o)[ob] = ecc_dsp_out_sk(acc_b, mult, sk, which, lo, hi, mode);                            \
        (o)[oc] = ecc_dsp_out_sk(acc_c, mult, sk, which, lo, hi, mode);                            \
    } while (0)

/* One GEMM pass over all output channels for three q15 columns (3-column layout; `groups` >= 1 4-k
 * groups: K zero-padded to a multiple of 4, packing.gemm_groups(k, 4)); outputs of column A at out_a, of B at out_a + ob,
 * of C at out_a + oc (ob, oc may be 0 or repeat a column: the same value is stored twice). Assembly for
 * RELU, FULL and F32 with the range [-128, 127] (optimised builds); every other call takes the C walk. */
static inline __attribute__((always_inline)) void ecc_dsp_gemm_3col_body(
    const int32_t *cols, int32_t groups, const int8_t *w, int32_t lo, int32_t hi, int32_t out_c, int8_t *out_a,
    int32_t ob, int32_t oc, const int mode)
{
    int32_t pairs = out_c >> 1;
    int8_t *oa = out_a;
#if ECC_DSP_GEMM_ASM
    if ((mode == ECC_DSP_RELU || mode == ECC_DSP_FULL ||
         (mode == ECC_DSP_F32 && ECC_DSP_FPU && lo == -128 && hi == 127)) && pairs > 0) {
        int32_t a0, a1, b0, b1, c0, c1, x, t0, t1, t2, t3, t4, t5;
        struct { const int32_t *cols, *xend; int32_t skip, entry, ob, oc; int8_t *oa, *oend; } m = {
            cols, cols + ECC_DSP_C3 * groups, 80 * (8 - ((groups - 1) & 7)) + 1, 0, ob, oc, oa, oa + 2 * pairs};
        if (mode == ECC_DSP_RELU) {
            ECC_DSP_GEMM3_PAIRS(ECC_DSP_EPI3_RELU);
#if ECC_DSP_FPU
        } else if (mode == ECC_DSP_F32) {
            ECC_DSP_GEMM3_PAIRS(ECC_DSP_EPI3_F32);
#endif
        } else {
            ECC_DSP_GEMM3_PAIRS(ECC_DSP_EPI3_FULL);
        }
        (void)t4;
        (void)t5;
        oa = m.oa;
        pairs = 0;
    }
#endif
    for (; pairs > 0; --pairs, oa += 2) { /* CLAMP, F32 of other ranges, -O0: the same walk in C */
        const int32_t *r = (const int32_t *)(const void *)w;
        const int32_t *x = cols;
        int32_t a0 = r[0], a1 = r[1], b0 = r[0], b1 = r[1], c0 = r[0], c1 = r[1], g, sk;
        w += 8;
        for (g = 0; g < groups; ++g, w += 8, x += ECC_DSP_C3) {
            const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            const int32_t e1 = __sxtb16(w1), o1 = ecc_dsp_sxtb16_ror8(w1);
            a0 = __smlad(e0, x[0], __smlad(o0, x[1], a0));
            a1 = __smlad(e1, x[0], __smlad(o1, x[1], a1));
            b0 = __smlad(e0, x[2], __smlad(o0, x[3], b0));
            b1 = __smlad(e1, x[2], __smlad(o1, x[3], b1));
            c0 = __smlad(e0, x[4], __smlad(o0, x[5], c0));
            c1 = __smlad(e1, x[4], __smlad(o1, x[5], c1));
        }
        r = (const int32_t *)(const void *)w;
        w += 12;
        sk = r[2];
        ECC_DSP_PUT3(oa, a0, b0, c0, r[0], 0);
        ECC_DSP_PUT3(oa + 1, a1, b1, c1, r[1], 1);
    }
    if (out_c & 1) { /* odd last row: bias, 4 bytes per group, mult, sk */
        const int32_t *x = cols;
        int32_t a = ecc_dsp_ld4(w), b = a, c = a, g, sk;
        w += 4;
        for (g = 0; g < groups; ++g, w += 4, x += ECC_DSP_C3) {
            const int32_t w0 = ecc_dsp_ld4(w);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            a = __smlad(e0, x[0], __smlad(o0, x[1], a));
            b = __smlad(e0, x[2], __smlad(o0, x[3], b));
            c = __smlad(e0, x[4], __smlad(o0, x[5], c));
        }
        sk = ecc_dsp_ld4(w + 4);
        ECC_DSP_PUT3(oa, a, b, c, ecc_dsp_ld4(w), 0);
    }
}

/* One out-of-line copy of the pass per mode, shared by conv2d and conv2d_1x1: every kernel file that
 * includes this header defines them weak, the linker keeps one definition and --gc-sections drops the
 * others (-ffunction-sections), so the 640-byte unrolled loop is in flash once, not once per kernel
 * (a call per pass of three pixels over all output channels costs a few instructions). */
#define ECC_DSP_GEMM3_SHARED(name, MODE)                                                                   \
    __attribute__((weak, noinline)) void name(const int32_t *cols, int32_t groups, const int8_t *w,       \
                                              int32_t lo, int32_t hi, int32_t out_c, int8_t *out_a,       \
                                              int32_t ob, int32_t oc)                                     \
    {                                                                                                      \
        ecc_dsp_gemm_3col_body(cols, groups, w, lo, hi, out_c, out_a, ob, oc, MODE);                     \
    }
void ecc_dsp_gemm3_relu(const int32_t *, int32_t, const int8_t *, int32_t, int32_t, int32_t, int8_t *, int32_t,
                        int32_t);
void ecc_dsp_gemm3_full(const int32_t *, int32_t, const int8_t *, int32_t, int32_t, int32_t, int8_t *, int32_t,
                        int32_t);
void ecc_dsp_gemm3_clamp(const int32_t *, int32_t, const int8_t *, int32_t, int32_t, int32_t, int8_t *, int32_t,
                         int32_t);
void ecc_dsp_gemm3_f32(const int32_t *, int32_t, const int8_t *, int32_t, int32_t, int32_t, int8_t *, int32_t,
                       int32_t);
/* defined only in the kernel files that call them (they define ECC_DSP_GEMM3_DEFINE first): model.c
 * includes this header for the declarations and must not compile the assembly (a core without the DSP
 * extension stops at the kernels' #error, not here) */
#ifdef ECC_DSP_GEMM3_DEFINE
ECC_DSP_GEMM3_SHARED(ecc_dsp_gemm3_relu, ECC_DSP_RELU)
ECC_DSP_GEMM3_SHARED(ecc_dsp_gemm3_full, ECC_DSP_FULL)
ECC_DSP_GEMM3_SHARED(ecc_dsp_gemm3_clamp, ECC_DSP_CLAMP)
ECC_DSP_GEMM3_SHARED(ecc_dsp_gemm3_f32, ECC_DSP_F32)
#endif

/* One GEMM pass (ecc_dsp_gemm_3col_body) through the shared copy of `mode` (a constant at every call). */
static inline __attribute__((always_inline)) void ecc_dsp_gemm_3col(
    const int32_t *cols, int32_t groups, const int8_t *w, int32_t lo, int32_t hi, int32_t out_c, int8_t *out_a,
    int32_t ob, int32_t oc, const int mode)
{
    if (mode == ECC_DSP_RELU) {
        ecc_dsp_gemm3_relu(cols, groups, w, lo, hi, out_c, out_a, ob, oc);
    } else if (mode == ECC_DSP_FULL) {
        ecc_dsp_gemm3_full(cols, groups, w, lo, hi, out_c, out_a, ob, oc);
    } else if (mode == ECC_DSP_CLAMP) {
        ecc_dsp_gemm3_clamp(cols, groups, w, lo, hi, out_c, out_a, ob, oc);
    } else {
        ecc_dsp_gemm3_f32(cols, groups, w, lo, hi, out_c, out_a, ob, oc);
    }
}

#endif /* ECC_DSP_GEMM3_H */
