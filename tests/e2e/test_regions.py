"""An arena over three memory regions of different speed (a user's boards file on mps2-an386): the
digits model's arena does not fit the fast region, so its buffers split over TCM, SRAM and PSRAM,
the firmware runs bit-exact under QEMU, and the cycle estimate (with each region's data accesses x
its wait states, counted by the plugin) is lower than with the whole arena in PSRAM. A named
library (`--name digits`) splits and runs the same, every arena part under its name, and its
caller's-arena API (built with -DDIGITS_NO_STATIC_ARENA) gives the same outputs."""
from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest
import yaml
import numpy as np
from e2e_helpers import DIGITS_YAML, EXPECTED_COUNTS, finish

from targets import default_boards_path, load_target

REGIONS = {"FLASH": {"address": 0x0, "size": "1M"},
           "DTCM": {"address": 0x20000000, "size": 512, "wait_states": 0},
           "SRAM": {"address": 0x20100000, "size": 512, "wait_states": 1},
           "RAM": {"address": 0x20200000, "size": "64K"},
           "PSRAM": {"address": 0x21000000, "size": "16M", "wait_states": 8}}


def _boards() -> dict:
    three = copy.deepcopy(yaml.safe_load(default_boards_path().read_text())["boards"]["mps2-an386"])
    three["memory"] = {"regions": REGIONS, "code": "FLASH", "weights": "FLASH", "ram": "RAM",
                       "arena": ["DTCM", "SRAM", "PSRAM"], "stack_size": 0x4000, "heap_size": 0x4000}
    slow = copy.deepcopy(three)
    slow["memory"]["arena"] = "PSRAM"
    return {"three": three, "all-psram": slow}


@pytest.fixture(scope="module")
def boards_file(tmp_path_factory, need_board):
    need_board("mps2-an386")
    boards = tmp_path_factory.mktemp("boards") / "boards.yaml"
    boards.write_text(yaml.safe_dump({"boards": _boards()}, sort_keys=False))
    return boards


@pytest.fixture(scope="module")
def runs(tmp_path_factory, edgecc, boards_file):
    tmp, boards = tmp_path_factory.mktemp("regions"), boards_file
    jobs = {}
    for board in ("three", "all-psram"):
        out = tmp / board
        jobs[board] = finish(edgecc("run", DIGITS_YAML, "--boards", boards, "--board", board, "--out", out,
                                    "--quiet"), out)
    return jobs


def test_split_over_three_regions_runs_bit_exact(runs):
    job = runs["three"]
    assert job.code == 0, job.err + job.out_text
    assert job.report["verification"]["bit_exact"] is True
    mem = job.report["memory"]
    parts = {r: mem["regions"][r]["arena_bytes"] for r in ("DTCM", "SRAM", "PSRAM")}
    assert all(parts.values()) and parts["DTCM"] <= 512 and parts["SRAM"] <= 512, parts  # the fast two are full
    assert mem["arena_bytes"] == sum(parts.values())
    assert {b["region"] for b in mem["buffers"]} == {"DTCM", "SRAM", "PSRAM"}
    assert mem["placement"]["cost"] < mem["placement"]["all_slowest_cost"]
    elf = job.out / "fw" / "firmware.elf"
    nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    addr = {ln.split()[-1]: int(ln.split()[0], 16) for ln in nm.splitlines() if "ecc_arena" in ln}
    for symbol, region in (("ecc_arena", "DTCM"), ("ecc_arena_SRAM", "SRAM"), ("ecc_arena_PSRAM", "PSRAM")):
        assert REGIONS[region]["address"] <= addr[symbol] < REGIONS[region]["address"] + 0x1000000, symbol


def test_split_costs_fewer_estimated_cycles_than_all_slow(runs):
    three, slow = runs["three"].report, runs["all-psram"].report
    assert runs["all-psram"].code == 0 and slow["verification"]["bit_exact"] is True
    acc3 = {r: three["memory"]["regions"][r]["accesses"] for r in ("SRAM", "PSRAM")}
    acc1 = {r: slow["memory"]["regions"][r]["accesses"] for r in ("SRAM", "PSRAM")}
    assert acc1["SRAM"] == 0 and acc1["PSRAM"] > acc3["PSRAM"] > 0 and acc3["SRAM"] > 0, (acc3, acc1)
    assert three["est_cycles_total"] < slow["est_cycles_total"]
    assert "wait_states" in three["est_cycles_note"]
    # one arena region: the same code, instructions and plan as the stock board
    expected = json.loads(EXPECTED_COUNTS.read_text())["digits/mps2-an386/total_instructions"]
    assert slow["total_cost"] == expected and slow["memory"]["placement"] is None


