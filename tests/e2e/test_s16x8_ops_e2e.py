"""16x8 element-wise, pooling and data-movement ops through the whole job (`edgecc run`, generated C,
the board, the TFLM oracle): tests/ops/tflite16_cases_ops.mixed_net16, a small net with int16
activations between a float QUANTIZE and a float DEQUANTIZE (CONV_2D relu, PAD, MAX_POOL_2D,
AVERAGE_POOL_2D SAME, CONCATENATION, MUL and ADD by broadcast int16 constants, MEAN over H, W,
FULLY_CONNECTED). The board must equal our interpreter and TFLM bit for bit, on the host and on the
Cortex-M4 (mps2-an386: its DSP / int8 kernels step aside), and the arena holds 2-byte activations."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite16_cases_ops import mixed_net16


@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_16x8_mixed_net_bit_exact_with_tflm(tmp_path, edgecc, need_board, board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    need_board(board)
    model, samples = mixed_net16()
    (tmp_path / "m.tflite").write_bytes(model)
    np.savez(tmp_path / "data.npz", t0=samples)
    res = edgecc("run", "--model", tmp_path / "m.tflite", "--board", board, "--verify", tmp_path / "data.npz",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    v = r["verification"]
    assert v["bit_exact"] and v["tflm_bit_exact"] is True and v["samples"] == 4, v.get("tflm")
    ops = r["ops"]
    assert [op["op_type"] for op in ops] == ["Quantize", "Conv2D", "Pad", "MaxPool2D", "AveragePool2D",
                                              "Concatenation", "Mul", "Add", "Mean", "FullyConnected", "Dequantize"]
    weighted = {"Conv2D", "FullyConnected"}  # the M4 has DSP 16x8 kernels for these (toolchain/isa/dsp_s16.py)
    assert {op["kernel"] for op in ops if op["op_type"] not in weighted} == {"portable_s16"}
    assert {op["kernel"] for op in ops if op["op_type"] in weighted} == \
        ({"dsp_s16"} if board == "mps2-an386" else {"portable_s16"})
    if board == "mps2-an386":  # the M4 prefers its DSP pooling kernels; they are int8 only and say so
        pool = next(op for op in ops if op["op_type"] == "MaxPool2D")
        assert "int16 activations (16x8)" in pool["kernel_reason"], pool
    # int16 buffers: at the pad the conv output (8*8*6) and the padded tensor (10*10*6) are live, 2 bytes each
    assert r["arena_bytes"] >= 2 * (8 * 8 * 6 + 10 * 10 * 6)
