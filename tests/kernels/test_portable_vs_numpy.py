"""Random-parameter tests: portable C kernels vs the numpy references of toolchain/ops, bit for bit.

Each test imports its reference inside the test and skips if it is not importable yet.
"""
import importlib
import math
import zlib

import numpy as np
import pytest

CASES = 25
_MODULES = {"conv2d_s8": ("conv2d",), "depthwise_conv2d_s8": ("depthwise_conv2d",),
            "fully_connected_s8": ("fully_connected",), "avg_pool2d_s8": ("pool2d", "avg_pool2d"),
            "max_pool2d_s8": ("pool2d", "max_pool2d"), "add_s8": ("add",), "softmax_s8": ("softmax",),
            "clamp_s8": ("elementwise", "clamp"), "transpose_s8": ("elementwise", "shape_ops", "transpose")}


def _reference(name):
    errors = []
    for mod in _MODULES[name]:
        try:
            return getattr(importlib.import_module(f"toolchain.ops.{mod}"), name)
        except Exception as exc:  # noqa: BLE001 - reference modules are written in parallel
            errors.append(f"{mod}: {exc}")
    pytest.skip(f"no numpy reference for {name}: {'; '.join(errors)}")


def _fixed_point():
    try:
        return importlib.import_module("toolchain.ops.fixed_point")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"toolchain.ops.fixed_point not importable: {exc}")


def _rng(seed_text, i):
    return np.random.default_rng(zlib.crc32(f"{seed_text}-{i}".encode()))


