"""Self-consistency of the numpy references: the vectorised kernels against literal TFLM-style
loops, grouped conv vs depthwise, 1x1 conv vs fully connected, softmax vs float softmax, and
shape validation."""
from __future__ import annotations

import numpy as np
import pytest

from toolchain.ops.conv2d import conv2d_s8
from toolchain.ops.depthwise_conv2d import depthwise_conv2d_s8
from toolchain.ops.elementwise import clamp_s8, mul_s8, pad_s8, transpose_s8
from toolchain.ops.fixed_point import (activation_range, mul_params, multiply_by_quantized_multiplier,
                                       quantize_multiplier, softmax_params)
from toolchain.ops.fully_connected import fully_connected_s8
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8
from toolchain.ops.softmax import softmax_s8


def _rand_requant(rng, cout):
    pairs = [quantize_multiplier(float(r)) for r in 10 ** rng.uniform(-4, -1.5, cout)]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def _loop_conv(x, w, bias, stride, pad, dil, out_hw, in_off, out_off, mult, shift, lo, hi):
    """Literal per-output loop in the order of TFLM ConvPerChannel."""
    n, h, wd, cin = x.shape
    cout, kh, kw, cg = w.shape
    per_group = cout // (cin // cg)
    y = np.zeros((n, *out_hw, cout), np.int8)
    for b, oy, ox, oc in np.ndindex(n, *out_hw, cout):
        g, acc = oc // per_group, 0
        for ky, kx, ic in np.ndindex(kh, kw, cg):
            iy, ix = oy * stride[0] - pad[0] + ky * dil[0], ox * stride[1] - pad[1] + kx * dil[1]
            if 0 <= iy < h and 0 <= ix < wd:
                acc += int(w[oc, ky, kx, ic]) * (int(x[b, iy, ix, g * cg + ic]) + in_off)
        acc += 0 if bias is None else int(bias[oc])
        v = int(multiply_by_quantized_multiplier(acc, mult[oc], shift[oc])) + out_off
        y[b, oy, ox, oc] = min(hi, max(lo, v))
    return y


@pytest.mark.parametrize("seed", range(12))
def test_conv_matches_literal_loops(seed):
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 2, 3]))
    cg, per_group = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    cin, cout = cg * groups, per_group * groups
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    stride, dil = tuple(int(v) for v in rng.integers(1, 3, 2)), tuple(int(v) for v in rng.integers(1, 3, 2))
    pad = tuple(int(v) for v in rng.integers(0, 3, 2))
    h, wd = (int(v) for v in rng.integers(3, 8, 2))
    out_hw = ((h + 2 * pad[0] - (kh - 1) * dil[0] - 1) // stride[0] + 1,
              (wd + 2 * pad[1] - (kw - 1) * dil[1] - 1) // stride[1] + 1)
    if min(out_hw) < 1:
        pytest.skip("geometry leaves no output")
    x = rng.integers(-128, 128, (2, h, wd, cin)).astype(np.int8)
    w = rng.integers(-127, 128, (cout, kh, kw, cg)).astype(np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32) if seed % 3 else None
    mult, shift = _rand_requant(rng, cout)
    in_off, out_off = int(rng.integers(-127, 129)), int(rng.integers(-128, 128))
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2)) if seed % 4 == 0 else (-128, 127)
    got = conv2d_s8(x, w, bias, stride=stride, pad=pad, dilation=dil, out_hw=out_hw, input_offset=in_off,
                    output_offset=out_off, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
    ref = _loop_conv(x, w, bias, stride, pad, dil, out_hw, in_off, out_off, mult, shift, lo, hi)
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("seed", range(6))
def test_grouped_conv_equals_depthwise(seed):
    rng = np.random.default_rng(100 + seed)
    cin, mult = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    cout = cin * mult
    x = rng.integers(-128, 128, (1, 7, 6, cin)).astype(np.int8)
    wdw = rng.integers(-127, 128, (1, 3, 2, cout)).astype(np.int8)
    bias = rng.integers(-2000, 2000, cout).astype(np.int32)
    m, s = _rand_requant(rng, cout)
    kw = dict(stride=(2, 1), pad=(1, 1), dilation=(1, 2), out_hw=(4, 6), input_offset=int(rng.integers(-127, 129)),
              output_offset=int(rng.integers(-128, 128)), out_mult=m, out_shift=s)
    y_dw = depthwise_conv2d_s8(x, wdw, bias, depth_multiplier=mult, **kw)
    w_conv = np.transpose(wdw, (3, 1, 2, 0))          # [Cout, KH, KW, 1]: groups = Cin, oc = ic*mult + m
    y_conv = conv2d_s8(x, w_conv, bias, **kw)
    assert np.array_equal(y_dw, y_conv)


def test_conv_1x1_equals_fully_connected():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (2, 3, 4, 9)).astype(np.int8)
    w = rng.integers(-127, 128, (5, 1, 1, 9)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 5).astype(np.int32)
    m, s = _rand_requant(rng, 5)
    y_conv = conv2d_s8(x, w, bias, out_hw=(3, 4), input_offset=17, output_offset=-9, out_mult=m, out_shift=s,
                       act_min=-100, act_max=90)
    y_fc = fully_connected_s8(x.reshape(-1, 9), w.reshape(5, 9), bias, input_offset=17, output_offset=-9,
                              out_mult=m, out_shift=s, act_min=-100, act_max=90)
    assert np.array_equal(y_conv.reshape(-1, 5), y_fc)
    # per-tensor FC (arrays of length 1) equals per-channel FC with a repeated pair
    y1 = fully_connected_s8(x.reshape(-1, 9), w.reshape(5, 9), bias, input_offset=17, filter_offset=3,
                            output_offset=0, out_mult=m[:1], out_shift=s[:1])
    y5 = fully_connected_s8(x.reshape(-1, 9), w.reshape(5, 9), bias, input_offset=17, filter_offset=3,
                            output_offset=0, out_mult=np.repeat(m[:1], 5), out_shift=np.repeat(s[:1], 5))
    assert np.array_equal(y1, y5)


