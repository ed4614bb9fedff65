"""Field fault cases (shared/design/int8-fault-cases.md) pinned on the numpy references:
BL-02 (add with output multiplier >= 1), BL-03 (average-pool rounding), BL-07 (conv padding is
the input zero point, not raw 0)."""
from __future__ import annotations

import numpy as np
import pytest

from toolchain.ops.add import add_s8
from toolchain.ops.conv2d import conv2d_s8
from toolchain.ops.depthwise_conv2d import depthwise_conv2d_s8
from toolchain.ops.fixed_point import add_params, quantize_multiplier
from toolchain.ops.pool2d import avg_pool2d_s8


def _round_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _add_real(a, z1, s1, b, z2, s2, so, zo) -> np.ndarray:
    real = ((a.astype(np.float64) - z1) * s1 + (b.astype(np.float64) - z2) * s2) / so
    return np.clip(_round_away(real) + zo, -128, 127)


# ---- BL-02 ------------------------------------------------------------------------------------

def test_bl02_add_tiny_output_scale():
    p = add_params(1.0, 0, 1.0, 0, 1e-6, 0)
    assert p.output_shift > 0                      # the factor 1.907 TFLite refuses
    y = add_s8(np.array([1, -1, 0, 3], np.int8), np.array([-1, 1, 0, -2], np.int8), p)
    assert y.tolist() == [0, 0, 0, 127]


def _scales_with_output_factor_above_one(rng, near_cancel: bool):
    s1 = float(np.float32(10 ** rng.uniform(-3, 0)))
    s2 = float(np.float32(s1 * (1 + 10 ** rng.uniform(-7, -5)))) if near_cancel else \
        float(np.float32(10 ** rng.uniform(-3, 0)))
    f = rng.uniform(1.01, 8.0)
    so = float(np.float32(2 * max(s1, s2) / (2**20 * f)))
    return s1, s2, so, 2 * max(s1, s2) / (2**20 * so)


def test_bl02_neighbours_random_scales_within_one_lsb():
    rng = np.random.default_rng(2)
    for _ in range(200):
        s1, s2, so, _f = _scales_with_output_factor_above_one(rng, near_cancel=False)
        z1, z2, zo = (int(v) for v in rng.integers(-128, 128, 3))
        p = add_params(s1, z1, s2, z2, so, zo)
        assert p.output_shift > 0
        a, b = (rng.integers(-128, 128, 64).astype(np.int8) for _ in range(2))
        y = add_s8(a, b, p)
        assert np.max(np.abs(y - _add_real(a, z1, s1, b, z2, s2, so, zo))) <= 1


def test_bl02_neighbours_near_cancellation():
    """Inputs that nearly cancel, so outputs are not saturated. TFLite's ADD holds each rescaled
    input to 2*max(s1,s2)/2^20 real units; with an output factor f > 1 that grain is f output
    LSBs, so the TFLite arithmetic (which we reproduce) is only within about f + 1 LSB here."""
    rng = np.random.default_rng(3)
    unsaturated = 0
    for _ in range(200):
        s1, s2, so, f = _scales_with_output_factor_above_one(rng, near_cancel=True)
        z1, z2, zo = (int(v) for v in rng.integers(-128, 128, 3))
        p = add_params(s1, z1, s2, z2, so, zo)
        a = rng.integers(-128, 128, 64)
        b = np.clip(z2 - (a - z1) + rng.integers(-1, 2, 64), -128, 127)
        y = add_s8(a.astype(np.int8), b.astype(np.int8), p)
        ref = _add_real(a, z1, s1, b, z2, s2, so, zo)
        assert np.max(np.abs(y - ref)) <= f + 1
        unsaturated += int(np.sum((ref > -128) & (ref < 127)))
    assert unsaturated > 1000                      # the test really exercises the arithmetic


def test_bl02_variant_conv_multiplier_three():
    m, s = quantize_multiplier(3.0)
    y = conv2d_s8(np.array([[[[1, -2, 40, -43]]]], np.int8).reshape(1, 2, 2, 1), np.ones((1, 1, 1, 1), np.int8),
                  None, out_hw=(2, 2), input_offset=0, output_offset=0, out_mult=[m], out_shift=[s])
    assert y.ravel().tolist() == [3, -6, 120, -128]


# ---- BL-03 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("window, expect", [
    ([1, 2, 2, 2], 2), ([-1, -2, -2, -2], -2), ([2, 2, 3, 3], 3), ([-2, -2, -3, -3], -3), ([1, 1, 2, 2], 2),
])
def test_bl03_avgpool_rounds_half_away(window, expect):
    x = np.array(window, np.int8).reshape(1, 2, 2, 1)
    y = avg_pool2d_s8(x, kernel=(2, 2), stride=(1, 1), out_hw=(1, 1))
    assert int(y.ravel()[0]) == expect


