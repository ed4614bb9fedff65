"""ONNX frontend, element-wise ops: Relu, Clip (opset 11 and 13, fused into a preceding Conv) and Add
against onnxruntime (atol 1e-4); Div by an activation is rejected naming the node."""
import numpy as np
import pytest
from _onnx_frontend import check, node, rnd

from graph_builder import load, onnx_model, ops
from toolchain.errors import UnsupportedModel
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes


# ---- element-wise ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 7)])
def test_relu(shape, tmp_path):
    check(onnx_model([node("Relu", ["x"])], {"x": shape}, ["y"]), tmp_path)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("bounds", [(-0.5, 1.5), (0.0, 6.0), (None, 0.3), (-0.2, None), (None, None)])
def test_clip_with_min_max_inputs(opset, bounds, tmp_path):
    lo, hi = bounds
    inits = {}
    if lo is not None:
        inits["lo"] = np.array(lo, np.float32)
    if hi is not None:
        inits["hi"] = np.array(hi, np.float32)
    ins = ["x", "lo" if lo is not None else "", "hi" if hi is not None else ""]
    while ins and ins[-1] == "":
        ins.pop()
    model = onnx_model([node("Clip", ins)], {"x": (1, 2, 3, 4)}, ["y"], inits, opset=opset)
    check(model, tmp_path)


def test_clip_after_conv_is_fused(tmp_path):
    nodes = [node("Conv", ["x", "W", "B"], ["c"]), node("Clip", ["c", "lo", "hi"], ["r"]), node("Relu", ["r"])]
    model = onnx_model(nodes, {"x": (1, 2, 5, 5)}, ["y"], {"W": rnd(3, 2, 3, 3), "B": rnd(3),
                                                           "lo": np.array(-1, np.float32),
                                                           "hi": np.array(6, np.float32)})
    g = run_passes(load(model, tmp_path))
    (conv,) = [n for n in g.nodes if n.op == OpKind.CONV2D]
    assert conv.attrs.act == (0.0, 6.0)
    assert OpKind.CLAMP not in ops(g)
    check(model, tmp_path)


def test_add_of_two_inputs(tmp_path):
    check(onnx_model([node("Add", ["a", "b"])], {"a": (1, 3, 4, 5), "b": (1, 3, 4, 5)}, ["y"]), tmp_path)


def test_add_of_two_convs_and_a_residual(tmp_path):
    nodes = [node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             node("Conv", ["c1", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1]),
             node("Add", ["c1", "c2"], ["s"]), node("Relu", ["s"], ["r"]), node("Add", ["r", "x"])]
    model = onnx_model(nodes, {"x": (1, 3, 5, 6)}, ["y"],
                       {"W1": rnd(3, 3, 3, 3), "B1": rnd(3), "W2": rnd(3, 3, 3, 3), "B2": rnd(3)})
    check(model, tmp_path)


def test_add_with_constant_is_supported(tmp_path):
    """Constant operands broadcast since issue 4 (tests/ops/test_binary.py has the int8 side)."""
    check(onnx_model([node("Add", ["x", "K"], name="add_k")], {"x": (1, 4)}, ["y"], {"K": rnd(1, 4)}), tmp_path)


def test_division_by_an_activation_is_rejected(tmp_path):
    model = onnx_model([node("Div", ["x", "z"], name="div_xz")], {"x": (1, 4), "z": (1, 4)}, ["y"])
    with pytest.raises(UnsupportedModel, match="div_xz"):
        load(model, tmp_path)
