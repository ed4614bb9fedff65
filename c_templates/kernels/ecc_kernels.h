/* edgecc int8 kernel prototypes.
 *
 * Semantics: TFLite Micro reference integer kernels, bit-exact (gemmlowp double rounding).
 * Activations are NHWC. Weights: conv OHWI [out_c][k_h][k_w][w_in_c] (w_in_c = in_c / groups),
 * depthwise [1][k_h][k_w][in_c * depth_multiplier] with oc = ic * depth_multiplier + m,
 * fully connected [out_depth][in_depth].
 * Requantization: out_mult int32 (Q31) and out_shift int8 (TFLite shift, in [-31, 31]) per output
 * channel; int8 shifts take a quarter of the flash of int32 ones and load as cheaply.
 * Argument order: scratch, params, quant, input dims, input, weight dims, weights, bias,
 * output dims, output. Every kernel returns ECC_OK (0) or ECC_ERR_ARG for arguments it cannot
 * handle. Kernels that need no scratch ignore it (it may be NULL).
 */
#ifndef ECC_KERNELS_H
#define ECC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define ECC_OK 0
#define ECC_ERR_ARG (-1)

int ecc_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t input_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    const int32_t *out_mult, const int8_t *out_shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t w_in_c, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_depthwise_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t depth_multiplier, int32_t input_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    const int32_t *out_mult, const int8_t *out_shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_fully_connected_s8(int8_t *scratch,
    int32_t input_offset, int32_t filter_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    const int32_t *out_mult, const int8_t *out_shift, int32_t per_channel,
    int32_t batches, int32_t in_depth, const int8_t *input, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_depth, int8_t *output);

int ecc_avg_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w, int32_t count_include_pad,
    int32_t pad_bottom, int32_t pad_right, int32_t pad_value /* count_include_pad only */, int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

int ecc_max_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w,
    int32_t act_min, int32_t act_max,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t channels, const int8_t *input,
    int32_t out_h, int32_t out_w, int8_t *output);

int ecc_add_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    int32_t size, const int8_t *input1, const int8_t *input2, int8_t *output /* may alias an input */);

int ecc_softmax_s8(int8_t *scratch, int32_t input_multiplier, int32_t input_left_shift, int32_t diff_min,
    int32_t rows, int32_t row_size, const int8_t *input, int8_t *output);

int ecc_clamp_s8(int8_t *scratch, int32_t act_min, int32_t act_max, int32_t size, const int8_t *input, int8_t *output);

int ecc_transpose_s8(int8_t *scratch, int32_t rank, const int32_t *in_dims /* rank <= 4 */, const int32_t *perm,
    const int8_t *input, int8_t *output);

/* ---- issue 4: broadcast element-wise ops, data movement, activations, type edges ----
 * Broadcast kernels walk the output as four nested loops d0..d3; input k reads element
 * i0*sk0 + i1*sk1 + i2*sk2 + i3*sk3 (stride 0 on a broadcast axis; toolchain/ops/binary.py). */
#define ECC_LOOP_ARGS int32_t d0, int32_t d1, int32_t d2, int32_t d3, \
    int32_t sa0, int32_t sa1, int32_t sa2, int32_t sa3, int32_t sb0, int32_t sb1, int32_t sb2, int32_t sb3

int ecc_add_broadcast_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    ECC_LOOP_ARGS, const int8_t *input1, const int8_t *input2, int8_t *output);

int ecc_sub_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input1_mult, int32_t input1_shift,
    int32_t input2_offset, int32_t input2_mult, int32_t input2_shift, int32_t left_shift,
    int32_t output_offset, int32_t output_mult, int32_t output_shift, int32_t act_min, int32_t act_max,
    ECC_LOOP_ARGS, const int8_t *input1, const int8_t *input2, int8_t *output);

int ecc_mul_s8(int8_t *scratch,
    int32_t input1_offset, int32_t input2_offset, int32_t output_offset, int32_t output_mult, int32_t output_shift,
    int32_t act_min, int32_t act_max, ECC_LOOP_ARGS, const int8_t *input1, const int8_t *input2, int8_t *output);

int ecc_prelu_s8(int8_t *scratch,
    int32_t input_zero_point, int32_t alpha_zero_point, int32_t output_zero_point,
    int32_t mult1, int32_t shift1, int32_t mult2, int32_t shift2,
    ECC_LOOP_ARGS, const int8_t *input, const int8_t *alpha, int8_t *output);

