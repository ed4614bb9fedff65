"""Regenerate the multiply tables of tc_classify.h (run by hand after editing the templates):

    /work/venv/bin/python targets/plugin/gen_classify_tables.py > /tmp/tables.inc

For every multiply mnemonic template below, 12-24 variants with random registers (and every size
the assembler accepts) are assembled with the cross toolchains (arm-none-eabi-gcc for Thumb/MVE,
aarch64-linux-gnu-as for A64); the bits constant across a template's variants give one
(mask, value) pattern; patterns differing in one bit are merged and subsumed ones dropped. Prints
the three C tables (tc_mve_mul, tc_a64_mul, tc_a64_vmul) to paste into tc_classify.h."""
from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

MVE = [  # Thumb/MVE vector multiply family -> vmac
    ("vmladav{a}{x}.{s} r{rd}, q{n}, q{m}", dict(a=["", "a"], x=["", "x"], s=["s8", "s16", "s32", "u8", "u16", "u32"])),
    ("vmlsdav{a}{x}.{s} r{rd}, q{n}, q{m}", dict(a=["", "a"], x=["", "x"], s=["s8", "s16", "s32"])),
    ("vmlaldav{a}{x}.{s} r{rd}, r{rd1}, q{n}, q{m}", dict(a=["", "a"], x=["", "x"], s=["s16", "s32", "u16", "u32"])),
    ("vmlsldav{a}{x}.{s} r{rd}, r{rd1}, q{n}, q{m}", dict(a=["", "a"], x=["", "x"], s=["s16", "s32"])),
    ("vrmlaldavh{a}{x}.{s} r{rd}, r{rd1}, q{n}, q{m}", dict(a=["", "a"], x=["", "x"], s=["s32", "u32"])),
    ("vmull{bt}.{s} q{d}, q{n}, q{m}", dict(bt=["b", "t"], s=["s8", "s16", "s32", "u8", "u16", "u32", "p8", "p16"])),
    ("vmul.{i} q{d}, q{n}, q{m}", dict(i=["i8", "i16", "i32", "f32", "f16"])),
    ("vmul.{i} q{d}, q{n}, r{r}", dict(i=["i8", "i16", "i32", "f32", "f16"])),
    ("vmla.{i} q{d}, q{n}, r{r}", dict(i=["s8", "s16", "s32", "u8"])),
    ("vmlas.{i} q{d}, q{n}, r{r}", dict(i=["s8", "s16", "s32"])),
    ("vq{rr}dmulh.{s} q{d}, q{n}, q{m}", dict(rr=["", "r"], s=["s8", "s16", "s32"])),
    ("vq{rr}dmulh.{s} q{d}, q{n}, r{r2}", dict(rr=["", "r"], s=["s8", "s16", "s32"])),
    ("v{rr}mulh.{s} q{d}, q{n}, q{m}", dict(rr=["", "r"], s=["s8", "s16", "s32", "u8", "u32"])),
    ("vqdmull{bt}.{s} q{d}, q{n}, q{m}", dict(bt=["b", "t"], s=["s16", "s32"])),
    ("vqdmull{bt}.{s} q{d}, q{n}, r{r}", dict(bt=["b", "t"], s=["s16", "s32"])),
    ("vq{rr}dmlah.{s} q{d}, q{n}, r{r2}", dict(rr=["", "r"], s=["s8", "s16", "s32"])),
    ("vq{rr}dmlash.{s} q{d}, q{n}, r{r2}", dict(rr=["", "r"], s=["s8", "s16", "s32"])),
    ("vq{rr}dml{ad}dh{x}.{s} q{d}, q{n}, q{m}", dict(rr=["", "r"], ad=["a", "s"], x=["", "x"], s=["s8", "s16", "s32"])),
    ("vfma.{f} q{d}, q{n}, q{m}", dict(f=["f32", "f16"])),
    ("vfms.{f} q{d}, q{n}, q{m}", dict(f=["f32", "f16"])),
    ("vfma.{f} q{d}, q{n}, r{r}", dict(f=["f32", "f16"])),
    ("vfmas.{f} q{d}, q{n}, r{r}", dict(f=["f32", "f16"])),
]
A64 = [  # (template, fills, vector?) -> mac / vmac
    ("{op} x{a}, x{b}, x{c}, x{d}", dict(op=["madd", "msub"]), False),
    ("{op} w{a}, w{b}, w{c}, w{d}", dict(op=["madd", "msub"]), False),
    ("{op} x{a}, w{b}, w{c}, x{d}", dict(op=["smaddl", "smsubl", "umaddl", "umsubl"]), False),
    ("{op} x{a}, x{b}, x{c}", dict(op=["smulh", "umulh", "mul", "mneg"]), False),
    ("{op} w{a}, w{b}, w{c}", dict(op=["mul", "mneg"]), False),
    ("{op} x{a}, w{b}, w{c}", dict(op=["smull", "umull", "smnegl", "umnegl"]), False),
    ("{op} {t}{a}, {t}{b}, {t}{c}", dict(op=["fmul", "fnmul"], t=["s", "d", "h"]), False),
    ("{op} {t}{a}, {t}{b}, {t}{c}, {t}{d}", dict(op=["fmadd", "fmsub", "fnmadd", "fnmsub"], t=["s", "d", "h"]), False),
    ("{op} v{a}.{T}, v{b}.{T}, v{c}.{T}", dict(op=["mul", "mla", "mls", "sqdmulh", "sqrdmulh", "pmul"],
                                             T=["8b", "16b", "4h", "8h", "2s", "4s"]), True),
    ("{op} v{a}.{T}, v{b}.{T}, v{c}.{E}[{i}]", dict(op=["mul", "mla", "mls", "sqdmulh", "sqrdmulh"],
                                                   T=["4h", "8h", "2s", "4s"], E=["h", "s"]), True),
    ("{op} v{a}.{W}, v{b}.{N}, v{c}.{N}", dict(op=["smull", "umull", "smlal", "umlal", "smlsl", "umlsl", "sqdmull",
                                                  "sqdmlal", "pmull"],
                                              W=["8h", "4s", "2d"], N=["8b", "4h", "2s"]), True),
    ("{op}2 v{a}.{W}, v{b}.{N}, v{c}.{N}", dict(op=["smull", "umull", "smlal", "umlal", "smlsl", "umlsl", "sqdmull",
                                                   "pmull"], W=["8h", "4s", "2d"], N=["16b", "8h", "4s"]), True),
    ("{op} v{a}.{W}, v{b}.{N}, v{c}.{E}[{i}]", dict(op=["smull", "umull", "smlal", "umlal", "smlsl", "sqdmull"],
                                                   W=["4s", "2d"], N=["4h", "2s"], E=["h", "s"]), True),
    ("{op}2 v{a}.{W}, v{b}.{N}, v{c}.{E}[{i}]", dict(op=["smull", "umull", "smlal", "umlal", "smlsl", "sqdmull"],
                                                    W=["4s", "2d"], N=["8h", "4s"], E=["h", "s"]), True),
    ("{op} v{a}.{W}, v{b}.{N}, v{c}.{N}", dict(op=["sdot", "udot", "usdot"], W=["2s", "4s"], N=["8b", "16b"]), True),
    ("{op} v{a}.{W}, v{b}.{N}, v{c}.4b[{i}]", dict(op=["sdot", "udot", "usdot", "sudot"], W=["2s", "4s"],
                                                  N=["8b", "16b"]), True),
    ("{op} v{a}.4s, v{b}.16b, v{c}.16b", dict(op=["smmla", "ummla", "usmmla"]), True),
    ("{op} v{a}.{T}, v{b}.{T}, v{c}.{T}", dict(op=["fmla", "fmls", "fmul", "fmulx"],
                                              T=["2s", "4s", "2d", "4h", "8h"]), True),
    ("{op} v{a}.{T}, v{b}.{T}, v{c}.{E}[{i}]", dict(op=["fmla", "fmls", "fmul"], T=["2s", "4s", "2d", "4h", "8h"],
                                                   E=["s", "d", "h"]), True),
    ("{op} {t}{a}, {t}{b}, {t}{c}", dict(op=["sqdmulh", "sqrdmulh"], t=["h", "s"]), True),
]


