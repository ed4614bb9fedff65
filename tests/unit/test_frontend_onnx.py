"""ONNX frontend: float semantics of every supported ONNX op through load_onnx + run_passes +
interpret, against onnxruntime with graph optimisations disabled (atol 1e-4); exact values of the
fault cases BL-08, BL-10, BL-13, BL-14, BL-16; loud errors for unsupported ops and attributes."""
import numpy as np
import pytest
from onnx import helper

from graph_builder import load, onnx_model, ops, outputs_in_order, run_ort, save
from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx import load_onnx
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes

RNG = np.random.default_rng(1234)


def rnd(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def edgecc(model, feeds, tmp_path):
    """load_onnx + run_passes(check) + interpret; outputs in ONNX output order."""
    g = run_passes(load(model, tmp_path), check=True)
    return outputs_in_order(g, feeds)


def check(model, tmp_path, shapes=None, seeds=(0, 1), atol=1e-4):
    """edgecc vs onnxruntime on random inputs; shapes: input name -> shape (default: from the model)."""
    if shapes is None:
        shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input
                  if i.name not in {t.name for t in model.graph.initializer}}
    for s in seeds:
        rng = np.random.default_rng(s)
        feeds = {k: (rng.standard_normal(v) * 2).astype(np.float32) for k, v in shapes.items()}
        want = run_ort(model, feeds)
        got = edgecc(model, feeds, tmp_path)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=atol, rtol=1e-4)


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


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


# ---- Gemm / MatMul --------------------------------------------------------------------------
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (5,), (1,), (1, 5), (1, 1)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize("m", [1, 3])
def test_gemm(trans_a, trans_b, c_shape, alpha, beta, m, tmp_path):
    k, n = 6, 5
    inits = {"B": rnd(n, k) if trans_b else rnd(k, n)}
    ins = ["a", "B"]
    if c_shape is not None:
        inits["C"] = rnd(*c_shape)
        ins.append("C")
    attrs = dict(transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    model = onnx_model([node("Gemm", ins, **attrs)], {"a": (k, m) if trans_a else (m, k)}, ["y"], inits)
    check(model, tmp_path)


@pytest.mark.parametrize("c_shape", [(3, 1), (2, 5), (3, 5)])
def test_gemm_bias_with_rows_is_rejected(c_shape, tmp_path):
    """C of shape [M,1] or [M,N] with M > 1 is not a per-output bias: rejected loudly, not mis-added."""
    model = onnx_model([node("Gemm", ["a", "B", "C"], transB=1, name="gemm_c")], {"a": (3, 4)}, ["y"],
                       {"B": rnd(5, 4), "C": rnd(*c_shape)})
    with pytest.raises(UnsupportedModel, match="gemm_c"):
        load(model, tmp_path)


def test_bl16_gemm_transb_1d_bias_aligns_with_n(tmp_path):
    model = onnx_model([node("Gemm", ["a", "B", "C"], transB=1)], {"a": (1, 4)}, ["y"],
                       {"B": np.arange(12, dtype=np.float32).reshape(3, 4), "C": np.array([10, 20, 30], np.float32)})
    (y,) = edgecc(model, {"a": np.array([[1, 2, 3, 4]], np.float32)}, tmp_path)
    np.testing.assert_array_equal(y, [[30, 80, 130]])


@pytest.mark.parametrize("m", [1, 4])
def test_matmul_with_constant_b(m, tmp_path):
    model = onnx_model([node("MatMul", ["a", "B"])], {"a": (m, 7)}, ["y"], {"B": rnd(7, 3)})
    check(model, tmp_path)


def test_conv_flatten_gemm(tmp_path):
    """Flatten of a 4-D value with H, W > 1 must flatten in ONNX NCHW element order."""
    nodes = [node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), node("Flatten", ["c"], ["f"]),
             node("Gemm", ["f", "G"], transB=1)]
    model = onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"], {"W": rnd(3, 2, 3, 3), "B": rnd(3), "G": rnd(5, 36)})
    check(model, tmp_path)


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


# ---- pooling --------------------------------------------------------------------------------
POOL_CASES = {
    "k2s2": dict(kernel_shape=[2, 2], strides=[2, 2]),
    "k3s1": dict(kernel_shape=[3, 3]),
    "k3s2_pads": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "k3s2_pads_asym": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0]),
    "k3s2_ceil": dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "k3s2_pads_ceil": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "k3s3_pads_ceil": dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1),
    "rect": dict(kernel_shape=[2, 3], strides=[1, 2]),
    "same_upper": dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
    "valid": dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID"),
}


@pytest.mark.parametrize("hw", [(5, 5), (6, 7)])
@pytest.mark.parametrize("cip", [0, 1])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_average_pool(case, cip, hw, tmp_path):
    model = onnx_model([node("AveragePool", ["x"], count_include_pad=cip, **POOL_CASES[case])], {"x": (1, 2, *hw)},
                       ["y"])
    check(model, tmp_path)


@pytest.mark.parametrize("hw", [(5, 5), (6, 7)])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool(case, hw, tmp_path):
    model = onnx_model([node("MaxPool", ["x"], **POOL_CASES[case])], {"x": (1, 2, *hw)}, ["y"])
    check(model, tmp_path)


