/* edgecc stack high-water mark for hosted boards (native host, AArch64 Linux under qemu-aarch64).
 * A constructor paints ECC_STACK_PAINT_BYTES of the stack below its own frame (a large local array
 * of a callee: the pages are mapped by writing them); at exit one line
 * "ECC_STACK used=<bytes> painted=<bytes>" on stderr gives the deepest overwritten word, measured
 * from the constructor's frame (harness, libc and model library included), the same contract as
 * the Cortex-M start-up. used == painted means the stack went at least that deep. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define ECC_STACK_PAINT 0xC5AC5AC5u
#define ECC_STACK_PAINT_BYTES (256u * 1024u)

static uintptr_t ecc_stack_top;  /* the constructor's frame address */
static uintptr_t ecc_stack_low;  /* lowest painted address (an address only: the frame is gone) */

__attribute__((noinline, noipa)) static void ecc_stack_paint(void)
{
    volatile uint32_t area[ECC_STACK_PAINT_BYTES / 4u];
    for (uint32_t i = 0; i < ECC_STACK_PAINT_BYTES / 4u; i++) area[i] = ECC_STACK_PAINT;
    ecc_stack_low = (uintptr_t)&area[0];
}

static char *ecc_put_udec(char *p, uint64_t u)
{
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + u % 10u); u /= 10u; } while (u);
    while (n) *p++ = tmp[--n];
    return p;
}

static char *ecc_put_text(char *p, const char *s)
{
    while (*s) *p++ = *s++;
    return p;
}

static void ecc_stack_report(void)
{
    const volatile uint32_t *w = (const volatile uint32_t *)ecc_stack_low;
    const volatile uint32_t *end = (const volatile uint32_t *)(ecc_stack_low + ECC_STACK_PAINT_BYTES);
    while (w < end && *w == ECC_STACK_PAINT) w++;
    char buf[80];
    char *p = ecc_put_udec(ecc_put_text(buf, "ECC_STACK used="), ecc_stack_top - (uintptr_t)w);
    p = ecc_put_udec(ecc_put_text(p, " painted="), ecc_stack_top - ecc_stack_low);
    p = ecc_put_text(p, "\n");
    ssize_t unused = write(2, buf, (size_t)(p - buf));
    (void)unused;
}

__attribute__((constructor)) static void ecc_stack_init(void)
{
    ecc_stack_top = (uintptr_t)__builtin_frame_address(0);
    ecc_stack_paint();
    atexit(ecc_stack_report);
}
