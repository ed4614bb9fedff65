"""Issue 6, point 5: the cycle estimate. The tcount plugin's instruction classifier
(targets/plugin/tc_classify.h) agrees with the disassembler's mnemonics on a curated set of
Thumb-2, DSP, VFP, MVE and A64 instructions; the strict plugin-log parser with classes; the
boards.yaml `cycle_costs` validation; the per-op estimate from mark class counts."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from profiler.cycles import NOTE, cycle_fields, estimate
from targets import load_target
from targets.errors import BoardError, RunError
from targets.runlog import parse_plugin_log
from targets.target import CYCLE_CLASSES, target_from_mapping

PLUGIN = Path(__file__).resolve().parents[2] / "targets" / "plugin"

THUMB = [  # (instruction, class, extra registers transferred)
    ("ldr r0, [r1, #4]", "load", 0), ("ldrb.w r0, [r1, #300]", "load", 0), ("ldrsh r0, [r1, r2]", "load", 0),
    ("ldr r0, [pc, #8]", "load", 0), ("ldrd r0, r1, [r2, #8]", "load", 1), ("ldm r0!, {r1, r2, r3}", "load", 2),
    ("pop {r4, r5, r6, pc}", "load", 3), ("ldmia.w r0, {r1, r2, r8}", "load", 2),
    ("str r0, [r1]", "store", 0), ("strh.w r0, [r1, #2]", "store", 0), ("strd r0, r1, [r2]", "store", 1),
    ("push {r4, lr}", "store", 1), ("stmdb sp!, {r4, r5, r6, r7, r8}", "store", 4),
    ("mul r0, r1, r2", "mac", 0), ("muls r0, r1, r0", "mac", 0), ("mla r0, r1, r2, r3", "mac", 0),
    ("smlad r0, r1, r2, r3", "mac", 0), ("smlabb r0, r1, r2, r3", "mac", 0), ("smmulr r0, r1, r2", "mac", 0),
    ("smull r0, r1, r2, r3", "mac", 0), ("smlal r0, r1, r2, r3", "mac", 0),
    ("sdiv r0, r1, r2", "other", 0), ("add r0, r1, r2", "other", 0), ("sxtb16 r0, r1", "other", 0),
    ("ssat r0, #8, r1", "other", 0), ("it eq", "other", 0), ("nop", "other", 0),
    ("b 0f\n0:", "branch", 0), ("bne.w 0f\n0:", "branch", 0), ("bl 0f\n0:", "branch", 0), ("bx lr", "branch", 0),
    ("cbz r0, 0f\nnop\n0:", "branch", 0), ("tbb [r0, r1]", "branch", 0),
    ("dls lr, r1", "branch", 0), ("0: le lr, 0b", "branch", 0), ("wlstp.8 lr, r0, 0f\nnop\n0:", "branch", 0),
    ("vldr s0, [r1]", "load", 0), ("vstr d0, [r1]", "store", 0), ("vpush {d8-d15}", "store", 7),
    ("vmul.f32 s0, s1, s2", "mac", 0), ("vfma.f32 s0, s1, s2", "mac", 0), ("vadd.f32 s0, s1, s2", "other", 0),
    ("vmov r0, s0", "other", 0),
    ("vldrb.u8 q0, [r1], #16", "vload", 0), ("vldrb.s32 q0, [r1]", "vload", 0), ("vldrw.u32 q1, [r2, #16]", "vload", 0),
    ("vld20.8 {q0, q1}, [r0]", "vload", 0), ("vstrb.8 q0, [r1]", "vstore", 0), ("vstrb.32 q0, [r1]", "vstore", 0),
    ("vldrw.u32 q0, [r1, q1, uxtw #2]", "vgather", 0), ("vldrb.u8 q0, [r1, q1]", "vgather", 0),
    ("vldrw.u32 q0, [q1, #8]", "vgather", 0), ("vstrb.32 q0, [r1, q1]", "vgather", 0),
    ("vmladava.s8 r0, q0, q1", "vmac", 0), ("vmlaldav.s16 r0, r1, q0, q1", "vmac", 0),
    ("vmullb.s8 q2, q0, q1", "vmac", 0), ("vmullt.s16 q2, q0, q1", "vmac", 0), ("vmul.i32 q2, q0, q1", "vmac", 0),
    ("vmla.s32 q2, q0, r1", "vmac", 0), ("vqrdmulh.s32 q2, q0, q1", "vmac", 0), ("vqdmulh.s32 q2, q0, r1", "vmac", 0),
    ("vfma.f32 q2, q0, q1", "vmac", 0),
    ("vadd.i32 q0, q1, q2", "vother", 0), ("vrshl.s32 q0, q1, q2", "vother", 0), ("vqmovnb.s32 q0, q1", "vother", 0),
    ("vmovlb.s16 q0, q1", "vother", 0), ("vmax.s8 q0, q1, q2", "vother", 0), ("vdup.8 q0, r1", "vother", 0),
    ("vmov q0[2], q0[0], r0, r1", "vother", 0), ("vaddv.s32 r0, q0", "vother", 0),
]
A64 = [
    ("ldr x0, [x1, #8]", "load", 0), ("ldrb w0, [x1], #1", "load", 0), ("ldrsw x0, [x1]", "load", 0),
    ("ldp x0, x1, [sp]", "load", 1), ("str w0, [x1]", "store", 0), ("stp x29, x30, [sp, #-16]!", "store", 1),
    ("ldr q0, [x1]", "vload", 0), ("ld1 {v0.16b}, [x0]", "vload", 0), ("str q0, [x1]", "vstore", 0),
    ("st1 {v0.4s}, [x0], #16", "vstore", 0), ("madd x0, x1, x2, x3", "mac", 0), ("mul w0, w1, w2", "mac", 0),
    ("smull x0, w1, w2", "mac", 0), ("fmul s0, s1, s2", "mac", 0), ("sdiv x0, x1, x2", "other", 0),
    ("add x0, x1, x2", "other", 0), ("b 0f\n0:", "branch", 0), ("cbz x0, 0f\n0:", "branch", 0), ("ret", "branch", 0),
    ("nop", "other", 0), ("sdot v0.4s, v1.16b, v2.16b", "vmac", 0), ("sdot v0.4s, v1.16b, v2.4b[3]", "vmac", 0),
    ("smlal2 v0.4s, v1.8h, v2.8h", "vmac", 0), ("sqrdmulh v0.4s, v1.4s, v2.4s", "vmac", 0),
    ("mla v0.8h, v1.8h, v2.h[5]", "vmac", 0), ("smmla v0.4s, v1.16b, v2.16b", "vmac", 0),
    ("add v0.4s, v1.4s, v2.4s", "vother", 0), ("sqxtn v0.4h, v1.4s", "vother", 0), ("dup v0.16b, w1", "vother", 0),
]


def _tool(name: str) -> None:
    if shutil.which(name) is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} not found (required when CI=true)")
        pytest.skip(f"{name} not found")


def _encodings(lines: list[str], a64: bool, tmp: Path) -> list[int]:
    """One 32- or 16-bit encoding per instruction (the first of each snippet), via the cross tools."""
    out = []
    for i, ln in enumerate(lines):
        src, obj = tmp / f"i{i}.s", tmp / f"i{i}.o"
        if a64:
            src.write_text(ln + "\n")
            subprocess.run(["aarch64-linux-gnu-as", "-march=armv8.6-a+i8mm+dotprod", str(src), "-o", str(obj)],
                           check=True, capture_output=True)
            dump = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(obj)], capture_output=True, text=True,
                                  check=True).stdout
            out.append(int(re.search(r"^\s+0:\s+([0-9a-f]{8})\s", dump, re.M)[1], 16))
        else:
            src.write_text(".syntax unified\n.thumb\n" + ln + "\n")
            subprocess.run(["arm-none-eabi-gcc", "-c", "-mthumb", "-mcpu=cortex-m55", "-mfloat-abi=hard", "-x",
                            "assembler", str(src), "-o", str(obj)], check=True, capture_output=True)
            dump = subprocess.run(["arm-none-eabi-objdump", "-d", "-m", "armv8.1-m.main", str(obj)],
                                  capture_output=True, text=True, check=True).stdout
            m = re.search(r"^\s+0:\s+([0-9a-f]{4})(?: ([0-9a-f]{4}))?\s", dump, re.M)
            out.append(int(m[1] + (m[2] or ""), 16) if m[2] else int(m[1], 16))
    return out


SELFTEST = r"""#include <stdio.h>
#include "tc_classify.h"
int main(void)
{
    char isa[8];
    unsigned long x;
    while (scanf("%7s %lx", isa, &x) == 2) {
        uint8_t b[4];
        size_t n = 2;
        int xfer, c;
        if (isa[0] == 'a') { b[0] = x; b[1] = x >> 8; b[2] = x >> 16; b[3] = x >> 24; n = 4; }
        else if (x > 0xFFFF) { b[0] = x >> 16; b[1] = x >> 24; b[2] = x; b[3] = x >> 8; n = 4; }
        else { b[0] = x; b[1] = x >> 8; }
        c = tc_classify(b, n, isa[0] == 'a', &xfer);
        printf("%s %d\n", tc_class_name[c], xfer);
    }
    return 0;
}
"""


def test_classifier_agrees_with_the_mnemonics(tmp_path):
    for tool in ("gcc", "arm-none-eabi-gcc", "aarch64-linux-gnu-as"):
        _tool(tool)
    (tmp_path / "selftest.c").write_text(SELFTEST)
    exe = tmp_path / "selftest"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{PLUGIN}", "-o", str(exe),
                    str(tmp_path / "selftest.c")], check=True)
    cases = [("t", *c) for c in THUMB] + [("a", *c) for c in A64]
    enc = _encodings([c[0] for c in THUMB], False, tmp_path) + _encodings([c[0] for c in A64], True, tmp_path)
    res = subprocess.run([str(exe)], input="".join(f"{isa} {x:x}\n" for (isa, *_), x in zip(cases, enc)),
                         capture_output=True, text=True, check=True).stdout.split()
    got = list(zip(res[::2], map(int, res[1::2])))
    wrong = [(c[1], hex(x), g) for c, x, g in zip(cases, enc, got) if g != (c[2], c[3])]
    assert not wrong, wrong


def _log(total, marks, classes=True):
    names = CYCLE_CLASSES
    text = f"tcount: v2 total_insns={total} marks={len(marks)} dropped=0 exact=1\n"
    if classes:
        text += "tcount: classes " + " ".join(f"{n}={v}" for n, v in zip(names, [total, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]))
        text += "\n"
    for i, (w, n, cls) in enumerate(marks):
        text += f"tcount: mark {i} which={w} insns={n}"
        text += "".join(f" {k}={v}" for k, v in zip(names, cls)) if classes else ""
        text += "\n"
    return text


def test_parse_plugin_log_with_classes():
    marks = [(0, 10, (4, 2, 1, 1, 2, 0, 0, 0, 0, 0, 1)), (0, 30, (10, 5, 5, 3, 2, 2, 1, 1, 1, 0, 4))]
    text = _log(100, marks)
    counts = parse_plugin_log(text, 1, classes=True)
    assert counts.marks == [(0, 10), (0, 30)]
    assert counts.mark_classes == [m[2] for m in marks] and counts.class_totals[0] == 100
    # strict: without classes=True the class fields are unknown; with it they are required and must add up
    with pytest.raises(RunError, match="tcount log"):
        parse_plugin_log(text, 1)
    with pytest.raises(RunError, match="classes"):
        parse_plugin_log(_log(100, [(0, 10, (0,) * 11)], classes=False), 1, classes=True)
    with pytest.raises(RunError, match="sum to 9, not 10"):
        parse_plugin_log(_log(100, [(0, 10, (4, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0))]), 1, classes=True)
    with pytest.raises(RunError, match="tcount log"):
        parse_plugin_log(text.replace(" xfer=4", ""), 1, classes=True)
    # the default format is unchanged
    plain = _log(100, [(0, 10, ())], classes=False)
    assert parse_plugin_log(plain, 1).marks == [(0, 10)] and parse_plugin_log(plain, 1).mark_classes == []


def test_cycle_costs_in_boards_yaml():
    for board in ("mps2-an386", "mps3-an547"):
        costs = load_target(board).cycle_costs
        assert costs and set(costs) == set(CYCLE_CLASSES)
    assert load_target("host").cycle_costs is None
    base = {"description": "x", "cpu": "c", "isa_features": [], "kernel_preference": ["portable"],
            "toolchain": {"compiler": "gcc", "cflags": []},
            "memory": {"regions": {"R": {"address": 0, "size": "1M"}}, "code": "R", "weights": "R", "ram": "R",
                       "arena": "R", "stack_size": 0, "heap_size": 0},
            "run": {"kind": "native", "time_source": "clock", "cost_unit": "us", "guest_ips": 1e9}}
    good = {c: 1 for c in CYCLE_CLASSES}
    assert target_from_mapping("b", {**base, "cycle_costs": {**good, "source": "TRM"}}).cycle_costs["xfer"] == 1.0
    no_mac = {k: v for k, v in good.items() if k != "mac"}
    for bad, why in (({**good, "simd": 1}, "unknown simd"), (no_mac, "missing mac"),
                     ({**good, "load": -1}, "non-negative"), ({**good, "load": "2"}, "non-negative")):
        with pytest.raises(BoardError, match=why):
            target_from_mapping("b", {**base, "cycle_costs": bad})


def test_estimate_between_marks():
    costs = [float(i + 1) for i in range(len(CYCLE_CLASSES))]  # load 1, store 2, ..., xfer 11
    z = (0,) * 11
    marks = [(1, 0), (1, 5), (0, 5), (0, 6), (0, 6), (0, 8)]  # run marks around the run, then op 0 and op 1
    classes = [z, (5,) + (0,) * 10, (5,) + (0,) * 10, (6,) + (0,) * 10,
               (6,) + (0,) * 10, (6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2)]
    per, total = estimate(marks, classes, 2, costs)
    assert per == [1.0, 2.0 + 2 * 11.0] and total == 5.0
    assert estimate(marks, classes[:-1], 2, costs) is None and estimate(marks, classes, 3, costs) is None
    report = {"ops": [{"name": "a"}, {"name": "b"}]}
    fields = cycle_fields(report, marks, classes, costs)
    assert fields == {"est_cycles_total": 5, "est_cycles_note": NOTE}
    assert [o["est_cycles"] for o in report["ops"]] == [1, 24]
    assert "estimate" in NOTE
    assert cycle_fields({"ops": [{}]}, marks, [], None) == {"est_cycles_total": None, "est_cycles_note": None}