def _geometry(rng, dilated=True):
    """Random window geometry with top/left padding and whatever bottom/right padding out_hw needs."""
    k = tuple(int(v) for v in rng.integers(1, 5, 2))
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    dil = tuple(int(v) for v in rng.integers(1, 3, 2)) if dilated else (1, 1)
    size = tuple(int(v) for v in rng.integers(1, 11, 2))
    pad, out = [], []
    for a in range(2):
        eff = (k[a] - 1) * dil[a] + 1
        top = int(rng.integers(0, eff))
        bottom = int(rng.integers(0, eff))
        span = size[a] + top + bottom - eff
        if span < 0:
            bottom -= span
            span = 0
        pad.append(top)
        out.append(span // stride[a] + 1)
    return dict(k=k, stride=stride, dilation=dil, size=size, pad=tuple(pad), out_hw=tuple(out))


def _quant(rng, n, taps):
    """Multipliers/shifts mapping a sum of `taps` int8 products to roughly +-50 (sometimes >= 1)."""
    scale = 50.0 / (12000.0 * math.sqrt(taps)) * rng.uniform(0.2, 1.5, n)
    scale[rng.random(n) < 0.05] *= 2.0 ** 12         # a few real multipliers >= 1 (positive shift)
    mult, shift = [], []
    for s in scale:
        q, e = math.frexp(float(s))
        m = int(round(q * 2**31))
        if m == 2**31:
            m, e = m // 2, e + 1
        mult.append(m)
        shift.append(e)
    return np.array(mult, np.int32), np.array(shift, np.int32)


def _bias(rng, n, taps):
    return None if rng.random() < 0.3 else rng.integers(-1, 2, n).astype(np.int32) * int(6500 * math.sqrt(taps))


def _input_offset(rng):
    return 128 if rng.random() < 0.5 else int(rng.integers(-20, 21))


def _filter_offset(rng):
    """-(weight zero point): mostly 0 (symmetric); per-tensor uint8 weights shifted to int8 give up to 128."""
    return int(rng.choice([0, 0, -6, 128, -127]))


def _act(rng, zo):
    r = rng.random()
    if r < 0.3:
        return zo, 127                       # ReLU: clamp at the zero point
    if r < 0.8:
        return -128, 127
    lo = int(rng.integers(-128, 0))
    return lo, int(rng.integers(lo, 128))


@pytest.mark.parametrize("i", range(CASES))
def test_conv2d(portable, i):
    reference = _reference("conv2d_s8")
    rng = _rng("conv2d", i)
    g = _geometry(rng)
    groups = int(rng.choice([1, 1, 2, 3, 4]))
    wc = int(rng.integers(1, 6))
    c, oc = groups * wc, groups * int(rng.integers(1, 4))
    n = int(rng.integers(1, 3))
    x = rng.integers(-128, 128, (n, *g["size"], c)).astype(np.int8)
    w = rng.integers(-127, 128, (oc, *g["k"], wc)).astype(np.int8)
    taps = g["k"][0] * g["k"][1] * wc
    bias = _bias(rng, oc, taps)
    zo = int(rng.integers(-60, 61))
    mult, shift = _quant(rng, oc, taps)
    act_min, act_max = _act(rng, zo)
    kw = dict(stride=g["stride"], pad=g["pad"], dilation=g["dilation"], out_hw=g["out_hw"],
              input_offset=_input_offset(rng), output_offset=zo, out_mult=mult, out_shift=shift,
              act_min=act_min, act_max=act_max, filter_offset=_filter_offset(rng))
    np.testing.assert_array_equal(portable.conv2d_s8(x, w, bias, **kw), reference(x, w, bias, **kw))


@pytest.mark.parametrize("i", range(CASES))
def test_depthwise_conv2d(portable, i):
    reference = _reference("depthwise_conv2d_s8")
    rng = _rng("dw", i)
    g = _geometry(rng)
    c, dm = int(rng.integers(1, 7)), int(rng.choice([1, 1, 2, 3, 8]))
    oc = c * dm
    x = rng.integers(-128, 128, (int(rng.integers(1, 3)), *g["size"], c)).astype(np.int8)
    w = rng.integers(-127, 128, (1, *g["k"], oc)).astype(np.int8)
    taps = g["k"][0] * g["k"][1]
    bias = _bias(rng, oc, taps)
    zo = int(rng.integers(-60, 61))
    mult, shift = _quant(rng, oc, taps)
    act_min, act_max = _act(rng, zo)
    kw = dict(stride=g["stride"], pad=g["pad"], dilation=g["dilation"], out_hw=g["out_hw"], depth_multiplier=dm,
              input_offset=_input_offset(rng), output_offset=zo, out_mult=mult, out_shift=shift,
              act_min=act_min, act_max=act_max, filter_offset=_filter_offset(rng))
    np.testing.assert_array_equal(portable.depthwise_conv2d_s8(x, w, bias, **kw), reference(x, w, bias, **kw))


@pytest.mark.parametrize("i", range(CASES))
def test_fully_connected(portable, i):
    reference = _reference("fully_connected_s8")
    rng = _rng("fc", i)
    b, k, o = int(rng.integers(1, 4)), int(rng.integers(1, 70)), int(rng.integers(1, 20))
    x = rng.integers(-128, 128, (b, k)).astype(np.int8)
    w = rng.integers(-127, 128, (o, k)).astype(np.int8)
    bias = _bias(rng, o, k)
    per_channel = rng.random() < 0.5
    mult, shift = _quant(rng, o if per_channel else 1, k)
    zo = int(rng.integers(-60, 61))
    act_min, act_max = _act(rng, zo)
    kw = dict(input_offset=_input_offset(rng), filter_offset=int(rng.choice([0, 0, -3, 12])),
              output_offset=zo, out_mult=mult, out_shift=shift, act_min=act_min, act_max=act_max)
    np.testing.assert_array_equal(portable.fully_connected_s8(x, w, bias, **kw), reference(x, w, bias, **kw))


@pytest.mark.parametrize("i", range(CASES))
def test_pools(portable, i):
    avg_ref, max_ref = _reference("avg_pool2d_s8"), _reference("max_pool2d_s8")
    rng = _rng("pool", i)
    g = _geometry(rng, dilated=False)
    # keep every window non-empty: padding strictly smaller than the kernel on each side
    pad = tuple(min(p, k - 1) for p, k in zip(g["pad"], g["k"]))
    out_hw = tuple((s + p - k) // st + 1 if s + p >= k else 1
                   for s, p, k, st in zip(g["size"], pad, g["k"], g["stride"]))
    x = rng.integers(-128, 128, (int(rng.integers(1, 3)), *g["size"], int(rng.integers(1, 9)))).astype(np.int8)
    act_min, act_max = _act(rng, int(rng.integers(-128, 128)))
    kw = dict(kernel=g["k"], stride=g["stride"], pad=pad, out_hw=out_hw, act_min=act_min, act_max=act_max)
    include_pad = bool(rng.random() < 0.3)
    np.testing.assert_array_equal(portable.avg_pool2d_s8(x, count_include_pad=include_pad, **kw),
                                  avg_ref(x, count_include_pad=include_pad, **kw))
    np.testing.assert_array_equal(portable.max_pool2d_s8(x, **kw), max_ref(x, **kw))


@pytest.mark.parametrize("i", range(CASES))
def test_add(portable, i):
    reference = _reference("add_s8")
    fp = _fixed_point()
    rng = _rng("add", i)
    s1, s2 = rng.uniform(0.005, 0.2, 2)
    so = float(rng.uniform(0.3, 2.5) * max(s1, s2))
    zo = int(rng.integers(-128, 128))
    p = fp.add_params(s1, int(rng.integers(-128, 128)), s2, int(rng.integers(-128, 128)), so, zo)
    x1 = rng.integers(-128, 128, int(rng.integers(1, 300))).astype(np.int8)
    x2 = rng.integers(-128, 128, x1.size).astype(np.int8)
    act_min, act_max = _act(rng, zo)
    np.testing.assert_array_equal(portable.add_s8(x1, x2, p, act_min, act_max),
                                  reference(x1, x2, p, act_min, act_max))


@pytest.mark.parametrize("i", range(CASES))
def test_softmax(portable, i):
    reference = _reference("softmax_s8")
    fp = _fixed_point()
    rng = _rng("softmax", i)
    p = fp.softmax_params(float(rng.uniform(0.01, 0.5)), float(rng.choice([1.0, 0.5, 2.0])))
    rows, row_size = int(rng.integers(1, 5)), int(rng.integers(1, 700))
    spread = int(rng.integers(1, 256))
    x = np.clip(rng.integers(-spread, spread + 1, (rows, row_size)) + int(rng.integers(-60, 60)),
                -128, 127).astype(np.int8)
    np.testing.assert_array_equal(portable.softmax_s8(x, p), reference(x, p))


@pytest.mark.parametrize("i", range(10))
def test_clamp_and_transpose(portable, i):
    clamp_ref, transpose_ref = _reference("clamp_s8"), _reference("transpose_s8")
    rng = _rng("misc", i)
    rank = int(rng.integers(1, 5))
    x = rng.integers(-128, 128, tuple(int(v) for v in rng.integers(1, 6, rank))).astype(np.int8)
    lo = int(rng.integers(-128, 128))
    hi = int(rng.integers(lo, 128))
    np.testing.assert_array_equal(portable.clamp_s8(x, lo, hi), clamp_ref(x, lo, hi))
    perm = [int(v) for v in rng.permutation(rank)]
    np.testing.assert_array_equal(portable.transpose_s8(x, perm), transpose_ref(x, perm))
