"""The outputs of a quantized ONNX model are named as the model file names them: on the terminal's
per-output verification lines and in report.json `verification.outputs[].model_name`. The IR names
a QDQ model's outputs after the tensor behind its last QuantizeLinear / DequantizeLinear (plus a
layout suffix for 4-D outputs), names the user cannot find in their model."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.append(str(Path(__file__).resolve().parents[1] / "frontend"))
from _qdq_cases import ModelBuilder  # noqa: E402

pytest.importorskip("onnxruntime")


def _two_outputs(path: Path) -> Path:
    """x float [1,4,3,3] -> Q/DQ -> Sigmoid -> Q(1/256, -128)/DQ -> 'prob' and Relu -> Q/DQ -> 'feat'."""
    m = ModelBuilder(17)
    xd = m.dq(m.q(m.input("x", (1, 4, 3, 3)), 0.05, 3, "xq"), 0.05, 3, "xd")
    m.dq(m.q(m.node("Sigmoid", [xd], "sg"), 1 / 256, -128, "sgq"), 1 / 256, -128, "prob")
    m.dq(m.q(m.node("Relu", [xd], "r"), 0.03, -128, "rq"), 0.03, -128, "feat")
    m.output("prob")
    m.output("feat")
    return m.save(path)


def test_qdq_outputs_named_as_in_the_model(tmp_path: Path, edgecc) -> None:
    model = _two_outputs(tmp_path / "two.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(3).uniform(-5, 5, (4, 1, 4, 3, 3)).astype(np.float32))
    res = edgecc("run", "--model", model, "--verify", tmp_path / "x.npy", "--board", "host",
                 "--out", tmp_path / "out")
    assert res.code == 0, res.err
    outs = json.loads((tmp_path / "out" / "report.json").read_text())["verification"]["outputs"]
    assert [o["model_name"] for o in outs] == ["prob", "feat"]
    assert all(o["name"] not in ("prob", "feat") for o in outs)  # the IR's own names differ: the case tested
    lines = [ln for ln in res.out.splitlines() if re.match(r"\s*output \d ", ln)]
    assert len(lines) == 2 and "'prob'" in lines[0] and "'feat'" in lines[1], res.out
