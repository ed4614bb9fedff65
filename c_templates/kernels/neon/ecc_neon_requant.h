/* edgecc NEON helpers: the output stage: TFLite's MultiplyByQuantizedMultiplier on four
 * lanes (rounding: tflm), under rounding: onnx onnxruntime's float32 requantization (Conv /
 * depthwise / FC) or the product rounded once, ties to even (Add), output offset, clamp, int8 stores.
 * Part of ecc_neon.h, where the conventions are documented. */
#ifndef ECC_NEON_REQUANT_H
#define ECC_NEON_REQUANT_H

#include "ecc_neon_base.h"

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

/* rounding: onnx, the output stage of Conv / depthwise / FC (onnxruntime's integer kernels,
 * MlasRequantizeOutput): rint(fl32(fl32(acc) * S)) per lane, S the channel's float32 scale (the blob's
 * mult lane holds its bits: toolchain/isa/neon_packing.py rq_lanes, from fixed_point.f32_scale). SCVTF
 * rounds acc to nearest even as C's (float) does, FMUL is one float32 rounding, FCVTNS rounds to
 * nearest, ties to even, saturating at int32 (the int8 output stage keeps the sign: exact after the
 * clamp). |acc| < 2^31 and S < 2^31 keep the product finite. The product feeds the conversion and no
 * add: nothing can be contracted into an FMA. Numpy twin: fixed_point.requantize_s8_f32. */
ECC_NEON_INLINE int32x4_t ecc_neon_rq_f32(int32x4_t acc, int32x4_t scale_bits)
{
    return vcvtnq_s32_f32(vmulq_f32(vcvtq_f32_s32(acc), vreinterpretq_f32_s32(scale_bits)));
}

/* rounding: onnx, neon/add's output. x * mult * 2^(shift - 31) rounded once, ties to even, per lane: equal to the portable
 * ecc_multiply_by_quantized_multiplier_rne for shift in [-31, 30] and mult 0 or >= 2^17 where
 * shift >= -7 (toolchain/isa/neon_packing.py requant_ok). The lanes hold (ecc_neon_rne_lanes):
 *   nmult = -mult; lsh = shift + 8 and s = 8 when shift >= -7, else lsh = 0 and s = -shift (so s >= 8 and
 *   t = 31 + s = 31 - shift + lsh); lshb = lsh | 2^s; rsh = -s.
 * Why it is exact. SQSHL reads the low byte of lshb only (= lsh; 2^s >= 2^8 lies above it). Let
 * x' = x 2^lsh (saturated) and q = x' nmult = -(the real product p, scaled by 2^lsh); h = SQDMULH(x',
 * nmult) = floor(q / 2^31) (no saturation: nmult > INT32_MIN), r = q mod 2^31 = the low 31 bits of
 * MUL(x', nmult). For t = 31 + s, RNE(q / 2^t) = floor((q + 2^(t-1) - 1 + q_t) / 2^t) with q_t = bit t
 * of q = bit s of h; as t - 1 >= 31 this is floor((h - c + 2^(s-1)) / 2^s) with c = [r == 0 && bit s of h
 * == 0] (the fraction r / 2^31 never carries). c may also demand any bits of h below s - 1 to be zero
 * (those of lsh in lshb): h - 1 and h round alike unless h mod 2^s == 2^(s-1). With n = -1 unless c
 * (two CMTST and an ORR), h - c = h - 1 - n, and floor((v - 1 + 2^(s-1)) / 2^s) = -SRSHL(-v, -s), so
 * SRSHL(n - h, rsh) = -RNE(q / 2^t) = RNE(p 2^lsh / 2^t) (ties to even are symmetric): the multiplier's
 * sign flip stands for the final negation. n - h fits int32 (h > INT32_MIN). A saturated x' (only when
 * lsh > 0, |x| >= 2^(23 - shift)) gives |result| >= mult / 2^8 - 1 >= 511, as does the exact one, with
 * the same sign: both clamp to the same int8 bound in the output stage. */
