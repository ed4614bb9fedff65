/* tcount: deterministic guest instruction counter for QEMU 7.2 (system and user mode).
 *
 * Args (comma-separated after the .so path):
 *   mark=0xADDR  repeatable, up to TC_MAXMARK. Mark index = order given (0, 1, ...). Each time
 *                the guest executes the instruction at ADDR (entry of a noinline marker
 *                function, address from nm), record (index, instructions retired so far).
 *   exact=1      count per instruction (exact even when a TB is left early, e.g. on a fault or
 *                exception) instead of per translation block. targets.qemu always passes it.
 *   classes=1    also count instructions per class (tc_classify.h: decoded from the instruction
 *                bytes, approximate) for the cycle estimate; needs exact=1.
 *   isa=thumb|a64  the instruction set to decode for classes (default thumb).
 *   region=0xLO:0xHI  repeatable, up to TC_MAXREGION: also count the guest's data accesses (loads and
 *                stores, one per access QEMU makes: an LDM of 4 registers is 4) to [LO, HI), per
 *                region in the order given; instruction fetches are not counted. Needs classes=1.
 *
 * Output at exit, through qemu_plugin_outs (visible only with -d plugin [-D file]):
 *   tcount: v2 total_insns=<N> marks=<K> dropped=<D> exact=<0|1>
 *   tcount: mark <i> which=<index> insns=<count>        (K lines, i = 0..K-1, firing order)
 * With classes=1 a line after the header gives the totals per class, and every mark line the
 * counts per class when it fired (C = load store mac branch other vload vstore vmac vother vgather
 * xfer; the first ten sum to the instructions, xfer counts extra registers of multiple transfers):
 *   tcount: classes load=<n> store=<n> ... xfer=<n>
 *   tcount: mark <i> which=<index> insns=<count> load=<n> ... xfer=<n>
 * With regions, a line after the classes line gives the totals, and every mark line the counts
 * when it fired (one per region, in the order given):
 *   tcount: regions acc=<n>,<n>,...
 *   tcount: mark <i> which=<index> insns=<count> load=<n> ... xfer=<n> acc=<n>,<n>,...
 * A single vCPU is assumed (Cortex-M boards, single-threaded user programs). */
#include "tc_qemu_plugin_api.h"
#include "tc_classify.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define TC_MAXMARK 64
#define TC_MAXREC (1u << 24)   /* hard cap on stored records (16 M * 12 bytes); beyond: dropped */

static uint64_t g_insns;
static uint64_t g_mark_addr[TC_MAXMARK];
static int g_nmark;
static int g_exact;
static int g_classes, g_a64;
static uint64_t g_cls[TC_NCLASS];

#define TC_MAXREGION 8
static uint64_t g_reg_lo[TC_MAXREGION], g_reg_hi[TC_MAXREGION], g_acc[TC_MAXREGION];
static int g_nreg;

typedef struct { uint64_t insns; uint32_t which; uint64_t cls[TC_NCLASS]; uint64_t acc[TC_MAXREGION]; } tc_rec;
static tc_rec *g_rec;
static size_t g_nrec, g_caprec;
static uint64_t g_dropped;

static void on_mark(unsigned int vcpu, void *ud)
{
    (void)vcpu;
    if (g_nrec == g_caprec) {
        size_t cap = g_caprec ? g_caprec * 2 : 4096;
        tc_rec *p = cap <= TC_MAXREC ? realloc(g_rec, cap * sizeof *p) : NULL;
        if (!p) { g_dropped++; return; }
        g_rec = p;
        g_caprec = cap;
    }
    g_rec[g_nrec].insns = g_insns;
    g_rec[g_nrec].which = (uint32_t)(uintptr_t)ud;
    memcpy(g_rec[g_nrec].cls, g_cls, sizeof g_cls);
    memcpy(g_rec[g_nrec].acc, g_acc, sizeof g_acc);
    g_nrec++;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *ud)
{
    (void)vcpu; (void)info; (void)ud;
    for (int r = 0; r < g_nreg; r++)
        if (vaddr >= g_reg_lo[r] && vaddr < g_reg_hi[r]) {
            g_acc[r]++;
            return;
        }
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (!g_exact)
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (g_exact)
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, 1);
        if (g_classes) {
            int xfer;
            const int c = tc_classify(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn), g_a64, &xfer);
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_cls[c], 1);
            if (xfer > 0)
                qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &g_cls[TC_XFER],
                                                           (uint64_t)xfer);
        }
        if (g_nreg)
            qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        uint64_t va = qemu_plugin_insn_vaddr(insn);
        for (int m = 0; m < g_nmark; m++)
            if (va == g_mark_addr[m])
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)m);
    }
}

