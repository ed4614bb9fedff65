"""Harness timers chosen by the board's time source (c_templates/timers/), end to end on the
digits example: SysTick under QEMU -icount against the plugin's exact counts (the DWT probe runs
first and falls back: QEMU's DWT does not count), the AArch64 PMU probe falling back to
CLOCK_MONOTONIC under qemu-aarch64 (the read traps), and a measured-timer harness that faults
mid-run still naming the op. The DWT and PMU cycle paths themselves are untested on silicon."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from targets import ISA, TimeSource, load_target
from toolchain.config import load_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "profiler" / "schema.json").read_text())


def _run(board: str, source: str, out: Path, **cfg_over):
    from toolchain.pipeline import compile_model
    from toolchain.runner import run_and_verify

    t = load_target(board)
    # portable kernels: the timer, not the kernels, is under test (and the counts stay comparable)
    t = dataclasses.replace(t, kernel_preference=(ISA.PORTABLE,),
                            run=dataclasses.replace(t.run, time_source=TimeSource(source)))
    cfg = dataclasses.replace(load_config(REPO / "examples" / "digits" / "pipeline.yaml", {}), **cfg_over)
    return run_and_verify(compile_model(cfg, t, out, profile=True))


@pytest.fixture(scope="module")
def plugin_an386(need_board, tmp_path_factory):
    need_board("mps2-an386")
    return _run("mps2-an386", "plugin", tmp_path_factory.mktemp("plugin")).report


def test_systick_under_icount_matches_the_exact_counts(need_board, plugin_an386, tmp_path):
    need_board("mps2-an386")
    o = _run("mps2-an386", "systick", tmp_path, repeats=3, warmup=1)
    r = o.report
    assert o.exit_code == 0 and r["status"] == "pass", r["fault"]
    assert "-icount shift=3" in o.log
    assert "ECC_TIMER systick unit=ticks repeats=3 warmup=1" in o.log  # DWT probed and not counting in QEMU
    m = r["measurement"]
    assert (m["timer"], m["exact"], m["runs"], m["warmup_runs"], m["unit_per_tick"]) == ("systick", False, 3, 1, 5.0)
    assert r["cost_unit"] == "instructions" and "SysTick" in r["cost_note"]
    for got, exact in zip(r["ops"], plugin_an386["ops"], strict=True):
        # each reading is +-1 tick (5 instructions) and includes the timer read itself (~20 instructions)
        assert abs(got["cost"] - exact["cost"]) <= 60, (got["name"], got["cost"], exact["cost"])
        assert got["cost_min"] <= got["cost"] <= got["cost_max"] <= got["cost_min"] + 10  # deterministic to a tick
    assert abs(r["total_cost"] - plugin_an386["total_cost"]) <= 0.01 * plugin_an386["total_cost"]


def test_plugin_counts_are_exact_and_need_one_run(plugin_an386):
    m = plugin_an386["measurement"]
    assert m["exact"] and m["runs"] == 1 and m["warmup_runs"] == 0 and "one run" in plugin_an386["cost_note"]
    assert all(o["cost_min"] == o["cost"] == o["cost_max"] for o in plugin_an386["ops"])


def test_pmu_falls_back_to_the_monotonic_clock_in_qemu_user(need_board, tmp_path):
    need_board("aarch64")
    o = _run("aarch64", "pmu", tmp_path, repeats=2, warmup=0)
    r = o.report
    assert o.exit_code == 0, r["fault"]
    assert "ECC_TIMER clock_monotonic unit=ns fallback=pmu-not-readable repeats=2 warmup=0" in o.log
    assert r["cost_unit"] == "us" and r["measurement"]["fallback"] == "pmu-not-readable"
    assert "FAULT" not in o.log  # the SIGILL of the probe was caught, the board's handler restored


def test_measured_timer_fault_names_the_op(need_board, monkeypatch, tmp_path):
    need_board("mps2-an386")
    monkeypatch.setenv("EDGECC_DEBUG_FAULT_AT_OP", "2")
    o = _run("mps2-an386", "systick", tmp_path)
    r = o.report
    assert o.exit_code == 3 and r["status"] == "fault"
    assert r["fault"]["op"] == 2 and r["fault"]["op_name"] == r["ops"][2]["name"]
    assert r["measurement"] is None and all(op["cost"] is None for op in r["ops"])
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(r, SCHEMA)


def test_board_validation_of_the_time_sources():
    import yaml

    from targets import BoardError
    from targets.target import target_from_mapping

    boards = yaml.safe_load((REPO / "boards.yaml").read_text())["boards"]
    m4 = dict(boards["mps2-an386"], run=dict(boards["mps2-an386"]["run"], time_source="systick"))
    assert target_from_mapping("m4", m4).run.insns_per_tick == 5.0
    no_clock = dict(m4, run={k: v for k, v in m4["run"].items() if k != "core_clock_hz"})
    with pytest.raises(BoardError, match="run.core_clock_hz"):
        target_from_mapping("m4", no_clock)
    with pytest.raises(BoardError, match="'systick' is the Cortex-M timer"):
        target_from_mapping("h", dict(boards["host"], run=dict(boards["host"]["run"], time_source="systick")))
    with pytest.raises(BoardError, match="'pmu' is the AArch64 Linux timer"):
        target_from_mapping("m4", dict(m4, run=dict(m4["run"], time_source="pmu")))
    with pytest.raises(BoardError, match="run.icount_shift"):
        target_from_mapping("m4", dict(m4, run=dict(m4["run"], icount_shift=11)))