def test_pools_match_loops():
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 128, (2, 6, 7, 3)).astype(np.int8)
    kw = dict(kernel=(3, 2), stride=(2, 3), pad=(1, 1), out_hw=(3, 3))
    avg, mx = avg_pool2d_s8(x, **kw), max_pool2d_s8(x, **kw)
    for b, oy, ox, c in np.ndindex(2, 3, 3, 3):
        cells = [int(x[b, iy, ix, c]) for iy in range(oy * 2 - 1, oy * 2 + 2) for ix in range(ox * 3 - 1, ox * 3 + 1)
                 if 0 <= iy < 6 and 0 <= ix < 7]
        s, n = sum(cells), len(cells)
        assert avg[b, oy, ox, c] == ((s + n // 2) // n if s > 0 else -((-s + n // 2) // n))
        assert mx[b, oy, ox, c] == max(cells)


@pytest.mark.parametrize("scale", [0.02, 0.1, 0.25, 1.0])
def test_softmax_close_to_float(scale):
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (16, 40)).astype(np.int8)
    y = softmax_s8(x, softmax_params(scale))
    xi = x.astype(np.float64)
    e = np.exp((xi - xi.max(axis=1, keepdims=True)) * scale)
    ref = np.clip(np.round(e / e.sum(axis=1, keepdims=True) * 256) - 128, -128, 127)
    assert np.max(np.abs(y.astype(int) - ref)) <= 1
    assert y.dtype == np.int8 and y.shape == x.shape


def test_softmax_uniform_rows():
    p = softmax_params(0.1)
    for n, expect in ((1, 127), (2, 0), (4, -64), (256, -127)):
        assert np.all(softmax_s8(np.full((1, n), 5, np.int8), p) == expect)


def test_mul_clamp_pad_transpose():
    p = mul_params(0.5, 10, 0.25, -3, 0.2, 4)
    a, b = np.array([10, 20, -40, 127], np.int8), np.array([-3, 5, 60, -128], np.int8)
    real = (a.astype(float) - 10) * 0.5 * (b.astype(float) + 3) * 0.25 / 0.2
    assert np.max(np.abs(mul_s8(a, b, p) - np.clip(np.round(real) + 4, -128, 127))) <= 1
    lo, hi = activation_range("relu", 0.1, -20)
    assert clamp_s8(np.array([-128, -30, -20, -10, 0, 127], np.int8), lo, hi).tolist() == [-20, -20, -20, -10, 0, 127]
    y = pad_s8(np.ones((1, 2, 2, 1), np.int8), [(0, 0), (1, 0), (0, 2), (0, 0)], pad_value=-128)
    assert y.shape == (1, 3, 4, 1) and y[0, 0, 0, 0] == -128 and y[0, 1, 0, 0] == 1
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    assert np.array_equal(transpose_s8(x, (2, 0, 1)), x.transpose(2, 0, 1))


def test_bad_shapes_raise_value_error():
    x = np.zeros((1, 4, 4, 4), np.int8)
    common = dict(out_hw=(2, 2), input_offset=0, output_offset=0, out_mult=[1 << 30], out_shift=[0])
    with pytest.raises(ValueError):
        conv2d_s8(x, np.zeros((2, 3, 3, 3), np.int8), None, **common)            # 4 % 3 != 0
    with pytest.raises(ValueError):
        conv2d_s8(x, np.zeros((3, 3, 3, 2), np.int8), None, **common)            # 3 outputs, 2 groups
    with pytest.raises(ValueError):
        conv2d_s8(x, np.zeros((2, 3, 3, 4), np.int8), np.zeros(3, np.int32), **common)
    with pytest.raises(ValueError):
        depthwise_conv2d_s8(x, np.zeros((1, 3, 3, 6), np.int8), None, depth_multiplier=2, **common)
    with pytest.raises(ValueError):
        fully_connected_s8(np.zeros((1, 5), np.int8), np.zeros((3, 4), np.int8), None, input_offset=0,
                           output_offset=0, out_mult=[1], out_shift=[0])
    with pytest.raises(ValueError):
        max_pool2d_s8(np.zeros((4, 4), np.int8), kernel=(2, 2), stride=(2, 2), out_hw=(2, 2))
    with pytest.raises(ValueError):
        transpose_s8(np.zeros((2, 3), np.int8), (0, 0))
    with pytest.raises(ValueError):
        pad_s8(np.zeros((2, 3), np.int8), [(0, 1)], pad_value=0)
    with pytest.raises(ValueError):
        clamp_s8(np.zeros(3, np.int8), 5, -5)
