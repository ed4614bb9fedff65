/* edgecc NEON int8 kernel prototypes (AArch64 Advanced SIMD; `_dot` entry points need the Armv8.2
 * dot product extension). Chosen per node by the compiler (toolchain/isa/neon.py); each
 * one is bit-exact with its portable counterpart.
 *
 * Differences from ecc_kernels.h, all prepared offline (see ecc_neon.h):
 * - input_zp instead of input_offset: the offset is folded into the bias, padded taps read the zero
 *   point;
 * - `qparams`: per quad of output channels {bias', multiplier, left shift, right shift} as int32
 *   vectors (out_c padded to a multiple of 4);
 * - GEMM kernels (conv2d, conv2d_1x1, fully_connected): `weights` re-packed into the order the
 *   kernel reads, rows of `k_padded` int8 (conv2d_1x1: in_c, which must be a multiple of 4 for
 *   `_dot` and of 8 otherwise);
 * - depthwise kernels (depth multiplier 1, in_c % 8 == 0): weights re-packed per block of 16
 *   channels (8 for a last block), taps in order;
 * - Armv8.0 GEMM and depthwise kernels have a `_nopair` twin for weights pairing two -128 in an int16
 *   lane (BL-04).
 * add, avg_pool2d and max_pool2d take the portable arguments.
 * Argument order as everywhere: scratch, params, quant, input dims, input, weight dims, weights,
 * bias (qparams), output dims, output. Scratch sizes: toolchain/isa/neon.py.
 */
#ifndef ECC_NEON_KERNELS_H
#define ECC_NEON_KERNELS_H

#include <stdint.h>

int ecc_neon_conv2d_dot_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_nopair_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_neon_conv2d_1x1_dot_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_1x1_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_1x1_nopair_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

/* conv2d_1x1 without the output channels proven constant: live_c < out_c live channels; `weights`
 * starts with the map of the constant channels (ecc_neon_requant.h), then the live rows' GEMM
 * weights; qparams of the live channels only; scratch: 4 * live_c + 16 (the staging rows) */
int ecc_neon_conv2d_1x1_sparse_dot_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t live_c, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_1x1_sparse_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t live_c, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_conv2d_1x1_sparse_nopair_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t live_c, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_neon_depthwise_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_depthwise_conv2d_nopair_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_depthwise_conv2d_3x3_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);
int ecc_neon_depthwise_conv2d_3x3_nopair_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_neon_fully_connected_dot_s8(int8_t *scratch,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_depth, const int8_t *input,
    int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_depth, int8_t *output);
int ecc_neon_fully_connected_s8(int8_t *scratch,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_depth, const int8_t *input,
    int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_depth, int8_t *output);
int ecc_neon_fully_connected_nopair_s8(int8_t *scratch,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_depth, const int8_t *input,
    int32_t k_padded, const int8_t *weights, const int32_t *qparams,
    int32_t out_depth, int8_t *output);

int ecc_neon_add_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    int32_t size, const int8_t *input1, const int8_t *input2, int8_t *output);

int ecc_neon_avg_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t count_include_pad, int32_t pad_bottom, int32_t pad_right, int32_t pad_value, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

int ecc_neon_max_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

/* ---- CHWN (batch innermost; batches % 8 == 0): input dims in storage order [c][h][w][batches]. The
 * convolutions take the portable input_offset (taps outside the input are skipped, no folding) and
 * per-channel qparams {bias, mult, lsh, rsh}; weights re-packed offline (see the templates). ---- */
int ecc_neon_conv2d_chwn_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t in_c, int32_t in_h, int32_t in_w, int32_t batches, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_c, int32_t out_h, int32_t out_w, int8_t *output);

int ecc_neon_depthwise_conv2d_chwn_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t in_c, int32_t in_h, int32_t in_w, int32_t batches, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *qparams,
    int32_t out_c, int32_t out_h, int32_t out_w, int8_t *output);

