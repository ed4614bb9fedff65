"""No silent wrong answer from the int32 bias (issue 13 item 4, quantize.bias_fit): tiny float models
(onnx.helper) quantized through the real pipeline (toolchain.pipeline.import_model), run by our int8
interpreter, must stay within 2 LSB of the FLOAT model as onnxruntime computes it, with no int32 bias at
the int32 limits and no op whose worst-case accumulator can wrap.

Cases (Conv, FullyConnected from Gemm / MatMul, DepthwiseConv = Conv with group = C; TransposeConv for
the first two):
- tiny channel + bias: the bias over in_scale * (tiny weight scale) is far beyond int32 (it used to be
  clamped, the accumulator then wrapped);
- all-zero channel + bias, tiny input scale: same, with the all-zero channel's scale 1.0;
- no bias, a filter of ~90000 weights all +1 on inputs near their maximum: the products alone wrap int32;
- per-tensor weights (a QDQ model: DequantizeLinear with one scale, float bias), tiny scale + bias.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from quantize.bias_fit import NOTES_KEY, accumulator_risks
from toolchain.config import Config
from toolchain.data import load_data, quantize_inputs
from toolchain.interpret import interpret
from toolchain.ir import DType
from toolchain.pipeline import import_model

INT32_MAX = 2**31 - 1


def _model(nodes, inits, x_shape, path: Path) -> Path:
    g = helper.make_graph(nodes, "bias_fit", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def conv(path: Path, w: np.ndarray, b: np.ndarray | None, x_shape, group: int = 1) -> Path:
    """y = Conv(x, w[, b]) with a kernel as large as the input: output [1, Cout, 1, 1]."""
    inits = {"w": w, **({"b": b} if b is not None else {})}
    node = helper.make_node("Conv", ["x", "w", *(["b"] if b is not None else [])], ["y"], group=group)
    return _model([node], inits, x_shape, path)


def dense(path: Path, w: np.ndarray, b: np.ndarray | None) -> Path:
    """y = Gemm(x, w.T, b) with a bias, MatMul(x, w.T) without; w [O, K]."""
    if b is None:
        return _model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": w.T}, (1, w.shape[1]), path)
    return _model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], {"w": w, "b": b}, (1, w.shape[1]),
                  path)


def run_both(model: Path, data: np.ndarray, tmp_path: Path) -> tuple[np.ndarray, np.ndarray, float, object]:
    """(ours dequantized [S, ...], onnxruntime float [S, ...], output scale, int8 graph)."""
    np.save(tmp_path / "data.npy", data)
    cfg = Config(model=model, calibration=tmp_path / "data.npy", calibration_method="minmax")  # no clipped outputs
    imp = import_model(cfg)
    g = imp.graph_s8
    q = quantize_inputs(load_data(cfg.calibration, imp.graph_f32, cfg.preprocess, quantized=g), g)
    out = g.t(g.outputs[0])
    ours = np.stack([out.quant.dequantize(interpret(g, {"x": q["x"][i]})[g.outputs[0]]) for i in range(len(data))])
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    ref = np.stack([sess.run(None, {"x": d})[0] for d in data])
    return ours.reshape(len(data), -1), ref.reshape(len(data), -1), out.quant.s, g


def check(model: Path, data: np.ndarray, tmp_path: Path) -> None:
    ours, ref, s_out, g = run_both(model, data, tmp_path)
    lsb = np.max(np.abs(ours - ref)) / s_out
    assert lsb <= 2.0, f"int8 output {lsb:.1f} LSB from the float model"
    for t in g.tensors.values():
        if t.is_const and t.dtype == DType.INT32 and t.data.size:
            assert np.abs(t.data.astype(np.int64)).max() < INT32_MAX, f"bias {t.name} saturated"
    assert accumulator_risks(g) == []
    assert g.meta[NOTES_KEY], "the refit is announced (a note per op)"


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---- tiny / all-zero channel with a bias ------------------------------------------------------
@pytest.mark.parametrize("kind", ["conv", "dense", "depthwise", "tconv"])
@pytest.mark.parametrize("channel", ["tiny", "zero"])
def test_bias_of_a_tiny_or_zero_channel_is_not_clamped(kind, channel, tmp_path):
    r = _rng()
    c, k = 2, 3
    # tiny channel: weights 1e-7 at input scale ~1/127; all-zero channel: input scale ~1e-6/127 (the
    # channel's scale is 1.0): either way bias / (in_scale * w_scale) is ~1e10, beyond int32
    amp = 1.0 if channel == "tiny" else 1e-6
    bias = np.array([0.05, 0.8 if channel == "tiny" else 100.0], np.float32)
    if kind == "dense":
        w = r.uniform(-1, 1, (c, 6)).astype(np.float32)
        w[1] = r.uniform(-1e-7, 1e-7, 6) if channel == "tiny" else 0.0
        model, data = dense(tmp_path / "m.onnx", w, bias), r.uniform(-amp, amp, (8, 1, 6))
    elif kind == "tconv":  # ConvTranspose weights [Cin, Cout, KH, KW]: output channel 1 is w[:, 1]
        w = r.uniform(-1, 1, (3, c, 2, 2)).astype(np.float32)
        w[:, 1] = r.uniform(-1e-7, 1e-7, w[:, 1].shape) if channel == "tiny" else 0.0
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"])
        model = _model([node], {"w": w, "b": bias}, (1, 3, 2, 2), tmp_path / "m.onnx")
        data = r.uniform(-amp, amp, (8, 1, 3, 2, 2))
    else:
        cin, group = (c, c) if kind == "depthwise" else (4, 1)  # C != H: the data read as NCHW
        w = r.uniform(-1, 1, (c, cin // group, k, k)).astype(np.float32)
        w[1] = r.uniform(-1e-7, 1e-7, w[1].shape) if channel == "tiny" else 0.0
        model = conv(tmp_path / "m.onnx", w, bias, (1, cin, k, k), group)
        data = r.uniform(-amp, amp, (8, 1, cin, k, k))
    check(model, data.astype(np.float32), tmp_path)


# ---- no bias: the products alone overflow int32 --------------------------------------------
@pytest.mark.parametrize("kind", ["conv", "dense", "depthwise"])
def test_large_filter_without_bias_does_not_wrap(kind, tmp_path):
    # 90000 weights of +1 on inputs in [0.95, 1] (grid [0, 1], zero point -128): 90000 * 127 * ~250 > 2^31
    r = _rng(1)
    if kind == "dense":
        model = dense(tmp_path / "m.onnx", np.ones((2, 90000), np.float32), None)
        data = r.uniform(0.95, 1, (3, 1, 90000))
        data[0, 0, 0] = 0.0  # the calibrated range starts at 0 anyway (TFLite: 0 is on the grid)
    elif kind == "conv":
        model = conv(tmp_path / "m.onnx", np.ones((2, 10, 100, 90), np.float32), None, (1, 10, 100, 90))
        data = r.uniform(0.95, 1, (3, 1, 10, 100, 90))
    else:
        model = conv(tmp_path / "m.onnx", np.ones((2, 1, 300, 300), np.float32), None, (1, 2, 300, 300), group=2)
        data = r.uniform(0.95, 1, (3, 1, 2, 300, 300))
    check(model, data.astype(np.float32), tmp_path)


# ---- per-tensor weights: a QDQ model's own int8 weights with one tiny scale, and a float bias --------
def qdq_weighted(path: Path, kind: str, w_int8: np.ndarray, w_scale: float, bias: np.ndarray, x_shape) -> Path:
    """x -> Q/DQ (1/127) -> Conv / depthwise Conv / Gemm with DequantizeLinear(w int8, one scale) and a float
    bias -> Q/DQ (1/64) -> y. The bias is real (float) in the model: we quantize it ourselves."""
    inits = {"xs": np.float32(1 / 127), "xz": np.int8(0), "ws": np.float32(w_scale), "wz": np.int8(0),
             "ys": np.float32(1 / 64), "yz": np.int8(0), "w": w_int8, "b": bias.astype(np.float32)}
    core = {"conv": helper.make_node("Conv", ["xd", "wd", "b"], ["c"]),
            "depthwise": helper.make_node("Conv", ["xd", "wd", "b"], ["c"], group=w_int8.shape[0]),
            "dense": helper.make_node("Gemm", ["xd", "wd", "b"], ["c"], transB=1)}[kind]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]), core,
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"])]
    g = helper.make_graph(nodes, "bias_fit_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.mark.parametrize("kind", ["conv", "dense", "depthwise"])
def test_per_tensor_weights_with_a_tiny_scale_raise_their_one_scale(kind, tmp_path):
    # weights ~1e-8 (int8 * 1e-10) on inputs of scale 1/127: a bias of 1.0 is ~1e12 on the bias scale
    r = _rng(2)
    c, k = 2, 3
    bias = np.array([1.0, -0.5], np.float32)
    if kind == "dense":
        w, x_shape = r.integers(-127, 128, (c, 6)).astype(np.int8), (1, 6)
    else:
        cin = c if kind == "depthwise" else 4
        w, x_shape = r.integers(-127, 128, (c, 1 if kind == "depthwise" else cin, k, k)).astype(np.int8), (1, cin, k, k)
    model = qdq_weighted(tmp_path / "m.onnx", kind, w, 1e-10, bias, x_shape)
    check(model, r.uniform(-1, 1, (8, *x_shape)).astype(np.float32), tmp_path)


def test_a_models_own_int32_bias_is_kept_and_its_overflow_reported(tmp_path, capsys):
    # QDQ conv with its own int32 bias near 2^31 - 1 (DequantizeLinear(b int32, xs * ws)): kept bit for bit,
    # but bias + 36 * 127 * 127 can exceed int32, so the import says so in one note
    r = _rng(3)
    w = np.full((2, 4, 3, 3), 127, np.int8)
    path = qdq_weighted(tmp_path / "m.onnx", "conv", w, 1e-3, np.zeros(2, np.float32), (1, 4, 3, 3))
    m = onnx.load(str(path))
    inits = {t.name: t for t in m.graph.initializer}
    inits["b"].CopyFrom(numpy_helper.from_array(np.array([INT32_MAX - 1000, 5], np.int32), "b"))
    m.graph.initializer.extend([numpy_helper.from_array(np.array([1e-3 / 127], np.float32), "bs"),
                                numpy_helper.from_array(np.array([0], np.int32), "bz")])
    m.graph.node.insert(0, helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0))
    next(n for n in m.graph.node if n.op_type == "Conv").input[2] = "bd"
    onnx.save(m, str(path))
    np.save(tmp_path / "d.npy", r.uniform(-1, 1, (2, 1, 4, 3, 3)).astype(np.float32))
    g = import_model(Config(model=path, calibration=tmp_path / "d.npy")).graph_s8
    b = next(t for t in g.tensors.values() if t.is_const and t.dtype == DType.INT32)
    assert int(b.data[0]) == INT32_MAX - 1000, "the model's own bias is kept"
    assert len(accumulator_risks(g)) == 1 and "1 of 2 channel(s)" in accumulator_risks(g)[0]
    assert "can overflow" in capsys.readouterr().err


def test_a_bias_no_float32_scale_can_hold_is_refused_naming_the_node(tmp_path):
    # all-zero weights, bias 1e38, inputs in +-1e-12 (input scale ~8e-15): the weight scale would need
    # ~1e43, beyond float32
    from toolchain.errors import UnsupportedModel

    w = np.zeros((2, 4, 3, 3), np.float32)
    model = conv(tmp_path / "m.onnx", w, np.array([1e38, 0.0], np.float32), (1, 4, 3, 3))
    np.save(tmp_path / "d.npy", _rng(4).uniform(-1e-12, 1e-12, (2, 1, 4, 3, 3)).astype(np.float32))
    with pytest.raises(UnsupportedModel, match=r"node y \(Conv2D\): the bias cannot be held in int32"):
        import_model(Config(model=model, calibration=tmp_path / "d.npy", calibration_method="minmax"))
