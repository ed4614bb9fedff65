"""ONNX ConvTranspose (strides, pads, output_padding, output_shape, auto_pad, bias), ReduceSum,
ReduceMax (attribute and input axes, keepdims) and GlobalMaxPool: our float reference vs
onnxruntime, then our INT8 quantizer + C == interpreter, int8 output close to the float one;
refused forms raise UnsupportedModel naming them."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, float_graph, model
from onnx import helper

from toolchain.errors import UnsupportedModel
from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(41)


def _calib(shape, n=3):
    return RNG.uniform(-1, 1, (n, *shape)).astype(np.float32)


CT = [dict(strides=[2, 2], pads=[1, 1, 1, 1]), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
      dict(strides=[1, 1]), dict(strides=[2, 3], pads=[0, 1, 2, 0]), dict(strides=[2, 2], output_shape=[9, 11]),
      dict(strides=[2, 2], auto_pad="SAME_UPPER"), dict(strides=[2, 2], auto_pad="SAME_LOWER"),
      dict(strides=[2, 2], auto_pad="VALID"), dict(strides=[3, 3], kernel_shape=[3, 3])]


@pytest.mark.parametrize("attrs", CT, ids=[str(i) for i in range(len(CT))])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose(attrs, bias, tmp_path, portable_lib):
    w = RNG.uniform(-0.5, 0.5, (4, 5, 3, 3)).astype(np.float32)   # [Cin, Cout, KH, KW]
    inits = {"w": w}
    ins = ["x", "w"]
    if bias:
        inits["b"] = RNG.uniform(-0.3, 0.3, 5).astype(np.float32)
        ins.append("b")
    m = model([helper.make_node("ConvTranspose", ins, ["y"], **attrs)], {"x": (1, 4, 4, 5)}, ["y"], inits)
    calib = {"x": _calib((1, 4, 4, 5))}
    g, want = check_float(m, {"x": calib["x"][0]}, tmp_path, atol=1e-4)
    assert OpKind.TRANSPOSE_CONV in [n.op for n in g.nodes]
    check_int8(g, calib, portable_lib, max_lsb=3.0)


@pytest.mark.parametrize("attrs, what", [(dict(group=2), "group 2"), (dict(dilations=[2, 2]), "dilations")])
def test_conv_transpose_refused(attrs, what, tmp_path):
    w = RNG.uniform(-0.5, 0.5, (4, 2, 3, 3)).astype(np.float32)
    m = model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)], {"x": (1, 4, 4, 5)}, ["y"], {"w": w})
    with pytest.raises(UnsupportedModel, match=what):
        float_graph(m, tmp_path)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax"])
@pytest.mark.parametrize("axes, keepdims, opset", [([2, 3], 1, 13), ([2, 3], 0, 13), ([1], 1, 18), ([1], 0, 18),
                                                   ([-1], 1, 18), ([0, 1, 2, 3], 0, 13), ([3], 0, 11)])
def test_reduce(op, axes, keepdims, opset, tmp_path, portable_lib):
    attr_axes = opset < (13 if op == "ReduceSum" else 18)
    w = RNG.uniform(-1, 1, (6, 3, 1, 1)).astype(np.float32)
    inits = {"w": w}
    if attr_axes:
        red = helper.make_node(op, ["c"], ["y"], axes=axes, keepdims=keepdims)
    else:
        inits["axes"] = np.array(axes, np.int64)
        red = helper.make_node(op, ["c", "axes"], ["y"], keepdims=keepdims)
    m = model([helper.make_node("Conv", ["x", "w"], ["c"]), red], {"x": (1, 3, 5, 7)}, ["y"], inits, opset=opset)
    calib = {"x": _calib((1, 3, 5, 7))}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path, atol=1e-4)
    assert (OpKind.SUM if op == "ReduceSum" else OpKind.REDUCE_MAX) in [n.op for n in g.nodes]
    # a sum of n conv outputs carries n half-LSBs of the conv's rounding
    check_int8(g, calib, portable_lib, max_lsb=None if op == "ReduceSum" and len(axes) > 1 else 3.0)


def test_global_max_pool(tmp_path, portable_lib):
    w = RNG.uniform(-1, 1, (5, 3, 3, 3)).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("GlobalMaxPool", ["c"], ["y"])], {"x": (1, 3, 6, 7)}, ["y"], {"w": w})
    calib = {"x": _calib((1, 3, 6, 7))}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert OpKind.REDUCE_MAX in [n.op for n in g.nodes]
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    (red,) = [n for n in q.nodes if n.op == OpKind.REDUCE_MAX]
    assert q.t(red.outputs[0]).quant == q.t(red.inputs[0]).quant  # raw max: the input's qparams
