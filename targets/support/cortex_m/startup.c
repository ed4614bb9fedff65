/* edgecc startup for QEMU mps2/mps3 boards (Cortex-M3/M4/M7/M33/M55).
 * Vector table in C; Reset_Handler enables FPU/MVE (CPACR) in asm, copies .data, zeroes .bss,
 * runs constructors, initialises semihosting, fetches argv (SYS_GET_CMDLINE; arguments are
 * split on spaces) and exits with main()'s status through
 * SYS_EXIT_EXTENDED. Faults print one "FAULT: ..." line on stderr and exit 99.
 * Stack high-water mark: the free stack is painted before main; at exit one line
 * "ECC_STACK used=<bytes> painted=<bytes>" on stderr gives the deepest overwritten word, measured
 * from the stack top (start-up, harness, libc and model library included).
 * Why our own reset handler: rdimon-crt0 does not copy .data (QEMU -kernel loads it at its LMA)
 * and moves the heap over the arena (see qemu-and-toolchains.md, pitfalls 1-2). */
#include <stdint.h>
#include <stdlib.h>

#include "ecc_board.h"

extern uint32_t __stack_top, __stack_bottom;
extern uint32_t __data_load, __data_start, __data_end;
extern uint32_t __bss_start__, __bss_end__;
extern int main(int argc, char **argv);   /* a harness's main(void) is fine too */
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);

__attribute__((weak)) volatile int32_t ecc_current_op = -1;

