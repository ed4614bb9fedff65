"""Float32-tie cases of the NEON `rounding: onnx` Conv / depthwise / FC entry points
(test_neon_onnx_rounding.py): layers built so that the float32 output stage of onnxruntime
(fixed_point.requantize_s8_f32: rint(fl32(fl32(acc) * S))) and the exact product rounded once
(multiply_by_quantized_multiplier_rne, what the `_onnx` kernels computed before) disagree.

Per output channel c a float32 scale S_c and an accumulator a_c with fl32(fl32(a_c) * S_c) = k + 0.5
exactly while the real a_c * S_c is not a tie: rint rounds the float32 tie to even, the exact rounding
to the side of the real product, one LSB apart; the channels alternate which side wins (`down`: the
float32 result is the smaller). Half the channels use accumulators of 2^24..2^27, where SCVTF itself
rounds (fl32(a_c) != a_c), the others accumulators below 2^14 (only the product rounds, as in
F32_SPEC's 10113 x 0.011717591). The reverse, a real tie that float32 misses, cannot occur inside the
int8 range: a_c * S_c = k + 0.5 with S_c = odd 2^-e forces a_c = j 2^(e-1) with |j odd| <= 511, exact
in float32, and so is the product (assert_no_lost_real_tie checks it on the exact ties of the
"allties" cases too).

Layers: weight 1 from input channel c to output channel c at the window centre, 0 elsewhere, so the
accumulator is bias_c + (x - zero point) at that tap; bias_c = a_c - t_c and every third pixel holds
t_c + zero point at channel c (the other pixels random). The sparse 1x1 layer zeroes odd channels'
weights: those are constant, their tie is the constant row (packing.constant_channels).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from neon_onnx_cases import KINDS, _chwn_conv_case, _chwn_dw_case, _planned
from neon_cases import function
from toolchain.isa import neon as nv
from toolchain.ops import conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.fixed_point import f32_scale, multiply_by_quantized_multiplier_rne, rounding_mode

F32 = np.float32


def scale_pair(s: float) -> tuple[int, int]:
    """(mult, shift) with f32_scale(mult, shift) == s exactly (s a positive normal float32)."""
    m, e = math.frexp(float(s))
    mult, shift = int(m * 2**31), e
    assert f32_scale(mult, shift)[()] == F32(s), s
    return mult, shift


def f32_of(acc: int, mult: int, shift: int) -> float:
    """fl32(fl32(acc) * S), the float32 product the kernels round."""
    return float(F32(F32(acc) * f32_scale(mult, shift)[()]))


def tie_channel(rng: np.random.Generator, big: bool, down: bool) -> tuple[int, int, int]:
    """(acc, mult, shift) of one channel: a float32 tie the exact rounding resolves the other way
    (`down`: rint of the float32 tie is below the exact result); `big`: |acc| in [2^24, 2^27)."""
    while True:
        k = int(rng.integers(-90, 90))
        acc = int(rng.integers(2**24, 2**27) if big else rng.integers(600, 16000)) * int(rng.choice([-1, 1]))
        s = F32((k + 0.5) / float(F32(acc)))
        if not (s > 0 and np.isfinite(s)):
            continue
        mult, shift = scale_pair(s)
        f = f32_of(acc, mult, shift)
        if f - math.floor(f) != 0.5:
            continue
        exact = int(multiply_by_quantized_multiplier_rne(acc, mult, shift))
        rint = int(np.rint(f))
        if exact != rint and (rint < exact) == down:
            return acc, mult, shift


def channels(rng: np.random.Generator, n: int) -> dict:
    """n tie channels (module docstring): acc, mult, shift, t (the input offset at the tap), bias."""
    rows = [tie_channel(rng, big=c % 2 == 0, down=c % 4 < 2) for c in range(n)]
    acc, mult, shift = (np.array(v, np.int64) for v in zip(*rows))
    t = rng.integers(-100, 100, n)
    return dict(acc=acc, mult=mult.astype(np.int32), shift=shift.astype(np.int32), t=t,
                bias=(acc - t).astype(np.int32))


def _inputs(rng: np.random.Generator, shape, zin: int, t: np.ndarray) -> np.ndarray:
    """Random int8 of `shape` (channels last) with every third pixel at zin + t per channel."""
    x = rng.integers(-128, 128, shape).astype(np.int64)
    flat = x.reshape(-1, shape[-1])
    flat[::3, :t.size] = zin + t
    return np.clip(x, -128, 127).astype(np.int8)


def stats(ch: dict) -> dict:
    """How the channels' designed accumulators split: float32 result below / above the exact one,
    and how many need SCVTF's rounding (|acc| > 2^24)."""
    f = np.array([np.rint(f32_of(int(a), int(m), int(s))) for a, m, s in zip(ch["acc"], ch["mult"], ch["shift"])])
    e = multiply_by_quantized_multiplier_rne(ch["acc"], ch["mult"], ch["shift"])
    return dict(down=int(np.sum(f < e)), up=int(np.sum(f > e)), big=int(np.sum(np.abs(ch["acc"]) > 2**24)))


