/* edgecc DSP helpers (ACLE, Cortex-M4/M7/M33: __ARM_FEATURE_DSP) shared by the kernels in dsp/.
 *
 * Conventions prepared offline by toolchain/isa/packing.py:
 * - The input zero point is folded into the bias: acc = bias' + sum x * w over raw int8 x, so a
 *   tap in the padding reads the zero point itself (im2col fills padding with it).
 * - q15 columns: four int8 x0..x3 become the words (x0, x2) and (x1, x3) (SXTB16, SXTB16 ROR 8).
 *   Int8 weights in natural order widen the same way, so SMLAD pairs them directly. Two columns
 *   A, B are interleaved per 4-k group: A0 A1 B0 B1 (16 bytes).
 * - GEMM weights: output channels in pairs, the two rows interleaved per 4-k group (8 bytes),
 *   K zero-padded to a multiple of 8 (an even number of groups; 4 for the 2x3 GEMM of conv2d and
 *   conv2d_1x1, ecc_dsp_gemm3.h), each pair's bias before and its
 *   requantization after its weights (see "GEMM over packed weights" below).
 * - Requantization (ecc_dsp_out): per channel an int32 multiplier and a shift, per layer
 *   k = 2 * output_offset + 1. Exact against TFLite's double rounding whenever Python's bound
 *   on the accumulator holds. Three modes (ECC_DSP_RELU / FULL / CLAMP, one kernel entry point
 *   each): RELU layers (output range [-128, 127] with zero point -128) skip the rounding of
 *   negative values, which clamp to -128 either way; FULL needs no clamp beyond int8.
 *   `rounding: onnx`: Conv, depthwise and FC take ECC_DSP_F32 (onnxruntime's float32 output stage on
 *   the FPU, ecc_dsp_f32; the multiplier slot holds the float32 bits of the scale); transpose conv and
 *   Add keep the exact real product rounded once, ties to even, in three modes ECC_DSP_RNE,
 *   ECC_DSP_RNE_TIE and ECC_DSP_RNE_CLAMP (ecc_dsp_out).
 * 32-bit loads from int8 tensors go through memcpy (LDR tolerates misalignment, LDRD/LDM fault)
 * unless the tensor rows are word aligned (ecc_dsp_w32).
 */
#ifndef ECC_DSP_H
#define ECC_DSP_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

/* A word-aligned int8 tensor read as int32 words (may_alias: no strict-aliasing assumption). */
typedef int32_t ecc_dsp_w32 __attribute__((may_alias, aligned(4)));

/* four int8 from any address as one word (little endian) */
static inline int32_t ecc_dsp_ld4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* bytes 1 and 3 sign-extended into two int16 lanes (GCC 12 has no __ror and would emit a
 * separate ROR before SXTB16) */
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

/* saturate v >> 1 to int8 (SSAT with a shifted operand) */
static inline int32_t ecc_dsp_ssat8_asr1(int32_t v)
{
    int32_t r;
    __asm__("ssat %0, #8, %1, asr #1" : "=r"(r) : "r"(v));
    return r;
}

/* FPU code (ECC_DSP_F32) only where the compiler targets a single-precision FPU: boards without one
 * never call the F32 entry points (toolchain/isa/dsp.py requires `fpu`); there it compiles in soft float. */
#if defined(__ARM_FP) && (__ARM_FP & 4)
#define ECC_DSP_FPU 1
#define ECC_DSP_VFP_CLOBBERS , "s0", "s1", "s2", "s3", "s4", "s5"
#else
#define ECC_DSP_FPU 0
#define ECC_DSP_VFP_CLOBBERS
#endif

/* Requantization modes, chosen per layer in Python (the kernels have one entry point per mode). */
#define ECC_DSP_RELU 0  /* output range [-128, 127], zero point -128, every e >= 1 (2x3 GEMM: <= 23) */
#define ECC_DSP_FULL 1  /* output range [-128, 127] */
#define ECC_DSP_CLAMP 2 /* anything else */
#define ECC_DSP_RNE 3       /* rounding onnx: output range [-128, 127], every e >= 1, no tie reachable */
#define ECC_DSP_RNE_CLAMP 4 /* rounding onnx: anything else (any range, e in [0, 31], ties) */
#define ECC_DSP_RNE_TIE 5   /* rounding onnx: output range [-128, 127], every e >= 1, ties reachable */
#define ECC_DSP_F32 6       /* rounding onnx, Conv / depthwise / FC: onnxruntime's float32 stage (ecc_dsp_f32) */

