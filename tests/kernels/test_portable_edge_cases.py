"""Edge cases of the portable C kernels, checked bit for bit against the independent oracle ecc_pyref."""
import ctypes
import itertools
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

import ecc_pyref as ref


@pytest.fixture()
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def _i8(rng, *shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def _quant(rng, n, shift_lo=-10, shift_hi=-6):
    return (rng.integers(2**30, 2**31 - 1, n).astype(np.int32),
            rng.integers(shift_lo, shift_hi + 1, n).astype(np.int32))


def _conv_case(rng, *, n=1, h=7, w=9, c=4, oc=4, k=(3, 3), wc=None, stride=(2, 2), pad=(1, 1), dil=(1, 1),
               out_hw=None, bias=True, shifts=(-10, -6), io=128, oo=-5, act=(-128, 127)):
    wc = c if wc is None else wc
    if out_hw is None:   # SAME-like output plus one extra row/col so bottom/right padding is exercised
        out_hw = (-(-h // stride[0]) + 1, -(-w // stride[1]) + 1)
    mult, shift = _quant(rng, oc, *shifts)
    return dict(x=_i8(rng, n, h, w, c), w=_i8(rng, oc, k[0], k[1], wc),
                bias=rng.integers(-5000, 5000, oc).astype(np.int32) if bias else None,
                kw=dict(stride=stride, pad=pad, dilation=dil, out_hw=out_hw, input_offset=io, output_offset=oo,
                        out_mult=mult, out_shift=shift, act_min=act[0], act_max=act[1]))


def _check_conv(portable, case):
    got = portable.conv2d_s8(case["x"], case["w"], case["bias"], **case["kw"])
    exp = ref.conv2d(case["x"], case["w"], case["bias"], **case["kw"])
    np.testing.assert_array_equal(got, exp)
    return got


# ---- convolution ----

@pytest.mark.parametrize("h,w,k,stride,pad", [
    (7, 9, (3, 3), (2, 2), (1, 1)), (9, 7, (4, 4), (2, 2), (2, 1)), (5, 5, (5, 3), (2, 2), (2, 1)),
    (1, 1, (3, 3), (2, 2), (1, 1)), (3, 11, (1, 3), (1, 2), (0, 1)), (6, 6, (2, 2), (3, 3), (1, 1))])
def test_conv_pads_all_sides_stride2_odd(portable, rng, h, w, k, stride, pad):
    _check_conv(portable, _conv_case(rng, h=h, w=w, k=k, stride=stride, pad=pad, c=3, oc=5))


@pytest.mark.parametrize("groups,c,oc", [(2, 6, 4), (4, 8, 12), (4, 4, 4), (2, 10, 6)])
def test_grouped_conv(portable, rng, groups, c, oc):
    _check_conv(portable, _conv_case(rng, c=c, oc=oc, wc=c // groups))


@pytest.mark.parametrize("c", [1, 3, 5, 7, 13])
def test_conv_channels_not_multiple_of_4(portable, rng, c):
    _check_conv(portable, _conv_case(rng, c=c, oc=3, n=2, stride=(1, 1), out_hw=(7, 9)))


def test_conv_dilation_with_padding(portable, rng):
    _check_conv(portable, _conv_case(rng, h=9, w=8, k=(3, 2), dil=(2, 3), stride=(1, 2), pad=(2, 3),
                                     out_hw=(9, 5), c=3, oc=2))


def test_conv_bias_null(portable, rng):
    case = _conv_case(rng, bias=False)
    got = _check_conv(portable, case)
    with_zero_bias = portable.conv2d_s8(case["x"], case["w"], np.zeros(4, np.int32), **case["kw"])
    np.testing.assert_array_equal(got, with_zero_bias)


def test_conv_positive_shift(portable, rng):
    """multiplier >= 1 (shift > 0), incl. saturation of the left shift."""
    case = _conv_case(rng, k=(1, 1), c=2, oc=6, shifts=(1, 4), stride=(1, 1), pad=(0, 0), out_hw=(7, 9), io=0)
    case["x"] = rng.integers(-3, 4, case["x"].shape).astype(np.int8)
    case["w"] = rng.integers(-3, 4, case["w"].shape).astype(np.int8)
    case["bias"] = rng.integers(-3, 4, 6).astype(np.int32)
    got = _check_conv(portable, case)
    assert len(np.unique(got)) > 5
    case["kw"]["out_shift"] = np.full(6, 30, np.int32)       # x << 30 saturates for |x| >= 2
    got = _check_conv(portable, case)
    assert set(np.unique(got)) <= {-128, -5, 127}


@pytest.mark.parametrize("zp", [-128, -5, 0, 17])
def test_conv_act_clamp_at_zero_point(portable, rng, zp):
    case = _conv_case(rng, oo=zp, act=(zp, 127))
    got = _check_conv(portable, case)
    assert got.min() == zp and np.count_nonzero(got == zp) > 1


# ---- depthwise ----

@pytest.mark.parametrize("dm", [1, 3, 8])
@pytest.mark.parametrize("c", [1, 3, 5])
def test_depthwise_multiplier(portable, rng, dm, c):
    oc = c * dm
    mult, shift = _quant(rng, oc)
    x, w = _i8(rng, 2, 7, 9, c), _i8(rng, 1, 3, 3, oc)
    bias = rng.integers(-3000, 3000, oc).astype(np.int32) if c != 3 else None
    kw = dict(stride=(2, 2), pad=(1, 1), dilation=(1, 1), out_hw=(5, 6), depth_multiplier=dm, input_offset=128,
              output_offset=3, out_mult=mult, out_shift=shift, act_min=-100, act_max=120)
    np.testing.assert_array_equal(portable.depthwise_conv2d_s8(x, w, bias, **kw),
                                  ref.depthwise_conv2d(x, w, bias, **kw))


def test_depthwise_dilation_positive_shift_relu(portable, rng):
    mult, shift = _quant(rng, 6, 0, 3)
    x = rng.integers(-130, -120, (1, 8, 7, 2)).clip(-128, 127).astype(np.int8)
    w = _i8(rng, 1, 3, 2, 6)
    kw = dict(stride=(1, 2), pad=(2, 1), dilation=(2, 3), out_hw=(8, 4), depth_multiplier=3, input_offset=125,
              output_offset=-20, out_mult=mult, out_shift=shift, act_min=-20, act_max=127)
    got = portable.depthwise_conv2d_s8(x, w, None, **kw)
    np.testing.assert_array_equal(got, ref.depthwise_conv2d(x, w, None, **kw))
    assert got.min() == -20


# ---- fully connected ----

@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("depth", [1, 3, 7, 33])
def test_fully_connected(portable, rng, per_channel, depth):
    o = 5
    mult, shift = _quant(rng, o if per_channel else 1)
    x, w = _i8(rng, 3, depth), _i8(rng, o, depth)
    kw = dict(input_offset=7, filter_offset=0, output_offset=-3, out_mult=mult, out_shift=shift,
              act_min=-128, act_max=127)
    bias = rng.integers(-1000, 1000, o).astype(np.int32) if depth != 3 else None
    np.testing.assert_array_equal(portable.fully_connected_s8(x, w, bias, **kw),
                                  ref.fully_connected(x, w, bias, **kw))


def test_fully_connected_filter_offset_positive_shift(portable, rng):
    x, w = _i8(rng, 2, 10), rng.integers(-20, 20, (4, 10)).astype(np.int8)
    kw = dict(input_offset=-3, filter_offset=9, output_offset=10, out_mult=[1 << 30], out_shift=[2],
              act_min=10, act_max=127)   # real multiplier 2.0; act_min at the zero point
    got = portable.fully_connected_s8(x, w, None, **kw)
    np.testing.assert_array_equal(got, ref.fully_connected(x, w, None, **kw))


# ---- pooling ----

@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("h,w,k,stride,pad,out_hw", [
    (7, 9, (3, 3), (2, 2), (1, 1), (4, 5)), (5, 7, (2, 4), (2, 2), (1, 2), (3, 4)),
    (9, 9, (9, 9), (1, 1), (4, 4), (9, 9)), (3, 5, (3, 5), (1, 1), (0, 0), (1, 1))])
def test_pools_pads_all_sides(portable, rng, include_pad, h, w, k, stride, pad, out_hw):
    x = _i8(rng, 2, h, w, 3)
    kw = dict(kernel=k, stride=stride, pad=pad, out_hw=out_hw, act_min=-120, act_max=110)
    np.testing.assert_array_equal(portable.avg_pool2d_s8(x, count_include_pad=include_pad, **kw),
                                  ref.avg_pool2d(x, count_include_pad=include_pad, **kw))
    np.testing.assert_array_equal(portable.max_pool2d_s8(x, **kw), ref.max_pool2d(x, **kw))


def test_avg_pool_rounds_half_away_from_zero(portable):
    x = np.array([1, 2, -1, -2, 3, 4, -3, -4], np.int8).reshape(1, 1, 8, 1)   # pairs: 1.5, -1.5, 3.5, -3.5
    got = portable.avg_pool2d_s8(x, kernel=(1, 2), stride=(1, 2), pad=(0, 0), out_hw=(1, 4),
                                 act_min=-128, act_max=127)
    assert got.ravel().tolist() == [2, -2, 4, -4]


def test_max_pool_window_entirely_in_padding(portable):
    x = np.full((1, 2, 2, 2), 50, np.int8)
    got = portable.max_pool2d_s8(x, kernel=(1, 1), stride=(1, 1), pad=(1, 1), out_hw=(4, 4), act_min=-100,
                                 act_max=127)
    assert got[0, 0, 0].tolist() == [-100, -100] and got[0, 1, 1].tolist() == [50, 50]


# ---- add / clamp ----

def _add_params(rng, out_shift=-19):
    return SimpleNamespace(input1_offset=int(rng.integers(-127, 129)), input1_mult=int(rng.integers(2**30, 2**31)),
                           input1_shift=int(rng.integers(-3, 1)), input2_offset=int(rng.integers(-127, 129)),
                           input2_mult=int(rng.integers(2**30, 2**31)), input2_shift=int(rng.integers(-3, 1)),
                           left_shift=20, output_offset=int(rng.integers(-128, 128)),
                           output_mult=int(rng.integers(2**30, 2**31)), output_shift=out_shift)


@pytest.mark.parametrize("out_shift", [-21, -19, -17])
def test_add(portable, rng, out_shift):
    p = _add_params(rng, out_shift)
    x1, x2 = _i8(rng, 301), _i8(rng, 301)
    np.testing.assert_array_equal(portable.add_s8(x1, x2, p, -128, 127), ref.add(x1, x2, p, -128, 127))


def test_add_output_aliases_input1(portable, rng):
    p = _add_params(rng)
    x1, x2 = _i8(rng, 257), _i8(rng, 257)
    exp = ref.add(x1, x2, p, -60, 90)
    np.testing.assert_array_equal(portable.add_s8(x1, x2, p, -60, 90, alias_output_to_input1=True), exp)


def test_add_positive_output_shift(portable, rng):
    p = _add_params(rng, out_shift=1)
    p.input1_shift = p.input2_shift = -12
    x1, x2 = _i8(rng, 200), _i8(rng, 200)
    np.testing.assert_array_equal(portable.add_s8(x1, x2, p, -128, 127), ref.add(x1, x2, p, -128, 127))


def test_clamp(portable, rng):
    x = _i8(rng, 1000)
    for lo, hi in [(-128, 127), (0, 127), (-20, 30), (5, 5)]:
        np.testing.assert_array_equal(portable.clamp_s8(x, lo, hi), np.clip(x, lo, hi))


# ---- softmax ----

SOFTMAX_P = SimpleNamespace(input_multiplier=1077952640, input_left_shift=19, diff_min=-3968)  # CMSIS-NN set


def test_softmax_row_of_one(portable):
    x = np.array([[-128], [0], [127]], np.int8)
    assert portable.softmax_s8(x, SOFTMAX_P).ravel().tolist() == [127, 127, 127]


@pytest.mark.parametrize("n", [2, 255, 256, 511, 512, 600, 5000])
def test_softmax_equal_values(portable, n):
    """Long rows of equal values: TFLite's final shift exceeds 31 from 512 on (and its int32 sum
    wraps from 4096 on); the kernel must not crash and rounds 256/n correctly."""
    x = np.full((2, n), 7, np.int8)
    x[1] = -128
    got = portable.softmax_s8(x, SOFTMAX_P)
    assert np.all(got == got[0, 0])
    assert abs(int(got[0, 0]) + 128 - 256 / n) <= 0.5 + 1e-9
    if n <= 600:
        np.testing.assert_array_equal(got, ref.softmax(x, SOFTMAX_P))
    if n >= 600:
        assert np.all(got == -128)


@pytest.mark.parametrize("scale,beta", [(0.1, 1.0), (0.05, 1.0), (1.0 / 16, 0.5), (0.5, 1.0)])
def test_softmax_random(portable, rng, scale, beta):
    import math
    real = min(beta * scale * 2**26, 2**31 - 1)
    q, e = math.frexp(real)
    mult, shift = int(round(q * 2**31)), e
    if mult == 2**31:
        mult, shift = mult // 2, shift + 1
    diff_min = -math.floor(31 * 2**26 / 2**shift)
    p = SimpleNamespace(input_multiplier=mult, input_left_shift=shift, diff_min=diff_min)
    x = _i8(rng, 6, 37)
    np.testing.assert_array_equal(portable.softmax_s8(x, p), ref.softmax(x, p))


# ---- transpose ----

@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_transpose_every_perm(portable, rng, rank):
    shape = (3, 4, 5, 2)[:rank] if rank < 4 else (2, 3, 4, 5)
    x = _i8(rng, *shape)
    for perm in itertools.permutations(range(rank)):
        np.testing.assert_array_equal(portable.transpose_s8(x, perm), np.transpose(x, perm))


# ---- status codes ----

def test_bad_arguments_are_rejected(portable):
    f = portable.raw("transpose_s8")
    dims = (ctypes.c_int32 * 4)(2, 2, 2, 2)
    x = (ctypes.c_int8 * 16)()
    y = (ctypes.c_int8 * 16)()
    assert f(None, 5, dims, (ctypes.c_int32 * 5)(0, 1, 2, 3, 4), x, y) != 0
    assert f(None, 2, dims, (ctypes.c_int32 * 2)(0, 0), x, y) != 0
    assert f(None, 2, dims, (ctypes.c_int32 * 2)(1, 2), x, y) != 0
    with pytest.raises(RuntimeError):   # in_c not divisible by the weights' channel count
        portable.conv2d_s8(np.zeros((1, 3, 3, 5), np.int8), np.zeros((2, 1, 1, 2), np.int8), None,
                           stride=(1, 1), pad=(0, 0), out_hw=(3, 3), input_offset=0, output_offset=0,
                           out_mult=[1 << 30] * 2, out_shift=[0, 0], act_min=-128, act_max=127)
    with pytest.raises(RuntimeError):   # out_c != in_c * depth_multiplier
        portable.depthwise_conv2d_s8(np.zeros((1, 3, 3, 2), np.int8), np.zeros((1, 1, 1, 5), np.int8), None,
                                     stride=(1, 1), pad=(0, 0), out_hw=(3, 3), depth_multiplier=2,
                                     input_offset=0, output_offset=0, out_mult=[1 << 30] * 5, out_shift=[0] * 5,
                                     act_min=-128, act_max=127)
    with pytest.raises(RuntimeError):   # an average over no cell at all
        portable.avg_pool2d_s8(np.zeros((1, 2, 2, 1), np.int8), kernel=(1, 1), stride=(1, 1), pad=(1, 1),
                               out_hw=(3, 3), act_min=-128, act_max=127)
