"""Convolution fault cases of ../shared/design/int8-fault-cases.md, each with the right value as the
assertion plus neighbours of the same kind: BL-10 (depthwise with one input channel, multiplier 9),
BL-11 (depthwise N x 1 kernel, stride 2, SAME), BL-14 (dilated convolution padded with the zero point),
BL-19 (depthwise multiplier 8: per-channel parameters over the output channels). Values are checked on
the numpy reference, on the portable C kernels (ctypes) and against TFLM (one subprocess for the file)."""
from __future__ import annotations

import numpy as np
import pytest
from _fault_cases import I8, I32, both, make_graph, qp, tflm_agrees, tflm_oracle
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from quantize.dequantize import dequantize_graph
from toolchain.data import quantize_inputs
from toolchain.interpret import interpret
from toolchain.ir import Node, QuantParams, Tensor
from toolchain.ops.common import NO_ACT, Window
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.registry import OpKind

tflm = tflm_oracle("bl10_dw_mult9", "bl10_dw_mult2", "bl11_dw_3x1_s2", "bl11_dw_1x2_s2", "bl14_conv_dil2",
                   "bl14_conv_3x3_dil2")


# ---- BL-10: depthwise with one input channel and multiplier 9 -----------------------------------
def test_bl10_conv_one_input_channel_nine_filters(tmp_path, portable_lib):
    np.random.seed(0)  # the recipe's weights: numpy seed 0 uniform(-1, 1) of (1, 3, 1, 9), HWIO -> OIHW
    w = np.random.uniform(-1, 1, (1, 3, 1, 9)).astype(np.float32).transpose(3, 2, 0, 1)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 1, 0, 1])], {"x": (1, 1, 4, 6)}, ["y"], {"w": w})
    x = (np.arange(24, dtype=np.float32) / 10).reshape(1, 1, 4, 6)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    np.testing.assert_allclose(want[0, :, 0, 0], [0.0556, 0.0740, 0.0957, 0.0598, -0.0077, 0.0561, -0.0763, 0.0280,
                                                  -0.0713], atol=5e-5)
    q = check_int8(g, {"x": np.stack([x, x * 0.5, -x])}, portable_lib, max_lsb=1.0)
    wq = next(q.t(n.inputs[1]) for n in q.nodes if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D))
    assert len(wq.quant.scale) == 9           # one scale per output channel


@pytest.mark.parametrize("name", ["bl10_dw_mult9", "bl10_dw_mult2"])
def test_bl10_tflite_depthwise_multiplier_vs_tflm(tflm, portable_lib, name):
    tflm_agrees(tflm, portable_lib, name)


def test_bl10_group2_multiplier2_int8(tmp_path, portable_lib):
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=2)], {"x": (1, 2, 3, 3)}, ["y"],
              {"w": np.arange(16, dtype=np.float32).reshape(4, 1, 2, 2)})
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    assert want[0, :, 0, 0].tolist() == [19, 51, 425, 601]
    assert OpKind.DEPTHWISE_CONV2D in [n.op for n in g.nodes]
    check_int8(g, {"x": np.stack([x, x[:, ::-1] * 0.3])}, portable_lib, max_lsb=1.0)


# ---- BL-11: depthwise N x 1 kernel, stride 2, SAME --------------------------------------------------
@pytest.mark.parametrize("name", ["bl11_dw_3x1_s2", "bl11_dw_1x2_s2"])
def test_bl11_tflite_vs_tflm(tflm, portable_lib, name):
    g = tflm(name)[0]
    if name == "bl11_dw_3x1_s2":  # TF SAME: H total pad 1 (top 0, bottom 1), W 0
        assert g.nodes[0].attrs.window.pads == (0, 0, 1, 0) and g.t(g.outputs[0]).shape == (1, 4, 4, 2)
    tflm_agrees(tflm, portable_lib, name)


