"""Quantization rules (TFLite int8 spec): per-channel symmetric weights in [-127, 127] with scale
max|w|/127, all-zero channels safe (BL-18), activation qparams with an exact zero, int32 bias
round(b / (s_in * s_w)), fixed Softmax output qparams, pass-through qparams for pools and views,
and a standalone int8 Clamp that clamps at the zero point (BL-27)."""
import math

import numpy as np
import pytest

from graph_builder import GraphBuilder
from quantize import quantize
from quantize.calibrate import observe_ranges
from quantize.scheme import activation_qparams
from toolchain.errors import UnsupportedModel
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import quantize_weights, requant_arrays
from toolchain.ops.registry import REGISTRY, OpKind, opdef


def calib(graph, n=8, seed=0, scale=2.0):
    rng = np.random.default_rng(seed)
    return {i: (rng.standard_normal((n, *graph.t(i).shape)) * scale).astype(np.float32) for i in graph.inputs}


def f32(v):
    return float(np.float32(v))


# ---- weights ----------------------------------------------------------------------------------
def _check_weights(wf, wq, axis):
    """Per-channel symmetric: scale[c] = float32(max|w_c| / 127), q = round(w / scale) in [-127, 127]."""
    assert wq.dtype == DType.INT8 and wq.quant.axis == axis
    assert set(wq.quant.zero_point) == {0}
    red = tuple(i for i in range(wf.ndim) if i != axis)
    amax = np.max(np.abs(wf.astype(np.float64)), axis=red)
    assert len(wq.quant.scale) == wf.shape[axis]
    for c, (s, m) in enumerate(zip(wq.quant.scale, amax, strict=True)):
        if m > 0:
            assert s == pytest.approx(f32(m / 127.0), rel=1e-7), c
    q = wq.data
    assert q.min() >= -127 and q.max() <= 127
    shape = [1] * wf.ndim
    shape[axis] = -1
    scale = np.asarray(wq.quant.scale, np.float64).reshape(shape)
    np.testing.assert_array_equal(q, np.clip(np.round(wf / scale), -127, 127))
    # the largest magnitude of each non-zero channel lands on +-127
    assert set(np.max(np.abs(q.astype(int)), axis=red)[amax > 0]) == {127}


def _graph_conv():
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 5, 5, 3))
    return gb.build(gb.conv(x, 4, 3, pads=(1, 1, 1, 1)))


def test_conv_weights_per_channel_symmetric():
    g = _graph_conv()
    q = quantize(g, calib(g))
    conv = q.nodes[0]
    _check_weights(g.t(conv.inputs[1]).data, q.t(conv.inputs[1]), axis=0)


def test_depthwise_weights_per_output_channel():
    """BL-19: one scale per output channel (C_in * multiplier) along the last axis."""
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 5, 5, 3))
    g = gb.build(gb.dwconv(x, 3, 8))
    w = g.t(g.nodes[0].inputs[1]).data * (2.0 ** (np.arange(24) % 8))  # channel o scaled by 2^(o%8)
    g = g.with_tensor(Tensor(g.nodes[0].inputs[1], w.shape, DType.FLOAT32, None, w.astype(np.float32)))
    q = quantize(g, calib(g))
    wq = q.t(q.nodes[0].inputs[1])
    assert len(wq.quant.scale) == 24
    _check_weights(w.astype(np.float32), wq, axis=3)


def test_fully_connected_weights_per_output_row():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (2, 7))
    g = gb.build(gb.fc(x, 5))
    q = quantize(g, calib(g))
    _check_weights(g.t(g.nodes[0].inputs[1]).data, q.t(q.nodes[0].inputs[1]), axis=0)


