/* edgecc 0.1.0 | model model.onnx sha256:83ed2380a8ba65c0 | board host
 * Generated code: do not edit; re-run edgecc instead. */
/* Test harness: reads every verification sample from inputs.bin (semihosting file I/O on the
 * boards, plain stdio on Linux/host), runs the model, appends the outputs to outputs.bin.
 * Sample 0 is profiled with the clock timer: 1 warm-up run(s), then 5 timed run(s)
 * per op and 5 of the whole run; Python takes the median, min and max. */
#define _POSIX_C_SOURCE 199309L
#include <time.h>
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

#define ECC_REPEATS 5
#define ECC_WARMUP 1
static uint64_t g_t0;
static uint64_t g_op_time[ECC_REPEATS][ECC_NUM_OPS > 0 ? ECC_NUM_OPS : 1];
static uint64_t g_run_time[ECC_REPEATS];
static int g_rep;

/* Timer: CLOCK_MONOTONIC in nanoseconds. */
static const char *ecc_timer_init(void)
{
    return "clock_monotonic unit=ns";
}

static uint64_t ecc_timer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Decimal text of v (newlib-nano's printf has no %llu). */
static const char *ecc_u64(uint64_t v, char *buf21)
{
    char *p = buf21 + 20;
    *p = '\0';
    do {
        *--p = (char)('0' + (int)(v % 10u));
        v /= 10u;
    } while (v != 0u);
    return p;
}

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
        g_t0 = ecc_timer_now();
    }
}

void ecc_profile_end(int32_t op)
{
    if (g_profile) {
        g_op_time[g_rep][op] = ecc_timer_now() - g_t0;
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
    const char *timer = "none";
    if (fin == NULL || fout == NULL) {
        printf("ECC_ERROR cannot open inputs.bin/outputs.bin\n");
        return 2;
    }
    ecc_model_init();
    for (;;) {
        if (fread(g_input0, 1, sizeof g_input0, fin) != sizeof g_input0)
            break;
        if (samples == 0) {
            timer = ecc_timer_init();
            for (int w = 0; w < ECC_WARMUP; w++)
                status |= run_once();
            g_profile = 1; /* per-op times */
            for (g_rep = 0; g_rep < ECC_REPEATS; g_rep++)
                status |= run_once();
            g_profile = 0;
            for (int r = 0; r < ECC_REPEATS; r++) { /* whole-run times, hooks off */
                uint64_t t0 = ecc_timer_now();
                status |= run_once();
                g_run_time[r] = ecc_timer_now() - t0;
            }
            ecc_mark_run();
            status |= run_once();
            ecc_mark_run();
        } else {
            status |= run_once();
        }
        fwrite(g_output0, 1, sizeof g_output0, fout);
        samples++;
    }
    fclose(fin);
    fclose(fout);
    if (samples > 0) {
        char buf[21];
        printf("ECC_TIMER %s repeats=%d warmup=%d\n", timer, ECC_REPEATS, ECC_WARMUP);
        for (int op = 0; op < ECC_NUM_OPS; op++)
            for (int r = 0; r < ECC_REPEATS; r++)
                printf("ECC_OP %d %d %s\n", op, r, ecc_u64(g_op_time[r][op], buf));
        for (int r = 0; r < ECC_REPEATS; r++)
            printf("ECC_RUN %d %s\n", r, ecc_u64(g_run_time[r], buf));
    }
    printf("ECC_DONE samples=%d status=%d\n", samples, status);
    return status != 0 ? 4 : 0;
}
