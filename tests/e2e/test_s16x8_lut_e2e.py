"""16x8 SOFTMAX / TANH through the whole job (`edgecc run` on the host, generated C, the TFLM oracle): a
small classifier with int16 activations between a float QUANTIZE and a float DEQUANTIZE
(tests/ops/tflite16_cases_lut.net16_softmax: FULLY_CONNECTED relu -> TANH -> FULLY_CONNECTED ->
SOFTMAX, Q0.15 probabilities). The program must equal our interpreter and TFLM bit for bit, with the
tables the compiler computed emitted as constants."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite16_cases_lut import net16_softmax


def test_16x8_fc_tanh_softmax_net_bit_exact_with_tflm(tmp_path, edgecc, need_board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    need_board("host")
    model, samples = net16_softmax()
    (tmp_path / "m.tflite").write_bytes(model)
    np.savez(tmp_path / "data.npz", t0=samples)
    res = edgecc("run", "--model", tmp_path / "m.tflite", "--board", "host", "--verify", tmp_path / "data.npz",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    v = r["verification"]
    assert v["bit_exact"] and v["tflm_bit_exact"] is True and v["samples"] == 5, v.get("tflm")
    ops = r["ops"]
    assert [op["op_type"] for op in ops] == ["Quantize", "FullyConnected", "Tanh", "FullyConnected", "Softmax",
                                              "Dequantize"]
    assert {op["kernel"] for op in ops} == {"portable_s16"}
    # softmax's exp and 1/(1+x) tables (513 int16 each) and tanh's sigmoid table (256 uint16) are constants
    weights = "\n".join(p.read_text() for p in (tmp_path / "out").rglob("weights.c"))
    assert weights.count("const int16_t") >= 2 and "const uint16_t" in weights