def test_weights_never_minus_128():
    """A channel whose extreme is negative maps to -127, never -128 (BL-04 needs it)."""
    w = np.array([[-1.0, 0.5, 0.25], [0.3, -0.3, 0.0], [-2.0, -2.0, 1.0]], np.float32)
    g = Graph("g", (), {"w": Tensor("w", w.shape, DType.FLOAT32, None, w)}, (), ())
    wq = quantize_weights(g, "w", axis=0).t("w")
    assert wq.data.min() == -127
    np.testing.assert_array_equal(wq.data[0], [-127, 64, 32])
    np.testing.assert_array_equal(wq.data[1], [127, -127, 0])
    _check_weights(w, wq, axis=0)


def test_weights_random_sweep_stay_in_range():
    rng = np.random.default_rng(5)
    for _ in range(50):
        w = (rng.standard_normal((6, 3, 3, 4)) * rng.uniform(1e-4, 10)).astype(np.float32)
        g = Graph("g", (), {"w": Tensor("w", w.shape, DType.FLOAT32, None, w)}, (), ())
        _check_weights(w, quantize_weights(g, "w", axis=0).t("w"), axis=0)


# ---- BL-18: all-zero channel -----------------------------------------------------------------
def test_bl18_all_zero_channel_gets_finite_positive_scales():
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 3, 3, 2))
    w = np.ones((3, 3, 3, 2), np.float32)
    w[1] = 0.0
    w[2] = -2.0
    g = gb.build(gb.conv(x, 3, 3, pads=(1, 1, 1, 1), w=w, b=np.array([0.1, 0.0, -0.05], np.float32)))
    q = quantize(g, calib(g))
    conv = q.nodes[0]
    wq, bq = q.t(conv.inputs[1]), q.t(conv.inputs[2])
    scales = np.array(wq.quant.scale)
    assert np.all(np.isfinite(scales)) and np.all(scales > 0)
    assert scales[0] == pytest.approx(f32(1 / 127)) and scales[2] == pytest.approx(f32(2 / 127))
    np.testing.assert_array_equal(wq.data[1], 0)
    assert np.all(np.isfinite(bq.quant.scale)) and np.all(np.array(bq.quant.scale) > 0)
    assert bq.data[1] == 0
    mult, shift = requant_arrays(q.t(conv.inputs[0]).quant.s, wq.quant.scale, q.t(conv.outputs[0]).quant.s)
    assert np.all(mult >= 0) and np.all(np.abs(shift) <= 31)
    # channel 1 outputs the output zero point everywhere
    xq = q.t("x").quant.quantize(np.random.default_rng(0).standard_normal((1, 3, 3, 2)))
    y = interpret(q, {"x": xq})[q.outputs[0]]
    np.testing.assert_array_equal(y[..., 1], q.t(q.outputs[0]).quant.zp)


# ---- activations -----------------------------------------------------------------------------
@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (0.0, 6.0), (-3.0, -0.5), (0.25, 4.0), (-0.001, 1000.0),
                                   (-1e-3, 2e-3), (0.0, 0.0), (-5.0, 0.0), (-0.3, 0.7)])
def test_activation_qparams_represent_zero_exactly(lo, hi):
    qp = activation_qparams(lo, hi)
    assert not qp.is_per_channel
    assert qp.s > 0 and math.isfinite(qp.s)
    assert -128 <= qp.zp <= 127
    assert float(qp.s) == f32(qp.s)                     # a float32 scale, as .tflite stores it
    assert qp.quantize(np.array([0.0]))[0] == qp.zp       # real 0 -> the zero point ...
    assert qp.dequantize(np.array([qp.zp], np.int8))[0] == 0.0  # ... and back, exactly
    if hi - lo > 0:
        lo0, hi0 = min(lo, 0.0), max(hi, 0.0)
        assert qp.s == pytest.approx((hi0 - lo0) / 255, rel=1e-6)
        # the int8 grid covers the (zero-extended) range up to half a step
        assert qp.s * (-128 - qp.zp) <= lo0 + qp.s / 2 + 1e-9
        assert qp.s * (127 - qp.zp) >= hi0 - qp.s / 2 - 1e-9


