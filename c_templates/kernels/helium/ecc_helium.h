/* edgecc Helium (MVE, Cortex-M55: __ARM_FEATURE_MVE) helpers shared by the kernels in helium/.
 *
 * Conventions prepared offline by toolchain/isa/helium.py:
 * - The input zero point is folded into the bias: acc = bias' + sum x * w over raw int8 x, with
 *   bias' = bias - zp * sum w modulo 2^32 (the int32 accumulator wraps like the portable one, so
 *   the sum is the same int32), and a tap in the padding reads the zero point itself.
 * - GEMM weights (conv2d, conv2d_1x1, fully_connected): output channels in quads; per quad for
 *   every 16-k chunk the four rows' 16 int8 one after the other (64 bytes), then the folded
 *   biases, the multipliers and the shifts (int32 x 4 each, 48 bytes). K is zero-padded to a
 *   multiple of 16 and out_c to a multiple of 4 (the padding channels have multiplier 0 and are
 *   never stored).
 * - Depthwise weights (depthwise_conv2d_s8.c.j2): 16 lanes per group (16 channels, or 16 / C
 *   pixels of C channels); per group bias, multiplier and shift as four int32 x 4 vectors each in
 *   the lane order of the widened accumulators (lanes {0,4,8,12}, {2,6,10,14}, {1,5,9,13},
 *   {3,7,11,15}), then per tap 16 int8 in lane order. depthwise_conv2d_3x3_s8.c.j2: per block of
 *   four channels the 4 x 4-window weight vectors, then bias, multiplier and shift as int32 x 4.
 * - Requantization (ecc_helium_rq): vqrdmulh is gemmlowp's SaturatingRoundingDoublingHighMul;
 *   vrshl rounds half up, gemmlowp's RoundingDivideByPOT half away from zero: the FIX mode adds -1
 *   to negative values with a non-zero shift first. NOFIX skips it where it cannot matter: a
 *   negative high product gives at most output_offset either way, and the layer clamps at
 *   act_min >= output_offset (ReLU-like ranges), or no channel shifts.
 * - Rounding "onnx" of Conv / depthwise / FC (ECC_HELIUM_F32, the `_onnx` entry points; MVE
 *   float, board feature mve_fp): onnxruntime's float32 output stage (MLAS MlasRequantizeOutput,
 *   toolchain.ops.fixed_point.requantize_s8_f32): VCVT.F32.S32 of acc + bias' (round to nearest
 *   even), VMUL.F32 by the channel's float32 scale S, VCVTN.S32.F32 (round to nearest, ties to
 *   even), then the output offset added with saturation (VQADD: the conversion saturates at int32,
 *   so a wrapped sum cannot pull a huge product back into range) and the integer clamp. The blob's
 *   `mult` word holds the bits of S (f32_scale(mult, shift), helium_pack.as_mode), its shift word
 *   is unused (0). The product goes straight into the conversion: there is no a * b + c for a
 *   compiler to contract into a fused multiply-add (the rounding of fl32(acc * S) must happen).
 * - ECC_HELIUM_RNE / ECC_HELIUM_RNE_TIES (Add's onnx output stage only, add_s8.c.j2): x * mult *
 *   2^(shift - 31) rounded once, ties to even (ecc_multiply_by_quantized_multiplier_rne), for shifts
 *   in [-31, -1]. With p = x * mult and s = -shift >= 1, vqdmulh gives h = floor(p / 2^31) (exact:
 *   mult >= 0, so never the one saturating pair) and vrshl(h, -s) = floor((h + 2^(s-1)) / 2^s) =
 *   floor((p + 2^(30+s)) / 2^(31+s)), the real value rounded half up: the low 31 bits of p cannot
 *   carry into bit 31+s. Half up equals ties to even except at exact ties, p an odd multiple of
 *   2^(30+s), i.e. x an odd multiple of 2^(30+s-v) with v the trailing zero bits of mult: the add
 *   kernel checks its tables bound the sums below that before it takes ECC_HELIUM_RNE.
 * - ECC_HELIUM_RNE_TIES (any sum): the same, minus 1 at a tie whose lower neighbour is even:
 *   l = vmul (the low 32 bits of p) has its low 31 bits zero and the low s + 1 bits of h are
 *   2^(s-1) (h << (31 - s) == 2^30). A shift >= 0 (s < 1) first multiplies x by 2^(shift + 1) with
 *   saturation (then s = 1): a saturated x has |x| >= 2^(30 - shift), so with a multiplier >= 2^30
 *   (checked offline) the real result is at least 2^29 in magnitude, and the saturated one too,
 *   with the same sign: both clamp to the same int8 bound.
 * Vector loads are 16-byte VLDRB (any alignment); VLDRW of the weight blobs needs them word
 * aligned (the blobs are 16-byte aligned and every record is a multiple of 16 bytes).
 */