def test_bl13_maxpool_ceil_mode_drops_window_in_padding(tmp_path):
    model = onnx_model([node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)],
                       {"x": (1, 1, 5, 5)}, ["y"])
    (y,) = edgecc(model, {"x": np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)}, tmp_path)
    assert y.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(y.ravel(), [6, 9, 21, 24])


@pytest.mark.parametrize("cip", [0, 1])
def test_bl13_average_pool_same_geometry(cip, tmp_path):
    model = onnx_model([node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1,
                             count_include_pad=cip)], {"x": (1, 1, 5, 5)}, ["y"])
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (y,) = edgecc(model, {"x": x}, tmp_path)
    assert y.shape == (1, 1, 2, 2)
    np.testing.assert_allclose(y, run_ort(model, {"x": x})[0], atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 4, 1, 1), (1, 2, 7, 3)])
def test_global_average_pool(shape, tmp_path):
    check(onnx_model([node("GlobalAveragePool", ["x"])], {"x": shape}, ["y"]), tmp_path)


# ---- BatchNormalization ---------------------------------------------------------------------
def _bn_inits(c, prefix=""):
    return {f"{prefix}s": rnd(c, lo=0.5, hi=1.5), f"{prefix}b": rnd(c), f"{prefix}m": rnd(c),
            f"{prefix}v": rnd(c, lo=0.5, hi=2)}


@pytest.mark.parametrize("epsilon", [1e-5, 1e-2])
def test_batchnorm_after_conv(epsilon, tmp_path):
    nodes = [node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "s", "b", "m", "v"], epsilon=epsilon)]
    model = onnx_model(nodes, {"x": (1, 3, 5, 4)}, ["y"], {"W": rnd(4, 3, 3, 3), "B": rnd(4), **_bn_inits(4)})
    assert OpKind.BATCH_NORM not in ops(run_passes(load(model, tmp_path)))
    check(model, tmp_path)


def test_batchnorm_after_depthwise_and_gemm(tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"], group=3), node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             node("Flatten", ["n"], ["f"]), node("Gemm", ["f", "G"], ["g"], transB=1),
             node("BatchNormalization", ["g", "2s", "2b", "2m", "2v"])]
    model = onnx_model(nodes, {"x": (1, 3, 4, 4)}, ["y"],
                       {"W": rnd(3, 1, 3, 3), "G": rnd(5, 12), **_bn_inits(3), **_bn_inits(5, "2")})
    assert OpKind.BATCH_NORM not in ops(run_passes(load(model, tmp_path)))
    check(model, tmp_path)


def test_batchnorm_on_graph_input(tmp_path):
    model = onnx_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (1, 3, 4, 5)}, ["y"],
                       _bn_inits(3))
    check(model, tmp_path)


def test_batchnorm_on_2d_input(tmp_path):
    model = onnx_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (2, 6)}, ["y"], _bn_inits(6))
    check(model, tmp_path)


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


def test_softmax_over_inner_axis_is_rejected(tmp_path):
    with pytest.raises(UnsupportedModel, match="Softmax"):
        load(onnx_model([node("Softmax", ["x"], axis=1)], {"x": (2, 3, 4)}, ["y"]), tmp_path)


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


# ---- errors ---------------------------------------------------------------------------------
def test_unsupported_ops_are_all_listed_at_once(tmp_path):
    nodes = [node("Exp", ["x"], ["a"], name="exp_1"), node("Relu", ["a"], ["b"], name="relu_fine_9"),
             node("Pow", ["b", "b"], ["c"], name="pow_2"), node("Erf", ["c"], ["y"], name="erf_3")]
    model = onnx_model(nodes, {"x": (1, 4)}, ["y"])
    with pytest.raises(UnsupportedModel) as e:
        load(model, tmp_path)
    msg = str(e.value)
    for name, op in (("exp_1", "Exp"), ("pow_2", "Pow"), ("erf_3", "Erf")):
        assert name in msg and op in msg
    assert "relu_fine_9" not in msg  # only the unsupported nodes are listed


def test_unknown_attribute_names_the_node(tmp_path):
    nodes = [node("Relu", ["x"], ["r"], name="fine"),
             node("Conv", ["r", "W"], name="my_conv_7", pads=[0, 0, 0, 0], fancy_mode=3)]
    model = onnx_model(nodes, {"x": (1, 2, 3, 3)}, ["y"], {"W": rnd(2, 2, 1, 1)})
    with pytest.raises(UnsupportedModel) as e:
        load(model, tmp_path)
    assert "my_conv_7" in str(e.value) and "fancy_mode" in str(e.value)


def test_unsupported_is_an_input_error(tmp_path):
    assert issubclass(UnsupportedModel, InputError)
    with pytest.raises(InputError, match="no such model file"):
        load_onnx(tmp_path / "missing.onnx")


def test_old_opset_is_rejected(tmp_path):
    with pytest.raises(InputError, match="opset"):
        load_onnx(save(onnx_model([node("Relu", ["x"])], {"x": (1, 4)}, ["y"], opset=9), tmp_path))
