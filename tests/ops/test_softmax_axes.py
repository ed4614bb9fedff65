"""ONNX Softmax-13 over any axis (frontend/onnx_ops_layout.py): axis 1 of a 4-D NCHW value is the
NHWC last axis (no transpose, the IR softmax runs on the NHWC tensor); other inner axes go through a
transpose and back. Float reference vs onnxruntime, then our quantizer with C == interpreter."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(13)


@pytest.mark.parametrize("shape", [(1, 5, 3, 4), (2, 3, 1, 1), (1, 10, 2, 7)])
def test_onnx_softmax_over_channels_of_4d_needs_no_transpose(shape, tmp_path, portable_lib):
    w = RNG.uniform(-1, 1, (shape[1], 2, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Softmax", ["c"], ["y"], axis=1)]
    m = model(nodes, {"x": (shape[0], 2, *shape[2:])}, ["y"], {"w": w}, opset=13)
    calib = {"x": RNG.uniform(-2, 2, (3, shape[0], 2, *shape[2:])).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    kinds = [n.op for n in g.nodes]
    assert OpKind.SOFTMAX in kinds
    sm = next(n for n in g.nodes if n.op == OpKind.SOFTMAX)
    assert g.t(sm.inputs[0]).shape[-1] == shape[1]  # softmax over the NHWC channel axis
    producer = {o: n for n in g.nodes for o in n.outputs}
    assert producer[sm.inputs[0]].op == OpKind.CONV2D  # straight from the conv: no transpose before it
    check_int8(g, calib, portable_lib, max_lsb=2.0)


@pytest.mark.parametrize("shape, axis", [((1, 4, 3, 5), 1), ((1, 4, 3, 5), 2), ((2, 3, 4, 5), 0), ((3, 4, 6), 1),
                                         ((3, 4, 6), -2), ((2, 7), 0), ((1, 4, 3, 5), -1)])
def test_onnx_softmax_any_axis(shape, axis, tmp_path, portable_lib):
    m = model([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], {"x": shape}, ["y"], opset=13)
    calib = {"x": RNG.uniform(-3, 3, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=2.0)
