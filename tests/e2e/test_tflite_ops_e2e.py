"""The ops of issue 4 through the whole job (`edgecc run`, generated C, the board), on generated
.tflite models: a chain of every new op (host and mps2-an386), a model with a float input and a float
output (QUANTIZE / DEQUANTIZE at its edges: float I/O buffers in the generated C), and TFLM's known
exception (CONCATENATION of inputs with different qparams, BL-25), where the report must say why TFLM
gave no reference. (The first-differing-op search is tested in tests/ops/test_tflm_oracle.py.)"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite_op_cases import FLOAT, I8, OP, OPT, Model, S, _ints  # noqa: E402

F = np.float32


def _chain_model() -> tuple[bytes, dict]:
    """x [1,6,6,5] -> PAD / RESIZE_BILINEAR -> SUB -> MUL(const, broadcast) -> HARD_SWISH -> LEAKY_RELU
    -> PRELU -> CONCATENATION with RESIZE_NEAREST -> TANH -> MEAN -> LOGISTIC -> QUANTIZE (requantize)
    -> ADD (broadcast against a constant)."""
    rng = np.random.default_rng(5)
    m = Model()
    sx, zx = F(0.05), 3
    x = m.tensor((1, 6, 6, 5), I8, sx, zx)
    pad = m.tensor((1, 8, 8, 5), I8, sx, zx)
    bil = m.tensor((1, 8, 8, 5), I8, sx, zx)
    sub = m.tensor((1, 8, 8, 5), I8, F(0.06), -5)
    k = m.tensor((5,), I8, F(0.02), 0, rng.integers(-127, 128, 5).astype(np.int8))
    mul = m.tensor((1, 8, 8, 5), I8, F(0.08), 10)
    hs = m.tensor((1, 8, 8, 5), I8, F(0.05), -100)
    lr = m.tensor((1, 8, 8, 5), I8, F(0.04), -20)
    alpha = m.tensor((1, 1, 5), I8, F(0.01), 4, rng.integers(-128, 128, (1, 1, 5)).astype(np.int8))
    pr = m.tensor((1, 8, 8, 5), I8, sx, zx)                  # the concat inputs share the output's qparams
    near = m.tensor((1, 8, 8, 5), I8, sx, zx)
    cat = m.tensor((1, 8, 8, 10), I8, sx, zx)
    th = m.tensor((1, 8, 8, 10), I8, F(1 / 128), 0)
    mean = m.tensor((1, 1, 1, 10), I8, F(0.004), 7)
    lg = m.tensor((1, 1, 1, 10), I8, F(1 / 256), -128)
    rq = m.tensor((1, 1, 1, 10), I8, F(0.003), -90)
    c10 = m.tensor((1, 10), I8, F(0.01), -1, rng.integers(-128, 128, (1, 10)).astype(np.int8))
    out = m.tensor((1, 1, 1, 10), I8, F(0.01), -60)
    size8 = _ints(m, [8, 8])
    size8b = _ints(m, [8, 8])
    axes = _ints(m, [1, 2])
    pads = _ints(m, [[0, 0], [1, 1], [1, 1], [0, 0]])
    o_bil, o_near = S.ResizeBilinearOptionsT(), S.ResizeNearestNeighborOptionsT()
    o_bil.halfPixelCenters = True
    o_lr = S.LeakyReluOptionsT()
    o_lr.alpha = 0.2
    o_cat = S.ConcatenationOptionsT()
    o_cat.axis = 3
    o_mean = S.ReducerOptionsT()
    o_mean.keepDims = True
    ops = [(OP.PAD, OPT.PadOptions, S.PadOptionsT(), [x, pads], [pad]),
           (OP.RESIZE_BILINEAR, OPT.ResizeBilinearOptions, o_bil, [x, size8], [bil]),
           (OP.SUB, OPT.SubOptions, S.SubOptionsT(), [pad, bil], [sub]),
           (OP.MUL, OPT.MulOptions, S.MulOptionsT(), [sub, k], [mul]),
           (OP.HARD_SWISH, OPT.HardSwishOptions, S.HardSwishOptionsT(), [mul], [hs]),
           (OP.LEAKY_RELU, OPT.LeakyReluOptions, o_lr, [hs], [lr]),
           (OP.PRELU, 0, None, [lr, alpha], [pr]),
           (OP.RESIZE_NEAREST_NEIGHBOR, OPT.ResizeNearestNeighborOptions, o_near, [x, size8b], [near]),
           (OP.CONCATENATION, OPT.ConcatenationOptions, o_cat, [pr, near], [cat]),
           (OP.TANH, 0, None, [cat], [th]),
           (OP.MEAN, OPT.ReducerOptions, o_mean, [th, axes], [mean]),
           (OP.LOGISTIC, 0, None, [mean], [lg]),
           (OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [lg], [rq]),
           (OP.ADD, OPT.AddOptions, S.AddOptionsT(), [rq, c10], [out])]
    q = rng.integers(-128, 128, (6, 1, 6, 6, 5)).astype(np.int8)
    return m.build_ops(ops, [x], [out]), {"t0": ((q.astype(np.float64) - zx) * sx).astype(np.float32)}


def _float_edges_model() -> tuple[bytes, dict]:
    """float32 x -> QUANTIZE -> HARD_SWISH -> DEQUANTIZE -> float32 y."""
    m = Model()
    x = m.tensor((1, 4, 4, 3), FLOAT, 0.0, 0)
    m.tensors[x].quantization = None
    qx = m.tensor((1, 4, 4, 3), I8, F(0.03), -7)
    hs = m.tensor((1, 4, 4, 3), I8, F(0.02), -110)
    y = m.tensor((1, 4, 4, 3), FLOAT, 0.0, 0)
    m.tensors[y].quantization = None
    ops = [(OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [x], [qx]),
           (OP.HARD_SWISH, OPT.HardSwishOptions, S.HardSwishOptionsT(), [qx], [hs]),
           (OP.DEQUANTIZE, OPT.DequantizeOptions, S.DequantizeOptionsT(), [hs], [y])]
    data = np.random.default_rng(6).normal(0, 2, (5, 1, 4, 4, 3)).astype(np.float32)
    data.flat[:3] = [0.015, -0.015, 0.045]   # exact half steps of the input scale
    return m.build_ops(ops, [x], [y]), {"t0": data}


def _concat_exception_model() -> tuple[bytes, dict]:
    """a (scale 0.1) -> RELU, and b (scale 0.5) -> CONCATENATION into scale 0.2 (BL-25)."""
    m = Model()
    a = m.tensor((1, 4), I8, F(0.1), 0)
    b = m.tensor((1, 4), I8, F(0.5), 0)
    a2 = m.tensor((1, 4), I8, F(0.1), 0)
    y = m.tensor((1, 8), I8, F(0.2), 0)
    o = S.ConcatenationOptionsT()
    o.axis = 1
    relu = (OP.RELU, 0, None, [a], [a2])   # one op before, so the concat is op 1
    ops = [relu, (OP.CONCATENATION, OPT.ConcatenationOptions, o, [a2, b], [y])]
    rng = np.random.default_rng(7)
    qa, qb = (rng.integers(0, 60, (3, 1, 4)).astype(np.int8) for _ in range(2))
    return m.build_ops(ops, [a, b], [y]), {"t0": qa * F(0.1), "t1": qb * F(0.5)}


@pytest.fixture(scope="module")
def tflite_run(tmp_path_factory, edgecc, need_board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    makers = {"chain": _chain_model, "float_edges": _float_edges_model, "concat_exception": _concat_exception_model}
    cache = {}

    def get(name: str, board: str):
        need_board(board)
        if (name, board) not in cache:
            d = tmp_path_factory.mktemp(f"tfl-{name}-{board}")
            model, data = makers[name]()
            (d / "m.tflite").write_bytes(model)
            np.savez(d / "data.npz", **data)
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", "--model", d / "m.tflite", "--board", board, "--verify", d / "data.npz",
                             "--out", d / "out", "--quiet")
            cache[(name, board)] = finish(res, d / "out")
        return cache[(name, board)]

    return get


@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_chain_of_every_new_op(tflite_run, board):
    job = tflite_run("chain", board)
    r = job.report
    assert r is not None, job.err
    v = r["verification"]
    assert job.code == 0 and r["status"] == "pass", (r["status"], r["fault"], v["mismatches"], job.err)
    assert v["bit_exact"] and v["tflm_bit_exact"] is True and v["samples"] == 6, v["tflm"]
    kinds = {op["op_type"] for op in r["ops"]}
    assert {"Pad", "ResizeBilinear", "Sub", "Mul", "HardSwish", "LeakyRelu", "PRelu", "ResizeNearestNeighbor",
            "Concatenation", "Tanh", "Mean", "Logistic", "Requantize", "Add"} <= kinds


def test_float_input_and_output_edges(tflite_run):
    job = tflite_run("float_edges", "host")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (r and r["verification"], job.err)
    assert r["verification"]["bit_exact"] and r["verification"]["tflm_bit_exact"] is True
    header = (job.out / "lib" / "model.h").read_text()
    assert "int ecc_model_run(const float *input0, float *output0);" in header
    assert [op["op_type"] for op in r["ops"]] == ["Quantize", "HardSwish", "Dequantize"]


def test_tflm_exception_is_reported_not_hidden(tflite_run):
    """BL-25: our Concat requantizes inputs whose qparams differ from the output's; the TFLM build we test
    against refuses such a model at Prepare. The board is bit-exact with our interpreter (status pass),
    tflm_bit_exact is null and the report says why (TFLM's own check)."""
    job = tflite_run("concat_exception", "host")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", job.err
    v = r["verification"]
    assert v["bit_exact"] is True and v["tflm_bit_exact"] is None
    assert "TFLM failed" in v["tflm"]["error"] and "concatenation" in v["tflm"]["error"]
