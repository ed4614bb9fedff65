/* Instruction classes for tcount's cycle estimate (plugin arg classes=1): each executed guest
 * instruction falls in one class, decoded from its bytes with a small table. APPROXIMATE: the
 * rules cover the encodings compiled kernels use (Thumb-2 incl. DSP, VFP and MVE for Armv7-M and
 * Armv8.1-M; A64 incl. Advanced SIMD); anything unrecognised counts as `other`. Classes:
 *   load, store        scalar loads/stores (LDR*, LDM, POP / STR*, STM, PUSH; VFP VLDR/VSTR, VLDM)
 *   mac                scalar multiply and multiply-accumulate (MUL, MLA, SMLAD, SMULL, ..., VFP VMUL/VFMA)
 *   branch             branches incl. compare-and-branch, table branch, low-overhead loops (LE, WLS, DLS)
 *   other              everything else (ALU, moves, IT, hints, divide, VFP arithmetic)
 *   vload, vstore      MVE / Advanced SIMD vector loads and stores (contiguous, VLD2/VLD4, LD1/ST1)
 *   vmac               vector multiplies (VMLADAV, VMULL, VMUL, VQRDMULH, ..., SDOT, SMLAL, MLA, FMLA)
 *   vother             other vector instructions (VADD, VMOV, VDUP, VQMOVN, VCTP, VPST, ...)
 *   vgather            MVE gather loads / scatter stores (one element per beat)
 *   xfer               not an instruction class: the registers beyond the first that a multiple
 *                      transfer moves (LDM/STM/PUSH/POP, LDRD/STRD, LDP/STP, VLDM/VPUSH)
 * The multiply tables were generated from assembled variants of each multiply mnemonic (every
 * register and size combination GNU as accepts), keeping the bits constant across them. */
#ifndef TC_CLASSIFY_H
#define TC_CLASSIFY_H
#include <stddef.h>
#include <stdint.h>

enum tc_class {
    TC_LOAD, TC_STORE, TC_MAC, TC_BRANCH, TC_OTHER, TC_VLOAD, TC_VSTORE, TC_VMAC, TC_VOTHER, TC_VGATHER,
    TC_XFER, TC_NCLASS
};
static const char *const tc_class_name[TC_NCLASS] = {
    "load", "store", "mac", "branch", "other", "vload", "vstore", "vmac", "vother", "vgather", "xfer"};

typedef struct { uint32_t mask, value; } tc_pattern;