#include "ecc_dsp_f32.h" /* the FPU stage of ECC_DSP_F32: the only float code of the DSP kernels */

/* The onnx output rescale: x * mult * 2^(-31 - e) rounded once, ties to even (numpy twin:
 * multiply_by_quantized_multiplier_rne, portable ecc_multiply_by_quantized_multiplier_rne), + off.
 * With acc2 = 2 acc, p = acc2 * mult (64-bit, |p| < 2^62) and T = 32 + e:
 * RNE(p / 2^T) = floor((p + 2^(T-1)) / 2^T) - [p mod 2^(T+1) == 2^(T-1)]
 * (round half up, minus one on an exact tie whose lower neighbour is even).
 * ECC_DSP_RNE (sh = e - 1 >= 0): the high word hi of p alone gives the half-up value,
 * floor((p + 2^(T-1)) / 2^T) = floor((hi + 2^(e-1)) / 2^e) (2^(T-1) is a multiple of 2^32, so the low
 * word cannot carry into it), and with k = 2 off + 1, ((hi >> sh) + k) >> 1 is that plus off (nested
 * floors): the RELU mode's instructions with SMULL for SMMULR. Python chooses the mode only where no
 * tie changes an output: a tie needs acc = 2^(T-2-a) * odd for mult = m_odd * 2^a, i.e. a value
 * v = odd * m_odd / 2, and half up differs from RNE only when the lower neighbour L = v - 1/2 is even,
 * giving L + 1 for L: visible only if L + off is in [-128, 126], i.e. (off in [-128, 127], L even)
 * |v| <= 254.5. packing.py requires m_odd >= 511 for every live channel, so |v| >= 255.5.
 * ECC_DSP_RNE_TIE (sh = e - 1, layers whose multipliers make ties reachable, e.g. power-of-two scales):
 * ECC_DSP_RNE minus the tie term. With q = hi >> sh, p's tie with an even lower neighbour is lo == 0,
 * the low sh bits of hi zero ((q << sh) == hi) and q mod 4 == 1 (bit e-1 of hi set: the half; bit e
 * clear: floor(p / 2^T) even); then ((q - 2 + k) >> 1) is the half-up value minus one, plus off.
 * ECC_DSP_RNE_CLAMP (sh = e): the formula above in 64-bit C, then the clamp. */
static inline int32_t ecc_dsp_rne_hi(int32_t acc2, int32_t mult)
{
    return (int32_t)(((int64_t)acc2 * mult) >> 32);
}

static inline int32_t ecc_dsp_rne_exact(int32_t acc2, int32_t mult, int32_t e)
{
    const int64_t p = (int64_t)acc2 * mult;
    const int32_t t = 32 + e;
    const int64_t up = (p + ((int64_t)1 << (t - 1))) >> t;
    const int32_t tie = ((uint64_t)p << (63 - t)) == ((uint64_t)1 << 62);
    return (int32_t)(up - tie); /* |p| < 2^62, t >= 32: |up| < 2^30 */
}

/* TFLite MultiplyByQuantizedMultiplier (double rounding, shift = -e <= 0) + output offset, clamped.
 * acc2 = 2 acc. h = SRDHM(acc, mult) = SMMULR(2 acc, mult). RoundingDivideByPOT(h, e) + off
 * = (k + ((2h + (h < 0 ? -1 : 0)) >> e)) >> 1 with k = 2 off + 1 (floor((y + k 2^e) / 2^(e+1)) as a
 * nested floor); sh = e. RELU: sh = e - 1 (e >= 1) and no sign term, exact after the clamp at
 * -128 because every h < 0 then lands at or below the zero point -128. */