# A firmware of the test's own: one digits instance in the caller's arena (model.h: the main part;
# the parts in the other regions stay the library's), every sample of inputs.bin -> ctx_out.bin.
CTX_MAIN = r"""
#include <stdio.h>
#include "digits_model.h"

static int8_t arena[DIGITS_ARENA_SIZE] __attribute__((aligned(DIGITS_ARENA_ALIGNMENT)));
static int8_t in[DIGITS_INPUT0_SIZE], out[DIGITS_OUTPUT0_SIZE];

int main(void)
{
    FILE *fi = fopen("inputs.bin", "rb"), *fo = fopen("ctx_out.bin", "wb");
    digits_model_ctx ctx;
    int n = 0, status = digits_model_init_ctx(&ctx, arena, sizeof arena);
    if (fi == NULL || fo == NULL)
        return 2;
    while (fread(in, 1, sizeof in, fi) == sizeof in) {
        status |= digits_model_run_ctx(&ctx, in, out);
        fwrite(out, 1, sizeof out, fo);
        n++;
    }
    fclose(fi);
    fclose(fo);
    printf("DONE n=%d status=%d\n", n, status);
    return status != 0;
}
"""


def test_named_library_splits_and_runs_under_its_name(tmp_path, edgecc, boards_file, runs):
    out = tmp_path / "named"
    job = finish(edgecc("run", DIGITS_YAML, "--boards", boards_file, "--board", "three", "--name", "digits",
                        "--out", out, "--quiet"), out)
    assert job.code == 0, job.err + job.out_text
    assert job.report["verification"]["bit_exact"] is True
    plain = runs["three"].report
    # the name changes no code, plan or placement: the same instructions, parts and library sections
    # (the parts in SRAM and PSRAM counted as arena, not bss, by the map file's arena pattern)
    assert job.report["total_cost"] == plain["total_cost"]
    assert job.report["memory"]["regions"] == plain["memory"]["regions"]
    assert job.report["sections"] == plain["sections"]
    parts = {r: plain["memory"]["regions"][r]["arena_bytes"] for r in ("DTCM", "SRAM", "PSRAM")}
    lib = job.out / "lib"
    model_h = (lib / "digits_model.h").read_text()
    assert f"#define DIGITS_ARENA_SIZE {parts['DTCM']}u" in model_h
    assert f"#define DIGITS_ARENA_SRAM_SIZE {parts['SRAM']}u /* bytes, in SRAM */" in model_h
    assert f"#define DIGITS_ARENA_PSRAM_SIZE {parts['PSRAM']}u /* bytes, in PSRAM */" in model_h
    assert "instances are NOT independent here" in model_h
    assert 'section(".bss.digits_arena.SRAM")' in (lib / "digits_model.c").read_text()
    hits = [f"{f.name}: {m}" for f in sorted(lib.iterdir()) if f.suffix in (".c", ".h")
            for m in re.findall(r"\b(?:ecc|ECC)_\w+", f.read_text())]
    assert hits == [], hits[:10]
    nm = subprocess.run(["arm-none-eabi-nm", str(job.out / "fw" / "firmware.elf")], capture_output=True, text=True,
                        check=True).stdout
    addr = {ln.split()[-1]: int(ln.split()[0], 16) for ln in nm.splitlines() if "_arena" in ln}
    assert not any(s.startswith("ecc_arena") for s in addr), sorted(addr)
    for symbol, region in (("digits_arena", "DTCM"), ("digits_arena_SRAM", "SRAM"), ("digits_arena_PSRAM", "PSRAM")):
        assert REGIONS[region]["address"] <= addr[symbol] < REGIONS[region]["address"] + 0x1000000, symbol

    # the caller's arena on the multi-region build, the static main part compiled out
    from targets.build import build_firmware
    from targets.qemu import run_firmware

    target = load_target("three", extra=boards_file)
    work = tmp_path / "ctx"
    work.mkdir()
    (work / "main.c").write_text(CTX_MAIN)
    (work / "inputs.bin").write_bytes((job.out / "fw" / "inputs.bin").read_bytes())
    fw = build_firmware(target, [work / "main.c"], [lib], work / "fw", defines=["DIGITS_NO_STATIC_ARENA"],
                        lib_sources=sorted(lib.glob("*.c")))
    assert fw.lib.arena == parts["SRAM"] + parts["PSRAM"]  # the static parts left, found by name in the map
    log = run_firmware(target, fw.elf, cwd=work, timeout_s=120)
    assert log.returncode == 0 and not log.timed_out, f"exit {log.returncode}\n{log.stdout}\n{log.stderr}"
    samples = job.report["verification"]["samples"]
    assert f"DONE n={samples} status=0" in log.stdout, log.stdout
    want = np.fromfile(job.out / "fw" / "outputs.bin", np.int8)
    got = np.fromfile(work / "ctx_out.bin", np.int8)
    assert got.size == want.size > 0 and got.tolist() == want.tolist()
