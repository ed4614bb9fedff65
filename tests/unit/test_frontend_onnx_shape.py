"""ONNX frontend, shape ops: Flatten, Reshape, Squeeze/Unsqueeze (opset 11 and 13, negative axes),
Transpose, Identity and Dropout against onnxruntime (atol 1e-4), in ONNX NCHW element order."""
import numpy as np
import pytest
from _onnx_frontend import check, edgecc, node, rnd

from graph_builder import load, onnx_model, ops
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes


# ---- shape ops ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [1, 2, 0, -1])
def test_flatten_of_4d_with_spatial_extent(axis, tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"]), node("Flatten", ["c"], ["f"], axis=axis), node("Relu", ["f"])]
    model = onnx_model(nodes, {"x": (1, 2, 4, 5)}, ["y"], {"W": rnd(3, 2, 1, 1)})
    check(model, tmp_path)


def test_flatten_element_order_is_nchw(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    nodes = [node("Relu", ["x"], ["r"]), node("MaxPool", ["r"], ["p"], kernel_shape=[1, 1]), node("Flatten", ["p"])]
    (y,) = edgecc(onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"]), {"x": x}, tmp_path)
    np.testing.assert_array_equal(y, x.reshape(1, 24))


@pytest.mark.parametrize("target", [[1, -1], [1, 3, 0, 0], [0, 12, 6], [2, 36], [-1]])
def test_reshape_after_conv(target, tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]), node("Reshape", ["c", "shape"], ["r"]),
             node("Relu", ["r"])]
    model = onnx_model(nodes, {"x": (1, 2, 4, 6)}, ["y"], {"W": rnd(3, 2, 3, 3), "shape": np.array(target, np.int64)})
    check(model, tmp_path)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset, tmp_path):
    axes = {"axes": [2, 3]}
    if opset >= 13:
        sq = node("Squeeze", ["p", "ax"], ["s"])
        usq = node("Unsqueeze", ["g", "ax"], ["u"])
        inits = {"ax": np.array([2, 3], np.int64)}
    else:
        sq = node("Squeeze", ["p"], ["s"], **axes)
        usq = node("Unsqueeze", ["g"], ["u"], **axes)
        inits = {}
    nodes = [node("GlobalAveragePool", ["x"], ["p"]), sq, node("Gemm", ["s", "G"], ["g"], transB=1), usq,
             node("Conv", ["u", "W"])]
    model = onnx_model(nodes, {"x": (1, 4, 3, 3)}, ["y"], {"G": rnd(6, 4), "W": rnd(2, 6, 1, 1), **inits}, opset=opset)
    check(model, tmp_path)


def test_negative_axes(tmp_path):
    nodes = [node("GlobalAveragePool", ["x"], ["p"]), node("Squeeze", ["p", "neg"], ["s"]), node("Relu", ["s"], ["r"]),
             node("Unsqueeze", ["r", "neg2"], ["u"]), node("Conv", ["u", "W"])]
    model = onnx_model(nodes, {"x": (1, 4, 3, 3)}, ["y"], {"neg": np.array([-1, -2], np.int64),
                                                           "neg2": np.array([-1, 2], np.int64), "W": rnd(2, 4, 1, 1)})
    check(model, tmp_path)


def test_squeeze_without_axes(tmp_path):
    nodes = [node("GlobalAveragePool", ["x"], ["p"]), node("Squeeze", ["p"])]
    check(onnx_model(nodes, {"x": (1, 5, 2, 2)}, ["y"]), tmp_path)


@pytest.mark.parametrize("shape,perm", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), None), ((1, 2, 3, 4), (0, 2, 3, 1)),
                                        ((1, 2, 3, 4), (0, 3, 1, 2)), ((3, 5), (1, 0))])
def test_transpose(shape, perm, tmp_path):
    attrs = {} if perm is None else {"perm": list(perm)}
    check(onnx_model([node("Transpose", ["x"], **attrs)], {"x": shape}, ["y"]), tmp_path)


def test_transpose_after_conv(tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"]), node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]), node("Relu", ["t"])]
    check(onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"], {"W": rnd(3, 2, 1, 1)}), tmp_path)


@pytest.mark.parametrize("op", ["Identity", "Dropout"])
def test_identity_and_dropout(op, tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"]), node(op, ["c"], ["i"]), node("Relu", ["i"], ["r"]), node(op, ["r"])]
    model = onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"], {"W": rnd(3, 2, 1, 1)})
    check(model, tmp_path)
    kinds = ops(run_passes(load(model, tmp_path)))
    assert set(kinds) <= {OpKind.CONV2D, OpKind.TRANSPOSE, OpKind.RESHAPE}  # Identity/Dropout emit nothing


def test_identity_only_model(tmp_path):
    check(onnx_model([node("Identity", ["x"])], {"x": (1, 3, 2, 2)}, ["y"]), tmp_path)