static inline int8_t ecc_dsp_out(int32_t acc2, int32_t mult, int32_t sh, int32_t k, int32_t lo, int32_t hi,
                                 const int mode)
{
    int32_t h, y;
    if (mode == ECC_DSP_F32) { /* mult: the float32 bits of S / 2 for acc2 (ecc_dsp_f32), k >> 1 = off */
        return ecc_dsp_f32(acc2, mult, k >> 1, lo, hi);
    }
    if (mode == ECC_DSP_RNE) {
        return (int8_t)ecc_dsp_ssat8_asr1((ecc_dsp_rne_hi(acc2, mult) >> sh) + k);
    }
    if (mode == ECC_DSP_RNE_TIE) { /* ECC_DSP_OUT_RNE_TIE in C */
        const int64_t p = (int64_t)acc2 * mult;
        const int32_t hi = (int32_t)(p >> 32), q = hi >> sh;
        const int32_t fix = ((uint32_t)p == 0u) & ((q << sh) == hi) & ((q & 3) == 1);
        return (int8_t)ecc_dsp_ssat8_asr1(q - 2 * fix + k);
    }
    if (mode == ECC_DSP_RNE_CLAMP) {
        y = ecc_dsp_rne_exact(acc2, mult, sh) + (k >> 1);
        y = y < lo ? lo : y;
        return (int8_t)(y > hi ? hi : y);
    }
    h = ecc_dsp_smmulr(acc2, mult);
    if (mode == ECC_DSP_RELU) {
        return (int8_t)ecc_dsp_ssat8_asr1((h >> sh) + k);
    }
    y = ecc_dsp_ssat8_asr1(((2 * h + (h >> 31)) >> sh) + k);
    if (mode == ECC_DSP_CLAMP) {
        y = y < lo ? lo : y;
        y = y > hi ? hi : y;
    }
    return (int8_t)y;
}

/* 4 int8 (one word) -> the two q15 words of the column order */
static inline void ecc_dsp_q15x4(int32_t v, int32_t *dst)
{
    dst[0] = __sxtb16(v);
    dst[1] = ecc_dsp_sxtb16_ror8(v);
}

/* Widen k int8 (k % 4 == 0, src word aligned) into one slot of an interleaved q15 column
 * starting at dst (4 words per 4-k group); returns dst after the last group. */
static inline int32_t *ecc_dsp_widen_a(const int8_t *src, int32_t k, int32_t *dst)
{
    const ecc_dsp_w32 *s = (const ecc_dsp_w32 *)(const void *)src;
    int32_t n = k >> 3;
    if (n > 0) {
        int32_t a, b, t;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[a], %[b], [%[s]], #8\n\t"
            "sxtb16 %[t], %[a]\n\t"
            "sxtb16 %[a], %[a], ror #8\n\t"
            "strd %[t], %[a], [%[d]], #16\n\t"
            "sxtb16 %[t], %[b]\n\t"
            "sxtb16 %[b], %[b], ror #8\n\t"
            "strd %[t], %[b], [%[d]], #16\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [s] "+r"(s), [d] "+r"(dst), [n] "+r"(n), [a] "=&r"(a), [b] "=&r"(b), [t] "=&r"(t)
            :
            : "cc", "memory");
    }
    if (k & 4) {
        ecc_dsp_q15x4(s[0], dst);
        dst += 4;
    }
    return dst;
}

