/* edgecc kernels at the float32 edges of an int8 or 16x8 model (TFLite QUANTIZE / DEQUANTIZE). Kept out of
 * ecc_kernels.h: only a model with a float input or output ships this header and uses floating point. */
#ifndef ECC_FLOAT_EDGE_KERNELS_H
#define ECC_FLOAT_EDGE_KERNELS_H

#include <stdint.h>

/* q = round_half_away(x / (float)scale) + zero_point, saturated to int8 (single precision) */
int ecc_quantize_s8(int8_t *scratch, float scale, int32_t zero_point, int32_t size, const float *input, int8_t *output);
/* rounding: onnx: q = rintf((float)x / (float)scale) + zero_point (ONNX QuantizeLinear: ties to even) */
__typeof__(ecc_quantize_s8) ecc_quantize_s8_onnx;

/* y = (float)scale * (float)(q - zero_point) (single precision; TFLM's double product for a float32 scale) */
int ecc_dequantize_s8(int8_t *scratch, float scale, int32_t zero_point, int32_t size, const int8_t *input, float *output);

/* 16x8 edges (int16 activations, zero point 0): q = round_half_away(x / (float)scale) in float32,
 * saturated to int16; y = (float)scale * (float)(q - zero_point) */
int ecc_quantize_s16(int8_t *scratch, float scale, int32_t size, const float *input, int16_t *output);
int ecc_dequantize_s16(int8_t *scratch, float scale, int32_t zero_point, int32_t size, const int16_t *input,
    float *output);

#endif /* ECC_FLOAT_EDGE_KERNELS_H */