/* generated from assembled variants (see the comment at the top) */
static const tc_pattern tc_mve_mul[] = {
    {0xef811fd1u, 0xee800f00u},
    {0xeff10ff0u, 0xee300f60u},
    {0xeff10ff0u, 0xee310e40u},
    {0xeff10ff1u, 0xee300f01u},
    {0xeff10ff1u, 0xee310e00u},
    {0xeff11ff0u, 0xee101e00u},
    {0xff800fd1u, 0xfe800e00u},
    {0xff801ff0u, 0xee801e00u},
    {0xff810ff0u, 0xee810e20u},
    {0xff811ef1u, 0xee801e20u},
    {0xff811fd0u, 0xee800e00u},
    {0xff811ff0u, 0xee810e00u},
    {0xff811ff1u, 0xee801e21u},
    {0xffc11ff1u, 0xef000c50u},
    {0xffd00fb0u, 0xee000e00u},
    {0xffd00ff0u, 0xee000e60u},
    {0xffd00ff0u, 0xfe000e00u},
    {0xffd11ff1u, 0xef000b40u},
    {0xffe11ff0u, 0xfe210e60u},
    {0xffe11ff1u, 0xef000950u},
    {0xffe11ff1u, 0xff000b40u},
    {0xffe11ff1u, 0xff000d50u},
    {0xfff00fd0u, 0xeef00e00u},
    {0xfff01fd0u, 0xee100e40u},
    {0xfff01ff0u, 0xee100e00u},
    {0xfff10fd1u, 0xeef00f00u},
    {0xfff10ff1u, 0xfe110e00u},
    {0xfff11fb0u, 0xee111e00u},
    {0xfff11fd0u, 0xee101e40u},
    {0xfff11fd0u, 0xfe010e40u},
    {0xfff11fd0u, 0xfef00e00u},
    {0xfff11fd1u, 0xfef01e01u},
    {0xfff11ff0u, 0xee111e60u},
    {0xfff11ff0u, 0xee310e60u},
    {0xfff11ff0u, 0xfe100e00u},
    {0xfff11ff0u, 0xfe110e60u},
    {0xfff11ff1u, 0xef100b40u},
    {0xfff11ff1u, 0xef200950u},
    {0xfff11ff1u, 0xff200b40u},
};
static const tc_pattern tc_a64_mul[] = {      /* scalar multiply family -> mac */
    {0x7fe00000u, 0x1b000000u},
    {0xff600000u, 0x9b200000u},
    {0xff800000u, 0x1f000000u},
    {0xffa07c00u, 0x1e200800u},
    {0xffa0fc00u, 0x9b007c00u},
    {0xffc00000u, 0x1fc00000u},
    {0xffe07c00u, 0x1ee00800u},
    {0xffe0fc00u, 0x9bc07c00u},
};
static const tc_pattern tc_a64_vmul[] = {     /* Advanced SIMD multiply family -> vmac */
    {0xbfc07400u, 0x2f402000u},
    {0xbfc0b400u, 0x0f402000u},
    {0xbfc0b400u, 0x2f400000u},
    {0xbfc0e400u, 0x0f40a000u},
    {0xbfc0e400u, 0x0f40c000u},
    {0xbfc0f400u, 0x0f408000u},
    {0xbfd0b400u, 0x0f801000u},
    {0xbfd0e400u, 0x0f80c000u},
    {0xbfd0f400u, 0x0f808000u},
    {0xbfe0bc00u, 0x2ea08000u},
    {0xbfe0dc00u, 0x0e20c000u},
    {0xbfe0dc00u, 0x0ea08000u},
    {0xbfe0ec00u, 0x0e400c00u},
    {0xbfe0ec00u, 0x0e60c000u},
    {0xbfe0ec00u, 0x0ea0c000u},
    {0xbfe0fc00u, 0x0ec00c00u},
    {0xbfe0fc00u, 0x2e401c00u},
    {0xbfe0fc00u, 0x2ea0a000u},
    {0xcfe0fc00u, 0x4e60b400u},
    {0xdfa0dc00u, 0x4e208000u},
    {0xdfe0dc00u, 0x0e609400u},
    {0xdfe0f400u, 0x4e209400u},
    {0xdfe0fc00u, 0x0e809400u},
    {0xdfe0fc00u, 0x5ea0b400u},
    {0xff50f400u, 0x4f00f000u},
    {0xff60fc00u, 0x0e20cc00u},
    {0xffa0bc00u, 0x2e208000u},
    {0xffa0dc00u, 0x0e208000u},
    {0xffa0ec00u, 0x4e20cc00u},
    {0xffa0fc00u, 0x2e20a000u},
    {0xffa0fc00u, 0x4ea0cc00u},
    {0xffa0fc00u, 0x6e20c000u},
    {0xffa0fc00u, 0x6e20dc00u},
    {0xffc07400u, 0x4f001000u},
    {0xffc0b400u, 0x0f001000u},
    {0xffc0f400u, 0x0f009000u},
    {0xffc0f400u, 0x4f005000u},
    {0xffc0fc00u, 0x0e809c00u},
    {0xffc0fc00u, 0x6e809400u},
    {0xffd03400u, 0x4f802000u},
    {0xffd07400u, 0x6f802000u},
    {0xffd0a400u, 0x0f80a000u},
    {0xffd0b400u, 0x0f802000u},
    {0xffd0b400u, 0x2f80a000u},
    {0xffd0b400u, 0x6f800000u},
    {0xffd0d400u, 0x2f800000u},
    {0xffd0d400u, 0x4f809000u},
    {0xffd0f400u, 0x0f00f000u},
    {0xffd0f400u, 0x0f809000u},
    {0xffd0f400u, 0x2f804000u},
    {0xffd0f400u, 0x6f80e000u},
    {0xffe0bc00u, 0x2e209c00u},
    {0xffe0dc00u, 0x2ea09400u},
    {0xffe0dc00u, 0x4ea09400u},
    {0xffe0f400u, 0x0e209400u},
    {0xffe0f400u, 0x4e609400u},
    {0xffe0f400u, 0x4e809400u},
    {0xffe0f400u, 0x4e80a400u},
    {0xffe0f800u, 0x0ea09000u},
    {0xffe0fc00u, 0x0e20dc00u},
    {0xffe0fc00u, 0x0e609000u},
    {0xffe0fc00u, 0x0e609c00u},
    {0xffe0fc00u, 0x0ea0b400u},
    {0xffe0fc00u, 0x2e209400u},
    {0xffe0fc00u, 0x4ea09c00u},
    {0xffe0fc00u, 0x6e609400u},
    {0xffe0fc00u, 0x6e80a400u},
    {0xffe0fc00u, 0x6ea0b400u},
    {0xfff07400u, 0x4fc01000u},
    {0xfff0f400u, 0x4fc05000u},
};