def test_activation_qparams_sweep():
    rng = np.random.default_rng(11)
    for _ in range(300):
        a, b = sorted(rng.standard_normal(2) * 10 ** rng.uniform(-3, 3))
        qp = activation_qparams(a, b)
        assert -128 <= qp.zp <= 127 and qp.s > 0
        assert qp.quantize(np.array([0.0]))[0] == qp.zp
        if a >= 0:
            assert qp.zp == -128
        if b <= 0:
            assert qp.zp == 127


def test_calibration_records_min_max_over_all_samples():
    gb = GraphBuilder()
    x = gb.input("x", (1, 3))
    g = gb.build(gb.relu(x, out="r"))
    data = {"x": np.array([[[-1, 2, 0.5]], [[0.1, -4, 3]]], np.float32)}
    ranges = observe_ranges(g, data)
    assert ranges["x"] == (-4.0, 3.0)
    assert ranges["r"] == (0.0, 3.0)
    with pytest.raises(ValueError):
        observe_ranges(g, {"x": np.zeros((0, 1, 3), np.float32)})


def test_every_activation_is_int8_with_zero_exact():
    gb = GraphBuilder(seed=6)
    x = gb.input("x", (1, 6, 6, 3))
    h = gb.conv(x, 4, 3, act=(0.0, math.inf))
    h = gb.add(h, gb.conv(h, 4, 1))
    h = gb.fc(gb.reshape(gb.avgpool(h), (1, 16)), 5)
    g = gb.build(gb.softmax(h))
    q = quantize(g, calib(g))
    for t in q.activations():
        assert t.dtype == DType.INT8 and t.quant is not None and not t.quant.is_per_channel
        assert t.quant.dequantize(np.array([t.quant.zp], np.int8))[0] == 0.0


# ---- bias ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["conv", "dwconv", "fc"])
def test_int32_bias_is_b_over_input_times_weight_scale(kind):
    gb = GraphBuilder(seed=7)
    if kind == "fc":
        g = gb.build(gb.fc(gb.input("x", (1, 6)), 4))
    elif kind == "conv":
        g = gb.build(gb.conv(gb.input("x", (1, 4, 4, 3)), 4, 3))
    else:
        g = gb.build(gb.dwconv(gb.input("x", (1, 4, 4, 3)), 3, 2))
    q = quantize(g, calib(g))
    node = q.nodes[0]
    s_in = q.t(node.inputs[0]).quant.s
    s_w = np.array(q.t(node.inputs[1]).quant.scale, np.float64)
    bq = q.t(node.inputs[2])
    assert bq.dtype == DType.INT32
    b = g.t(node.inputs[2]).data.astype(np.float64)
    np.testing.assert_array_equal(bq.data, np.round(b / (s_in * s_w)).astype(np.int32))
    np.testing.assert_allclose(bq.quant.scale, s_in * s_w, rtol=1e-12)
    assert set(bq.quant.zero_point) == {0}


# ---- op-forced output qparams ----------------------------------------------------------------
def test_softmax_output_qparams_are_fixed():
    gb = GraphBuilder(seed=8)
    g = gb.build(gb.softmax(gb.fc(gb.input("x", (1, 6)), 10)))
    q = quantize(g, calib(g))
    qp = q.t(q.outputs[0]).quant
    assert qp.scale == (1 / 256,) and qp.zero_point == (-128,)


@pytest.mark.parametrize("kind", ["maxpool", "avgpool", "reshape", "transpose", "clamp"])
def test_pass_through_ops_keep_input_qparams(kind):
    gb = GraphBuilder(seed=9)
    x = gb.input("x", (1, 4, 4, 3))
    c = gb.conv(x, 3, 1)
    op = {"maxpool": lambda: gb.maxpool(c), "avgpool": lambda: gb.avgpool(c),
          "reshape": lambda: gb.reshape(c, (1, 48)), "transpose": lambda: gb.transpose(c, (0, 3, 1, 2)),
          "clamp": lambda: gb.clamp(c, -0.5, 0.5)}[kind]()
    g = gb.build(op)
    q = quantize(g, calib(g))
    assert q.t(q.outputs[0]).quant == q.t(c).quant
    assert q.t(q.outputs[0]).dtype == DType.INT8


