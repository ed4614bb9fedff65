/* edgecc DSP int8 kernel prototypes (Cortex-M4/M7/M33, ACLE DSP). Chosen per node by the compiler
 * (the `variants` of the op modules in toolchain/ops/); each one is bit-exact with its portable
 * counterpart.
 *
 * Differences from ecc_kernels.h, all prepared offline by toolchain/isa/packing.py:
 * - input_zp instead of input_offset: the offset is folded into the bias (bias + offset * sum(w)),
 *   so padded taps read the zero point;
 * - requantization (ecc_dsp_out in ecc_dsp.h): k = 2 * output_offset + 1, the clamp, and per output
 *   channel an int32 multiplier and a shift. One entry point per mode: `_relu` for layers whose
 *   output range is [-128, 127] with zero point -128 (their shift is one less), plain for the range
 *   [-128, 127], `_clamp` for any other range; under `rounding: onnx` `_onnx` (any range:
 *   onnxruntime's float32 output stage on the FPU, ECC_DSP_F32, the multipliers as float32 bits),
 *   except transpose_conv (the exact product rounded once, ties to even): `_onnx` for the range
 *   [-128, 127] when no tie can change an output (its shift is one less) and `_onnx_tie` for that
 *   range where ties are reachable, `_onnx_clamp` for anything else;
 *   fully_connected takes the mode as an argument (ECC_DSP_*);
 * - GEMM kernels (conv2d, conv2d_1x1): `weights` is one blob read front to back, per pair of
 *   output channels the folded biases, the two rows interleaved per 4-k group (`groups` groups, any
 *   number >= 1), the multipliers and shifts and k (ecc_dsp.h); conv2d_1x1_sparse: the same records
 *   (an even `groups`) after a constant row, the live channels' records only, each with its output
 *   channels; fully_connected: its own blob of output
 *   row quads (fully_connected_s8.c.j2) and k as out_k; depthwise kernels keep the weight
 *   layout and take the bias (doubled), mult, shift and out_k as arrays and a literal.
 * Argument order as everywhere: scratch, params, quant, input dims, input, weight dims, weights,
 * bias, output dims, output. Scratch sizes: the plans of toolchain/isa/dsp.py.
 */
#ifndef ECC_DSP_KERNELS_H
#define ECC_DSP_KERNELS_H

#include <stdint.h>

/* ECC_DSP_MODES(kernel, (parameters)): the four entry points ecc_dsp_<kernel>[_mode]_s8 of a kernel, one per
 * requantization mode above, with one parameter list; ECC_DSP_RNE_MODES the six of transpose_conv; a twin with
 * the parameters of another entry point is declared with __typeof__ (tests/kernels/isa_harness.py reads the
 * types from these forms) */
#define ECC_DSP_MODES(kernel, params) \
    int ecc_dsp_##kernel##_s8 params; int ecc_dsp_##kernel##_clamp_s8 params; int ecc_dsp_##kernel##_onnx_s8 params; \
    int ecc_dsp_##kernel##_relu_s8 params
#define ECC_DSP_RNE_MODES(kernel, params) \
    int ecc_dsp_##kernel##_s8 params; int ecc_dsp_##kernel##_clamp_s8 params; int ecc_dsp_##kernel##_onnx_s8 params; \
    int ecc_dsp_##kernel##_onnx_clamp_s8 params; int ecc_dsp_##kernel##_onnx_tie_s8 params; \
    int ecc_dsp_##kernel##_relu_s8 params

