/* edgecc Helium (MVE) int8 kernel prototypes (Cortex-M55). Chosen per node by the compiler (the
 * `variants` of the op modules, defined in toolchain/isa/helium.py) on boards with the
 * `mve` feature; each one is bit-exact with its portable counterpart.
 *
 * Differences from ecc_kernels.h, all prepared offline by toolchain/isa/helium.py:
 * - input_zp instead of input_offset: the offset is folded into the bias, so padded taps read the
 *   zero point;
 * - conv2d, conv2d_1x1, fully_connected: `weights` is one blob per layer, output channels in quads
 *   with their folded biases, multipliers and shifts, the weights in 16-k chunks (ecc_helium.h);
 *   depthwise_conv2d: the same per group of 16 channels;
 * - one entry point per requantization mode: `_relu` for layers whose clamp starts at or above the
 *   output zero point (the round-half-away fix-up cannot change an output there), plain otherwise,
 *   `_onnx` for rounding "onnx" (onnxruntime's float32 output stage, MVE float: the portable `_onnx`
 *   twins' results; the blob's multiplier words hold the float32 scales);
 * - depthwise_conv2d: tap_pairs = 0 when a weight is -128 (taps widened one by one, BL-04);
 *   depthwise_conv2d_3x3 (3x3, stride_w 1, no dilation): its own blob, per block of four channels
 *   (depthwise_conv2d_3x3_s8.c.j2).
 * Argument order as everywhere: scratch, params, quant, input dims, input, weight dims, weights,
 * bias, output dims, output. Scratch sizes: toolchain/isa/helium.py.
 */
#ifndef ECC_HELIUM_KERNELS_H
#define ECC_HELIUM_KERNELS_H

#include <stdint.h>

/* ECC_HELIUM_MODES(kernel, (parameters)): the three entry points ecc_helium_<kernel>[_mode]_s8 of a kernel, one
 * per requantization mode above, with one parameter list; a twin with the parameters of another entry point
 * is declared with __typeof__ (tests/kernels/isa_harness.py reads the types from both forms) */
#define ECC_HELIUM_MODES(kernel, params) \
    int ecc_helium_##kernel##_s8 params; int ecc_helium_##kernel##_relu_s8 params; \
    int ecc_helium_##kernel##_onnx_s8 params

ECC_HELIUM_MODES(conv2d, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_HELIUM_MODES(conv2d_1x1, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

/* conv2d_1x1 without the output channels proven constant: live_c < out_c live channels; the blob
 * holds a constant row (out_c int8 padded to 16) and then the live quads' records, each followed
 * by its four output channels (uint32); conv2d_1x1_sparse_s8.c.j2 */
ECC_HELIUM_MODES(conv2d_1x1_sparse, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t live_c, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_HELIUM_MODES(depthwise_conv2d, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t lanes_px, int32_t tap_pairs, int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

/* 3x3 window, stride_w 1 or 2, no dilation: pixel-parallel VMLADAV (depthwise_conv2d_3x3_s8.c.j2) */
ECC_HELIUM_MODES(depthwise_conv2d_3x3, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
    int32_t input_zp, int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_HELIUM_MODES(fully_connected, (int8_t *scratch,
    int32_t output_offset, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_depth, const int8_t *input, const int8_t *weights,
    int32_t out_depth, int8_t *output));

/* same arguments as ecc_add_s8; scratch: 2 KB (two tables of 256 int32) */
int ecc_helium_add_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    int32_t size, const int8_t *input1, const int8_t *input2, int8_t *output);
__typeof__(ecc_helium_add_s8) ecc_helium_add_onnx_s8;

/* same arguments as ecc_avg_pool2d_s8 (windows of at most 255 cells) and ecc_max_pool2d_s8 */
int ecc_helium_avg_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t count_include_pad, int32_t pad_bottom, int32_t pad_right, int32_t pad_value, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);
__typeof__(ecc_helium_avg_pool2d_s8) ecc_helium_avg_pool2d_onnx_s8;

int ecc_helium_max_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

/* maximum / minimum: the portable arguments, inputs on the output's qparams (helium/maximum_minimum_s8.c.j2) */
int ecc_helium_maximum_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_m, int32_t input1_k,
    int32_t input2_offset, int32_t input2_m, int32_t input2_k, int32_t output_offset,
    int32_t d0, int32_t d1, int32_t d2, int32_t d3,
    int32_t sa0, int32_t sa1, int32_t sa2, int32_t sa3, int32_t sb0, int32_t sb1, int32_t sb2, int32_t sb3,
    const int8_t *input1, const int8_t *input2, int8_t *output);
__typeof__(ecc_helium_maximum_s8) ecc_helium_minimum_s8;

/* lut: the portable arguments (a 256-entry int8 table; helium/lut_s8.c.j2) */
int ecc_helium_lut_s8(int8_t *scratch, const int8_t *table, int32_t size, const int8_t *input, int8_t *output);

/* gather: the portable arguments (runs of rows, or the byte offsets of a short row; helium/gather_s8.c.j2) */
int ecc_helium_gather_s8(int8_t *scratch, int32_t n_runs, const int32_t *runs, int32_t n_short,
    const int32_t *bytes, int32_t outer, int32_t dim, int32_t inner, const int8_t *input, int8_t *output);

/* scatter_channels: the portable arguments (helium/scatter_channels_s8.c.j2) */
int ecc_helium_scatter_channels_s8(int8_t *scratch, int32_t outer, int32_t c, int32_t n, const int32_t *channels,
    const int8_t *base, const int8_t *update, int8_t *output);

#endif /* ECC_HELIUM_KERNELS_H */