def _encodings(lines: list[str], a64: bool, tmp: Path) -> list[int]:
    """Assemble lines (all or nothing); their 32-bit encodings (Thumb: first halfword high)."""
    src = tmp / "t.s"
    obj = tmp / "t.o"
    if a64:
        src.write_text("\n".join(lines) + "\n")
        cmd = ["aarch64-linux-gnu-as", "-march=armv8.6-a+i8mm+dotprod+fp16", str(src), "-o", str(obj)]
        dump = ["aarch64-linux-gnu-objdump", "-d", str(obj)]
        pat = r"^\s+[0-9a-f]+:\s+([0-9a-f]{8})\s"
    else:
        src.write_text(".syntax unified\n.thumb\n" + "\n".join(lines) + "\n")
        cmd = ["arm-none-eabi-gcc", "-c", "-mthumb", "-mcpu=cortex-m55", "-mfloat-abi=hard", "-x", "assembler",
               str(src), "-o", str(obj)]
        dump = ["arm-none-eabi-objdump", "-d", "-m", "armv8.1-m.main", str(obj)]
        pat = r"^\s+[0-9a-f]+:\s+([0-9a-f]{4}) ?([0-9a-f]{4})\s"
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return []
    text = subprocess.run(dump, capture_output=True, text=True, check=True).stdout
    return [int("".join(m), 16) for m in re.findall(pat, text, re.M)]