__attribute__((noreturn)) void ecc_semihost_exit(int code);
void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void)    __attribute__((weak, alias("Default_Handler")));
void NMI_Handler(void)        __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler(void)  __attribute__((weak, alias("HardFault_Handler")));
void BusFault_Handler(void)   __attribute__((weak, alias("HardFault_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void SecureFault_Handler(void)__attribute__((weak, alias("HardFault_Handler")));

typedef void (*ecc_vec_t)(void);
__attribute__((section(".vectors"), used))
const ecc_vec_t ecc_vectors[16 + 32] = {
    (ecc_vec_t)&__stack_top,    /* 0: initial MSP */
    Reset_Handler,              /* 1 */
    NMI_Handler,                /* 2 */
    HardFault_Handler,          /* 3 */
    MemManage_Handler,          /* 4 */
    BusFault_Handler,           /* 5 */
    UsageFault_Handler,         /* 6 */
    SecureFault_Handler,        /* 7 (v8-M only) */
    0, 0, 0,                    /* 8-10 */
    Default_Handler,            /* 11 SVCall */
    Default_Handler,            /* 12 DebugMon */
    0,                          /* 13 */
    Default_Handler,            /* 14 PendSV */
    SysTick_Handler,            /* 15 SysTick */
    [16 ... 47] = Default_Handler, /* external IRQs */
};

#define SCB_CFSR  (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR  (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_BFAR  (*(volatile uint32_t *)0xE000ED38u)

__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    /* In asm so no FP/MVE instruction can run before CPACR is set (GCC may use FP regs in C). */
    __asm volatile(
#if (defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)) && !defined(ECC_NO_CPACR)
        "ldr r0, =0xE000ED88\n"      /* CPACR */
        "ldr r1, [r0]\n"
        "orr r1, r1, #(0xF << 20)\n" /* CP10, CP11 full access (FPU + MVE) */
        "str r1, [r0]\n"
        "dsb\n isb\n"
#endif
        "b ecc_c_start\n");
}

/* SYS_GET_CMDLINE (0x15): QEMU's -semihosting-config arg=... list, joined by spaces. */
static char ecc_cmdline[256];
static char *ecc_argv[16];

static int ecc_get_args(void)
{
    volatile uint32_t blk[2] = { (uint32_t)ecc_cmdline, sizeof ecc_cmdline - 1u };
    register uint32_t r0 __asm("r0") = 0x15;
    register volatile uint32_t *r1 __asm("r1") = blk;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    if (r0 != 0u) return 0;
    ecc_cmdline[blk[1] < sizeof ecc_cmdline ? blk[1] : sizeof ecc_cmdline - 1u] = '\0';
    int argc = 0;
    char *p = ecc_cmdline;
    while (*p && argc < (int)(sizeof ecc_argv / sizeof ecc_argv[0]) - 1) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        ecc_argv[argc++] = p;
        while (*p && *p != ' ') p++;
    }
    ecc_argv[argc] = 0;
    return argc;
}

#define ECC_STACK_PAINT 0xC5AC5AC5u

static void ecc_write0(const char *text);
static char *ecc_put_str(char *p, const char *s);
static char *ecc_put_dec(char *p, int32_t v);

/* atexit: the deepest stack word that no longer holds the paint, as bytes below the stack top. */
static void ecc_report_stack(void)
{
    const volatile uint32_t *w = &__stack_bottom;
    while (w < &__stack_top && *w == ECC_STACK_PAINT) w++;
    char buf[64];
    char *p = ecc_put_dec(ecc_put_str(buf, "ECC_STACK used="), (int32_t)((uintptr_t)&__stack_top - (uintptr_t)w));
    p = ecc_put_dec(ecc_put_str(p, " painted="), (int32_t)((uintptr_t)&__stack_top - (uintptr_t)&__stack_bottom));
    p = ecc_put_str(p, "\n");
    *p = '\0';
    ecc_write0(buf);
}

/* no-tree-loop-distribute-patterns: stop GCC turning the loops into memcpy/memset calls,
 * which would run before .data/.bss are valid. The stack is painted from its bottom up to this
 * function's frame (nothing below the stack pointer is live yet), before any library code runs. */
__attribute__((noreturn, used, optimize("no-tree-loop-distribute-patterns")))
void ecc_c_start(void)
{
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
    uint32_t *sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    for (volatile uint32_t *w = &__stack_bottom; w < sp; w++) *w = ECC_STACK_PAINT; /* all below this frame is free */
    __libc_init_array();
    initialise_monitor_handles();
    atexit(ecc_report_stack);
    int argc = ecc_get_args();
    exit(main(argc, ecc_argv));
}

/* SYS_EXIT_EXTENDED (0x20): {ADP_Stopped_ApplicationExit, code} -> QEMU status = code & 0xff.
 * Plain SYS_EXIT (0x18) loses the code on AArch32. */
void ecc_semihost_exit(int code)
{
    volatile uint32_t blk[2] = { 0x20026u, (uint32_t)code };
    register uint32_t r0 __asm("r0") = 0x20;
    register volatile uint32_t *r1 __asm("r1") = blk;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {}
}

static void ecc_write0(const char *text)   /* raw SYS_WRITE0 (0x04): goes to QEMU's stderr */
{
    register uint32_t r0 __asm("r0") = 0x04;
    register const char *r1 __asm("r1") = text;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

static char *ecc_put_hex(char *p, uint32_t v)
{
    for (int i = 7; i >= 0; i--) { p[i] = "0123456789abcdef"[v & 15u]; v >>= 4; }
    return p + 8;
}

static char *ecc_put_str(char *p, const char *s)
{
    while (*s) *p++ = *s++;
    return p;
}

static char *ecc_put_dec(char *p, int32_t v)
{
    char tmp[11];
    int n = 0;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    if (v < 0) *p++ = '-';
    do { tmp[n++] = (char)('0' + u % 10u); u /= 10u; } while (u);
    while (n) *p++ = tmp[--n];
    return p;
}

/* No printf / FP here: a NOCP fault (FP with CPACR off) must not fault again in the handler. */
__attribute__((used, noreturn)) void ecc_hardfault_c(const uint32_t *frame)
{
    char buf[96];
    char *p = ecc_put_str(buf, "FAULT: CFSR=");
    p = ecc_put_hex(p, SCB_CFSR);
    p = ecc_put_hex(ecc_put_str(p, " HFSR="), SCB_HFSR);
    p = ecc_put_hex(ecc_put_str(p, " BFAR="), SCB_BFAR);
    p = ecc_put_hex(ecc_put_str(p, " PC="), frame[6]);   /* stacked PC */
    p = ecc_put_dec(ecc_put_str(p, " OP="), ecc_current_op);
    p = ecc_put_str(p, "\n");
    *p = '\0';
    ecc_write0(buf);
    ecc_semihost_exit(99);
}

__attribute__((naked)) void HardFault_Handler(void)
{
    /* Pass the exception frame of whichever stack was active (EXC_RETURN bit 2). */
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b ecc_hardfault_c\n");
}

void Default_Handler(void)
{
    char buf[64];
    char *p = ecc_put_dec(ecc_put_str(buf, "FAULT: unexpected exception OP="), ecc_current_op);
    p = ecc_put_str(p, "\n");
    *p = '\0';
    ecc_write0(buf);
    ecc_semihost_exit(98);
}
