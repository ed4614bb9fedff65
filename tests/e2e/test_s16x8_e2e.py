"""16x8 through the whole job (`edgecc run`, generated C, the board, the TFLM oracle): a small conv net
with int16 activations, int8 weights and int64 biases between a float QUANTIZE and a float DEQUANTIZE
(tests/ops/tflite16_cases.net16: CONV_2D relu, DEPTHWISE_CONV_2D stride 2 relu6, CONV_2D 1x1, a
residual ADD, FULLY_CONNECTED), some layers saturating. The board must equal our interpreter and TFLM
bit for bit, on the host and on the Cortex-M4 (mps2-an386, where the convolutions, the depthwise and the
fully connected layer run the dsp 16x8 kernels and the other ops the portable ones)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite16_cases import net16


@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_16x8_conv_net_bit_exact_with_tflm(tmp_path, edgecc, need_board, board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    need_board(board)
    model, samples = net16()
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
    assert [op["op_type"] for op in ops] == ["Quantize", "Conv2D", "DepthwiseConv2D", "Conv2D", "Add",
                                              "FullyConnected", "Dequantize"]
    if board == "host":
        assert {op["kernel"] for op in ops} == {"portable_s16"}
    else:  # the M4's dsp 16x8 kernels take the weighted ops; Add, Quantize, Dequantize stay portable
        assert [op["kernel"] for op in ops] == ["portable_s16", "dsp_s16", "dsp_s16", "dsp_1x1_s16", "portable_s16",
                                                "dsp_s16", "portable_s16"]
        reasons = [op["kernel_reason"] for op in ops]
        assert reasons[1:4] == [None] * 3 and reasons[5] is None  # the fastest kernel the board has
        assert "int16 activations (16x8)" in reasons[4]  # Add: the dsp kernels are int8 only and say so
        # the four weighted ops: under a quarter of the portable 16x8 kernels' 243,496 instructions
        # (measured: 52,569 = conv 38,683 + depthwise 8,849 + 1x1 3,726 + FC 1,311)
        assert sum(ops[i]["instructions"] for i in (1, 2, 3, 5)) < 243_496 // 4
    # int16 buffers: the arena holds 2-byte activations (the live peak is conv 1's input + output)
    assert r["arena_bytes"] >= 2 * (8 * 8 * 3 + 8 * 8 * 8)
