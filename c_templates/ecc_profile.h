/* Per-op profiling hooks. Compiled out unless ECC_PROFILE is defined (the test firmware defines
 * it; the deployable library in OUT/lib does not), so release builds carry no cost. */
#ifndef ECC_PROFILE_H
#define ECC_PROFILE_H

#include <stdint.h>

#ifdef ECC_PROFILE
void ecc_profile_begin(int32_t op);
void ecc_profile_end(int32_t op);
#define ECC_OP_BEGIN(i) ecc_profile_begin(i)
#define ECC_OP_END(i) ecc_profile_end(i)
#else
#define ECC_OP_BEGIN(i) ((void)0)
#define ECC_OP_END(i) ((void)0)
#endif

#endif /* ECC_PROFILE_H */