def f32_tie_cases(seed: int = 97) -> tuple[list, list[dict]]:
    """(cases, per-layer stats) of every NEON `_onnx` Conv / depthwise / FC entry point on float32 ties."""
    rng = np.random.default_rng(seed)
    cases, info = [], []
    zin, zout = 3, -5

    def conv_layer(tag: str, cin: int, cout: int, kh: int, dead: bool) -> None:
        ch = channels(rng, cout)
        x = _inputs(rng, (1, 5, 7, cin), zin, ch["t"])
        w = np.zeros((cout, kh, kh, cin), np.int8)
        for c in range(cout):
            w[c, kh // 2, kh // 2, c] = 0 if dead and c % 2 else 1
        k = dict(stride=(1, 1), pad=(kh // 2, kh // 2), dilation=(1, 1), out_hw=(5, 7), input_offset=-zin,
                 output_offset=zout, out_mult=ch["mult"], out_shift=ch["shift"], act_min=-128, act_max=127)
        with rounding_mode("onnx"):
            y = conv2d.conv2d_s8(x, w, ch["bias"], **k)
        pw = kh == 1
        plans = [(function("conv2d", "1x1_sparse" if dead else ("1x1" if pw else ""), kd) + "_onnx",
                  nv.conv2d_plan(k, x.shape, w, ch["bias"], y.shape, kind=kd, pointwise=pw, sparse=dead, onnx=True))
                 for kd in KINDS]
        assert all(p is not None for _, p in plans), tag
        cases.extend(_planned(tag, x, y, plans))
        if not dead and kh == 3:
            cases.extend(_chwn_conv_case(rng, f"{tag}_chwn", x, w, ch["bias"], k))
        info.append(dict(tag=tag, **stats(ch)))

    def dw_layer(tag: str, c: int) -> None:
        ch = channels(rng, c)
        x = _inputs(rng, (1, 6, 5, c), zin, ch["t"])
        w = np.zeros((1, 3, 3, c), np.int8)
        w[0, 1, 1, :] = 1
        k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(6, 5), depth_multiplier=1, input_offset=-zin,
                 output_offset=zout, out_mult=ch["mult"], out_shift=ch["shift"], act_min=-128, act_max=127)
        with rounding_mode("onnx"):
            y = depthwise_conv2d.depthwise_conv2d_s8(x, w, ch["bias"], **k)
        plans = [(function("depthwise_conv2d", "3x3" if three else "", "pair" if pair else "nopair") + "_onnx",
                  nv.depthwise_plan(k, x.shape, w, ch["bias"], y.shape, pair=pair, three=three, onnx=True))
                 for three in (True, False) for pair in (True, False)]
        assert all(p is not None for _, p in plans), tag
        cases.extend(_planned(tag, x, y, plans))
        cases.extend(_chwn_dw_case(rng, f"{tag}_chwn", x, w, ch["bias"], k))
        info.append(dict(tag=tag, **stats(ch)))

    def fc_layer(tag: str, kdim: int, o: int) -> None:
        ch = channels(rng, o)
        x = _inputs(rng, (6, kdim), zin, ch["t"])
        w = np.zeros((o, kdim), np.int8)
        w[np.arange(o), np.arange(o)] = 1
        k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=ch["mult"], out_shift=ch["shift"],
                 act_min=-128, act_max=127)
        with rounding_mode("onnx"):
            y = fully_connected.fully_connected_s8(x, w, ch["bias"], **k)
        plans = [(function("fully_connected", "", kd) + "_onnx",
                  nv.fc_plan(k, x.shape, w, ch["bias"], y.shape, kind=kd, onnx=True)) for kd in KINDS]
        assert all(p is not None for _, p in plans), tag
        cases.extend(_planned(tag, x, y, plans))
        info.append(dict(tag=tag, **stats(ch)))

    conv_layer("f32tie_conv3x3", 24, 20, 3, False)
    conv_layer("f32tie_conv1x1", 32, 28, 1, False)
    conv_layer("f32tie_sparse1x1", 64, 40, 1, True)
    dw_layer("f32tie_dw24", 24)
    dw_layer("f32tie_dw16", 16)
    fc_layer("f32tie_fc", 24, 20)
    fc_layer("f32tie_fc_tail", 7, 5)
    return cases, info


def assert_no_lost_real_tie(acc, mult, shift) -> int:
    """Every exact tie acc * S = k + 0.5 (S = f32_scale(mult, shift), exact rationals) with |k| <= 256
    is a float32 tie too (module docstring); returns how many ties were checked."""
    n = 0
    for a, m, s in zip(*np.broadcast_arrays(np.asarray(acc, np.int64), np.asarray(mult, np.int64),
                                            np.asarray(shift, np.int64))):
        r = int(a) * Fraction(float(f32_scale(m, s)[()]))
        if r.denominator == 2 and abs(r) <= 256:
            f = f32_of(int(a), int(m), int(s))
            assert f == float(r), (a, m, s)
            n += 1
    return n