/* " load=<n> store=<n> ..." of the class counters c, appended to line (size n) */
static void put_classes(char *line, size_t n, const uint64_t *c)
{
    size_t at = strlen(line);
    if (at && line[at - 1] == '\n')
        line[--at] = 0;
    for (int k = 0; k < TC_NCLASS && at < n; k++)
        at += (size_t)snprintf(line + at, n - at, " %s=%" PRIu64, tc_class_name[k], c[k]);
    if (at + 1 < n) {
        line[at] = '\n';
        line[at + 1] = 0;
    }
}

/* " acc=<n>,<n>,..." of the region counters a, appended to line (size n) */
static void put_regions(char *line, size_t n, const uint64_t *a)
{
    size_t at = strlen(line);
    if (at && line[at - 1] == '\n')
        line[--at] = 0;
    for (int r = 0; r < g_nreg && at < n; r++)
        at += (size_t)snprintf(line + at, n - at, "%s%" PRIu64, r ? "," : " acc=", a[r]);
    if (at + 1 < n) {
        line[at] = '\n';
        line[at + 1] = 0;
    }
}

static void on_exit_cb(qemu_plugin_id_t id, void *ud)
{
    (void)id; (void)ud;
    char line[512];
    snprintf(line, sizeof line, "tcount: v2 total_insns=%" PRIu64 " marks=%zu dropped=%" PRIu64 " exact=%d\n",
             g_insns, g_nrec, g_dropped, g_exact);
    qemu_plugin_outs(line);
    if (g_classes) {
        snprintf(line, sizeof line, "tcount: classes");
        put_classes(line, sizeof line, g_cls);
        qemu_plugin_outs(line);
    }
    if (g_nreg) {
        snprintf(line, sizeof line, "tcount: regions");
        put_regions(line, sizeof line, g_acc);
        qemu_plugin_outs(line);
    }
    for (size_t i = 0; i < g_nrec; i++) {
        snprintf(line, sizeof line, "tcount: mark %zu which=%" PRIu32 " insns=%" PRIu64 "\n",
                 i, g_rec[i].which, g_rec[i].insns);
        if (g_classes)
            put_classes(line, sizeof line, g_rec[i].cls);
        if (g_nreg)
            put_regions(line, sizeof line, g_rec[i].acc);
        qemu_plugin_outs(line);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        char *end = NULL;
        if (!strncmp(argv[i], "mark=", 5)) {
            if (g_nmark == TC_MAXMARK) { fprintf(stderr, "tcount: more than %d marks\n", TC_MAXMARK); return -1; }
            g_mark_addr[g_nmark++] = strtoull(argv[i] + 5, &end, 0);
        } else if (!strncmp(argv[i], "exact=", 6)) {
            g_exact = (int)strtol(argv[i] + 6, &end, 10);
        } else if (!strncmp(argv[i], "classes=", 8)) {
            g_classes = (int)strtol(argv[i] + 8, &end, 10);
        } else if (!strncmp(argv[i], "region=", 7)) {
            if (g_nreg == TC_MAXREGION) { fprintf(stderr, "tcount: more than %d regions\n", TC_MAXREGION); return -1; }
            g_reg_lo[g_nreg] = strtoull(argv[i] + 7, &end, 0);
            if (!end || *end != ':') { fprintf(stderr, "tcount: bad region %s\n", argv[i]); return -1; }
            g_reg_hi[g_nreg++] = strtoull(end + 1, &end, 0);
        } else if (!strcmp(argv[i], "isa=thumb") || !strcmp(argv[i], "isa=a64")) {
            g_a64 = argv[i][4] == 'a';
            end = argv[i] + strlen(argv[i]);
        } else {
            fprintf(stderr, "tcount: unknown arg %s\n", argv[i]);
            return -1;
        }
        if (!end || *end) { fprintf(stderr, "tcount: bad number in %s\n", argv[i]); return -1; }
    }
    if (g_classes && !g_exact) { fprintf(stderr, "tcount: classes=1 needs exact=1\n"); return -1; }
    if (g_nreg && !g_classes) { fprintf(stderr, "tcount: region= needs classes=1\n"); return -1; }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
    return 0;
}
