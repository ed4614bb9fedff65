"""SiLU (ops/silu.py; no TFLite builtin, int8 semantics quantize(x * sigmoid(x)) of the real input,
run as the generic 256-entry LUT kernel): every int8 input of many qparams (zero points -128 and
127 included) within half an output LSB of the float SiLU; the C kernel == the interpreter under
both rounding modes; ONNX Mul(x, Sigmoid(x)) fused into SiLU and through our quantizer."""
from dataclasses import replace

import numpy as np
import pytest
from _c_graph import run_graph_c
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.registry import OpKind
from toolchain.ops.silu import SiLUAttrs, silu_f, silu_table

X = np.arange(-128, 128, dtype=np.int8)


@pytest.mark.parametrize("s_in, z_in, s_out, z_out", [(0.05, 0, 0.04, -100), (0.1, -128, 0.08, -120),
                                                      (0.02, 127, 0.01, 127), (0.3, 10, 0.2, -110),
                                                      (0.04, -128, 0.002, -128)])
def test_every_input_within_half_an_lsb_of_the_float(s_in, z_in, s_out, z_out):
    y = silu_table(s_in, z_in, s_out, z_out, "tflm").astype(np.float64)
    r = (X.astype(np.float64) - z_in) * s_in
    want = np.clip(r / (1 + np.exp(-r)) / s_out + z_out, -128, 127)
    assert np.max(np.abs(y - want)) <= 0.5 + 1e-9
    assert y.min() >= -128 and y.max() <= 127


def test_silu_f_is_stable_and_exact():
    x = np.array([-1000.0, -20.0, -1.0, 0.0, 1.0, 20.0, 1000.0])
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(silu_f(x), x / (1 + np.exp(-x)), rtol=1e-12, atol=1e-300)
    assert silu_f(np.array([-1000.0]))[0] == 0.0 and silu_f(np.array([1000.0]))[0] == 1000.0


@pytest.mark.parametrize("rounding", ["tflm", "onnx"])
@pytest.mark.parametrize("shape", [(1, 7), (1, 3, 5, 7), (256,)])
@pytest.mark.parametrize("qi, qo", [((0.05, -128), (0.03, -119)), ((0.02, 127), (0.01, 127)), ((0.1, 0), (0.05, -5))])
def test_c_kernel_equals_interpreter(portable_lib, shape, qi, qo, rounding):
    ts = {"x": Tensor("x", shape, DType.INT8, QuantParams.per_tensor(*qi)),
          "y": Tensor("y", shape, DType.INT8, QuantParams.per_tensor(*qo))}
    g = Graph("g", (Node("s", OpKind.SILU, ("x",), ("y",), SiLUAttrs()),), ts, ("x",), ("y",), {"rounding": rounding})
    x = np.random.default_rng(len(shape)).integers(-128, 128, shape).astype(np.int8)
    x.reshape(-1)[: min(x.size, 256)] = X[: min(x.size, 256)]
    ref = interpret(g, {"x": x})["y"]
    assert np.array_equal(run_graph_c(portable_lib, g, {"x": x})["y"], ref)
    assert np.array_equal(ref, silu_table(*qi, *qo, rounding)[x.astype(np.int64) + 128])


@pytest.mark.parametrize("order", ["x_first", "sigmoid_first"])
@pytest.mark.parametrize("rounding", ["tflm", "onnx"])
def test_onnx_mul_sigmoid_is_silu(tmp_path, portable_lib, order, rounding):
    ins = ["x", "s"] if order == "x_first" else ["s", "x"]
    m = model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ins, ["y"])],
              {"x": (1, 3, 5, 7)}, ["y"])
    calib = {"x": np.random.default_rng(7).uniform(-6, 6, (3, 1, 3, 5, 7)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert [n.op for n in g.nodes] == [OpKind.SILU]
    q = check_int8(replace(g, meta={**g.meta, "rounding": rounding}), calib, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).quant.zp > -128     # calibrated: SiLU reaches below zero


def test_onnx_sigmoid_read_twice_is_not_fused(tmp_path, portable_lib):
    m = model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
              {"x": (1, 2, 3, 4)}, ["y", "s"])
    calib = {"x": np.random.default_rng(8).uniform(-6, 6, (2, 1, 2, 3, 4)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert OpKind.SILU not in [n.op for n in g.nodes] and OpKind.LOGISTIC in [n.op for n in g.nodes]
    check_int8(g, calib, portable_lib, max_lsb=None)