int ecc_neon_avg_pool2d_chwn_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t count_include_pad, int32_t pad_bottom, int32_t pad_right, int32_t pad_value, int32_t act_min, int32_t act_max,
    int32_t channels, int32_t in_h, int32_t in_w, int32_t batches, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

int ecc_neon_max_pool2d_chwn_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t act_min, int32_t act_max,
    int32_t channels, int32_t in_h, int32_t in_w, int32_t batches, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

/* input [outer][rows][mid][cols] -> output [outer][cols][mid][rows] (layout changes, transposes) */
int ecc_neon_relayout_s8(int8_t *scratch, int32_t outer, int32_t rows, int32_t mid, int32_t cols,
    const int8_t *input, int8_t *output);

/* maximum / minimum: the portable arguments, inputs on the output's qparams (neon/maximum_minimum_s8.c.j2) */
int ecc_neon_maximum_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_m, int32_t input1_k,
    int32_t input2_offset, int32_t input2_m, int32_t input2_k, int32_t output_offset,
    int32_t d0, int32_t d1, int32_t d2, int32_t d3,
    int32_t sa0, int32_t sa1, int32_t sa2, int32_t sa3, int32_t sb0, int32_t sb1, int32_t sb2, int32_t sb3,
    const int8_t *input1, const int8_t *input2, int8_t *output);

int ecc_neon_minimum_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_m, int32_t input1_k,
    int32_t input2_offset, int32_t input2_m, int32_t input2_k, int32_t output_offset,
    int32_t d0, int32_t d1, int32_t d2, int32_t d3,
    int32_t sa0, int32_t sa1, int32_t sa2, int32_t sa3, int32_t sb0, int32_t sb1, int32_t sb2, int32_t sb3,
    const int8_t *input1, const int8_t *input2, int8_t *output);

/* lut: the portable arguments (a 256-entry int8 table; neon/lut_s8.c.j2) */
int ecc_neon_lut_s8(int8_t *scratch, const int8_t *table, int32_t size, const int8_t *input, int8_t *output);

/* gather: the portable arguments (runs of rows, or the byte offsets of a short row; neon/gather_s8.c.j2) */
int ecc_neon_gather_s8(int8_t *scratch, int32_t n_runs, const int32_t *runs, int32_t n_short, const int32_t *bytes,
    int32_t outer, int32_t dim, int32_t inner, const int8_t *input, int8_t *output);

/* scatter_channels: the portable arguments (neon/scatter_channels_s8.c.j2); output may be base */
int ecc_neon_scatter_channels_s8(int8_t *scratch, int32_t outer, int32_t c, int32_t n, const int32_t *channels,
    const int8_t *base, const int8_t *update, int8_t *output);

/* rounding: onnx twins of the kernels with a requantization epilogue or a rounding division:
 * `<name>_onnx`, the same arguments, the same source (c_templates/kernels/neon/ecc_neon_requant.h:
 * ecc_neon_rq_f32 for Conv / depthwise / FC, whose `qparams` blob comes from qblob(onnx=True) in
 * toolchain/isa/neon_packing.py; ecc_neon_mbqm_rne for Add; ecc_neon_avg_div_rne for average pooling). */
#define ECC_NEON_ONNX_TWIN(f) __typeof__(f) f##_onnx
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_dot_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_dot_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_sparse_dot_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_sparse_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_1x1_sparse_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_depthwise_conv2d_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_depthwise_conv2d_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_depthwise_conv2d_3x3_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_depthwise_conv2d_3x3_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_fully_connected_dot_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_fully_connected_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_fully_connected_nopair_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_conv2d_chwn_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_depthwise_conv2d_chwn_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_avg_pool2d_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_avg_pool2d_chwn_s8);
ECC_NEON_ONNX_TWIN(ecc_neon_add_s8);

#endif /* ECC_NEON_KERNELS_H */