ECC_NEON_INLINE int32x4_t ecc_neon_mbqm_rne(int32x4_t x, int32x4_t nmult, int32x4_t lshb, int32x4_t rsh)
{
    const int32x4_t xs = vqshlq_s32(x, lshb);
    const int32x4_t h = vqdmulhq_s32(xs, nmult);
    const uint32x4_t n = vorrq_u32(vtstq_s32(h, lshb), vtstq_s32(vmulq_s32(xs, nmult), vdupq_n_s32(INT32_MAX)));
    return vrshlq_s32(vsubq_s32(vreinterpretq_s32_u32(n), h), rsh);
}

/* Requantization of four accumulators (the bias already in them) with the lanes {mult, lsh, rsh} of
 * the blob {bias', mult, lsh, rsh}: ecc_neon_mbqm; under ECC_NEON_F32 in `mode` ecc_neon_rq_f32 (blob
 * {bias', float32 scale bits, 0, 0}); under ECC_NEON_RNE ecc_neon_mbqm_rne (lanes {-mult, lsh | 2^s,
 * -s} of ecc_neon_rne_lanes). */
ECC_NEON_INLINE int32x4_t ecc_neon_rq3(int32x4_t acc, int32x4_t mult, int32x4_t lsh, int32x4_t rsh, const int mode)
{
    if (mode & ECC_NEON_F32) {
        (void)lsh;
        (void)rsh;
        return ecc_neon_rq_f32(acc, mult);
    }
    if ((mode & ECC_NEON_RNE) && (mode & ECC_NEON_TIES)) {
        return ecc_neon_mbqm_rne(acc, mult, lsh, rsh);
    }
    if (mode & ECC_NEON_RNE) { /* ecc_neon_mbqm_rne with n = -1: exact unless an unclamped tie, see below */
        return vrshlq_s32(vmvnq_s32(vqdmulhq_s32(vqshlq_s32(acc, lsh), mult)), rsh);
    }
    return ecc_neon_mbqm(acc, mult, lsh, rsh);
}

/* The lanes {-mult, lsh | 2^s, -s} of ecc_neon_mbqm_rne for one multiplier and shift in [-31, 30]
 * (neon/add's output). Returns whether the multiplier may requantize an exact tie that the int8 clamp
 * keeps, when the tie test of ecc_neon_rq3 (ECC_NEON_TIES) is needed. Dropping it (n = -1 in
 * ecc_neon_mbqm_rne) changes a result only at an exact tie with an even floor. A tie needs x' mult = 0
 * mod 2^(30 + s), i.e. x a multiple of 2^(30 + s - lsh - z) for mult = odd 2^z: so x != 0 and
 * |x mult 2^(shift - 31)| >= odd / 2 (s - lsh + shift = 0). With odd >= 2^10 every tie lies at
 * |result| >= 512, clamped alike; calibrated multipliers have odd parts near 2^30. */
ECC_NEON_INLINE int ecc_neon_rne_lanes(int32_t mult, int32_t shift, int32x4_t *lanes)
{
    const int32_t lsh = shift + 8 > 0 ? shift + 8 : 0; /* neon_packing.RNE_PRESHIFT */
    const int32_t s = lsh - shift;
    const uint32_t odd = mult > 0 ? (uint32_t)mult >> __builtin_ctz((uint32_t)mult) : 1024u;
    lanes[0] = vdupq_n_s32(-mult);
    lanes[1] = vdupq_n_s32((int32_t)((uint32_t)lsh | (1u << s)));
    lanes[2] = vdupq_n_s32(-s);
    return odd < 1024u;
}

/* ecc_neon_rq3 with one quad of the blob (the CHWN kernels broadcast one channel's lanes instead) */
ECC_NEON_INLINE int32x4_t ecc_neon_rq(int32x4_t acc, int32x4x4_t q, const int mode)
{
    return ecc_neon_rq3(acc, q.val[1], q.val[2], q.val[3], mode);
}

/* Average pooling's rounding division (neon/avg_pool2d*): (acc + (acc > 0 ? half : -half)) / count,
 * C's truncating division, as a float32 division truncated (exact below 2^24) */
ECC_NEON_INLINE int32x4_t ecc_neon_avg_div(int32x4_t acc, int32x4_t half, float32x4_t count)
{
    const int32x4_t num = vaddq_s32(acc, vbslq_s32(vcgtzq_s32(acc), half, vnegq_s32(half)));
    return vcvtq_s32_f32(vdivq_f32(vcvtq_f32_s32(num), count));
}