#ifndef ECC_HELIUM_H
#define ECC_HELIUM_H

#include <arm_mve.h>
#include <stdint.h>

#define ECC_HELIUM_NOFIX 0
#define ECC_HELIUM_FIX 1
#define ECC_HELIUM_RNE 2
#define ECC_HELIUM_RNE_TIES 3
#define ECC_HELIUM_F32 4

/* n int8 from src to dst, a tail-predicated low-overhead loop (16 bytes per iteration) */
static inline void ecc_helium_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    __asm__ volatile(
        "wlstp.8 lr, %[n], 2f\n"
        "1:\n\t"
        "vldrb.8 q0, [%[s]], #16\n\t"
        "vstrb.8 q0, [%[d]], #16\n\t"
        "letp lr, 1b\n"
        "2:\n"
        : [s] "+r"(src), [d] "+r"(dst)
        : [n] "r"(n)
        : "q0", "lr", "memory");
}

/* n bytes of dst set to the lanes of v (all lanes equal) */
static inline void ecc_helium_fill(int8_t *dst, int8x16_t v, int32_t n)
{
    __asm__ volatile(
        "wlstp.8 lr, %[n], 2f\n"
        "1:\n\t"
        "vstrb.8 %q[v], [%[d]], #16\n\t"
        "letp lr, 1b\n"
        "2:\n"
        : [d] "+r"(dst)
        : [n] "r"(n), [v] "w"(v)
        : "lr", "memory");
}

/* {a, b, c, d} from four core registers (two VMOV) */
static inline int32x4_t ecc_helium_pack4(int32_t a, int32_t b, int32_t c, int32_t d)
{
    int32x4_t v;
    __asm__("vmov %q0[2], %q0[0], %1, %3\n\t"
            "vmov %q0[3], %q0[1], %2, %4"
            : "=&w"(v)
            : "r"(a), "r"(b), "r"(c), "r"(d));
    return v;
}

/* High product and rounding shift of TFLite's MultiplyByQuantizedMultiplier (shift <= 0), or with
 * fix = ECC_HELIUM_RNE / ECC_HELIUM_RNE_TIES Add's single rounding of rounding "onnx" (see above): ne
 * holds the shifts (= -exponent). */
static inline __attribute__((always_inline)) int32x4_t ecc_helium_mbqm(int32x4_t acc, int32x4_t mult, int32x4_t ne,
                                                                       const int fix)
{
    int32x4_t v;
    if (fix == ECC_HELIUM_RNE) {
        return vrshlq_s32(vqdmulhq_s32(acc, mult), ne);
    }
    if (fix == ECC_HELIUM_RNE_TIES) {
        const int32x4_t ns = vminq_s32(ne, vdupq_n_s32(-1)); /* -s, s >= 1 */
        const int32x4_t x = vqshlq_s32(acc, vmaxq_s32(vaddq_n_s32(ne, 1), vdupq_n_s32(0)));
        const int32x4_t h = vqdmulhq_s32(x, mult);
        /* z == 0 exactly at a tie to step down; clz(z) >> 5 is then 1, else 0 (predicated forms of this
         * test make GCC 12 fail with an internal compiler error) */
        const int32x4_t z = vorrq_s32(vshlq_n_s32(vmulq_s32(x, mult), 1),
                                      veorq_s32(vshlq_s32(h, vaddq_n_s32(ns, 31)), vdupq_n_s32(0x40000000)));
        v = vrshlq_s32(h, ns);
        return vsubq_s32(v, vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(vclzq_s32(z)), 5)));
    }
    v = vqrdmulhq_s32(acc, mult);
    if (fix) {
        v = vaddq_s32(v, vshrq_n_s32(vandq_s32(v, ne), 31));
    }
    return vrshlq_s32(v, ne);
}