/* The same from any address (k % 4 == 0). */
static inline int32_t *ecc_dsp_widen_u(const int8_t *src, int32_t k, int32_t *dst)
{
    for (; k >= 8; k -= 8, src += 8, dst += 8) {
        const int32_t a = ecc_dsp_ld4(src), b = ecc_dsp_ld4(src + 4);
        ecc_dsp_q15x4(a, dst);
        ecc_dsp_q15x4(b, dst + 4);
    }
    if (k) {
        ecc_dsp_q15x4(ecc_dsp_ld4(src), dst);
        dst += 4;
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

/* ---- GEMM over packed weights (conv2d, conv2d_1x1, fully_connected) ----
 * The weight blob holds, per pair of output channels (rows r0, r1): bias r0, bias r1 (int32), the
 * two rows interleaved per 4-k group (8 bytes per group), mult r0, mult r1 (int32), and one word
 * sk = shift r0 | shift r1 << 8 | k << 16 (ECC_DSP_F32: the mults are the float32 scales, sk the output
 * offset); an odd last row: bias, its groups (4 bytes each), mult, sk. The kernel reads it front to back
 * with one pointer. */

/* one 4-k group of the 2x2 block: the two rows (t0, t1 widened to t2/t0, t3/t1) x columns A, B (t4/t5) */
#define ECC_DSP_MAC_GROUP \
    "ldrd %[t0], %[t1], [%[w]], #8\n\t" \
    "sxtb16 %[t2], %[t0]\n\t" \
    "sxtb16 %[t0], %[t0], ror #8\n\t" \
    "sxtb16 %[t3], %[t1]\n\t" \
    "sxtb16 %[t1], %[t1], ror #8\n\t" \
    "ldrd %[t4], %[t5], [%[x]], #8\n\t" \
    "smlad %[a0], %[t2], %[t4], %[a0]\n\t" \
    "smlad %[a0], %[t0], %[t5], %[a0]\n\t" \
    "smlad %[a1], %[t3], %[t4], %[a1]\n\t" \
    "smlad %[a1], %[t1], %[t5], %[a1]\n\t" \
    "ldrd %[t4], %[t5], [%[x]], #8\n\t" \
    "smlad %[b0], %[t2], %[t4], %[b0]\n\t" \
    "smlad %[b0], %[t0], %[t5], %[b0]\n\t" \
    "smlad %[b1], %[t3], %[t4], %[b1]\n\t" \
    "smlad %[b1], %[t1], %[t5], %[b1]\n\t"

/* ecc_dsp_out of one accumulator register, multiplier t0|t1, shift in the low byte of t2, k in t3 */
#define ECC_DSP_OUT_RELU(acc, m) \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smmulr %[" acc "], %[" acc "], %[" m "]\n\t" \
    "asr %[" acc "], %[" acc "], %[t2]\n\t" \
    "add %[" acc "], %[" acc "], %[t3]\n\t" \
    "ssat %[" acc "], #8, %[" acc "], asr #1\n\t"
#define ECC_DSP_OUT_RNE(acc, m) \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smull %[t4], %[" acc "], %[" acc "], %[" m "]\n\t" \
    "asr %[" acc "], %[" acc "], %[t2]\n\t" \
    "add %[" acc "], %[" acc "], %[t3]\n\t" \
    "ssat %[" acc "], #8, %[" acc "], asr #1\n\t"
/* The requantization of one record's pair (the two multipliers, sk; the accumulators a0, b0 of row 0 and
 * a1, b1 of row 1) for the modes of ecc_dsp_out with one OUT step per accumulator (see below). */
#define ECC_DSP_EPI(OUT) \
    "ldrd %[t0], %[t1], [%[w]], #8\n\t" \
    "ldr %[t2], [%[w]], #4\n\t" \
    "asr %[t3], %[t2], #16\n\t" \
    OUT("a0", "t0") OUT("b0", "t0") \
    "lsr %[t2], %[t2], #8\n\t" \
    OUT("a1", "t1") OUT("b1", "t1")
/* ECC_DSP_F32 (ecc_dsp_f32) of the pair, output range [-128, 127]: the multiplier slots hold the float32
 * bits of S (the GEMM accumulators are acc itself), the sk word the output offset; two VMOVs move the
 * four sums into s0..s3 and back, the products go straight into VCVTR (no FMA), then QADD and SSAT. */
#define ECC_DSP_EPI_F32 \
    "vldmia %[w]!, {s4-s5}\n\t" \
    "ldr %[t3], [%[w]], #4\n\t" \
    "vmov s0, s1, %[a0], %[b0]\n\t" \
    "vmov s2, s3, %[a1], %[b1]\n\t" \
    "vcvt.f32.s32 s0, s0\n\t" \
    "vcvt.f32.s32 s1, s1\n\t" \
    "vcvt.f32.s32 s2, s2\n\t" \
    "vcvt.f32.s32 s3, s3\n\t" \
    "vmul.f32 s0, s0, s4\n\t" \
    "vmul.f32 s1, s1, s4\n\t" \
    "vmul.f32 s2, s2, s5\n\t" \
    "vmul.f32 s3, s3, s5\n\t" \
    "vcvtr.s32.f32 s0, s0\n\t" \
    "vcvtr.s32.f32 s1, s1\n\t" \
    "vcvtr.s32.f32 s2, s2\n\t" \
    "vcvtr.s32.f32 s3, s3\n\t" \
    "vmov %[a0], %[b0], s0, s1\n\t" \
    "vmov %[a1], %[b1], s2, s3\n\t" \
    "qadd %[a0], %[a0], %[t3]\n\t" \
    "qadd %[b0], %[b0], %[t3]\n\t" \
    "qadd %[a1], %[a1], %[t3]\n\t" \
    "qadd %[b1], %[b1], %[t3]\n\t" \
    "ssat %[a0], #8, %[a0]\n\t" \
    "ssat %[b0], #8, %[b0]\n\t" \
    "ssat %[a1], #8, %[a1]\n\t" \
    "ssat %[b1], #8, %[b1]\n\t"

/* ECC_DSP_RNE_TIE (see ecc_dsp_rne_hi): t5 = q, x = low bits of hi and lo, n = q mod 4 xor 1; the
 * loop reloads x and n after the stores */
#define ECC_DSP_OUT_RNE_TIE(acc, m) \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smull %[t4], %[" acc "], %[" acc "], %[" m "]\n\t" \
    "asr %[t5], %[" acc "], %[t2]\n\t" \
    "lsl %[x], %[t5], %[t2]\n\t" \
    "eor %[x], %[x], %[" acc "]\n\t" \
    "orr %[x], %[x], %[t4]\n\t" \
    "and %[n], %[t5], #3\n\t" \
    "eor %[n], %[n], #1\n\t" \
    "orrs %[x], %[x], %[n]\n\t" \
    "it eq\n\t" \
    "subeq %[t5], %[t5], #2\n\t" \
    "add %[t5], %[t5], %[t3]\n\t" \
    "ssat %[" acc "], #8, %[t5], asr #1\n\t"
#define ECC_DSP_OUT_FULL(acc, m) \
    "lsl %[" acc "], %[" acc "], #1\n\t" \
    "smmulr %[" acc "], %[" acc "], %[" m "]\n\t" \
    "lsl %[t4], %[" acc "], #1\n\t" \
    "add %[t4], %[t4], %[" acc "], asr #31\n\t" \
    "asr %[t4], %[t4], %[t2]\n\t" \
    "add %[t4], %[t4], %[t3]\n\t" \
    "ssat %[" acc "], #8, %[t4], asr #1\n\t"

/* The stores of one pair of ECC_DSP_GEMM_PAIRS_AT: the next two channels (oa advances by 2). */
#define ECC_DSP_STORE_NEXT                                                                         \
        "ldr %[n], %[mo]\n\t"                                                                      \
        "strb %[b0], [%[oa], %[n]]\n\t"                                                            \
        "strb %[a1], [%[oa], #1]\n\t"                                                              \
        "strb %[a0], [%[oa]], #2\n\t"                                                              \
        "add %[x], %[oa], %[n]\n\t"                                                                \
        "strb %[b1], [%[x], #-1]\n\t"

/* Every output-channel pair of one 2x2-blocked GEMM pass, requantization and stores included, for
 * the modes with assembly (ECC_DSP_ASM_OK; EPI: ECC_DSP_EPI(OUT) or ECC_DSP_EPI_F32): columns `cols` (two interleaved q15 columns, 2 * nh 4-k groups, taken
 * four per loop iteration after an odd pair), outputs
 * of column A at oa, of column B at oa + ob. Assembly: 14 live values in registers, the loop
 * constants in memory. Returns the blob pointer after the last pair. STORE: where the four outputs
 * go (after OUT, t0..t5 are free): ECC_DSP_STORE_NEXT, or the sparse kernel's channel indices. */
#define ECC_DSP_GEMM_PAIRS(EPI) ECC_DSP_GEMM_PAIRS_AT(EPI, ECC_DSP_STORE_NEXT)
/* The assembly needs all 14 allocatable core registers, r7 included. Unoptimised builds (-O0) keep
 * r7 as the frame pointer (-fomit-frame-pointer does not change that at -O0), so GCC cannot
 * allocate the operands ("impossible constraints"): there every mode takes the C walk below, with
 * the same results. Optimised builds (-O1 and up, -Og, -Os) compile the assembly unchanged. */
#ifdef __OPTIMIZE__
#define ECC_DSP_GEMM_ASM 1
#else
#define ECC_DSP_GEMM_ASM 0
#endif
/* the calls the assembly walk implements: not the clamping modes, F32 for the range [-128, 127] only
 * (other ranges take the C walk) */
#define ECC_DSP_ASM_OK(mode, lo, hi) \
    ((mode) != ECC_DSP_CLAMP && (mode) != ECC_DSP_RNE_CLAMP && \
     ((mode) != ECC_DSP_F32 || (ECC_DSP_FPU && (lo) == -128 && (hi) == 127)))
#define ECC_DSP_GEMM_PAIRS_AT(EPI, STORE)                                                          \
    __asm__ volatile(                                                                              \
        "2:\n\t"                                                                                   \
        "ldrd %[a0], %[a1], [%[w]], #8\n\t"                                                        \
        "mov %[b0], %[a0]\n\t"                                                                     \
        "mov %[b1], %[a1]\n\t"                                                                     \
        "ldr %[x], %[mc]\n\t"                                                                      \
        "ldr %[n], %[mn]\n\t"                                                                      \
        "tst %[n], #1\n\t"                                                                         \
        "beq 3f\n\t"                                                                               \
        ECC_DSP_MAC_GROUP ECC_DSP_MAC_GROUP                                                        \
        "3:\n\t"                                                                                   \
        "lsrs %[n], %[n], #1\n\t"                                                                  \
        "beq 4f\n\t"                                                                               \
        "1:\n\t" ECC_DSP_MAC_GROUP ECC_DSP_MAC_GROUP ECC_DSP_MAC_GROUP ECC_DSP_MAC_GROUP           \
        "subs %[n], %[n], #1\n\t"                                                                  \
        "bne 1b\n\t"                                                                               \
        "4:\n\t"                                                                                   \
        EPI                                                                                        \
        STORE                                                                                      \
        "ldr %[n], %[mp]\n\t"                                                                      \
        "subs %[n], %[n], #1\n\t"                                                                  \
        "str %[n], %[mp]\n\t"                                                                      \
        "bne 2b\n\t"                                                                               \
        : [a0] "=&r"(a0), [a1] "=&r"(a1), [b0] "=&r"(b0), [b1] "=&r"(b1), [x] "=&r"(x), [n] "=&r"(n), \
          [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), [t5] "=&r"(t5), \
          [w] "+r"(w), [oa] "+r"(oa), [mp] "+m"(m.pairs)                                           \
        : [mc] "m"(m.cols), [mn] "m"(m.nh), [mo] "m"(m.ob)                                         \
        : "cc", "memory" ECC_DSP_VFP_CLOBBERS)

/* requantize one accumulator of a blob record in C (any mode): mult, the record's sk word, which
 * (ECC_DSP_F32: mult holds the float32 bits of S for acc itself, sk the output offset) */
static inline int8_t ecc_dsp_out_sk(int32_t acc, int32_t mult, int32_t sk, int32_t which, int32_t lo, int32_t hi,
                                    const int mode)
{
    if (mode == ECC_DSP_F32) {
        return ecc_dsp_f32(acc, mult, sk, lo, hi);
    }
    return ecc_dsp_out(2 * acc, mult, (sk >> (8 * which)) & 0xFF, sk >> 16, lo, hi, mode);
}

/* One GEMM pass over all output channels for two q15 columns (interleaved; `groups` 4-k groups,
 * even and >= 2: K is zero-padded to a multiple of 8, the values of a padding group in the columns
 * do not matter); outputs of column A at out_a, of column B at out_a + ob. */
static inline __attribute__((always_inline)) void ecc_dsp_gemm_2col(
    const int32_t *cols, int32_t groups, const int8_t *w, int32_t lo, int32_t hi, int32_t out_c, int8_t *out_a,
    int32_t ob, const int mode)
{
    int32_t pairs = out_c >> 1;
    int8_t *oa = out_a;
#if ECC_DSP_GEMM_ASM
    if (ECC_DSP_ASM_OK(mode, lo, hi) && pairs > 0) {
        int32_t a0, a1, b0, b1, x, n, t0, t1, t2, t3, t4, t5;
        struct { const int32_t *cols; int32_t nh, ob, pairs; } m = {cols, groups >> 1, ob, pairs};
        if (mode == ECC_DSP_RELU) {
            ECC_DSP_GEMM_PAIRS(ECC_DSP_EPI(ECC_DSP_OUT_RELU));
        } else if (mode == ECC_DSP_RNE) {
            ECC_DSP_GEMM_PAIRS(ECC_DSP_EPI(ECC_DSP_OUT_RNE));
        } else if (mode == ECC_DSP_RNE_TIE) {
            ECC_DSP_GEMM_PAIRS(ECC_DSP_EPI(ECC_DSP_OUT_RNE_TIE));
#if ECC_DSP_FPU
        } else if (mode == ECC_DSP_F32) {
            ECC_DSP_GEMM_PAIRS(ECC_DSP_EPI_F32);
#endif
        } else {
            ECC_DSP_GEMM_PAIRS(ECC_DSP_EPI(ECC_DSP_OUT_FULL));
        }
        pairs = 0;
    }
#endif
    for (; pairs > 0; --pairs, oa += 2) { /* CLAMP, RNE_CLAMP, F32 narrow: the same walk in C */
        const int32_t *r = (const int32_t *)(const void *)w;
        const int32_t *x = cols;
        int32_t a0 = r[0], a1 = r[1], b0 = r[0], b1 = r[1], g;
        w += 8;
        for (g = 0; g < groups; ++g, w += 8, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            const int32_t e1 = __sxtb16(w1), o1 = ecc_dsp_sxtb16_ror8(w1);
            a0 = __smlad(e0, x[0], __smlad(o0, x[1], a0));
            a1 = __smlad(e1, x[0], __smlad(o1, x[1], a1));
            b0 = __smlad(e0, x[2], __smlad(o0, x[3], b0));
            b1 = __smlad(e1, x[2], __smlad(o1, x[3], b1));
        }
        r = (const int32_t *)(const void *)w;
        w += 12;
        oa[0] = ecc_dsp_out_sk(a0, r[0], r[2], 0, lo, hi, mode);
        oa[ob] = ecc_dsp_out_sk(b0, r[0], r[2], 0, lo, hi, mode);
        oa[1] = ecc_dsp_out_sk(a1, r[1], r[2], 1, lo, hi, mode);
        oa[ob + 1] = ecc_dsp_out_sk(b1, r[1], r[2], 1, lo, hi, mode);
    }
    if (out_c & 1) { /* odd last row: bias, 4 bytes per group, mult, sk */
        const int32_t *x = cols;
        int32_t a = ecc_dsp_ld4(w), b = a, g;
        w += 4;
        for (g = 0; g < groups; ++g, w += 4, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w);
            const int32_t e0 = __sxtb16(w0), o0 = ecc_dsp_sxtb16_ror8(w0);
            a = __smlad(e0, x[0], __smlad(o0, x[1], a));
            b = __smlad(e0, x[2], __smlad(o0, x[3], b));
        }
        oa[0] = ecc_dsp_out_sk(a, ecc_dsp_ld4(w), ecc_dsp_ld4(w + 4), 0, lo, hi, mode);
        oa[ob] = ecc_dsp_out_sk(b, ecc_dsp_ld4(w), ecc_dsp_ld4(w + 4), 0, lo, hi, mode);
    }
}

/* The same for one q15 column (slot A of the interleaved buffer; slot B is not read). */
static inline __attribute__((always_inline)) void ecc_dsp_gemm_1col(
    const int32_t *cols, int32_t groups, const int8_t *w, int32_t lo, int32_t hi, int32_t out_c, int8_t *out,
    const int mode)
{
    int32_t oc, g;
    for (oc = 0; oc + 2 <= out_c; oc += 2) {
        const int32_t *x = cols;
        int32_t a0 = ecc_dsp_ld4(w), a1 = ecc_dsp_ld4(w + 4);
        w += 8;
        for (g = 0; g < groups; ++g, w += 8, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w), w1 = ecc_dsp_ld4(w + 4);
            a0 = __smlad(__sxtb16(w0), x[0], __smlad(ecc_dsp_sxtb16_ror8(w0), x[1], a0));
            a1 = __smlad(__sxtb16(w1), x[0], __smlad(ecc_dsp_sxtb16_ror8(w1), x[1], a1));
        }
        out[oc] = ecc_dsp_out_sk(a0, ecc_dsp_ld4(w), ecc_dsp_ld4(w + 8), 0, lo, hi, mode);
        out[oc + 1] = ecc_dsp_out_sk(a1, ecc_dsp_ld4(w + 4), ecc_dsp_ld4(w + 8), 1, lo, hi, mode);
        w += 12;
    }
    if (oc < out_c) {
        const int32_t *x = cols;
        int32_t a0 = ecc_dsp_ld4(w);
        w += 4;
        for (g = 0; g < groups; ++g, w += 4, x += 4) {
            const int32_t w0 = ecc_dsp_ld4(w);
            a0 = __smlad(__sxtb16(w0), x[0], __smlad(ecc_dsp_sxtb16_ror8(w0), x[1], a0));
        }
        out[oc] = ecc_dsp_out_sk(a0, ecc_dsp_ld4(w), ecc_dsp_ld4(w + 4), 0, lo, hi, mode);
    }
}

#endif /* ECC_DSP_H */
