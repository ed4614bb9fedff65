"""An arena over three memory regions of different speed (a user's boards file on mps2-an386): the
digits model's arena does not fit the fast region, so its buffers split over TCM, SRAM and PSRAM,
the firmware runs bit-exact under QEMU, and the cycle estimate (with each region's data accesses x
its wait states, counted by the plugin) is lower than with the whole arena in PSRAM."""
from __future__ import annotations

import copy
import json
import subprocess

import pytest
import yaml
from e2e_helpers import DIGITS_YAML, EXPECTED_COUNTS, finish

from targets import default_boards_path

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
def runs(tmp_path_factory, edgecc, need_board):
    need_board("mps2-an386")
    tmp = tmp_path_factory.mktemp("regions")
    boards = tmp / "boards.yaml"
    boards.write_text(yaml.safe_dump({"boards": _boards()}, sort_keys=False))
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
