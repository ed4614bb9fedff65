/* edgecc 0.1.0 | model model.onnx sha256:83ed2380a8ba65c0 | board mps2-an386
 * Generated code: do not edit; re-run edgecc instead. */
/* Test harness: reads every verification sample from inputs.bin (semihosting file I/O on the
 * boards, plain stdio on Linux/host), runs the model, appends the outputs to outputs.bin.
 * Sample 0 is profiled: the QEMU plugin counts instructions between ecc_mark_* calls. */
#include <stdint.h>
#include <stdio.h>

#include "ecc_profile.h"
#include "model.h"

volatile int32_t ecc_current_op = -1; /* read by the fault handler to name the running op */
static int g_profile;
static int8_t g_input0[ECC_INPUT0_SIZE];
static int8_t g_output0[ECC_OUTPUT0_SIZE];

/* Marker functions: the instruction-count plugin records the count each time one is entered. */
__attribute__((noinline, noipa)) void ecc_mark_op(void) { __asm volatile("" ::: "memory"); }
__attribute__((noinline, noipa)) void ecc_mark_run(void) { __asm volatile("" ::: "memory"); }

void ecc_profile_begin(int32_t op)
{
    ecc_current_op = op;
#ifdef ECC_DEBUG_FAULT_AT_OP
    if (op == ECC_DEBUG_FAULT_AT_OP)
        __builtin_trap(); /* debug knob EDGECC_DEBUG_FAULT_AT_OP: tests the fault path end to end */
#endif
#ifdef ECC_DEBUG_HANG_AT_OP
    if (op == ECC_DEBUG_HANG_AT_OP)
        for (;;) /* debug knob EDGECC_DEBUG_HANG_AT_OP: a frozen guest, tests the timeout path */
            __asm volatile("" ::: "memory");
#endif
    if (g_profile) {
        ecc_mark_op();
    }
}

void ecc_profile_end(int32_t op)
{
    if (g_profile) {
        (void)op;
        ecc_mark_op();
    }
    ecc_current_op = -1;
}

static int run_once(void)
{
    return ecc_model_run(g_input0, g_output0);
}

int main(void)
{
    FILE *fin = fopen("inputs.bin", "rb");
    FILE *fout = fopen("outputs.bin", "wb");
    int samples = 0, status = 0;
    if (fin == NULL || fout == NULL) {
        printf("ECC_ERROR cannot open inputs.bin/outputs.bin\n");
        return 2;
    }
    ecc_model_init();
    for (;;) {
        if (fread(g_input0, 1, sizeof g_input0, fin) != sizeof g_input0)
            break;
        if (samples == 0) {
            ecc_mark_run();
            status |= run_once();
            ecc_mark_run();
            g_profile = 1;
            status |= run_once();
            g_profile = 0;
        } else {
            status |= run_once();
        }
        fwrite(g_output0, 1, sizeof g_output0, fout);
        samples++;
    }
    fclose(fin);
    fclose(fout);
    printf("ECC_DONE samples=%d status=%d\n", samples, status);
    return status != 0 ? 4 : 0;
}
