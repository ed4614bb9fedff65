"""ONNX frontend, Softmax: last axis (opset 13), opset 11 coerced 2-D, after a Conv in ONNX order,
against onnxruntime (atol 1e-4); an inner axis goes through a transpose (rank <= 4), rank 5 is rejected."""
import pytest
from _onnx_frontend import check, node, rnd

from graph_builder import load, onnx_model
from toolchain.errors import UnsupportedModel


@pytest.mark.parametrize("shape", [(2, 5), (1, 10), (3, 4, 6)])
def test_softmax_last_axis(shape, tmp_path):
    check(onnx_model([node("Softmax", ["x"])], {"x": shape}, ["y"]), tmp_path)


def test_softmax_opset11_2d(tmp_path):
    check(onnx_model([node("Softmax", ["x"], axis=1)], {"x": (2, 5)}, ["y"], opset=11), tmp_path)


def test_softmax_opset11_coerced_with_unit_trailing_axes(tmp_path):
    check(onnx_model([node("Softmax", ["x"], axis=1)], {"x": (1, 5, 1, 1)}, ["y"], opset=11), tmp_path)


def test_softmax_after_conv(tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"]), node("Flatten", ["c"], ["f"]), node("Softmax", ["f"])]
    check(onnx_model(nodes, {"x": (1, 2, 3, 3)}, ["y"], {"W": rnd(4, 2, 1, 1)}), tmp_path)


def test_softmax_last_axis_of_4d_conv_output(tmp_path):
    """Softmax-13 over W of an NCHW value that the IR holds NHWC: it must run in ONNX order."""
    nodes = [node("Conv", ["x", "W"], ["c"]), node("Softmax", ["c"], axis=-1)]
    check(onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"], {"W": rnd(3, 2, 1, 1)}), tmp_path)


def test_softmax_over_inner_axis_goes_through_a_transpose(tmp_path):
    check(onnx_model([node("Softmax", ["x"], axis=1)], {"x": (2, 3, 4)}, ["y"]), tmp_path)


def test_softmax_over_inner_axis_of_rank_5_is_rejected(tmp_path):
    with pytest.raises(UnsupportedModel, match="Softmax"):
        load(onnx_model([node("Softmax", ["x"], axis=1)], {"x": (1, 2, 3, 4, 2)}, ["y"]), tmp_path)
