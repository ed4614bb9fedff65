"""Issue 5 point 5: `optimize: ram` (YAML) / `--optimize ram` picks, per op, the kernel variant
with the least scratch among those that apply on the board. ResNet-8 (float, our PTQ) on
mps2-an386: with ram the arena is at most the live bound of the serial order without scratch
(49,152 B) and the model still verifies bit-exact; with speed (the flag overriding the YAML) it is
the arena of the board's fastest kernels (49,728 B)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from e2e_helpers import finish

BOARD = "mps2-an386"
MODEL_YAML = Path(__file__).resolve().parents[1] / "models" / "ic_resnet8_float.yaml"


@pytest.fixture(scope="module")
def ram_yaml(tmp_path_factory) -> Path:
    """A copy of ic_resnet8_float.yaml with absolute paths, `optimize: ram` and 4 verify images."""
    tmp = tmp_path_factory.mktemp("optimize-ram")
    raw = yaml.safe_load(MODEL_YAML.read_text())
    for key in ("model", "calibration", "verify"):
        raw[key] = str((MODEL_YAML.parent / raw[key]).resolve())
    images = np.load(raw["verify"])["images"][:4]
    np.savez(tmp / "verify4.npz", images=images)
    raw["verify"] = str(tmp / "verify4.npz")
    raw["optimize"] = "ram"
    raw["out"] = str(tmp / "out")
    path = tmp / "resnet8_ram.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _run(edgecc, need_board, cfg: Path, out: Path, *extra):
    need_board(BOARD)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
        res = edgecc("run", cfg, "--board", BOARD, "--out", out, "--quiet", *extra)
    job = finish(res, out)
    assert job.report is not None, f"no report.json; exit {job.code}; stderr:\n{job.err}"
    assert job.code == 0 and job.report["status"] == "pass", f"exit {job.code}; stderr:\n{job.err}"
    v = job.report["verification"]
    assert v["samples"] == 4 and v["bit_exact"] is True and v["mismatches"] is None
    return job.report


def test_optimize_ram_shrinks_the_arena_and_stays_bit_exact(ram_yaml, tmp_path, edgecc, need_board):
    r = _run(edgecc, need_board, ram_yaml, tmp_path / "ram")
    assert r["arena_bytes"] <= 49_152
    assert r["memory"]["arena_bytes"] == r["arena_bytes"]


def test_optimize_speed_flag_keeps_the_fast_kernels(ram_yaml, tmp_path, edgecc, need_board):
    r = _run(edgecc, need_board, ram_yaml, tmp_path / "speed", "--optimize", "speed")
    assert r["arena_bytes"] == 49_728


def test_optimize_rejects_other_values(tmp_path):
    from toolchain.config import load_config
    from toolchain.errors import InputError

    cfg = tmp_path / "p.yaml"
    cfg.write_text("model: m.onnx\noptimize: size\n")
    with pytest.raises(InputError, match="optimize must be speed or ram"):
        load_config(cfg, {})
    assert load_config(cfg, {"optimize": "ram"}).optimize == "ram"
    cfg.write_text("model: m.onnx\n")
    assert load_config(cfg, {}).optimize == "speed"