/* rounding: onnx: (acc - zc) / count rounded to nearest, ties to even (zc = the zero point times count;
 * the zero point comes back as the output offset). Exact: |acc - zc| <= 255 count < 2^24 converts
 * exactly, the float32 quotient q (|q| <= 255) is off by at most 2^-17 while a quotient that is no tie
 * lies at least 1 / (2 count) > 2^-17 from one (count <= 32768), so FCVTNS rounds it as the real one. */
ECC_NEON_INLINE int32x4_t ecc_neon_avg_div_rne(int32x4_t acc, int32x4_t zc, float32x4_t count)
{
    return vcvtnq_s32_f32(vdivq_f32(vcvtq_f32_s32(vsubq_s32(acc, zc)), count));
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

/* The output offset and the activation clamp in vector form. */
typedef struct {
    int16x8_t off;
    int8x16_t lo, hi;
} ecc_neon_out_t;

ECC_NEON_INLINE ecc_neon_out_t ecc_neon_out_params(int32_t output_offset, int32_t act_min, int32_t act_max)
{
    ecc_neon_out_t o;
    o.off = vdupq_n_s16((int16_t)output_offset);
    o.lo = vdupq_n_s8((int8_t)act_min);
    o.hi = vdupq_n_s8((int8_t)act_max);
    return o;
}

/* the requantized accumulators of one GEMM tile (nq channel quads; n channels stored) to out */
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

/* ---- the output stage of the sparse pointwise kernels (conv2d_1x1_sparse[_dot]_s8.c.j2) ----
 * The output channels proven constant (toolchain/isa/packing.py constant_channels) are neither stored
 * nor computed: the GEMM writes the live channels of up to 4 pixels into a staging area (scratch,
 * rows of live_c int8) and ecc_neon_sparse_merge builds each output pixel from it, 16 channels a step.
 * Map (isa/neon_packing.pack_sparse_map), the start of the `weights` blob, int8:
 * - per block of 16 output channels (the last one padded): the constant row (each constant
 *   channel's value, 0 at live channels), then 16 TBL indices (the channel's rank among the
 *   block's live channels, or 0xFF at constant channels, where TBL gives 0);
 * - per block, the number of live channels before it (int32, little-endian), padded to 16 bytes;
 * then the SDOT / Armv8.0 GEMM weights of the live rows. The live channels keep their order, so a
 * block's live outputs are one run of the staging row: one 16-byte load, one TBL, one ORR with the
 * constant row give the block's 16 outputs. */

/* Bytes of the map of out_c channels (the GEMM weights follow it). */
ECC_NEON_INLINE int32_t ecc_neon_sparse_map_bytes(int32_t out_c)
{
    const int32_t nb = (out_c + 15) >> 4;
    return 32 * nb + ((4 * nb + 15) & ~15);
}

/* One output pixel (out_c int8 at out) from its staging row st (live outputs in channel order,
 * readable 16 bytes past the row's live_c) and the map. */
ECC_NEON_INLINE void ecc_neon_sparse_merge(int8_t *out, const int8_t *st, const int8_t *map, int32_t out_c)
{
    const int32_t nb = (out_c + 15) >> 4;
    const int8_t *starts = map + 32 * nb;
    int32_t c, s;
    int8x16_t v;
    for (c = 0; c + 16 <= out_c; c += 16, map += 32, starts += 4) {
        memcpy(&s, starts, 4);
        v = vorrq_s8(vqtbl1q_s8(vld1q_s8(st + s), vld1q_u8((const uint8_t *)map + 16)), vld1q_s8(map));
        vst1q_s8(out + c, v);
    }
    if (c < out_c) { /* the last block: out_c % 16 channels */
        int8_t last[16];
        memcpy(&s, starts, 4);
        v = vorrq_s8(vqtbl1q_s8(vld1q_s8(st + s), vld1q_u8((const uint8_t *)map + 16)), vld1q_s8(map));
        vst1q_s8(last, v);
        ecc_neon_copy(out + c, last, out_c - c);
    }
}

#endif /* ECC_NEON_REQUANT_H */
