"""Input saturation is visible (issue 13 item 4): verification data 100x too large for the input grid
the calibration data chose (the digits example, preprocess scale 0.0625) make `edgecc run` print one
warning line, report verification.input_saturation above 0.01, and with `min_sqnr_db` set fail (exit 1)
naming input saturation; data of the right size report ~0 and print nothing."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS


def _yaml(tmp_path: Path, verify: np.ndarray, gate: bool) -> Path:
    np.save(tmp_path / "verify.npy", verify)
    text = (f"model: {DIGITS / 'model.onnx'}\ncalibration: {DIGITS / 'calibration.npy'}\nverify: verify.npy\n"
            "board: host\npreprocess:\n  scale: 0.0625\n  layout: NCHW\n" + ("min_sqnr_db: -100\n" if gate else ""))
    (tmp_path / "p.yaml").write_text(text)
    return tmp_path / "p.yaml"


@pytest.fixture
def run(tmp_path, edgecc, need_board):
    need_board("host")

    def go(scale: float, gate: bool):
        raw = np.load(DIGITS / "verify.npy").astype(np.float32) * scale  # float: real values (README DATA rule)
        out = tmp_path / "out"
        res = edgecc("run", _yaml(tmp_path, raw, gate), "--out", out)
        return res, json.loads((out / "report.json").read_text())

    return go


def test_data_100x_too_large_warn_report_and_fail_the_sqnr_gate(run):
    res, report = run(100.0, gate=True)
    sat = report["verification"]["input_saturation"]
    assert sat["fraction"] > 0.01 and sat["per_input"]["input"] > 0.01, sat
    warnings = [line for line in res.err.splitlines() if line.startswith("edgecc: warning:")]
    assert len(warnings) == 1 and "saturate when quantized" in warnings[0] and "'input'" in warnings[0], res.err
    assert res.code == 1, res.out + res.err
    assert report["status"] == "gate"
    assert any("input saturation" in g for g in report["verification"]["gates_failed"])
    assert "input saturation" in res.out.splitlines()[-1]  # the verdict line says why


def test_data_of_the_right_size_do_not_saturate(run):
    res, report = run(1.0, gate=True)
    sat = report["verification"]["input_saturation"]
    assert sat["fraction"] < 1e-3 and sat["per_input"]["input"] < 1e-3, sat
    assert "warning" not in res.err, res.err
    assert res.code == 0, res.out + res.err


def test_warning_names_a_uint8_inputs_own_dtype(tmp_path, edgecc, need_board):
    """int8 DATA given to a uint8-input QDQ model are real values (not the input's dtype): they saturate,
    and the warning names the dtype whose data would be taken as quantized, uint8 (it said int8)."""
    import sys

    sys.path.append(str(Path(__file__).resolve().parents[1] / "frontend"))
    from _qdq_cases import ModelBuilder

    need_board("host")
    m = ModelBuilder(17)
    xd = m.dq(m.input("x", (1, 16), np.uint8), 0.02, 128, "xd", np.uint8)
    m.dq(m.q(m.node("Relu", [xd], "r"), 0.02, 0, "rq", np.uint8), 0.02, 0, "y", np.uint8)
    m.output("y")
    m.save(tmp_path / "u8in.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).integers(-128, 128, (4, 1, 16)).astype(np.int8))
    res = edgecc("run", "--model", tmp_path / "u8in.onnx", "--verify", tmp_path / "x.npy", "--board", "host",
                 "--out", tmp_path / "out")
    assert res.code == 0, res.err
    warn = [ln for ln in res.err.splitlines() if "saturate when quantized" in ln]
    assert len(warn) == 1 and "input's uint8 dtype are quantized values" in warn[0], res.err