/* onnxruntime's float32 output stage of four int32 sums (ECC_HELIUM_F32): rint(fl32(fl32(v) * s)),
 * saturated at int32. The product feeds the conversion directly (no add to fuse it with). */
static inline __attribute__((always_inline)) int32x4_t ecc_helium_f32_rq(int32x4_t v, float32x4_t s)
{
    return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(v), s));
}

/* requantize four accumulators (bias not yet added) to int32 outputs in [lo, hi]; ECC_HELIUM_F32:
 * mult holds the float32 scales' bits (ne unused) */
static inline __attribute__((always_inline)) int32x4_t ecc_helium_rq(int32x4_t acc, int32x4_t bias, int32x4_t mult,
                                                                     int32x4_t ne, int32_t off, int32x4_t lo,
                                                                     int32x4_t hi, const int fix)
{
    int32x4_t v;
    if (fix == ECC_HELIUM_F32) {
        v = vqaddq_n_s32(ecc_helium_f32_rq(vaddq_s32(acc, bias), vreinterpretq_f32_s32(mult)), off);
    } else {
        v = vaddq_n_s32(ecc_helium_mbqm(vaddq_s32(acc, bias), mult, ne, fix), off);
    }
    return vminq_s32(vmaxq_s32(v, lo), hi);
}

/* ---- GEMM over quad-packed weights (conv2d, conv2d_1x1, fully_connected) ----
 * Blob: per quad of output channels, the nk 16-k chunks (64 bytes each: the four channels' 16 int8
 * one after the other), then bias'[4], mult[4], shift[4] (int32). */

/* 16 k of two rows (q0, q1) against the four rows of a weight chunk */
#define ECC_HELIUM_MAC2x4(op)                                                              \
    "vldrb.8 q0, [%[l0]], #16\n\t"                                                         \
    "vldrb.8 q1, [%[l1]], #16\n\t"                                                         \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a0], q0, q2\n\t" op " %[b0], q1, q2\n\t"          \
    "vldrb.8 q3, [%[w]], #16\n\t" op " %[a1], q0, q3\n\t" op " %[b1], q1, q3\n\t"          \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a2], q0, q2\n\t" op " %[b2], q1, q2\n\t"          \
    "vldrb.8 q3, [%[w]], #16\n\t" op " %[a3], q0, q3\n\t" op " %[b3], q1, q3\n\t"

/* 16 k of one row (q0) */
#define ECC_HELIUM_MAC1x4(op)                                                              \
    "vldrb.8 q0, [%[l0]], #16\n\t"                                                         \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a0], q0, q2\n\t"                                   \
    "vldrb.8 q3, [%[w]], #16\n\t" op " %[a1], q0, q3\n\t"                                   \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a2], q0, q2\n\t"                                   \
    "vldrb.8 q3, [%[w]], #16\n\t" op " %[a3], q0, q3\n\t"

/* The remaining n chunks (n >= 0): one if n is odd, two if bit 1 is set, then four per iteration
 * (the MACs leave the flags of the LSRS alone). */
#define ECC_HELIUM_DOT_REST(MAC)                                                           \
    "lsrs %[n], %[n], #1\n\t"                                                              \
    "bcc 3f\n\t"                                                                           \
    MAC("vmladava.s8")                                                                     \
    "3:\n\t"                                                                               \
    "lsrs %[n], %[n], #1\n\t"                                                              \
    "bcc 4f\n\t"                                                                           \
    MAC("vmladava.s8") MAC("vmladava.s8")                                                  \
    "4:\n\t"                                                                               \
    "beq 2f\n"                                                                             \
    "1:\n\t"                                                                               \
    MAC("vmladava.s8") MAC("vmladava.s8") MAC("vmladava.s8") MAC("vmladava.s8")            \
    "subs %[n], %[n], #1\n\t"                                                              \
    "bne 1b\n"                                                                             \
    "2:\n\t"

/* Loop state of ecc_helium_gemm2 (int32 words, read by the assembly through one pointer: the
 * other core registers are busy there). */
