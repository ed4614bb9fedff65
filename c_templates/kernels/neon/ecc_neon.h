/* edgecc NEON helpers (AArch64 Advanced SIMD) shared by the kernels in neon/.
 *
 * Conventions prepared offline by toolchain/isa/neon.py (NHWC kernels; the CHWN kernels,
 * *_chwn_s8, vectorise across the batch and keep TFLM's input offset, see toolchain/isa/neon_chwn.py):
 * - The input zero point is folded into the bias (bias' = bias + input_offset * sum w, wrapping like
 *   the int32 accumulator), so the kernels multiply raw int8 values and a padded tap reads the zero
 *   point itself (im2col fills padding with it; the depthwise kernels point such taps at a row of it).
 * - Requantization parameters travel as one int32 blob, per quad of output channels four vectors:
 *   bias', multiplier, left shift max(shift, 0), right shift min(shift, 0) (ecc_neon_rq; one LD1 of
 *   four registers). Output channels are padded to a multiple of 4 (multiplier 0). The rounding: onnx
 *   twins (`_onnx`, mode ECC_NEON_F32) read {bias', float32 scale (its bits), 0, 0} instead: the
 *   float32 output stage of onnxruntime (ecc_neon_rq_f32; the scale is fixed_point.f32_scale).
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
 *   chosen only when no lane pairs two -128 weights (BL-04): x w lies in [-16256, 16384] for int8 x and
 *   w, so a pair leaves int16 only as (-128)(-128) + (-128)(-128) (toolchain/isa/neon_packing.py
 *   gemm_pair_safe, taps_pair_safe). Otherwise the compiler picks the "nopair" entry points (one
 *   product per lane).
 *   No kernel here multiplies two activations.
 * - Dotprod kernels carry ECC_NEON_DOT (function-level target attribute), so a build for plain
 *   Armv8.0 never emits SDOT outside them; the compiler only chooses them for boards declaring the
 *   `dotprod` feature (KernelVariant.requires).
 *
 * The helpers are split by purpose: ecc_neon_base.h (intrinsics, attributes, byte moves),
 * ecc_neon_requant.h (output stage), ecc_neon_im2col.h, ecc_neon_gemm_dot.h, ecc_neon_gemm_mla.h and
 * ecc_neon_depthwise.h; this header includes them all (the kernels include only this one).
 */
#ifndef ECC_NEON_H
#define ECC_NEON_H

#include "ecc_neon_base.h"
#include "ecc_neon_requant.h"
#include "ecc_neon_im2col.h"
#include "ecc_neon_gemm_dot.h"
#include "ecc_neon_gemm_mla.h"
#include "ecc_neon_depthwise.h"

#endif /* ECC_NEON_H */
