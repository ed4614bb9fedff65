/* edgecc float32 output stage of `rounding: onnx` Conv / depthwise / FC (the portable `_onnx` twins):
 * kept in its own header so the float code of the library is in files named *_f32.h; the TFLM-rounding
 * kernels never reach it (tests/e2e/test_library.py). Included by ecc_fixed_point.h. */
#ifndef ECC_REQUANT_F32_H
#define ECC_REQUANT_F32_H

#include <stdint.h>

/* rounding: onnx, Conv / depthwise / FC output stage: onnxruntime's integer kernels (QLinearConv,
 * QLinearMatMul, QGemm) requantize in float32, y = rint(fl32(fl32(acc) * S)) + zp, S = fl32(mult) *
 * 2^(shift - 31) (numpy twins: f32_scale, requantize_s8_f32). The float32 product can be an exact tie
 * where the real product is not, so the integer form above is 1 LSB off there. The clamp sits
 * between the multiply and the rounding add so no compiler can fuse them into one FMA. */
static inline int8_t ecc_requantize_s8_f32(int32_t acc, int32_t mult, int32_t shift, int32_t output_offset,
                                           int32_t act_min, int32_t act_max)
{
    union {
        uint32_t u;
        float f;
    } pow2;
    const float lo = (float)(act_min - output_offset), hi = (float)(act_max - output_offset);
    float f;
    pow2.u = (uint32_t)(96 + shift) << 23; /* 2^(shift - 31): shift in [-31, 31] stays normal */
    f = (float)acc * ((float)mult * pow2.f);
    f = f < lo ? lo : (f > hi ? hi : f);
    /* |f| <= 255: adding 1.5 * 2^23 leaves no fraction bits, so the sum is rounded to even */
    f = (f + 12582912.0f) - 12582912.0f;
    return (int8_t)((int32_t)f + output_offset);
}

#endif /* ECC_REQUANT_F32_H */