typedef struct {
    const int8_t *r0, *r1; /* row starts */
    int32_t n;             /* chunks per row - 1 */
    int32_t off;           /* output offset */
    int32_t ob;            /* row 1's outputs at row 0's + ob */
    int8_t *end;           /* one past row 0's outputs */
} ecc_helium_gemm_t;

/* One GEMM pass of two rows over every quad of output channels, requantization and stores
 * included (the last quad predicated). o (r1) walks row 0's outputs; the byte stores of 32-bit
 * lanes need low registers: o, and the accumulator a0 (r0), free by then. */
#define ECC_HELIUM_GEMM2_ASM(RQ, OFF, STORE)                                                           \
    "9:\n\t"                                                                               \
    "ldr %[l0], [%[cfg]]\n\t"                                                              \
    "ldr %[l1], [%[cfg], #4]\n\t"                                                          \
    "ldr %[n], [%[cfg], #8]\n\t"                                                           \
    ECC_HELIUM_MAC2x4("vmladav.s8")                                                        \
    ECC_HELIUM_DOT_REST(ECC_HELIUM_MAC2x4)                                                 \
    "vmov q0[2], q0[0], %[a0], %[a2]\n\t"                                                  \
    "vmov q0[3], q0[1], %[a1], %[a3]\n\t"                                                  \
    "vmov q1[2], q1[0], %[b0], %[b2]\n\t"                                                  \
    "vmov q1[3], q1[1], %[b1], %[b3]\n\t"                                                  \
    "vldrw.32 q2, [%[w]], #16\n\t"                                                         \
    "vadd.i32 q0, q0, q2\n\t"                                                              \
    "vadd.i32 q1, q1, q2\n\t"                                                              \
    RQ                                                                                     \
    OFF                                                                                    \
    "vmax.s32 q0, q0, %q[lo]\n\t"                                                          \
    "vmax.s32 q1, q1, %q[lo]\n\t"                                                          \
    "vmin.s32 q0, q0, %q[hi]\n\t"                                                          \
    "vmin.s32 q1, q1, %q[hi]\n\t"                                                          \
    STORE
/* stores of a quad when out_c % 4 == 0 */
#define ECC_HELIUM_GEMM2_STORE4                                                            \
    "ldrd %[a0], %[a1], [%[cfg], #16]\n\t"                                                 \
    "add %[a0], %[a0], %[o]\n\t"                                                           \
    "vstrb.32 q0, [%[o]]\n\t"                                                              \
    "vstrb.32 q1, [%[a0]]\n\t"                                                             \
    "adds %[o], %[o], #4\n\t"                                                              \
    "cmp %[o], %[a1]\n\t"                                                                  \
    "blt 9b\n\t"
/* the same, the last quad predicated */
#define ECC_HELIUM_GEMM2_STORE_TAIL                                                        \
    "ldrd %[a0], %[a1], [%[cfg], #16]\n\t"                                                 \
    "add %[a0], %[a0], %[o]\n\t"                                                           \
    "subs %[a1], %[a1], %[o]\n\t"                                                          \
    "vctp.32 %[a1]\n\t"                                                                    \
    "vpstt\n\t"                                                                            \
    "vstrbt.32 q0, [%[o]]\n\t"                                                             \
    "vstrbt.32 q1, [%[a0]]\n\t"                                                            \
    "adds %[o], %[o], #4\n\t"                                                              \
    "cmp %[a1], #4\n\t"                                                                    \
    "bgt 9b\n\t"
/* TFLM's requantization of both vectors (the high product MUL, the fix-up FIX, the rounding shift) */
#define ECC_HELIUM_GEMM2_RQ(MUL, FIX)                                                      \
    "vldrw.32 q2, [%[w]], #16\n\t"                                                         \
    MUL " q0, q0, q2\n\t"                                                                   \
    MUL " q1, q1, q2\n\t"                                                                   \
    "vldrw.32 q2, [%[w]], #16\n\t"                                                         \
    FIX                                                                                    \
    "vrshl.s32 q0, q0, q2\n\t"                                                             \
    "vrshl.s32 q1, q1, q2\n\t"
/* onnxruntime's float32 output stage of both vectors (ECC_HELIUM_F32): the scales in q2, the unused
 * shift word skipped by the load's write-back; each product goes straight into VCVTN */
