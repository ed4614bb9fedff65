"""HardSigmoid (ops/hard_sigmoid.py; no TFLite builtin, int8 semantics quantize(f(dequantize(x)))
run as the generic 256-entry LUT kernel): every int8 input of many input qparams (zero points -128
and 127 included) within half an output LSB of the float hard sigmoid; the tie rounding of both
`rounding` modes; the C kernel == the interpreter on odd sizes; ONNX HardSigmoid (default and
torch's 1/6 attributes) through our float reference vs onnxruntime and our quantizer."""
from dataclasses import replace

import numpy as np
import pytest
from _c_graph import run_graph_c
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.hard_sigmoid import HARD_SIGMOID_OUT, HardSigmoidAttrs, hard_sigmoid_table
from toolchain.ops.registry import OpKind

X = np.arange(-128, 128, dtype=np.int8)
DEFAULT = HardSigmoidAttrs()
QPARAMS = [(0.05, 0), (0.1, -128), (0.02, 127), (0.3, 10), (0.004, -50), (1.5, 3)]


def int8_graph(shape, s_in, z_in, attrs=DEFAULT, out_q=HARD_SIGMOID_OUT, rounding="tflm") -> Graph:
    qi = QuantParams.per_tensor(s_in, z_in)
    ts = {"x": Tensor("x", shape, DType.INT8, qi), "y": Tensor("y", shape, DType.INT8, out_q)}
    node = Node("hs", OpKind.HARD_SIGMOID, ("x",), ("y",), attrs)
    return Graph("g", (node,), ts, ("x",), ("y",), {"rounding": rounding})


@pytest.mark.parametrize("alpha, beta", [(0.2, 0.5), (1 / 6, 0.5), (0.75, -0.25), (-0.3, 0.4)])
@pytest.mark.parametrize("s_in, z_in", QPARAMS)
def test_every_input_within_half_an_lsb_of_the_float(s_in, z_in, alpha, beta):
    y = hard_sigmoid_table(alpha, beta, s_in, z_in, 1 / 256, -128, "tflm").astype(np.float64)
    real = np.clip(alpha * (X.astype(np.float64) - z_in) * s_in + beta, 0, 1)
    want = np.clip(real * 256 - 128, -128, 127)
    assert np.max(np.abs(y - want)) <= 0.5 + 1e-9
    assert y[0] == np.clip(np.round(want[0]), -128, 127) and y[-1] == np.clip(np.round(want[-1]), -128, 127)
    assert np.all(np.diff(y) >= 0) if alpha > 0 else np.all(np.diff(y) <= 0)


def test_ties_round_as_the_rounding_mode():
    # alpha 0.25, beta 0.5, s_in 1/128: x = 1 gives 0.5 + 1/512 = 128.5 / 256, a tie
    tflm = hard_sigmoid_table(0.25, 0.5, 1 / 128, 0, 1 / 256, -128, "tflm")
    onnx = hard_sigmoid_table(0.25, 0.5, 1 / 128, 0, 1 / 256, -128, "onnx")
    assert tflm[1 + 128] == 1 and onnx[1 + 128] == 0     # away from zero vs to even (128)
    assert tflm[3 + 128] == 2 and onnx[3 + 128] == 2     # 130.5 -> 131 vs 130
    assert np.count_nonzero(tflm != onnx) > 0 and np.max(np.abs(tflm.astype(int) - onnx)) == 1


@pytest.mark.parametrize("rounding", ["tflm", "onnx"])
@pytest.mark.parametrize("shape", [(1, 7), (1, 3, 5, 7), (2, 1, 1, 13), (256,)])
@pytest.mark.parametrize("s_in, z_in", [(0.05, -128), (0.02, 127), (1 / 128, 0)])
def test_c_kernel_equals_interpreter(portable_lib, shape, s_in, z_in, rounding):
    g = int8_graph(shape, s_in, z_in, HardSigmoidAttrs(0.25, 0.5), rounding=rounding)
    x = np.random.default_rng(len(shape)).integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1)[: min(x.size, 256)] = X[: min(x.size, 256)]
    ref = interpret(g, {"x": x})["y"]
    assert np.array_equal(run_graph_c(portable_lib, g, {"x": x})["y"], ref)
    table = hard_sigmoid_table(0.25, 0.5, s_in, z_in, 1 / 256, -128, rounding)
    assert np.array_equal(ref, table[x.astype(np.int64) + 128])


def test_output_qparams_other_than_the_fixed_ones_are_honoured(portable_lib):
    g = int8_graph((1, 9), 0.1, 3, out_q=QuantParams.per_tensor(1 / 100, 20))
    ref = interpret(g, {"x": X[::29].reshape(1, 9)})["y"]
    real = np.clip(0.2 * (X[::29].astype(np.float64) - 3) * 0.1 + 0.5, 0, 1)
    assert np.array_equal(ref.reshape(-1), np.clip(np.round(real * 100) + 20, -128, 127))
    assert np.array_equal(run_graph_c(portable_lib, g, {"x": X[::29].reshape(1, 9)})["y"], ref)


@pytest.mark.parametrize("attrs", [{}, {"alpha": 1 / 6}, {"alpha": 0.3, "beta": 0.6}])
def test_onnx_hard_sigmoid(tmp_path, portable_lib, attrs):
    m = model([helper.make_node("HardSigmoid", ["x"], ["y"], **attrs)], {"x": (1, 5, 3, 7)}, ["y"])
    calib = {"x": np.random.default_rng(5).uniform(-5, 5, (3, 1, 5, 3, 7)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert [n.op for n in g.nodes] == [OpKind.HARD_SIGMOID]
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).quant == HARD_SIGMOID_OUT


def test_onnx_hard_sigmoid_rounding_onnx(tmp_path, portable_lib):
    m = model([helper.make_node("HardSigmoid", ["x"], ["y"])], {"x": (1, 4, 4, 3)}, ["y"])
    calib = {"x": np.random.default_rng(6).uniform(-4, 4, (2, 1, 4, 4, 3)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(replace(g, meta={**g.meta, "rounding": "onnx"}), calib, portable_lib, max_lsb=1.0)