static int tc_match(const tc_pattern *p, unsigned n, uint32_t x)
{
    for (unsigned i = 0; i < n; i++)
        if ((x & p[i].mask) == p[i].value)
            return 1;
    return 0;
}

static int tc_popcount(uint32_t v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* 16-bit Thumb instruction h */
static int tc_thumb16(uint32_t h, int *xfer)
{
    if ((h & 0xF800) == 0x4800) return TC_LOAD;                                  /* LDR literal */
    if ((h & 0xF000) == 0x5000) return ((h >> 9) & 7) < 3 ? TC_STORE : TC_LOAD;   /* register offset */
    if ((h & 0xE000) == 0x6000 || (h & 0xE000) == 0x8000)                       /* imm5 / SP-relative */
        return (h & 0x0800) ? TC_LOAD : TC_STORE;
    if ((h & 0xFE00) == 0xB400) { *xfer = tc_popcount(h & 0x1FF) - 1; return TC_STORE; }  /* PUSH */
    if ((h & 0xFE00) == 0xBC00) { *xfer = tc_popcount(h & 0x1FF) - 1; return TC_LOAD; }   /* POP */
    if ((h & 0xF000) == 0xC000) { *xfer = tc_popcount(h & 0xFF) - 1; return (h & 0x0800) ? TC_LOAD : TC_STORE; }
    if ((h & 0xF000) == 0xD000) return ((h >> 9) & 7) == 7 ? TC_OTHER : TC_BRANCH; /* B<c>; UDF, SVC */
    if ((h & 0xF800) == 0xE000) return TC_BRANCH;                                /* B */
    if ((h & 0xFF00) == 0x4700) return TC_BRANCH;                                /* BX, BLX */
    if ((h & 0xF500) == 0xB100) return TC_BRANCH;                                /* CBZ, CBNZ */
    if ((h & 0xFF87) == 0x4687) return TC_BRANCH;                                /* MOV PC, Rm */
    if ((h & 0xFFC0) == 0x4340) return TC_MAC;                                   /* MULS */
    return TC_OTHER;
}

/* coprocessor space (h1 top bits 111x 11xx): VFP and MVE */
static int tc_thumb_cp(uint32_t h1, uint32_t h2, int *xfer)
{
    const uint32_t x = h1 << 16 | h2, cp = (h2 >> 8) & 0xF;
    const int fp = cp == 0xA || cp == 0xB;
    if ((h1 & 0xEE00) == 0xEC00) {                                    /* loads/stores, two-register moves */
        if ((h1 & 0x01A0) == 0)                                       /* P = U = W = 0: VMOV to/from two registers */
            return fp ? TC_OTHER : TC_VOTHER;
        if (fp) {
            if ((h1 & 0x0120) != 0x0100) {                            /* not VLDR/VSTR: VLDM, VSTM, VPUSH, VPOP */
                int regs = (int)(h2 & 0xFF) >> (cp == 0xB ? 1 : 0);
                *xfer = regs > 1 ? regs - 1 : 0;
            }
            return (h1 & 0x10) ? TC_LOAD : TC_STORE;
        }
        if (((h1 & 0x01A0) == 0x0080 && !(h2 & 0x1000)) || ((h1 & 0xFF00) == 0xFD00 && (h2 & 0x1F00) == 0x1E00))
            return TC_VGATHER;                                        /* [Rn, Qm] or [Qn, #imm] */
        return (h1 & 0x10) ? TC_VLOAD : TC_VSTORE;
    }
    if ((h1 & 0xEF00) == 0xEF00)                                      /* MVE three-register arithmetic */
        return tc_match(tc_mve_mul, sizeof tc_mve_mul / sizeof *tc_mve_mul, x) ? TC_VMAC : TC_VOTHER;
    if (fp && !(h1 & 0x1000)) {                                       /* VFP data processing, VMOV, VDUP, VMRS */
        if (h2 & 0x10)
            return cp == 0xB ? TC_VOTHER : TC_OTHER;                  /* core <-> lane/scalar moves, VDUP */
        switch ((h1 >> 4) & 0xB) {
        case 0x0: case 0x1: case 0x2: case 0x9: case 0xA: return TC_MAC;  /* VMLA/VMLS/VNMLA/VMUL/VNMUL/VFMA/VFNMA */
        default: return TC_OTHER;
        }
    }
    if (h1 == 0xFE71 || h1 == 0xFE31 || (h1 & 0xFFB1) == 0xFE31)     /* VPST */
        return TC_VOTHER;
    return tc_match(tc_mve_mul, sizeof tc_mve_mul / sizeof *tc_mve_mul, x) ? TC_VMAC : TC_VOTHER;
}

/* 32-bit Thumb-2 instruction (first halfword h1, second h2) */
static int tc_thumb32(uint32_t h1, uint32_t h2, int *xfer)
{
    if ((h1 & 0xFE40) == 0xE800) { *xfer = tc_popcount(h2 & 0xDFFF) - 1; return (h1 & 0x10) ? TC_LOAD : TC_STORE; }
    if ((h1 & 0xFE40) == 0xE840) {                                    /* dual, exclusive, table branch */
        if ((h1 & 0xFFF0) == 0xE8D0 && (h2 & 0xFFE0) == 0xF000) return TC_BRANCH;  /* TBB, TBH */
        if (h1 & 0x0120) *xfer = 1;                                   /* LDRD, STRD */
        return (h1 & 0x10) ? TC_LOAD : TC_STORE;
    }
    if ((h1 & 0xEC00) == 0xEC00) return tc_thumb_cp(h1, h2, xfer);
    if ((h1 & 0xF800) == 0xF000 && (h2 & 0x8000)) {                 /* branches, misc control, LOB */
        if ((h1 & 0xFF80) == 0xF000 && (h2 & 0xC001) == 0xC001)       /* low-overhead loops; VCTP */
            return h2 == 0xE801 ? TC_VOTHER : TC_BRANCH;
        if ((h2 & 0x5000) == 0 && ((h1 >> 7) & 7) == 7) return TC_OTHER;   /* MSR, MRS, hints, barriers */
        return TC_BRANCH;
    }
    if ((h1 & 0xFF00) == 0xF800) return (h1 & 0x10) ? TC_LOAD : TC_STORE;
    if ((h1 & 0xFF00) == 0xF900) return (h1 & 0x10) ? TC_LOAD : TC_OTHER;
    if ((h1 & 0xFF80) == 0xFB00) return TC_MAC;                       /* MUL, MLA, SMLAD, SMMULR, ... */
    if ((h1 & 0xFF80) == 0xFB80) return (h2 & 0xF0) == 0xF0 ? TC_OTHER : TC_MAC;  /* SDIV/UDIV; SMULL, SMLAL */
    return TC_OTHER;
}

/* A64 instruction w */
static int tc_a64(uint32_t w, int *xfer)
{
    if ((w & 0x0A000000) == 0x08000000) {                             /* loads and stores */
        const int vec = (w >> 26) & 1;
        int load;
        if ((w & 0x3B000000) == 0x18000000) load = 1;                 /* literal */
        else if ((w & 0x38000000) == 0x28000000) { load = (w >> 22) & 1; *xfer = 1; }   /* pairs */
        else if ((w & 0x38000000) == 0x38000000) {                    /* single register */
            const uint32_t opc = (w >> 22) & 3;
            load = vec && (w >> 30) == 0 ? (opc & 1) : opc != 0;
            if ((w & 0x3F200C00) == 0x38200000) load = 1;            /* atomics */
        } else load = (w >> 22) & 1;                                  /* exclusive, SIMD structures */
        return vec ? (load ? TC_VLOAD : TC_VSTORE) : (load ? TC_LOAD : TC_STORE);
    }
    if ((w & 0x1C000000) == 0x14000000) {                             /* branches, exceptions, system */
        if ((w & 0xFF000000) == 0xD5000000 || (w & 0xFF000000) == 0xD4000000) return TC_OTHER;
        return TC_BRANCH;
    }
    if ((w & 0x0E000000) == 0x0E000000) {                             /* SIMD and FP */
        const int scalar_fp = (w & 0x5F000000) == 0x1E000000 || (w & 0x5F000000) == 0x1F000000;
        if (scalar_fp)
            return tc_match(tc_a64_mul, sizeof tc_a64_mul / sizeof *tc_a64_mul, w) ? TC_MAC : TC_OTHER;
        return tc_match(tc_a64_vmul, sizeof tc_a64_vmul / sizeof *tc_a64_vmul, w) ? TC_VMAC : TC_VOTHER;
    }
    if (tc_match(tc_a64_mul, sizeof tc_a64_mul / sizeof *tc_a64_mul, w)) return TC_MAC;
    return TC_OTHER;
}

/* class of the instruction in bytes b[0..size) (little endian); a64: A64, else Thumb */
static int tc_classify(const uint8_t *b, size_t size, int a64, int *xfer)
{
    *xfer = 0;
    if (a64)
        return size == 4 ? tc_a64((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24, xfer)
                         : TC_OTHER;
    if (size == 2)
        return tc_thumb16((uint32_t)b[0] | (uint32_t)b[1] << 8, xfer);
    if (size == 4)
        return tc_thumb32((uint32_t)b[0] | (uint32_t)b[1] << 8, (uint32_t)b[2] | (uint32_t)b[3] << 8, xfer);
    return TC_OTHER;
}

#endif
