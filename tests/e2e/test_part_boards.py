"""Boards with the memory of real parts (stm32f4 on mps2-an386, stm32h7 on mps2-an500), a model too
large for one refused before any C is built, and a guest that QEMU itself cannot run ending as a
fault (exit 3, fw/run.log, a line with what QEMU said) rather than as bad input."""
from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from e2e_helpers import DIGITS_YAML, EXPECTED_COUNTS, assert_rejected, finish

from targets import default_boards_path, load_target

MOBILENET_V2 = Path(__file__).resolve().parents[3] / "shared" / "models" / "exported" / \
    "keras_mobilenet_v2_035_int8.tflite"
STOCK = yaml.safe_load(default_boards_path().read_text())["boards"]


def _symbol(board: str, elf: Path, name: str) -> int:
    out = subprocess.run([load_target(board).nm, str(elf)], capture_output=True, text=True, check=True).stdout
    return next(int(ln.split()[0], 16) for ln in out.splitlines() if ln.split()[-1] == name)


@pytest.mark.parametrize("board, arena, ram", [("stm32f4", "SRAM", "CCM"), ("stm32h7", "DTCM", "DTCM")])
def test_digits_runs_on_part_boards(tmp_path, edgecc, need_board, board, arena, ram):
    need_board(board)
    job = finish(edgecc("run", DIGITS_YAML, "--board", board, "--out", tmp_path / "out", "--quiet"), tmp_path / "out")
    assert job.code == 0, job.err + job.out_text
    assert job.report["verification"]["bit_exact"] is True
    mem = load_target(board).memory
    elf = job.out / "fw" / "firmware.elf"
    for symbol, region in (("ecc_arena", arena), ("__stack_top", ram)):
        r = mem.region(region)
        assert r.address <= _symbol(board, elf, symbol) <= r.end, (symbol, region)
    if board == "stm32f4":  # the same core and code as mps2-an386: the same instructions
        expected = json.loads(EXPECTED_COUNTS.read_text())["digits/mps2-an386/total_instructions"]
        assert job.report["total_cost"] == expected


def test_mobilenet_v2_does_not_fit_the_f4(tmp_path, edgecc):
    if not MOBILENET_V2.is_file():
        pytest.skip(f"{MOBILENET_V2} is not there")
    out = tmp_path / "out"
    res = edgecc("build", "--model", MOBILENET_V2, "--board", "stm32f4", "--out", out)
    assert_rejected(res, out, "does not fit board 'stm32f4'", "region SRAM needs 155568 bytes (arena) but has 131072",
                    "(24496 bytes over)")


def _board(base: str, **run_args) -> dict:
    b = copy.deepcopy(STOCK[base])
    b["run"].update(run_args)
    return b


@pytest.mark.parametrize("run, said", [
    ({"args": ["-M", "mps2-an386", "-cpu", "cortex-m85"]}, "qemu-system-arm: unable to find CPU model 'cortex-m85'"),
    ({"args": ["-M", "mps2-an505"]}, "qemu: fatal: Lockup"),  # an M4 image on the M33 machine's memory map
])
def test_guest_qemu_cannot_run_is_a_fault(tmp_path, edgecc, need_board, run, said):
    need_board("mps2-an386")
    boards = tmp_path / "my_boards.yaml"
    boards.write_text(yaml.safe_dump({"boards": {"mine": _board("mps2-an386", **run)}}))
    out = tmp_path / "out"
    job = finish(edgecc("run", DIGITS_YAML, "--boards", boards, "--board", "mine", "--out", out, "--quiet"), out)
    assert job.code == 3, job.err + job.out_text
    assert job.report["status"] == "fault" and job.report["fault"]["kind"] == "emulator"
    assert said in job.report["fault"]["line"]
    assert said in (out / "fw" / "run.log").read_text()
    last = job.out_text.strip().splitlines()[-1]
    assert last.startswith("edgecc: FAULT: the emulator stopped the run: ") and said in last, last
