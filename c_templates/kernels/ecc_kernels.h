/* edgecc int8 kernel prototypes.
 *
 * Semantics: TFLite Micro reference integer kernels, bit-exact (gemmlowp double rounding).
 * Activations are NHWC. Weights: conv OHWI [out_c][k_h][k_w][w_in_c] (w_in_c = in_c / groups),
 * depthwise [1][k_h][k_w][in_c * depth_multiplier] with oc = ic * depth_multiplier + m,
 * fully connected [out_depth][in_depth].
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
    const int32_t *out_mult, const int32_t *out_shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, int32_t w_in_c, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_depthwise_conv2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dilation_h, int32_t dilation_w,
    int32_t depth_multiplier, int32_t input_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    const int32_t *out_mult, const int32_t *out_shift,
    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, const int8_t *input,
    int32_t k_h, int32_t k_w, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_h, int32_t out_w, int32_t out_c, int8_t *output);

int ecc_fully_connected_s8(int8_t *scratch,
    int32_t input_offset, int32_t filter_offset, int32_t output_offset, int32_t act_min, int32_t act_max,
    const int32_t *out_mult, const int32_t *out_shift, int32_t per_channel,
    int32_t batches, int32_t in_depth, const int8_t *input, const int8_t *weights, const int32_t *bias /* may be NULL */,
    int32_t out_depth, int8_t *output);

int ecc_avg_pool2d_s8(int8_t *scratch,
    int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t k_h, int32_t k_w, int32_t count_include_pad,
    int32_t act_min, int32_t act_max,
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

#endif /* ECC_KERNELS_H */
