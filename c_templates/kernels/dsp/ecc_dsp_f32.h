/* edgecc DSP kernels' float32 output stage (ECC_DSP_F32, `rounding: onnx` Conv / depthwise / FC only):
 * kept in its own header so the float code of the library is in files named *_f32.h; the TFLM-rounding
 * entry points never reach it (tests/e2e/test_library.py). Included by ecc_dsp.h. */
#ifndef ECC_DSP_F32_H
#define ECC_DSP_F32_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

/* onnxruntime's requantization of Conv / depthwise / FC (MLAS MlasRequantizeOutput; numpy twin
 * fixed_point.requantize_s8_f32): y = clamp(rint(fl32(fl32(acc) * S)) + zp, lo, hi), rint to nearest
 * even. Here acc may be a power-of-two multiple 2^j acc of the accumulator (the kernels' doubled or
 * scaled sums) and sbits the float32 bits of S 2^-j (packing.py stores f32_scale times 2^-j): both
 * scalings are exact (|2^j acc| < 2^31, S 2^-j >= 2^-40 is normal), so the float32 product is the
 * same value. VCVT.F32.S32 rounds to nearest even, VMUL.F32 rounds once and goes straight into
 * VCVTR.S32.F32 (rounding mode of FPSCR: nearest even by default; it saturates at int32), so no
 * compiler can contract the multiply into an FMA; QADD adds the offset with saturation. */
static inline int32_t ecc_dsp_f32_rint(int32_t acc, int32_t sbits)
{
    float s, p;
    int32_t r;
    memcpy(&s, &sbits, 4);
    p = (float)acc * s;
#if ECC_DSP_FPU
    __asm__("vcvtr.s32.f32 %1, %1\n\tvmov %0, %1" : "=r"(r), "+t"(p));
#else /* soft float (never called there: the F32 entry points need the FPU); the portable rounding */
    p = p < -2147483648.0f ? -2147483648.0f : (p > 2147483520.0f ? 2147483520.0f : p);
    if (p > -8388608.0f && p < 8388608.0f) {
        p = (p + 12582912.0f) - 12582912.0f; /* no fraction bits left: rounded to even */
    }
    r = (int32_t)p;
#endif
    return r;
}

static inline int8_t ecc_dsp_f32(int32_t acc, int32_t sbits, int32_t off, int32_t lo, int32_t hi)
{
    int32_t y = __qadd(ecc_dsp_f32_rint(acc, sbits), off);
    y = y < lo ? lo : y;
    return (int8_t)(y > hi ? hi : y);
}

#endif /* ECC_DSP_F32_H */
