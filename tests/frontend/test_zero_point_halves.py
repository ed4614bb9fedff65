"""quantize.zero_point_halves and zero_point_widen: v = w - zw split into int8 halves a + b, or into
clip(v) + residual, exact over the whole range two int8 values can sum to (the U8U8 weights'
[-255, 254]); a layer holding v = 255 (uint8 zero point 0, weight 255) keeps the portable
filter_offset recomputation; both paths give onnxruntime's integers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder, import_int8, on_grid, ort_run, ours

from quantize.zero_point_halves import halves
from quantize.zero_point_split import split_zero_point_channels
from quantize.zero_point_widen import residual_split, widen_fix_nodes, widen_node
from toolchain.ir import DType, Node, QuantParams, Tensor
from toolchain.ops.common import Window
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.registry import OpKind

pytest.importorskip("onnxruntime")


def test_splits_are_exact_int8_over_the_two_int8_sums() -> None:
    v = np.arange(-256, 255)
    a, b = halves(v)
    assert a.dtype == b.dtype == np.int8
    assert np.array_equal(a.astype(np.int32) + b, v)
    assert a.min() == -128 and b.min() == -128 and a.max() == 127 and b.max() == 127
    assert halves(np.array([0, 255])) is None and halves(np.array([-257])) is None
    c, r = residual_split(v)
    assert np.array_equal(c.astype(np.int32) + r, v) and np.array_equal(c, np.clip(v, -128, 127))
    assert residual_split(np.array([0, 255])) is None


def _model(path: Path, peak: int) -> Path:
    """x (uint8) -> Conv 3x3 (6 -> 64, pads 1) -> Conv 1x1 (64 -> 4) -> y, uint8 weights with zero point
    0 (int8 -128 after the shift) in [0, 120] but for one weight of 200 in conv 1's channel 1 and one of
    `peak` in conv 2's channel 3."""
    rng = np.random.default_rng(3)
    m = ModelBuilder(13)

    def qdq(t, s, z, name):
        return m.dq(m.q(t, s, z, f"{name}q", np.uint8), s, z, f"{name}d", np.uint8)

    w1, w2 = rng.integers(0, 121, (64, 6, 3, 3)), rng.integers(0, 121, (4, 64, 1, 1))
    w1[1, 2, 1, 1], w2[3, 4, 0, 0] = 200, peak
    x = qdq(m.input("x", (1, 6, 5, 5)), 2.0 ** -5, 110, "x")
    y = m.node("Conv", [x, m.dq(m.const("w1", w1, np.uint8), 2.0 ** -9, 0, "w1d", np.uint8)], "c1", pads=[1] * 4)
    y = qdq(y, 2.0 ** -2, 20, "c1")
    y = m.node("Conv", [y, m.dq(m.const("w2", w2, np.uint8), 2.0 ** -9, 0, "w2d", np.uint8)], "c2")
    qdq(y, 2.0 ** -1, 30, "y")
    m.output("yd")
    return m.save(path)


@pytest.mark.parametrize("peak", [254, 255])
def test_halves_or_the_zero_point_kernel_equal_onnxruntime(tmp_path: Path, peak: int) -> None:
    p = _model(tmp_path / "m.onnx", peak)
    g0 = import_int8(p)
    g = split_zero_point_channels(g0)
    gathers = [n for n in g.nodes if n.op == OpKind.GATHER]
    fix = [n for n in g.nodes if n.name.endswith("__fix")]
    # conv 1 (64 outputs): only its channel 1 again on the input widened by channel 2 (6 + 1 channels)
    assert gathers[0].attrs.indices == (*range(6), 2) and fix[0].name == "c1__fix"
    assert [n.op for n in g.nodes].count(OpKind.SCATTER_CHANNELS) == len(fix)
    if peak == 254:  # conv 2 (4 outputs) whole on 64 + 8 channels (a window 4..11 covering channel 4)
        assert gathers[1].attrs.indices == (*range(64), *range(4, 12)) and len(fix) == 1
    else:  # conv 2: the residual of 255 does not fit int8, its channel 3 runs the zero-point kernel
        assert len(gathers) == 1 and len(fix) == 2
        assert g.t(fix[1].inputs[1]).quant.zero_point[0] == -128
    assert g.t(fix[0].inputs[1]).quant.zero_point[0] == 0 and g.t(fix[0].inputs[1]).shape == (1, 3, 3, 7)
    rng = np.random.default_rng(4)
    for _ in range(4):
        x = {"x": rng.uniform(-3.4, 4.5, (1, 6, 5, 5)).astype(np.float32)}
        want = ours(p, x, "onnx", g0)[0]
        assert np.array_equal(ours(p, x, "onnx", g)[0], want)
        assert np.array_equal(on_grid(ort_run(p, x)[0], g), want)
        assert len(np.unique(want)) > 4


def _summed_back(gather, w: np.ndarray, depth: int) -> np.ndarray:
    """The weights the widened layer applies to each original input channel: the widened weights `w`
    summed over the positions where `gather` copies that channel."""
    out = np.zeros((*w.shape[:-1], depth), np.int32)
    for j, ch in enumerate(gather.attrs.indices):
        out[..., ch] += w[..., j]
    return out


@pytest.mark.parametrize("depth, cols", [(32, (1, 30)), (32, (5,)), (16, (0, 15)), (48, (47,)), (6, (2, 3)),
                                         (64, (3, 4, 5, 60))])
def test_widened_weights_sum_back_to_w_minus_zw(depth: int, cols: tuple[int, ...]) -> None:
    """Every padding and window choice: the widened weights, summed per original input channel, are
    v = w - zw exactly (a residual counted twice would pass the structure checks and miss by r)."""
    rng = np.random.default_rng(depth)
    v = rng.integers(-127, 128, (40, 3, 3, depth)).astype(np.int16)
    for k, ch in enumerate(cols):
        v[k, 1, 2, ch] = 254 - k  # beyond int8 in output channels 0..
        v[39 - k, 0, 0, ch] = -255 + k
    q = QuantParams((0.01,), (-20,), None)
    tensors = {"x": Tensor("x", (1, 5, 5, depth), DType.INT8, QuantParams((0.1,), (3,), None)),
               "w": Tensor("w", v.shape, DType.INT8, q, np.zeros(v.shape, np.int8))}
    node = Node("c", OpKind.CONV2D, ("x", "w"), ("y",), Conv2DAttrs(Window((3, 3))))
    over = [o for o in range(40) if np.abs(v[o]).max() > 127]
    builds = ((lambda t: widen_node(node, t, v, 40), list(range(40))),  # n_fix 40: the whole layer widens
              (lambda t: widen_fix_nodes(node, t, v, over, None, "y_fix"), over))
    for build, rows in builds:
        t = dict(tensors)
        gather, layer = build(t)
        w = t[layer.inputs[1]]
        assert w.quant.zero_point == (0,) and w.data.dtype == np.int8
        assert np.array_equal(_summed_back(gather, w.data, depth), v[rows])
        assert gather.attrs.indices[:depth] == tuple(range(depth))