ECC_DSP_MODES(conv2d, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_zp, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t groups, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_DSP_MODES(conv2d_1x1, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t groups, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

/* conv2d_1x1 of a layer with output channels proven constant: `live_c` (< out_c) live channels in
 * the blob after a constant row of out_c int8 (padded to 4); conv2d_1x1_sparse_s8.c.j2 */
ECC_DSP_MODES(conv2d_1x1_sparse, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t groups, int32_t live_c, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_DSP_MODES(depthwise_conv2d, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t depth_multiplier, int32_t input_zp, int32_t out_k, int32_t act_min, int32_t act_max,
    const int32_t *mult, const int8_t *shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

ECC_DSP_MODES(depthwise_conv2d_3x3, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
    int32_t input_zp, int32_t out_k, int32_t act_min, int32_t act_max, const int32_t *mult, const int8_t *shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    const int8_t *weights, const int32_t *bias,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));
/* the tap-paired 3x3 depthwise (RELU mode only; stride 1 or 2 along the paired axis): the 3x3 kernel's
 * parameters */
__typeof__(ecc_dsp_depthwise_conv2d_3x3_relu_s8) ecc_dsp_depthwise_conv2d_3x3p_relu_s8;
__typeof__(ecc_dsp_depthwise_conv2d_3x3_relu_s8) ecc_dsp_depthwise_conv2d_3x3p_s2_relu_s8;

/* mode: ECC_DSP_RELU / FULL / CLAMP (one entry point, the mode branches once per four outputs; _onnx:
 * ECC_DSP_F32);
 * weights: the quad-packed blob of fully_connected_s8.c.j2, `blocks` 8-k blocks per row */
int ecc_dsp_fully_connected_s8(int8_t *scratch,
    int32_t out_k, int32_t act_min, int32_t act_max, int32_t mode,
    int32_t batches, int32_t in_depth, const int8_t *input,
    int32_t blocks, const int8_t *weights,
    int32_t out_depth, int8_t *output);
__typeof__(ecc_dsp_fully_connected_s8) ecc_dsp_fully_connected_onnx_s8;

/* same arguments as ecc_add_s8; scratch: 2 KB (two tables of 256 int32); _onnx: rounding onnx (the output
 * stage of add_s8_onnx) */
int ecc_dsp_add_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    int32_t size, const int8_t *input1, const int8_t *input2, int8_t *output);
__typeof__(ecc_dsp_add_s8) ecc_dsp_add_onnx_s8;

/* same arguments as ecc_avg_pool2d_s8 (windows of at most 255 cells) and ecc_max_pool2d_s8; _onnx: rounding
 * onnx (pad_value: the input zero point; avg_pool2d_s8_onnx) */
int ecc_dsp_avg_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t count_include_pad, int32_t pad_bottom, int32_t pad_right, int32_t pad_value, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);
__typeof__(ecc_dsp_avg_pool2d_s8) ecc_dsp_avg_pool2d_onnx_s8;

int ecc_dsp_max_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

/* transpose_conv: one GEMM blob per stride phase (dsp/transpose_conv_s8.c.j2) */
ECC_DSP_RNE_MODES(transpose_conv, (int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
    int32_t input_zp, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output));

/* maximum / minimum: the portable arguments, inputs on the output's qparams (dsp/maximum_minimum_s8.c.j2) */
int ecc_dsp_maximum_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_m, int32_t input1_k,
    int32_t input2_offset, int32_t input2_m, int32_t input2_k, int32_t output_offset,
    int32_t d0, int32_t d1, int32_t d2, int32_t d3,
    int32_t sa0, int32_t sa1, int32_t sa2, int32_t sa3, int32_t sb0, int32_t sb1, int32_t sb2, int32_t sb3,
    const int8_t *input1, const int8_t *input2, int8_t *output);
__typeof__(ecc_dsp_maximum_s8) ecc_dsp_minimum_s8;

/* 16x8 (int16 activations with zero point 0, int8 weights, int64 biases; ecc_dsp_s16.h): chunk 0 (narrow)
 * sums each output in int32 from its bias, chunk >= 1 sums `chunk` 4-k groups in int32 before the int64
 * accumulator (toolchain/isa/dsp_s16.py proves either per layer); conv2d, conv2d_1x1, fully_connected:
 * one GEMM blob of weights, biases and requantization records; depthwise: the weights reordered per
 * channel quad, 7 words per channel in `rq` (bias, requantization record), narrow 1 or 0 (int64 sums,
 * one int32 partial per kernel row) */
int ecc_dsp_conv2d_s16(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t chunk, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int16_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int16_t *output);

int ecc_dsp_conv2d_1x1_s16(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t chunk, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int16_t *input,
    const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int16_t *output);

int ecc_dsp_depthwise_conv2d_s16(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t depth_multiplier, int32_t narrow, int32_t act_min, int32_t act_max, const int32_t *rq,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int16_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights,
    int32_t out_h, int32_t out_w, int32_t out_c, int16_t *output);

int ecc_dsp_fully_connected_s16(int8_t *scratch, int32_t chunk, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_depth, const int16_t *input, const int8_t *weights,
    int32_t out_depth, int16_t *output);

#endif /* ECC_DSP_KERNELS_H */
