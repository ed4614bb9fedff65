"""The ops of issue 4 through the whole job (`edgecc run`, generated C, the board), on generated
.tflite models: a chain of every new op (host and mps2-an386), a model with a float input and a float
output (QUANTIZE / DEQUANTIZE at its edges: float I/O buffers in the generated C), and TFLM's known
exception (CONCATENATION of inputs with different qparams, BL-25), where the report must say why TFLM
gave no reference. (The first-differing-op search is tested in tests/ops/test_tflm_oracle.py.)"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite_op_cases import FLOAT, I8, OP, OPT, Model, S, _ints

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
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "schema.json").read_text())
    jsonschema.validate(r, schema)    # tflm_bit_exact and tflm are documented fields
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


def _onnx_model(path: Path) -> None:
    """x [1,3,8,8] -> Conv -> swish (Sigmoid, Mul of two activations) -> Pad -> MaxPool -> Resize x2
    -> Concat with a second Conv -> HardSwish -> Sub of a constant -> LeakyRelu -> PRelu -> ReduceMean
    -> Gemm -> Tanh: the ONNX side of the new ops through our quantizer and the generated C."""
    import onnx
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(8)
    w = lambda *s: rng.uniform(-0.5, 0.5, s).astype(np.float32)  # noqa: E731
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), n("Sigmoid", ["c1"], ["s"]), n("Mul", ["c1", "s"], ["sw"]),
             n("Pad", ["sw", "pads"], ["p"]), n("MaxPool", ["p"], ["mp"], kernel_shape=[3, 3], strides=[2, 2]),
             n("Resize", ["mp", "", "scales"], ["r"], mode="nearest"), n("Conv", ["x", "w2"], ["c2"]),
             n("Concat", ["r", "c2"], ["cat"], axis=1), n("HardSwish", ["cat"], ["hs"]), n("Sub", ["hs", "k"], ["sb"]),
             n("LeakyRelu", ["sb"], ["lr"], alpha=0.1), n("PRelu", ["lr", "slope"], ["pr"]),
             n("ReduceMean", ["pr"], ["m"], axes=[2, 3], keepdims=0), n("Gemm", ["m", "g"], ["gm"], transB=1),
             n("Tanh", ["gm"], ["y"])]
    inits = {"w1": w(4, 3, 3, 3), "w2": w(2, 3, 1, 1), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "scales": np.array([1, 1, 2, 2], np.float32), "k": w(6, 1, 1), "slope": w(6, 1, 1), "g": w(5, 6)}
    g = helper.make_graph(nodes, "new_ops", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])   # HardSwish: opset 14
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("board", ["host"])
def test_onnx_model_of_new_ops_through_the_quantizer(tmp_path, edgecc, need_board, board):
    need_board(board)
    _onnx_model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(9).uniform(-1, 1, (8, 8, 8, 3)).astype(np.float32))  # NHWC
    res = edgecc("run", "--model", tmp_path / "m.onnx", "--board", board, "--calibration", tmp_path / "x.npy",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    assert r["verification"]["bit_exact"] and "tflm_bit_exact" not in r["verification"]
    assert r["verification"]["sqnr_db"] > 20
    kinds = {op["op_type"] for op in r["ops"]}
    # x * Sigmoid(x) is fused into SiLU (passes/fuse_decomposed_activations.py)
    assert {"SiLU", "Pad", "ResizeNearestNeighbor", "Concatenation", "HardSwish", "Sub", "LeakyRelu",
            "PRelu", "Mean", "Tanh"} <= kinds


@pytest.mark.parametrize("board", ["aarch64", "aarch64-v80", "mps2-an386"])
def test_bl04_minus_128_products_on_simd_boards(tmp_path, edgecc, need_board, board):
    """BL-04 on the boards with SIMD kernels (NEON with and without SDOT, Cortex-M DSP): an imported FC
    whose weights are all -128 against activations of -128 (x - zp = -133), K = 32: every pair of
    products is 34048 > 32767, so a kernel keeping two products in an int16 lane would wrap. The board
    must equal TFLM and our interpreter."""
    from _tflite_cases import fc_case

    need_board(board)
    rng = np.random.default_rng(404)
    x = np.full((2, 32), -128, np.int8)
    wq = np.full((3, 32), -128, np.int8)
    model, _ = fc_case(rng, b=2, k=32, o=3, scales=(F(0.02), F(0.01), F(0.02 * 0.01 * 16384)),
                       bias_values=np.zeros(3, np.int32), x=x, wq=wq)
    (tmp_path / "fc.tflite").write_bytes(model)
    np.save(tmp_path / "x.npy", ((x.astype(np.float64) - 5) * F(0.02)).astype(np.float32)[None])  # input zp 5
    res = edgecc("run", "--model", tmp_path / "fc.tflite", "--board", board, "--verify", tmp_path / "x.npy",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    assert r["verification"]["bit_exact"] and r["verification"]["tflm_bit_exact"] is True
    out = np.fromfile(job.out / "fw" / "outputs.bin", np.int8)
    assert out.tolist() == [30] * 6   # 544768 / 2^14 = 33.25 -> 33, output zp -3
    # -128 weights stay on the board's ISA kernels (issue 13): NEON's and the DSP's -128-safe variants
    kernel = r["ops"][0]["kernel"]
    assert kernel.startswith("neon" if board.startswith("aarch64") else "dsp"), kernel
