/* edgecc DSP int8 kernel prototypes (Cortex-M4/M7/M33, ACLE DSP). Chosen per node by the compiler
 * (the `variants` of the op modules in toolchain/ops/); each one is bit-exact with its portable counterpart.
 *
 * Differences from ecc_kernels.h, all prepared offline by toolchain/ops/packing.py:
 * - input_zp instead of input_offset: the offset is folded into `bias` (bias + offset * sum(w)),
 *   so padded taps read the zero point;
 * - rq: per output channel {mult, c, e1} (ecc_dsp_requant) instead of out_mult/out_shift and the
 *   output offset;
 * - GEMM weights (conv2d, conv2d_1x1, fully_connected) re-packed: `groups` 4-k groups per row,
 *   output channels in interleaved pairs (ecc_dsp.h); depthwise weights keep their layout.
 * Argument order as everywhere: scratch, params, quant, input dims, input, weight dims, weights,
 * bias, output dims, output. Scratch sizes: toolchain/ops/packing.py.
 */
#ifndef ECC_DSP_KERNELS_H
#define ECC_DSP_KERNELS_H

#include <stdint.h>

int ecc_dsp_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t groups, const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_dsp_conv2d_1x1_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t groups, const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_dsp_depthwise_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t depth_multiplier, int32_t input_zp, int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_dsp_depthwise_conv2d_3x3_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
    int32_t input_zp, int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_dsp_fully_connected_s8(int8_t *scratch,
    int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_depth, const int8_t *input,
    int32_t groups, const int8_t *weights, const int32_t *bias,
    int32_t out_depth, int8_t *output);

#endif /* ECC_DSP_KERNELS_H */