/* params: five int32 per input (inner, input_offset, mult, shift, output_offset) */
int ecc_concat_s8(int8_t *scratch, int32_t n_inputs, int32_t outer, int32_t out_inner, const int32_t *params,
    const int8_t *const *inputs, int8_t *output);

int ecc_pad_s8(int8_t *scratch, int32_t d0, int32_t d1, int32_t d2, int32_t d3,
    int32_t b0, int32_t b1, int32_t b2, int32_t b3, int32_t a0, int32_t a1, int32_t a2, int32_t a3,
    int32_t pad_value, const int8_t *input, int8_t *output);

int ecc_mean_s8(int8_t *scratch, int32_t outer, int32_t reduced, int32_t inner,
    int32_t input_zp, int32_t mult, int32_t shift, int32_t output_zp, const int8_t *input, int8_t *output);

int ecc_logistic_s8(int8_t *scratch, int32_t input_zp, int32_t radius, int32_t input_mult, int32_t input_left_shift,
    int32_t size, const int8_t *input, int8_t *output);

int ecc_tanh_s8(int8_t *scratch, int32_t input_zp, int32_t radius, int32_t input_mult, int32_t input_left_shift,
    int32_t size, const int8_t *input, int8_t *output);

int ecc_hard_swish_s8(int8_t *scratch, int32_t input_zp, int32_t output_zp, int32_t reluish_mult,
    int32_t reluish_exp, int32_t output_mult, int32_t output_exp, int32_t size, const int8_t *input, int8_t *output);

int ecc_leaky_relu_s8(int8_t *scratch, int32_t input_zp, int32_t output_zp, int32_t mult_identity,
    int32_t shift_identity, int32_t mult_alpha, int32_t shift_alpha, int32_t size, const int8_t *input, int8_t *output);

/* rows / cols: the source index of every output row / column (the coordinate convention) */
int ecc_resize_nearest_s8(int8_t *scratch, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,
    const int8_t *input, int32_t out_h, int32_t out_w, const int32_t *rows, const int32_t *cols, int8_t *output);

/* ytab / xtab: three int32 per output row / column (i0, i1, Q10 fraction) */
int ecc_resize_bilinear_s8(int8_t *scratch, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,
    const int8_t *input, int32_t out_h, int32_t out_w, const int32_t *ytab, const int32_t *xtab, int8_t *output);

/* ecc_quantize_s8 / ecc_dequantize_s8 (float32 model edges) are declared in
 * portable/ecc_float_edge_kernels.h, shipped only with the models that use them. */

int ecc_requant_s8(int8_t *scratch, int32_t input_offset, int32_t mult, int32_t shift, int32_t output_offset,
    int32_t size, const int8_t *input, int8_t *output);

/* rounding: onnx (the model's YAML `rounding`): twins of the kernels whose output rounding differs,
 * with the same arguments, rounding their output once, ties to even (ONNX QuantizeLinear) where the
 * kernels above follow TFLM's double rounding / ties away (c_templates/kernels/portable/ecc_fixed_point.h). */
__typeof__(ecc_conv2d_s8) ecc_conv2d_s8_onnx;
__typeof__(ecc_depthwise_conv2d_s8) ecc_depthwise_conv2d_s8_onnx;
__typeof__(ecc_fully_connected_s8) ecc_fully_connected_s8_onnx;
__typeof__(ecc_avg_pool2d_s8) ecc_avg_pool2d_s8_onnx;
__typeof__(ecc_add_s8) ecc_add_s8_onnx;
__typeof__(ecc_add_broadcast_s8) ecc_add_broadcast_s8_onnx;
__typeof__(ecc_sub_s8) ecc_sub_s8_onnx;
__typeof__(ecc_mul_s8) ecc_mul_s8_onnx;
__typeof__(ecc_prelu_s8) ecc_prelu_s8_onnx;
__typeof__(ecc_concat_s8) ecc_concat_s8_onnx;
__typeof__(ecc_mean_s8) ecc_mean_s8_onnx;
__typeof__(ecc_leaky_relu_s8) ecc_leaky_relu_s8_onnx;
__typeof__(ecc_requant_s8) ecc_requant_s8_onnx;

#endif /* ECC_KERNELS_H */