#define ECC_HELIUM_GEMM2_RQ_F32                                                            \
    "vldrw.32 q2, [%[w]], #32\n\t"                                                         \
    "vcvt.f32.s32 q0, q0\n\t"                                                              \
    "vcvt.f32.s32 q1, q1\n\t"                                                              \
    "vmul.f32 q0, q0, q2\n\t"                                                              \
    "vmul.f32 q1, q1, q2\n\t"                                                              \
    "vcvtn.s32.f32 q0, q0\n\t"                                                             \
    "vcvtn.s32.f32 q1, q1\n\t"
/* the output offset added (TFLM: from the loop state; its results cannot overflow) */
#define ECC_HELIUM_GEMM2_OFF                                                               \
    "ldr %[n], [%[cfg], #12]\n\t"                                                          \
    "vadd.i32 q0, q0, %[n]\n\t"                                                            \
    "vadd.i32 q1, q1, %[n]\n\t"
/* ECC_HELIUM_F32: with saturation (VCVTN saturates at int32), from a vector operand (voff) */
#define ECC_HELIUM_GEMM2_OFF_F32                                                           \
    "vqadd.s32 q0, q0, %q[voff]\n\t"                                                       \
    "vqadd.s32 q1, q1, %q[voff]\n\t"
#define ECC_HELIUM_GEMM2_F32_IN , [voff] "w"(voff)
/* the round-half-away fix-up of both vectors (shifts in q2) */
#define ECC_HELIUM_GEMM2_FIX                                                               \
    "vand q3, q0, q2\n\t"                                                                  \
    "vshr.s32 q3, q3, #31\n\t"                                                             \
    "vadd.i32 q0, q0, q3\n\t"                                                              \
    "vand q3, q1, q2\n\t"                                                                  \
    "vshr.s32 q3, q3, #31\n\t"                                                             \
    "vadd.i32 q1, q1, q3\n\t"

/* One quad of output channels for one row: requantized, stored at o0 (count: 4, or the predicated
 * tail). Returns the blob after the quad. */
static inline __attribute__((always_inline)) const int8_t *ecc_helium_quad1(
    const int8_t *r0, int32_t nk, const int8_t *w, int8_t *o0, int32_t count, int32_t off, int32x4_t lo,
    int32x4_t hi, const int fix)
{
    register int32_t a0 __asm__("r0"), a1 __asm__("r2"), a2 __asm__("r4"), a3 __asm__("r6");
    const int32_t *p;
    int32_t n = nk - 1;
    int32x4_t va;
    __asm__ volatile(ECC_HELIUM_MAC1x4("vmladav.s8") ECC_HELIUM_DOT_REST(ECC_HELIUM_MAC1x4)
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [l0] "+&r"(r0),
                       [w] "+&r"(w), [n] "+&r"(n)
                     :
                     : "q0", "q2", "q3", "cc", "memory");
    p = (const int32_t *)(const void *)w;
    va = ecc_helium_rq(ecc_helium_pack4(a0, a1, a2, a3), vldrwq_s32(p), vldrwq_s32(p + 4), vldrwq_s32(p + 8), off,
                       lo, hi, fix);
    if (count >= 4) {
        vstrbq_s32(o0, va);
    } else {
        vstrbq_p_s32(o0, va, vctp32q((uint32_t)count));
    }
    return w + 48;
}

/* Every output channel of one row. */
static inline __attribute__((always_inline)) void ecc_helium_gemm1(
    const int8_t *r0, int32_t nk, const int8_t *w, int32_t out_c, int8_t *o0, int32_t off, int32x4_t lo,
    int32x4_t hi, const int fix)
{
    int32_t c;
    for (c = 0; c < out_c; c += 4) {
        w = ecc_helium_quad1(r0, nk, w, o0 + c, out_c - c, off, lo, hi, fix);
    }
}

/* The GEMM2 assembly for requantization mode `fix` (a variable in scope): vqrdmulh with or without
 * the fix-up for TFLM, onnxruntime's float32 output stage for onnx (ECC_HELIUM_F32, the offset added
 * with saturation: the conversion saturates at int32; voff, the offset in every lane, in scope).
 * OPERANDS(extra inputs): the asm operands. */
