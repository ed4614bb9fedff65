"""ONNX Upsample-7 (scales attribute) and Upsample-9 (scales input), modes nearest and linear, onto
the ResizeNearestNeighbor / ResizeBilinear IR ops (asymmetric coordinates, nearest rounds down):
float reference vs onnxruntime, then through our quantizer with the C kernels == interpreter."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.errors import UnsupportedModel
from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(9)
SCALES = [(1, 1, 2, 2), (1, 1, 3, 2), (1, 1, 1.5, 2.5), (1, 1, 1, 3), (1, 1, 2.7, 1.3), (1, 1, 1, 1)]


def _check(m, shape, tmp_path, portable_lib, kind):
    calib = {"x": RNG.uniform(-1, 1, (3, *shape)).astype(np.float32)}
    g, want = check_float(m, {"x": calib["x"][0]}, tmp_path, atol=1e-5)
    assert [n.op for n in g.nodes if n.op in (OpKind.RESIZE_NEAREST, OpKind.RESIZE_BILINEAR)] == [kind]
    check_int8(g, calib, portable_lib, max_lsb=1.0)
    return want


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 2, 3, 1)])
def test_onnx_upsample9(mode, scales, shape, tmp_path, portable_lib):
    m = model([helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)], {"x": shape}, ["y"],
              {"s": np.array(scales, np.float32)}, opset=9)
    want = _check(m, shape, tmp_path, portable_lib, OpKind.RESIZE_NEAREST if mode == "nearest" else OpKind.RESIZE_BILINEAR)
    assert want[0].shape[2:] == tuple(int(np.floor(d * s)) for d, s in zip(shape[2:], scales[2:]))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_onnx_upsample7_scales_attribute(mode, tmp_path, portable_lib):
    m = model([helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=[1.0, 1.0, 2.0, 3.0])], {"x": (1, 2, 3, 4)},
              ["y"], opset=7)
    _check(m, (1, 2, 3, 4), tmp_path, portable_lib, OpKind.RESIZE_NEAREST if mode == "nearest" else OpKind.RESIZE_BILINEAR)


def test_onnx_upsample_nearest_by_hand(tmp_path):
    """Nearest with scale 2 repeats every pixel twice (floor(x_out / 2)), no half-pixel shift."""
    from _onnx_checks import float_graph

    from toolchain.interpret import interpret

    m = model([helper.make_node("Upsample", ["x", "s"], ["y"])], {"x": (1, 1, 1, 3)}, ["y"],
              {"s": np.array([1, 1, 1, 2], np.float32)}, opset=9)
    g = float_graph(m, tmp_path)
    y = interpret(g, {"x": np.array([[[[1, 2, 3]]]], np.float32)})[g.outputs[0]]
    assert y.reshape(-1).tolist() == [1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("scales, mode, reason", [((2, 1, 2, 2), "nearest", "batch or channel axis"),
                                                 ((1, 1, 2, 2), "cubic", "mode 'cubic'")])
def test_onnx_upsample_unsupported_forms_are_rejected(scales, mode, reason, tmp_path):
    """Opset 9 is upgraded (Upsample becomes Resize-13 with Upsample's asymmetric coordinates), and
    what Resize cannot run is refused naming the reason."""
    m = model([helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)], {"x": (1, 2, 4, 4)}, ["y"],
              {"s": np.array(scales, np.float32)}, opset=9)
    with pytest.raises(UnsupportedModel, match=reason):
        check_float(m, {"x": np.zeros((1, 2, 4, 4), np.float32)}, tmp_path)


def test_old_opset_model_with_a_changed_op_is_upgraded(tmp_path):
    """An opset 9 model with an op whose form changed since (Pad-2: pads as an attribute) loads through
    onnx.version_converter and equals onnxruntime on the original file."""
    nodes = [helper.make_node("Upsample", ["x", "s"], ["u"]),
             helper.make_node("Pad", ["u"], ["y"], pads=[0, 0, 1, 0, 0, 0, 0, 2])]
    m = model(nodes, {"x": (1, 1, 2, 2)}, ["y"], {"s": np.array([1, 1, 2, 2], np.float32)}, opset=9)
    check_float(m, {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)}, tmp_path)
