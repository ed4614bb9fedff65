/* edgecc 0.1.0 | model model.onnx sha256:83ed2380a8ba65c0 | board host
 * Generated code: do not edit; re-run edgecc instead. */
#ifndef ECC_MODEL_H
#define ECC_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* Arena: activations and scratch, planned at build time. The library owns a static one (the
 * default, ecc_model_run), or the application hands in its own (ecc_model_init_ctx). */
#define ECC_ARENA_SIZE 768u /* bytes */
#define ECC_ARENA_ALIGNMENT 16u /* bytes */
#define ECC_NUM_OPS 10

/* input0: tensor "input", int8 [1, 1, 8, 8], real = scale * (q - zero_point) */
#define ECC_INPUT0_SIZE 64u /* bytes */
#define ECC_INPUT0_SCALE 0.003921568859368563f
#define ECC_INPUT0_ZERO_POINT -128
/* output0: tensor "probs", int8 [1, 10], real = scale * (q - zero_point) */
#define ECC_OUTPUT0_SIZE 10u /* bytes */
#define ECC_OUTPUT0_SCALE 0.00390625f
#define ECC_OUTPUT0_ZERO_POINT -128

/* Prepares the model; returns 0. Nothing to allocate: call it once for symmetry with other runtimes. */
int ecc_model_init(void);

/* Runs one inference in the static arena. The I/O buffers may have any alignment and are copied in
 * and out of the arena. Returns 0 on success, non-zero if a kernel reported an error. Not reentrant
 * (one static arena). Compiling the library with -DECC_NO_STATIC_ARENA leaves the static arena,
 * ecc_model_init and ecc_model_run out (the application owns all memory then). */
int ecc_model_run(const int8_t *input0, int8_t *output0);

/* The application's memory: an instance runs in a buffer of at least ECC_ARENA_SIZE bytes whose
 * address is a multiple of ECC_ARENA_ALIGNMENT (the plan aligns buffers to it for the kernels' word and
 * vector accesses). Instances on different buffers are independent (reentrant: one per thread or
 * core). Models that never run at the same time may share one buffer: size it as the largest of
 * their ARENA_SIZEs, aligned to the largest ARENA_ALIGNMENT. Nothing in the arena outlives a run. */
typedef struct ecc_model_ctx {
    int8_t *arena; /* set by ecc_model_init_ctx; NULL when it refused the buffer */
} ecc_model_ctx;

#define ECC_ERR_ARENA_NULL (-2)       /* ctx or arena is NULL, or ctx holds no arena (init refused it) */
#define ECC_ERR_ARENA_TOO_SMALL (-3)  /* size < ECC_ARENA_SIZE */
#define ECC_ERR_ARENA_MISALIGNED (-4) /* arena not a multiple of ECC_ARENA_ALIGNMENT */

/* Binds ctx to the caller's arena. Returns 0, or one of the ECC_ERR_ARENA_* codes (ctx->arena is
 * then NULL and ecc_model_run_ctx refuses to run). */
int ecc_model_init_ctx(ecc_model_ctx *ctx, void *arena, size_t size);

/* Runs one inference in ctx's arena, as ecc_model_run does in the static one; returns
 * ECC_ERR_ARENA_NULL for a NULL or refused ctx. */
int ecc_model_run_ctx(const ecc_model_ctx *ctx, const int8_t *input0, int8_t *output0);

#endif /* ECC_MODEL_H */