EXCL = [[1, 2, 2], [2, 3, 3], [3, 4, 4]]      # in-bounds divisor
INCL = [[0, 1, 1], [1, 3, 2], [1, 2, 1]]      # divisor 4 (0.5 -> 1, 1.5 -> 2, 0.25 -> 0)


@pytest.mark.parametrize("include, expect", [(False, EXCL), (True, INCL)])
@pytest.mark.parametrize("sign", [1, -1])
def test_bl03_avgpool_padded(include, expect, sign):
    x = (sign * np.array([[1, 2], [3, 4]], np.int8)).reshape(1, 2, 2, 1)
    y = avg_pool2d_s8(x, kernel=(2, 2), stride=(1, 1), pad=(1, 1), out_hw=(3, 3), count_include_pad=include)
    assert y[0, :, :, 0].tolist() == (sign * np.array(expect)).tolist()


def test_bl03_count_include_pad_with_zero_point():
    x = np.full((1, 2, 2, 3), -128, np.int8)   # real 0 with zp -128
    kw = dict(kernel=(2, 2), stride=(1, 1), pad=(1, 1), out_hw=(3, 3), count_include_pad=True)
    assert np.all(avg_pool2d_s8(x, pad_value=-128, **kw) == -128)
    assert avg_pool2d_s8(x, **kw)[0, 0, 0, 0] == -32    # raw-0 padding: the contract's C behaviour


def test_bl03_window_all_padding_rejected():
    with pytest.raises(ValueError):
        avg_pool2d_s8(np.zeros((1, 1, 1, 1), np.int8), kernel=(1, 1), stride=(1, 1), pad=(1, 1), out_hw=(2, 2))


# ---- BL-07 ------------------------------------------------------------------------------------

def _conv_params(x_scale, w_scale, y_scale):
    return quantize_multiplier(x_scale * w_scale / y_scale)


@pytest.mark.parametrize("x_zp, y_zp", [(-128, -128), (0, 0), (37, -5), (-1, 100), (127, -128)])
@pytest.mark.parametrize("hw, stride", [(3, 1), (5, 2)])
def test_bl07_padding_reads_zero_point(x_zp, y_zp, hw, stride):
    m, s = _conv_params(1 / 255, 1 / 127, 1 / 255)
    x = np.full((1, hw, hw, 1), x_zp, np.int8)
    w = np.full((1, 3, 3, 1), 127, np.int8)
    y = conv2d_s8(x, w, None, stride=(stride, stride), pad=(1, 1), out_hw=(3, 3), input_offset=-x_zp,
                  output_offset=y_zp, out_mult=[m], out_shift=[s])
    assert np.all(y == y_zp)
    yd = depthwise_conv2d_s8(x, w.reshape(1, 3, 3, 1), None, stride=(stride, stride), pad=(1, 1), out_hw=(3, 3),
                             depth_multiplier=1, input_offset=-x_zp, output_offset=y_zp, out_mult=[m], out_shift=[s])
    assert np.all(yd == y_zp)


def test_bl07_random_padded_conv_matches_real_arithmetic():
    """Padded int8 conv vs the real-valued conv of the dequantized input with real-0 padding."""
    rng = np.random.default_rng(7)
    for x_zp in (-128, -20, 0, 90):
        xs, ws, ys, y_zp = 0.02, 0.01, 0.05, int(rng.integers(-60, 60))
        x = rng.integers(-128, 128, (1, 5, 5, 2)).astype(np.int8)
        w = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
        m, s = _conv_params(xs, ws, ys)
        y = conv2d_s8(x, w, None, stride=(2, 2), pad=(1, 1), out_hw=(3, 3), input_offset=-x_zp, output_offset=y_zp,
                      out_mult=[m] * 3, out_shift=[s] * 3)
        xr = np.pad((x.astype(np.float64) - x_zp) * xs, ((0, 0), (1, 1), (1, 1), (0, 0)))
        ref = np.zeros((3, 3, 3))
        for oy in range(3):
            for ox in range(3):
                patch = xr[0, 2 * oy:2 * oy + 3, 2 * ox:2 * ox + 3, :]
                ref[oy, ox] = np.tensordot(w.astype(np.float64) * ws, patch, axes=([1, 2, 3], [0, 1, 2]))
        ref = np.clip(_round_away(ref / ys) + y_zp, -128, 127)
        assert np.max(np.abs(y[0] - ref)) <= 1
