/* edgecc fault hook for hosted boards (native host, AArch64 Linux under qemu-aarch64).
 * Installs handlers for SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP/SIGABRT that print one line
 * "FAULT: SIGNAL=<n> ADDR=<hex> OP=<n>" on stderr and exit 99, the same contract as the
 * Cortex-M HardFault handler, so targets.qemu parses faults the same way on every board.
 * __builtin_trap() raises SIGILL on x86-64 (ud2) but SIGTRAP on AArch64 (brk), also under
 * qemu-aarch64. SIGUSR1 prints the same line: the runner sends it to a run that timed out, to
 * learn which op it hung in (targets/hang.py). */
#define _DEFAULT_SOURCE /* SIGTRAP is XSI, not POSIX base */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ecc_board.h"

__attribute__((weak)) volatile int32_t ecc_current_op = -1;

static char *ecc_put_str(char *p, const char *s)
{
    while (*s) *p++ = *s++;
    return p;
}

static char *ecc_put_hex(char *p, uint64_t v)
{
    for (int i = 15; i >= 0; i--) { p[i] = "0123456789abcdef"[v & 15u]; v >>= 4; }
    return p + 16;
}

static char *ecc_put_dec(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    if (v < 0) *p++ = '-';
    do { tmp[n++] = (char)('0' + u % 10u); u /= 10u; } while (u);
    while (n) *p++ = tmp[--n];
    return p;
}

/* Only async-signal-safe calls (write, _exit) in here. */
static void ecc_on_fault(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    char buf[96];
    char *p = ecc_put_dec(ecc_put_str(buf, "FAULT: SIGNAL="), sig);
    p = ecc_put_hex(ecc_put_str(p, " ADDR="), (uint64_t)(uintptr_t)info->si_addr);
    p = ecc_put_dec(ecc_put_str(p, " OP="), ecc_current_op);
    p = ecc_put_str(p, "\n");
    ssize_t unused = write(2, buf, (size_t)(p - buf));
    (void)unused;
    _exit(99);
}

__attribute__((constructor)) static void ecc_install_fault_handlers(void)
{
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGUSR1 };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ecc_on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}
