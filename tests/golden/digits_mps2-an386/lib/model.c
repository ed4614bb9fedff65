/* edgecc 0.1.0 | model model.onnx sha256:83ed2380a8ba65c0 | board mps2-an386
 * Generated code: do not edit; re-run edgecc instead. */
#include <string.h>

#include "ecc_kernels.h"
#include "ecc_dsp.h"
#include "ecc_dsp_depthwise.h"
#include "ecc_dsp_gemm3.h"
#include "ecc_dsp_kernels.h"
#include "ecc_profile.h"
#include "model.h"
#include "weights.h"
#ifndef ECC_NO_STATIC_ARENA

/* Section ".bss.ecc_arena": GCC makes any ".bss.*" section NOBITS, so the arena takes no flash with a
 * stock linker script (it lands in .bss); a custom script may place it by that name. */
static int8_t ecc_arena[ECC_ARENA_SIZE] __attribute__((aligned(16), section(".bss.ecc_arena")));
#endif

/* One inference in arena `a`: inlined into both entry points, so the static one runs the code it
 * always did (the arena's address a constant) and the caller's-arena one the same with `a` loaded. */
static inline __attribute__((always_inline)) int ecc_run(int8_t *const a, const int8_t *input0, int8_t *output0)
{
    int status = 0;
    memcpy(a + 608, input0, 64);

    /* op 0: /conv1/Conv_output_0 (Conv2D) */
    ECC_OP_BEGIN(0);
    status |= ecc_dsp_conv2d_relu_s8((a + 512), 1, 1, 1, 1, 1, 1, -128, -128, 127, 1, 8, 8, 1, (a + 608), 3, 3, 3, ecc_p_conv1_Conv_output_0_wpack, 8, 8, 8, (a + 0));
    ECC_OP_END(0);

    /* op 1: /pool1/MaxPool_output_0 (MaxPool2D) */
    ECC_OP_BEGIN(1);
    status |= ecc_dsp_max_pool2d_s8(NULL, 2, 2, 0, 0, 2, 2, -128, 127, 1, 8, 8, 8, (a + 0), 4, 4, (a + 512));
    ECC_OP_END(1);

    /* op 2: /conv2/Conv_output_0 (Conv2D) */
    ECC_OP_BEGIN(2);
    status |= ecc_dsp_conv2d_relu_s8((a + 0), 1, 1, 1, 1, 1, 1, -128, -128, 127, 1, 4, 4, 8, (a + 512), 3, 3, 18, ecc_p_conv2_Conv_output_0_wpack, 4, 4, 16, (a + 1312));
    ECC_OP_END(2);

    /* op 3: /dw/Conv_output_0 (DepthwiseConv2D) */
    ECC_OP_BEGIN(3);
    status |= ecc_dsp_depthwise_conv2d_3x3_relu_s8((a + 0), 1, 1, 1, 1, -128, -255, -128, 127, ecc_p_dw_Conv_output_0_mult, ecc_p_dw_Conv_output_0_shift, 1, 4, 4, 16, (a + 1312), ecc_w_dw_Conv_output_0_w, ecc_p_dw_Conv_output_0_bias, 4, 4, 16, (a + 1056));
    ECC_OP_END(3);

    /* op 4: /pw/Conv_output_0 (Conv2D) */
    ECC_OP_BEGIN(4);
    status |= ecc_dsp_conv2d_1x1_s8((a + 256), 1, 1, -128, 127, 1, 4, 4, 16, (a + 1056), 4, ecc_p_pw_Conv_output_0_wpack, 4, 4, 16, (a + 0));
    ECC_OP_END(4);

    /* op 5: /Add_output_0 (Add) */
    ECC_OP_BEGIN(5);
    status |= ecc_add_s8(NULL, 52, 1073741824, 0, 128, 1518766106, -3, 20, -128, 1411827173, -18, -128, 127, 256, (a + 0), (a + 1312), (a + 0));
    ECC_OP_END(5);

    /* op 6: /pool2/AveragePool_output_0 (AveragePool2D) */
    ECC_OP_BEGIN(6);
    status |= ecc_dsp_avg_pool2d_s8(NULL, 2, 2, 0, 0, 2, 2, 1, 0, 0, -128, -128, 127, 1, 4, 4, 16, (a + 0), 2, 2, (a + 256));
    ECC_OP_END(6);

    /* op 7: /gap/GlobalAveragePool_output_0 (AveragePool2D) */
    ECC_OP_BEGIN(7);
    status |= ecc_dsp_avg_pool2d_s8(NULL, 1, 1, 0, 0, 2, 2, 0, 0, 0, 0, -128, 127, 1, 2, 2, 16, (a + 256), 1, 1, (a + 48));
    ECC_OP_END(7);

    /* op 8: /fc/Gemm_output_0 (FullyConnected) */
    ECC_OP_BEGIN(8);
    status |= ecc_dsp_fully_connected_s8((a + 0), 75, -128, 127, 1, 1, 16, (a + 48), 2, ecc_p_fc_Gemm_output_0_wpack, 10, (a + 32));
    ECC_OP_END(8);

    /* op 9: probs (Softmax) */
    ECC_OP_BEGIN(9);
    status |= ecc_softmax_s8(NULL, 1508333568, 24, -124, 1, 10, (a + 32), (a + 0));
    ECC_OP_END(9);

    memcpy(output0, a + 0, 10);
    return status;
}
#ifndef ECC_NO_STATIC_ARENA

int ecc_model_init(void)
{
    return 0;
}

int ecc_model_run(const int8_t *input0, int8_t *output0)
{
    return ecc_run(ecc_arena, input0, output0);
}
#endif

int ecc_model_init_ctx(ecc_model_ctx *ctx, void *arena, size_t size)
{
    if (ctx == NULL)
        return ECC_ERR_ARENA_NULL;
    ctx->arena = NULL;
    if (arena == NULL)
        return ECC_ERR_ARENA_NULL;
    if (size < ECC_ARENA_SIZE)
        return ECC_ERR_ARENA_TOO_SMALL;
    if (((uintptr_t)arena & (ECC_ARENA_ALIGNMENT - 1u)) != 0u)
        return ECC_ERR_ARENA_MISALIGNED;
    ctx->arena = (int8_t *)arena;
    return 0;
}

int ecc_model_run_ctx(const ecc_model_ctx *ctx, const int8_t *input0, int8_t *output0)
{
    if (ctx == NULL || ctx->arena == NULL)
        return ECC_ERR_ARENA_NULL;
    return ecc_run(ctx->arena, input0, output0);
}