def _patterns(templates, a64: bool, tmp: Path) -> list[tuple[int, int, bool]]:
    rng = random.Random(2)
    pats = []
    for tpl, fills, vec in templates:
        for combo in itertools.product(*fills.values()):
            kv = dict(zip(fills, combo))
            lines = []
            for _ in range(24):
                if a64:
                    regs = dict(a=rng.randrange(31), b=rng.randrange(31), c=rng.randrange(31 if "[" not in tpl else 16),
                                d=rng.randrange(31), i=rng.randrange({"h": 8, "s": 4, "d": 2}.get(kv.get("E"), 4)))
                else:
                    rd = rng.choice([0, 2, 4, 6, 8, 10, 12])
                    regs = dict(rd=rd, rd1=rd + 1, d=rng.randrange(8), n=rng.randrange(8), m=rng.randrange(8),
                                r=rng.choice([0, 1, 2, 3, 5, 7, 9, 11, 12]), r2=rng.choice([0, 1, 2, 3, 5, 7, 9, 12]))
                lines.append(tpl.format(**kv, **regs))
            first = lines[0]
            if not _encodings([first], a64, tmp):
                continue  # a size the assembler rejects for this mnemonic
            enc = _encodings(lines, a64, tmp)
            if not enc:  # some register combination is rejected (e.g. overlapping registers): drop those
                enc = [e for ln in lines for e in _encodings([ln], a64, tmp)]
            mask = 0xFFFFFFFF
            for e in enc:
                mask &= ~(e ^ enc[0])
            pats.append((mask, enc[0] & mask, vec))
    return pats


def _merge(pats: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    pats = sorted(set(pats))
    changed = True
    while changed:
        changed = False
        s = set(pats)
        for m, v, vec in list(s):
            for b in range(32):
                bit = 1 << b
                if m & bit and (m, v ^ bit, vec) in s:
                    s -= {(m, v, vec), (m, v ^ bit, vec)}
                    s.add((m & ~bit, v & ~bit, vec))
                    changed = True
                    break
            if changed:
                break
        pats = sorted(s)
    return [p for p in pats if not any((q[0] & p[0]) == q[0] and (p[1] & q[0]) == q[1] and q != p and q[2] == p[2]
                                       for q in pats)]


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        mve = _merge(_patterns([(t, f, True) for t, f in MVE], False, tmp))
        a64 = _merge(_patterns(A64, True, tmp))
    out = ["/* generated from assembled variants (see the comment at the top) */",
           "static const tc_pattern tc_mve_mul[] = {", *(f"    {{0x{m:08x}u, 0x{v:08x}u}}," for m, v, _ in mve), "};",
           "static const tc_pattern tc_a64_mul[] = {      /* scalar multiply family -> mac */",
           *(f"    {{0x{m:08x}u, 0x{v:08x}u}}," for m, v, vec in a64 if not vec), "};",
           "static const tc_pattern tc_a64_vmul[] = {     /* Advanced SIMD multiply family -> vmac */",
           *(f"    {{0x{m:08x}u, 0x{v:08x}u}}," for m, v, vec in a64 if vec), "};"]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
