"""Requantizing activations through the whole job (`edgecc run` on the host board, generated C, TFLM
oracle): LEAKY_RELU with alpha -0.5 (TFLM's sign-magnitude rounding on exact ties), a RELU whose
output qparams differ from its input's and a MAX_POOL_2D on the RELU's grid (TFLM refuses pooling
that requantizes, so the calibrator's pool keeps its producer's qparams). Every int8 input value
occurs; the board must equal our interpreter and TFLM bit for bit."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite_op_cases import I8, OP, OPT, Model, S

F = np.float32
SX, ZX = F(0.05), 3


def _model() -> bytes:
    m = Model()
    x = m.tensor((1, 8, 8, 4), I8, SX, ZX)
    lr = m.tensor((1, 8, 8, 4), I8, SX, -5)            # equal scales: alpha -0.5 gives exact ties
    relu = m.tensor((1, 8, 8, 4), I8, F(0.03), -128)   # requantizing RELU
    pool = m.tensor((1, 4, 4, 4), I8, F(0.03), -128)   # pooling keeps its input's qparams
    o_lr = S.LeakyReluOptionsT()
    o_lr.alpha = -0.5
    o_pool = S.Pool2DOptionsT()
    o_pool.padding = S.Padding.VALID
    o_pool.strideH = o_pool.strideW = o_pool.filterHeight = o_pool.filterWidth = 2
    ops = [(OP.LEAKY_RELU, OPT.LeakyReluOptions, o_lr, [x], [lr]), (OP.RELU, 0, None, [lr], [relu]),
           (OP.MAX_POOL_2D, OPT.Pool2DOptions, o_pool, [relu], [pool])]
    return m.build_ops(ops, [x], [pool])


def test_leaky_relu_relu_max_pool_requantizing_on_host(tmp_path, edgecc, need_board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    need_board("host")
    rng = np.random.default_rng(13)
    q = np.stack([rng.permutation(256).reshape(1, 8, 8, 4) - 128 for _ in range(3)]).astype(np.int8)
    (tmp_path / "m.tflite").write_bytes(_model())
    np.savez(tmp_path / "data.npz", t0=((q.astype(np.float64) - ZX) * SX).astype(np.float32))
    res = edgecc("run", "--model", tmp_path / "m.tflite", "--board", "host", "--verify", tmp_path / "data.npz",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    v = r["verification"]
    assert v["bit_exact"] and v["tflm_bit_exact"] is True and v["samples"] == 3, v.get("tflm")
    assert [op["op_type"] for op in r["ops"]] == ["LeakyRelu", "Relu", "MaxPool2D"]