def test_bl11_onnx_recipe_and_int8_with_nonzero_zero_point(tmp_path, portable_lib):
    w = (np.arange(6, dtype=np.float32) / 10).reshape(2, 1, 3, 1)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=2, strides=[2, 2], pads=[0, 0, 1, 0])],
              {"x": (1, 2, 8, 8)}, ["y"], {"w": w})
    x = np.random.default_rng(999).random((1, 2, 8, 8)).astype(np.float32)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    assert want.shape == (1, 2, 4, 4)
    # inputs in [0.2, 1.2]: the input zero point sits at -128 - 0.2/scale, far from a raw 0
    calib = {"x": np.stack([x + 0.2, x * 0.5 + 0.2])}
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    assert q.t(q.inputs[0]).quant.zp != 0


# ---- BL-14: dilated convolution padded with the zero point -----------------------------------------
def test_bl14_dilated_conv_pads_with_the_zero_point(portable_lib):
    """Conv1D as 1x3, dilation 2, pads 2, x = 2.0 everywhere stored as q = 50 with zp -50 (scale 0.02),
    W = [1, 2, 3] exactly (scale 1/32): real output 2 * [5, 5, 6, 6, 6, 6, 3, 3]; padding with a raw 0
    (real 1.0) would give 7, 9 and 12 at the borders instead."""
    ts = [Tensor("x", (1, 1, 8, 1), I8, qp(0.02, -50)),
          Tensor("w", (1, 1, 3, 1), I8, QuantParams((1 / 32,), (0,), 0), np.array([32, 64, 96], np.int8).reshape(1, 1, 3, 1)),
          Tensor("b", (1,), I32, QuantParams((0.02 / 32,), (0,), 0), np.zeros(1, np.int32)),
          Tensor("y", (1, 1, 8, 1), I8, qp(0.1, 0))]
    win = Window((1, 3), (1, 1), (1, 2), (0, 2, 0, 2))
    g = make_graph([Node("c", OpKind.CONV2D, ("x", "w", "b"), ("y",), Conv2DAttrs(win, 1, NO_ACT))], ts, ["x"], ["y"])
    y = both(portable_lib, g, {"x": np.full((1, 1, 8, 1), 50, np.int8)})
    assert y.ravel().tolist() == [100, 100, 120, 120, 120, 120, 60, 60]


@pytest.mark.parametrize("name", ["bl14_conv_dil2", "bl14_conv_3x3_dil2"])
def test_bl14_dilated_conv_vs_tflm(tflm, portable_lib, name):
    tflm_agrees(tflm, portable_lib, name)


# ---- BL-19: depthwise multiplier 8, per-channel parameters over the output channels ------------------
def test_bl19_depthwise_multiplier_8_has_24_scales(tmp_path, portable_lib):
    rng = np.random.default_rng(19)
    w = (rng.uniform(-1, 1, (24, 1, 3, 3)) * (2.0 ** (np.arange(24) % 8))[:, None, None, None]).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=3, pads=[1, 1, 1, 1])], {"x": (1, 3, 5, 5)}, ["y"],
              {"w": w})
    x = rng.uniform(-1, 1, (3, 1, 3, 5, 5)).astype(np.float32)
    g, _ = check_float(m, {"x": x[0]}, tmp_path)
    q = check_int8(g, {"x": x}, portable_lib, max_lsb=None)
    (node,) = [n for n in q.nodes if n.op == OpKind.DEPTHWISE_CONV2D]
    wq = q.t(node.inputs[1])
    assert wq.shape == (1, 3, 3, 24) and wq.quant.axis == 3 and len(wq.quant.scale) == 24
    ratio = np.array(wq.quant.scale) / np.array(wq.quant.scale)[np.arange(24) // 8 * 8]
    assert np.allclose(np.log2(ratio), np.arange(24) % 8, atol=0.6)   # the 2^(o % 8) pattern survives
    # QDQ semantics: float conv of the dequantized input and weights, quantized once: within 1 LSB
    qin = quantize_inputs({"x": x}, q)
    twin = dequantize_graph(q)
    yq = q.t(q.outputs[0]).quant
    for i in range(3):
        feeds = {k: v[i] for k, v in qin.items()}
        got = interpret(q, feeds)[q.outputs[0]].astype(int)
        qdq = yq.quantize(interpret(twin, {k: q.t(k).quant.dequantize(v) for k, v in feeds.items()})[q.outputs[0]])
        assert np.max(np.abs(got - qdq.astype(int))) <= 1
