/* edgecc 0.1.0 | model model.onnx sha256:83ed2380a8ba65c0 | board mps2-an386
 * Generated code: do not edit; re-run edgecc instead. */
#ifndef ECC_MODEL_H
#define ECC_MODEL_H

#include <stdint.h>

/* Static arena owned by the library: activations and scratch, planned at build time. */
#define ECC_ARENA_SIZE 1568u /* bytes */
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

/* Runs one inference. The I/O buffers may have any alignment and are copied in and out of the arena.
 * Returns 0 on success, non-zero if a kernel reported an error. Not reentrant (one static arena). */
int ecc_model_run(const int8_t *input0, int8_t *output0);

#endif /* ECC_MODEL_H */
