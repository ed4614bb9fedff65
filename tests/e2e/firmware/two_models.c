/* The test suite's own two-model firmware (tests/e2e/test_firmware_two_models.py, issue 15): the
 * digits library (`name: digits`) and the DS-CNN keyword-spotting library (`name: kws`) of the same
 * board, linked into one image. Each sample runs four times:
 *   digits in its static arena (digits_model_run)        -> digits_out.bin
 *   digits in the shared caller arena (digits_model_run_ctx) -> digits_ctx_out.bin
 *   kws in its static arena (kws_model_run)              -> kws_out.bin
 *   kws in the shared caller arena (kws_model_run_ctx)   -> kws_ctx_out.bin
 * alternating the two models on the one shared buffer (sized as the larger arena). Before that,
 * init_ctx must refuse a NULL, too small or misaligned buffer. stdout (semihosting on Cortex-M):
 *   REFUSED <name> null=<c> ctx_null=<c> too_small=<c> misaligned=<c> run=<c> arena_after=<0|1>
 *   DONE digits=<samples> kws=<samples> status=<or of all returns>                                */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "digits_model.h"
#include "kws_model.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define SHARED_SIZE MAX(DIGITS_ARENA_SIZE, KWS_ARENA_SIZE)
#define SHARED_ALIGN MAX(DIGITS_ARENA_ALIGNMENT, KWS_ARENA_ALIGNMENT)

/* One buffer for both models (they never run at the same time); one alignment step more, so that
 * shared + 1 still holds SHARED_SIZE bytes and is refused for its address alone. */
static int8_t shared[SHARED_SIZE + SHARED_ALIGN] __attribute__((aligned(SHARED_ALIGN)));
static int8_t digits_in[DIGITS_INPUT0_SIZE], digits_out[DIGITS_OUTPUT0_SIZE];
static int8_t kws_in[KWS_INPUT0_SIZE], kws_out[KWS_OUTPUT0_SIZE];

/* The refusals of kws_model_init_ctx / digits_model_init_ctx, one line each. */
static void refusals(void)
{
    kws_model_ctx k;
    digits_model_ctx d;
    int null = kws_model_init_ctx(&k, NULL, KWS_ARENA_SIZE);
    int ctx_null = kws_model_init_ctx(NULL, shared, KWS_ARENA_SIZE);
    int small = kws_model_init_ctx(&k, shared, KWS_ARENA_SIZE - 1u);
    int misaligned = kws_model_init_ctx(&k, shared + 1, KWS_ARENA_SIZE);
    int run = kws_model_run_ctx(&k, kws_in, kws_out);
    printf("REFUSED kws null=%d ctx_null=%d too_small=%d misaligned=%d run=%d arena_after=%d\n", null, ctx_null,
           small, misaligned, run, k.arena != NULL);
    null = digits_model_init_ctx(&d, NULL, DIGITS_ARENA_SIZE);
    ctx_null = digits_model_init_ctx(NULL, shared, DIGITS_ARENA_SIZE);
    small = digits_model_init_ctx(&d, shared, DIGITS_ARENA_SIZE - 1u);
    misaligned = digits_model_init_ctx(&d, shared + 1, DIGITS_ARENA_SIZE);
    run = digits_model_run_ctx(&d, digits_in, digits_out);
    printf("REFUSED digits null=%d ctx_null=%d too_small=%d misaligned=%d run=%d arena_after=%d\n", null, ctx_null,
           small, misaligned, run, d.arena != NULL);
}

/* Reads the next sample of n bytes from f into buf: 1, or 0 at the end. */
static int next(FILE *f, int8_t *buf, size_t n)
{
    return f != NULL && fread(buf, 1, n, f) == n;
}

int main(void)
{
    FILE *fdi = fopen("digits_in.bin", "rb"), *fki = fopen("kws_in.bin", "rb");
    FILE *fdo = fopen("digits_out.bin", "wb"), *fdc = fopen("digits_ctx_out.bin", "wb");
    FILE *fko = fopen("kws_out.bin", "wb"), *fkc = fopen("kws_ctx_out.bin", "wb");
    digits_model_ctx dctx;
    kws_model_ctx kctx;
    int status = 0, nd = 0, nk = 0;
    if (fdi == NULL || fki == NULL || fdo == NULL || fdc == NULL || fko == NULL || fkc == NULL) {
        printf("ERROR cannot open the sample files\n");
        return 2;
    }
    refusals();
    status |= digits_model_init() | kws_model_init();
    /* the exact sizes are accepted, both models on the same buffer */
    status |= digits_model_init_ctx(&dctx, shared, DIGITS_ARENA_SIZE);
    status |= kws_model_init_ctx(&kctx, shared, KWS_ARENA_SIZE);
    for (;;) {
        int more = 0;
        if (next(fdi, digits_in, sizeof digits_in)) {
            status |= digits_model_run(digits_in, digits_out);
            fwrite(digits_out, 1, sizeof digits_out, fdo);
            status |= digits_model_run_ctx(&dctx, digits_in, digits_out);
            fwrite(digits_out, 1, sizeof digits_out, fdc);
            nd++;
            more = 1;
        }
        if (next(fki, kws_in, sizeof kws_in)) {
            status |= kws_model_run_ctx(&kctx, kws_in, kws_out); /* over what digits left in `shared` */
            fwrite(kws_out, 1, sizeof kws_out, fkc);
            status |= kws_model_run(kws_in, kws_out);
            fwrite(kws_out, 1, sizeof kws_out, fko);
            nk++;
            more = 1;
        }
        if (!more)
            break;
    }
    fclose(fdi);
    fclose(fki);
    fclose(fdo);
    fclose(fdc);
    fclose(fko);
    fclose(fkc);
    printf("DONE digits=%d kws=%d status=%d\n", nd, nk, status);
    return status != 0;
}
