"""ONNX frontend, Conv: float semantics (strides, pads, dilations, groups, depthwise, auto_pad) through
load_onnx + run_passes + interpret against onnxruntime (atol 1e-4), and the exact values of the fault
cases BL-08 (SAME pads at the end), BL-10 (group 2, multiplier 2) and BL-14 (dilated 1-D conv)."""
import numpy as np
import pytest
from _onnx_frontend import check, edgecc, node, rnd

from graph_builder import load, onnx_model, run_ort
from toolchain.ops.registry import OpKind


# ---- Conv -----------------------------------------------------------------------------------
CONV_CASES = {
    "plain": dict(cin=3, cout=4, k=3, attrs={}),
    "stride2": dict(cin=3, cout=4, k=3, attrs=dict(strides=[2, 2])),
    "stride_hw": dict(cin=2, cout=3, k=3, attrs=dict(strides=[1, 2])),
    "pads_sym": dict(cin=3, cout=4, k=3, attrs=dict(pads=[1, 1, 1, 1])),
    "pads_asym": dict(cin=3, cout=4, k=3, attrs=dict(pads=[0, 2, 1, 0], strides=[2, 1])),
    "dilation2": dict(cin=2, cout=3, k=3, attrs=dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
    "dilation_hw": dict(cin=2, cout=3, k=3, attrs=dict(dilations=[1, 2])),
    "kernel_1x1": dict(cin=5, cout=7, k=1, attrs={}),
    "kernel_rect": dict(cin=2, cout=3, k=(3, 1), attrs=dict(pads=[1, 0, 1, 0])),
    "kernel_shape_attr": dict(cin=2, cout=2, k=3, attrs=dict(kernel_shape=[3, 3])),
    "grouped": dict(cin=4, cout=6, k=3, attrs=dict(group=2, pads=[1, 1, 1, 1])),
    "grouped_1x1": dict(cin=4, cout=4, k=1, attrs=dict(group=2)),
    "group_eq_cin_cout_not_multiple": dict(cin=4, cout=2, k=1, attrs=dict(group=2)),
    "depthwise_m1": dict(cin=3, cout=3, k=3, attrs=dict(group=3, pads=[1, 1, 1, 1])),
    "depthwise_m3": dict(cin=3, cout=9, k=3, attrs=dict(group=3, strides=[2, 2])),
    "depthwise_m1_stride2_pads": dict(cin=4, cout=4, k=3, attrs=dict(group=4, strides=[2, 2], pads=[0, 0, 1, 1])),
    "single_channel_conv": dict(cin=1, cout=9, k=(1, 3), attrs=dict(pads=[0, 1, 0, 1])),
    "same_upper": dict(cin=2, cout=3, k=3, attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "same_lower": dict(cin=2, cout=3, k=3, attrs=dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    "same_upper_s1_even_k": dict(cin=2, cout=3, k=2, attrs=dict(auto_pad="SAME_UPPER")),
    "same_lower_s1_even_k": dict(cin=2, cout=3, k=2, attrs=dict(auto_pad="SAME_LOWER")),
    "valid": dict(cin=2, cout=3, k=3, attrs=dict(auto_pad="VALID", strides=[2, 2])),
    "dw_same_upper": dict(cin=3, cout=6, k=3, attrs=dict(group=3, auto_pad="SAME_UPPER", strides=[2, 2])),
}


@pytest.mark.parametrize("hw", [(7, 8), (8, 16)])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case, hw, tmp_path):
    c = CONV_CASES[case]
    kh, kw = (c["k"], c["k"]) if isinstance(c["k"], int) else c["k"]
    group = c["attrs"].get("group", 1)
    inits = {"W": rnd(c["cout"], c["cin"] // group, kh, kw), "B": rnd(c["cout"])}
    model = onnx_model([node("Conv", ["x", "W", "B"], **c["attrs"])], {"x": (1, c["cin"], *hw)}, ["y"], inits)
    check(model, tmp_path)


def test_depthwise_is_lowered_to_depthwise_op(tmp_path):
    for cout, mult in ((3, 1), (9, 3)):
        inits = {"W": rnd(cout, 1, 3, 3), "B": rnd(cout)}
        g = load(onnx_model([node("Conv", ["x", "W", "B"], group=3)], {"x": (1, 3, 5, 5)}, ["y"], inits), tmp_path)
        (dw,) = [n for n in g.nodes if n.op == OpKind.DEPTHWISE_CONV2D]
        assert dw.attrs.depth_multiplier == mult


def test_conv_without_bias(tmp_path):
    model = onnx_model([node("Conv", ["x", "W"], pads=[1, 1, 1, 1])], {"x": (1, 2, 5, 5)}, ["y"],
                       {"W": rnd(3, 2, 3, 3)})
    check(model, tmp_path)


@pytest.mark.parametrize("size,k,s,d,upper,want", [
    (8, 3, 2, 1, True, (0, 1)), (8, 3, 2, 1, False, (1, 0)), (7, 3, 2, 1, True, (1, 1)),
    (16, 3, 2, 1, True, (0, 1)), (5, 2, 1, 1, True, (0, 1)), (5, 2, 1, 1, False, (1, 0)),
    (8, 3, 1, 2, True, (2, 2)), (8, 1, 2, 1, True, (0, 0)), (6, 4, 4, 1, True, (1, 1)),
])
def test_same_pads(size, k, s, d, upper, want):
    """TF SAME / ONNX SAME_UPPER: total = max((ceil(in/s)-1)*s + eff_k - in, 0), extra at the end (BL-08).
    (ORT has no dilated auto_pad Conv, so the dilated case is checked here only.)"""
    from toolchain.ops.common import same_pads

    assert same_pads(size, k, s, d, upper) == want


def _bl08(auto_pad, tmp_path):
    x = np.arange(128, dtype=np.float32).reshape(1, 1, 8, 16)
    model = onnx_model([node("Conv", ["x", "W"], strides=[2, 2], auto_pad=auto_pad)], {"x": (1, 1, 8, 16)}, ["y"],
                       {"W": np.ones((1, 1, 3, 3), np.float32)})
    (y,) = edgecc(model, {"x": x}, tmp_path)
    np.testing.assert_allclose(y, run_ort(model, {"x": x})[0], atol=1e-4)
    return y


def test_bl08_same_upper_stride2_pads_at_the_end(tmp_path):
    y = _bl08("SAME_UPPER", tmp_path)
    assert y.shape == (1, 1, 4, 8)
    np.testing.assert_array_equal(y[0, 0, 0, :4], [153, 171, 189, 207])
    assert y[0, 0, -1, -1] == 474


def test_bl08_same_lower_stride2_pads_at_the_start(tmp_path):
    y = _bl08("SAME_LOWER", tmp_path)
    np.testing.assert_array_equal(y[0, 0, 0, :4], [34, 60, 72, 84])
    assert y[0, 0, -1, -1] == 990


def test_bl10_group2_multiplier2(tmp_path):
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    model = onnx_model([node("Conv", ["x", "W"], group=2)], {"x": (1, 2, 3, 3)}, ["y"],
                       {"W": np.arange(16, dtype=np.float32).reshape(4, 1, 2, 2)})
    (y,) = edgecc(model, {"x": x}, tmp_path)
    np.testing.assert_array_equal(y[0, :, 0, 0], [19, 51, 425, 601])


def test_bl14_dilated_conv_1d(tmp_path):
    model = onnx_model([node("Conv", ["x", "W"], dilations=[1, 2], pads=[0, 2, 0, 2])], {"x": (1, 1, 1, 8)}, ["y"],
                       {"W": np.array([1, 2, 3], np.float32).reshape(1, 1, 1, 3)})
    (y,) = edgecc(model, {"x": np.ones((1, 1, 1, 8), np.float32)}, tmp_path)
    np.testing.assert_array_equal(y.ravel(), [5, 5, 6, 6, 6, 6, 3, 3])