def test_unfolded_batchnorm_is_rejected():
    gb = GraphBuilder()
    g = gb.build(gb.batchnorm(gb.input("x", (1, 2, 2, 3))))
    with pytest.raises(UnsupportedModel, match="BatchNorm"):
        quantize(g, calib(g))


# ---- BL-27: standalone int8 Clamp ------------------------------------------------------------
def _clamp_graph(lo, hi, scale=0.1, zp=-20, n=6):
    qp = QuantParams.per_tensor(scale, zp)
    ts = {"x": Tensor("x", (1, n), DType.INT8, qp), "y": Tensor("y", (1, n), DType.INT8, qp)}
    node = Node("relu", OpKind.CLAMP, ("x",), ("y",), ClampAttrs(lo, hi))
    return Graph("q", (node,), ts, ("x",), ("y",)), node


def test_bl27_relu_clamps_at_the_zero_point():
    g, node = _clamp_graph(0.0, math.inf)
    x = np.array([[-128, -30, -20, -10, 0, 127]], np.int8)
    (y,) = REGISTRY[OpKind.CLAMP].reference_s8(node, g, [x])
    np.testing.assert_array_equal(y, [[-20, -20, -20, -10, 0, 127]])
    assert y.dtype == np.int8
    np.testing.assert_array_equal(interpret(g, {"x": x})["y"], y)


@pytest.mark.parametrize("zp", [-128, -20, 0, 5, 100])
def test_relu_lower_bound_is_zp_for_any_zero_point(zp):
    g, node = _clamp_graph(0.0, math.inf, 0.05, zp, n=256)
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    (y,) = opdef(node).reference_s8(node, g, [x])
    np.testing.assert_array_equal(y, np.maximum(x, zp))


def test_bl27_clip_bounds_follow_the_quantization():
    g, node = _clamp_graph(-1.0, 1.0, n=7)      # scale 0.1, zp -20: bounds -30 and -10
    x = np.array([[-128, -31, -30, -20, -10, -9, 127]], np.int8)
    (y,) = opdef(node).reference_s8(node, g, [x])
    np.testing.assert_array_equal(y, [[-30, -30, -30, -20, -10, -10, -10]])


def test_relu6_bounds_saturate_to_int8():
    g, node = _clamp_graph(0.0, 6.0, scale=0.01, zp=-100, n=4)  # 6 / 0.01 = 600 -> saturates at 127
    x = np.array([[-128, -100, 0, 127]], np.int8)
    (y,) = opdef(node).reference_s8(node, g, [x])
    np.testing.assert_array_equal(y, [[-100, -100, 0, 127]])


def test_standalone_relu_through_quantize_clamps_at_zp():
    """A Relu that cannot be fused (after a Reshape) keeps its input's qparams and clamps at zp."""
    gb = GraphBuilder()
    x = gb.input("x", (1, 2, 2, 2))
    g = gb.build(gb.relu(gb.reshape(x, (1, 8))))
    q = quantize(g, {"x": np.linspace(-3, 1, 16 * 8, dtype=np.float32).reshape(16, 1, 2, 2, 2)})
    qp = q.t(q.outputs[0]).quant
    assert qp == q.t("x").quant and qp.zp != 0
    xq = np.arange(-128, 128, 32, dtype=np.int8).reshape(1, 2, 2, 2)
    y = interpret(q, {"x": xq})[q.outputs[0]]
    np.testing.assert_array_equal(y.ravel(), np.maximum(xq.ravel(), qp.zp))