#define ECC_HELIUM_GEMM2_MODES(STORE, OPERANDS)                                                                 \
    if (fix == ECC_HELIUM_F32) {                                                                                \
        __asm__ volatile(ECC_HELIUM_GEMM2_ASM(ECC_HELIUM_GEMM2_RQ_F32, ECC_HELIUM_GEMM2_OFF_F32, STORE)         \
                             OPERANDS(ECC_HELIUM_GEMM2_F32_IN));                                                \
    } else if (fix) {                                                                                           \
        __asm__ volatile(ECC_HELIUM_GEMM2_ASM(ECC_HELIUM_GEMM2_RQ("vqrdmulh.s32", ECC_HELIUM_GEMM2_FIX),        \
                                              ECC_HELIUM_GEMM2_OFF, STORE) OPERANDS());                         \
    } else {                                                                                                    \
        __asm__ volatile(ECC_HELIUM_GEMM2_ASM(ECC_HELIUM_GEMM2_RQ("vqrdmulh.s32", ""), ECC_HELIUM_GEMM2_OFF,    \
                                              STORE) OPERANDS());                                               \
    }

/* Every output channel of two rows r0, r1 (nk chunks of 16 int8 each, readable up to 16 * nk):
 * outputs at o0 and o1. The assembly pins 13 core registers and needs r7 as well; unoptimised
 * builds (-O0) keep r7 as the frame pointer and GCC cannot allocate the operands (an internal
 * compiler error in GCC 12), so there ecc_helium_gemm2 is two one-row passes (below ecc_helium_gemm1,
 * same results). */
#ifdef __OPTIMIZE__
static inline __attribute__((always_inline)) void ecc_helium_gemm2(
    const int8_t *r0, const int8_t *r1, int32_t nk, const int8_t *w, int32_t out_c, int8_t *o0, int8_t *o1,
    int32_t off, int32x4_t lo, int32x4_t hi, const int fix)
{
    register int32_t a0 __asm__("r0"), a1 __asm__("r2"), a2 __asm__("r4"), a3 __asm__("r6");
    register int32_t b0 __asm__("r8"), b1 __asm__("r10"), b2 __asm__("r12"), b3 __asm__("lr");
    register int8_t *o __asm__("r1") = o0;
    const ecc_helium_gemm_t m = {r0, r1, nk - 1, off, (int32_t)(o1 - o0), o0 + out_c};
    const ecc_helium_gemm_t *cfg = &m;
    const int32x4_t voff = vdupq_n_s32(off); /* ECC_HELIUM_F32 only */
    const int8_t *l0, *l1;
    int32_t n;
#define ECC_HELIUM_GEMM2_OPERANDS(IN)                                                               \
    : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [b0] "=&r"(b0), [b1] "=&r"(b1), \
      [b2] "=&r"(b2), [b3] "=&r"(b3), [l0] "=&r"(l0), [l1] "=&r"(l1), [n] "=&r"(n), [w] "+&r"(w),   \
      [o] "+&r"(o)                                                                                  \
    : [cfg] "r"(cfg), [lo] "w"(lo), [hi] "w"(hi), "m"(m) IN                                         \
    : "q0", "q1", "q2", "q3", "cc", "memory"
    if (out_c & 3) {
        ECC_HELIUM_GEMM2_MODES(ECC_HELIUM_GEMM2_STORE_TAIL, ECC_HELIUM_GEMM2_OPERANDS)
    } else {
        ECC_HELIUM_GEMM2_MODES(ECC_HELIUM_GEMM2_STORE4, ECC_HELIUM_GEMM2_OPERANDS)
    }
#undef ECC_HELIUM_GEMM2_OPERANDS
}
#endif

#ifndef __OPTIMIZE__
/* -O0 (see the optimised ecc_helium_gemm2 above): each row over the whole blob */
static inline __attribute__((always_inline)) void ecc_helium_gemm2(
    const int8_t *r0, const int8_t *r1, int32_t nk, const int8_t *w, int32_t out_c, int8_t *o0, int8_t *o1,
    int32_t off, int32x4_t lo, int32x4_t hi, const int fix)
{
    ecc_helium_gemm1(r0, nk, w, out_c, o0, off, lo, hi, fix);
    ecc_helium_gemm1(r1, nk, w, out_c, o1, off, lo, hi, fix);
}
#endif

#endif /* ECC_HELIUM_H */
