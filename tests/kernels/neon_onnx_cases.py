"""The cases of the NEON `rounding: onnx` tests (test_neon_onnx_rounding.py): every `_onnx` entry point of
ecc_neon_kernels.h on the shapes of neon_cases (tails: out_c % 4, K % 16, pixel counts, strides,
padding, batches), with requantizations of three kinds:
- "random": per-channel multipliers as calibrated models have them, plus the corners (shift 0, a
  dead channel, shift -31, a multiplier >= 1 i.e. a positive shift);
- "ties": small activations and weights with multipliers 2^30 * {1, 1.5} and shifts -1..-3, 0, +1,
  so that a quarter to a half of all outputs are exact ties (both signs);
- "allties": every input at the zero point (accumulator = bias) and biases odd * 2^s with s = -shift,
  so every output is a tie, over shifts -1..-31 and both signs, per channel.
Weights of the "j == 2" setups hold -128 (BL-04): the pairing entry points must not apply, the others
must. The expected output is the numpy oracle under rounding "onnx" (toolchain/ops, the same
reference the portable `_onnx` twins are held to; the test asserts the portable twin too).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import isa_cases
from isa_harness import case
from neon_cases import CONV_SHAPES, DW_SHAPES, _act, _requant, _w, _x, function
from neon_harness import Case
from toolchain.isa import neon as nv
from toolchain.isa import neon_chwn
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import add_params, rounding_mode
from toolchain.ops.pool2d import avg_pool2d_s8
from toolchain.ops.registry import CArg

ISA = "neon"
KINDS = ("dot", "pair", "nopair")
REQUANTS = ("random", "ties", "allties")


def _planned(tag: str, x, y, plans) -> list[Case]:
    """isa_cases.planned_cases, each case named `tag`-<entry point without ecc_neon_ and _s8>[_onnx]."""
    return [replace(c, name=f"{tag}-{c.function[9:].removesuffix('_onnx').removesuffix('_s8')}"
                            f"{'_onnx' if c.function.endswith('_onnx') else ''}")
            for c in isa_cases.planned_cases(ISA, tag, x, y, plans)]


def requant(rng: np.random.Generator, kind: str, n: int, acc_scale: float, corner: int = 0):
    """(mult, shift) of n channels for the requantization `kind` (module docstring)."""
    if kind == "random":
        return _requant(rng, n, acc_scale, corner)
    if kind == "ties":
        mult = np.where(rng.integers(0, 2, n) == 1, 3 * 2**29, 2**30)
        shift = rng.choice([-3, -2, -1, 0, 1], n)
        return mult.astype(np.int32), shift.astype(np.int32)
    return np.full(n, 2**30, np.int32), -(1 + np.arange(n) * 7 % 31).astype(np.int32)


def tie_bias(rng: np.random.Generator, shift: np.ndarray) -> np.ndarray:
    """Biases odd * 2^(-shift), |odd| < 200: with multiplier 2^30 and an accumulator equal to the
    bias, the real output is odd / 2, an exact tie."""
    odd = 2 * rng.integers(-100, 100, shift.size) + 1
    return (odd * 2.0 ** (-shift.astype(np.int64))).astype(np.int64).clip(-2**31, 2**31 - 1).astype(np.int32)


def _operands(rng, kind: str, j: int, xshape, wshape, zin: int, nchan: int, acc_scale: float, bias_range: int):
    """(x, w, bias, mult, shift) of one case."""
    if kind == "random":
        x, w = _x(rng, xshape, j), _w(rng, wshape, j)
        mult, shift = requant(rng, kind, nchan, acc_scale, corner=j % 3)
        return x, w, rng.integers(-bias_range, bias_range, nchan).astype(np.int32), mult, shift
    w = rng.integers(-2, 3, wshape).astype(np.int8)
    if j == 2:
        w.flat[rng.integers(0, w.size)] = -128
    mult, shift = requant(rng, kind, nchan, acc_scale)
    if kind == "allties":
        return np.full(xshape, zin, np.int8), w, tie_bias(rng, shift), mult, shift
    x = np.clip(zin + rng.integers(-3, 4, xshape), -128, 127).astype(np.int8)
    return x, w, rng.integers(-20, 21, nchan).astype(np.int32), mult, shift


def onnx_cases(seed: int = 71) -> list[Case]:
    """Every `_onnx` conv2d / depthwise / fully connected entry point on random, tie-heavy and
    all-tie requantizations (module docstring)."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    setups = ((-128, -128, "full"), (127, 0, "full"), (-5, -128, "relu"), (3, 20, "narrow"))
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for j, (zin, zout, act) in enumerate(setups):
            kind = REQUANTS[(i + j) % 3]
            x, w, bias, mult, shift = _operands(rng, kind, j, (1 + (i + j) % 2, h, wd, cin), (cout, kh, kw, cin), zin,
                                                cout, 80.0 * np.sqrt(kh * kw * cin) * 60, 5000)
            lo, hi = _act(act, zout) if kind == "random" else (-128, 127)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     input_offset=-zin, output_offset=zout if kind == "random" else 0, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            with rounding_mode("onnx"):
                y = conv2d.conv2d_s8(x, w, bias, **k)
            cases += _planned(f"onnx_conv{i}_{j}_{kind}", x, y, (
                (function("conv2d", "1x1" if pw else "", kd) + "_onnx",
                 nv.conv2d_plan(k, x.shape, w, bias, y.shape, kind=kd, pointwise=pw, onnx=True))
                for pw in (True, False) for kd in KINDS))
            if i % 3 == 0:
                cases += _chwn_conv_case(rng, f"onnx_chwn_conv{i}_{j}", x, w, bias, k)
    for i, (h, wd, cin, m, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for j, (zin, zout, act) in enumerate(setups):
            kind = REQUANTS[(i + j) % 3]
            x, w, bias, mult, shift = _operands(rng, kind, j, (1 + (i + j) % 2, h, wd, cin), (1, kh, kw, cin * m), zin,
                                                cin * m, 80.0 * np.sqrt(kh * kw) * 60, 3000)
            lo, hi = _act(act, zout) if kind == "random" else (-128, 127)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     depth_multiplier=m, input_offset=-zin, output_offset=zout if kind == "random" else 0,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            with rounding_mode("onnx"):
                y = depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k)
            cases += _planned(f"onnx_dw{i}_{j}_{kind}", x, y, (
                (function("depthwise_conv2d", "3x3" if three else "", "pair" if pair else "nopair") + "_onnx",
                 nv.depthwise_plan(k, x.shape, w, bias, y.shape, pair=pair, three=three, onnx=True))
                for three in (True, False) for pair in (True, False)))
            if m == 1 and j == 1:
                cases += _chwn_dw_case(rng, f"onnx_chwn_dw{i}", x, w, bias, k)
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13), (5, 24, 17), (1, 256, 2))):
        for j, (zin, zout, act) in enumerate(setups[:3]):
            kind = REQUANTS[(i + j) % 3]
            x, w, bias, mult, shift = _operands(rng, kind, j, (b, kdim), (o, kdim), zin, o,
                                                80.0 * np.sqrt(kdim) * 60, 3000)
            if j == 0 and kind == "random":  # per-tensor
                mult, shift = mult[:1], shift[:1]
            lo, hi = _act(act, zout) if kind == "random" else (-128, 127)
            k = dict(input_offset=-zin, filter_offset=0, output_offset=zout if kind == "random" else 0,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            with rounding_mode("onnx"):
                y = fully_connected.fully_connected_s8(x, w, bias, **k)
            cases += _planned(f"onnx_fc{i}_{j}_{kind}", x, y, (
                (function("fully_connected", "", kd) + "_onnx", nv.fc_plan(k, x.shape, w, bias, y.shape, kind=kd,
                                                                            onnx=True))
                for kd in KINDS))
    return cases + sparse_cases(rng) + bl04_cases() + lane_edge_cases() + add_pool_cases(rng)


def lane_edge_cases() -> list[Case]:
    """The largest int16 pair the pairing kernels may see: activations all -128 against -128 in one
    slot of every lane and -127 in the other ((-128)(-128) + (-128)(-127) = 32640), K 32 and 40, 3x3
    depthwise taps -128 at even and -127 at odd positions: the pairing entry points apply and are exact."""
    out: list[Case] = []
    for rounding in ("tflm", "onnx"):
        tail, onnx = ("_onnx" if rounding == "onnx" else ""), rounding == "onnx"
        for kdim in (32, 40):
            x = np.full((2, kdim), -128, np.int8)
            w = np.where(np.arange(kdim) % 16 < 8, -128, -127)[None].repeat(3, axis=0).astype(np.int8)
            k = dict(input_offset=0, filter_offset=0, output_offset=0, out_mult=np.full(3, 2**30, np.int32),
                     out_shift=np.array([-14, -15, -16], np.int32), act_min=-128, act_max=127)
            with rounding_mode(rounding):
                y = fully_connected.fully_connected_s8(x, w, None, **k)
            plans = [(function("fully_connected", "", kd) + tail, nv.fc_plan(k, x.shape, w, None, y.shape, kind=kd,
                                                                           onnx=onnx)) for kd in KINDS]
            assert all(p is not None for _, p in plans)
            out += _planned(f"edge_{rounding}_fc{kdim}", x, y, plans)
        x = np.full((1, 4, 4, 16), -128, np.int8)
        w = np.where(np.arange(9) % 2 == 0, -128, -127)[None, :, None].repeat(16, axis=2).reshape(1, 3, 3, 16)
        w = w.astype(np.int8)
        kd_ = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(2, 2), depth_multiplier=1, input_offset=0,
                   output_offset=0, out_mult=np.full(16, 2**30, np.int32), out_shift=np.full(16, -12, np.int32),
                   act_min=-128, act_max=127)
        with rounding_mode(rounding):
            y = depthwise_conv2d.depthwise_conv2d_s8(x, w, None, **kd_)
        plans = [(function("depthwise_conv2d", "3x3" if three else "", "pair") + tail,
                  nv.depthwise_plan(kd_, x.shape, w, None, y.shape, pair=True, three=three, onnx=onnx))
                 for three in (True, False)]
        assert all(p is not None for _, p in plans)
        out += _planned(f"edge_{rounding}_dw", x, y, plans)
    return out


def add_pool_cases(rng: np.random.Generator) -> list[Case]:
    """ecc_neon_add_s8_onnx (random scales, and input rescales that are exact shifts with output
    multiplier 2^30, shift -20: a quarter of the outputs are ties) and ecc_neon_avg_pool2d_s8_onnx
    (windows whose means are often exact halves, count_include_pad, the portable `_onnx` arguments)."""
    out: list[Case] = []
    for i, (size, tie) in enumerate(((1024, False), (77, True), (300, False), (16, True), (5, True))):
        s1, s2, so = rng.uniform(0.01, 0.1, 3)
        z1, z2, zo = (int(v) for v in rng.integers(-20, 20, 3))
        p = add_params(s1, z1, s2, z2, so, zo)
        if tie:
            p = replace(p, left_shift=20, input1_mult=2**30, input1_shift=0, input2_mult=2**30, input2_shift=0,
                        output_mult=2**30, output_shift=-20)
        x1 = rng.integers(-128, 128, size, dtype=np.int8)
        x2 = rng.integers(-128, 128, size, dtype=np.int8)
        with rounding_mode("onnx"):
            y = add.add_s8(x1, x2, p, -128, 127)
        c = isa_cases.add_case(ISA, f"onnx_{'ties' if tie else 'random'}_add{i}", x1, x2, p, -128, 127, y, 48)
        out.append(replace(c, function=c.function + "_onnx"))
    pools = [((6, 7, 16), (2, 2), (2, 2), (1, 1, 1, 1)), ((5, 5, 8), (2, 2), (1, 1), (0, 0, 1, 1)),
             ((8, 8, 24), (8, 8), (1, 1), (0, 0, 0, 0)), ((4, 6, 40), (3, 2), (1, 2), (1, 0, 1, 1)),
             ((24, 24, 8), (24, 24), (1, 1), (0, 0, 0, 0))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, (lo, hi) in enumerate(((-128, 127), (-20, 60))):
            zp = int(rng.integers(-128, 128))
            x = np.clip(zp + rng.integers(-2, 3, (1 + j, h, wd, ch)), -128, 127).astype(np.int8) if i % 2 else \
                rng.integers(-128, 128, (1 + j, h, wd, ch), dtype=np.int8)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=lo, act_max=hi)
            pad = dict(count_include_pad=j == 1, pad_end=pads[2:], pad_value=zp)
            with rounding_mode("onnx"):
                y = avg_pool2d_s8(x, **pad, **kw, zero_point=zp)
            c = isa_cases.pool_case(ISA, f"onnx_{'ties' if i % 2 else 'random'}_avg{i}_{j}", "avg", x, kw, y, **pad)
            out.append(replace(c, function=c.function + "_onnx"))
            if i < 4:  # the CHWN twin on a batch of 8
                out.append(_chwn_avg_case(rng, f"onnx_{'ties' if i % 2 else 'random'}_chwn_avg{i}_{j}", x, kw, pad))
    return out


def _chwn_avg_case(rng, tag: str, x, kw: dict, pad: dict) -> Case:
    from neon_cases import chwn
    from toolchain.ops import relayout

    x8 = _batch8(rng, x)
    with rounding_mode("onnx"):
        y = avg_pool2d_s8(x8, **pad, **kw, zero_point=pad["pad_value"])
    ints = [*kw["stride"], *kw["pad"], *kw["kernel"], int(pad["count_include_pad"]), *pad["pad_end"], pad["pad_value"],
            kw["act_min"], kw["act_max"], *relayout.storage_dims(x8.shape, "CHWN")]
    args = [*map(CArg.lit, ints), CArg("act", "input"), *map(CArg.lit, kw["out_hw"]), CArg("act", "output")]
    return case(tag, "ecc_neon_avg_pool2d_chwn_s8_onnx", args, {"input": chwn(x8)}, "output", 0, chwn(y))


def bl04_cases() -> list[Case]:
    """BL-04's recipe (int8-fault-cases.md): activations and weights all -128, K = 16 and 32 (the
    products i and i + 8 would share an int16 lane), as a fully connected layer, a 1x1 and a 3x3
    convolution and a 3x3 depthwise layer, under both roundings: every entry point that accepts the
    call (not the pairing ones) gives the exact 262144 / 524288 requantized."""
    out: list[Case] = []
    for rounding in ("tflm", "onnx"):
        tail = "_onnx" if rounding == "onnx" else ""
        onnx = rounding == "onnx"
        for kdim in (16, 32):
            x, w = np.full((1, kdim), -128, np.int8), np.full((3, kdim), -128, np.int8)
            k = dict(input_offset=0, filter_offset=0, output_offset=0, out_mult=np.full(3, 2**30, np.int32),
                     out_shift=np.array([-12, -13, -14], np.int32), act_min=-128, act_max=127)
            with rounding_mode(rounding):
                y = fully_connected.fully_connected_s8(x, w, None, **k)
            out += _planned(f"bl04_{rounding}_fc{kdim}", x, y, (
                (function("fully_connected", "", kd) + tail,
                 nv.fc_plan(k, x.shape, w, None, y.shape, kind=kd, onnx=onnx))
                for kd in KINDS))
            for kh in (1, 3):
                x = np.full((1, 3, 3, kdim), -128, np.int8)
                w = np.full((4, kh, kh, kdim), -128, np.int8)
                kc = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(4 - kh, 4 - kh), input_offset=0,
                          output_offset=0, out_mult=np.full(4, 2**30, np.int32),
                          out_shift=np.array([-14, -15, -16, -17], np.int32), act_min=-128, act_max=127)
                with rounding_mode(rounding):
                    y = conv2d.conv2d_s8(x, w, None, **kc)
                out += _planned(f"bl04_{rounding}_conv{kh}x{kh}_{kdim}", x, y, (
                    (function("conv2d", "1x1" if pw else "", kd) + tail,
                     nv.conv2d_plan(kc, x.shape, w, None, y.shape, kind=kd, pointwise=pw, onnx=onnx))
                    for pw in (True, False) for kd in KINDS))
            x, w = np.full((1, 4, 4, kdim), -128, np.int8), np.full((1, 3, 3, kdim), -128, np.int8)
            kd_ = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(4, 4), depth_multiplier=1, input_offset=0,
                       output_offset=0, out_mult=np.full(kdim, 2**30, np.int32), out_shift=np.full(kdim, -9, np.int32),
                       act_min=-128, act_max=127)
            with rounding_mode(rounding):
                y = depthwise_conv2d.depthwise_conv2d_s8(x, w, None, **kd_)
            out += _planned(f"bl04_{rounding}_dw{kdim}", x, y, (
                (function("depthwise_conv2d", "3x3" if three else "", "pair" if pair else "nopair") + tail,
                 nv.depthwise_plan(kd_, x.shape, w, None, y.shape, pair=pair, three=three, onnx=onnx))
                for three in (True, False) for pair in (True, False)))
    return out


def sparse_cases(rng: np.random.Generator) -> list[Case]:
    """The sparse 1x1 `_onnx` entry points: layers with constant channels (neon_cases.CONSTANT_LAYERS)
    requantized on ties."""
    from dsp_cases import constant_channel_layers
    from neon_cases import CONSTANT_LAYERS

    out = []
    acts = ((-128, -128, "relu"), (127, 127, "full"), (5, 3, "narrow"))
    for tag, x, w, bias, k, _ in constant_channel_layers(rng, CONSTANT_LAYERS, acts, _act, neg128_weight=True):
        n = w.shape[0]
        k = {**k, "out_mult": np.full(n, 2**30, np.int32),
             "out_shift": np.full(n, -2 - int(rng.integers(0, 6)), np.int32)}
        with rounding_mode("onnx"):
            y = conv2d.conv2d_s8(x, w, bias, **k)
        out += _planned(f"onnx_ties_{tag}", x, y, (
            (function("conv2d", v, kd) + "_onnx", nv.conv2d_plan(k, x.shape, w, bias, y.shape, kind=kd, pointwise=True,
                                                                 sparse=v == "1x1_sparse", onnx=True))
            for v in ("1x1_sparse", "1x1") for kd in KINDS))
    return out


def _batch8(rng, x: np.ndarray) -> np.ndarray:
    """x repeated (and shuffled) to a batch of 8 (the CHWN kernels vectorise over the batch)."""
    reps = np.concatenate([x] * -(-8 // x.shape[0]))[:8]
    return reps[rng.permutation(8)]


def _chwn_conv_case(rng, tag: str, x, w, bias, k: dict) -> list[Case]:
    from neon_cases import chwn

    x8 = _batch8(rng, x)
    with rounding_mode("onnx"):
        y = conv2d.conv2d_s8(x8, w, bias, **k)
    args = neon_chwn.conv2d_chwn_plan(k, x8.shape, w, bias, y.shape, onnx=True)
    return [case(tag, "ecc_neon_conv2d_chwn_s8_onnx", args, {"input": chwn(x8)}, "output", 0, chwn(y))] if args else []


def _chwn_dw_case(rng, tag: str, x, w, bias, k: dict) -> list[Case]:
    from neon_cases import chwn

    x8 = _batch8(rng, x)
    with rounding_mode("onnx"):
        y = depthwise_conv2d.depthwise_conv2d_s8(x8, w, bias, **k)
    args = neon_chwn.depthwise_chwn_plan(k, x8.shape, w, bias, y.shape, onnx=True)
    return [case(tag, "ecc_neon_depthwise_conv2d_chwn_s8_onnx", args, {"input": chwn(x8)}, "output",
                 2 * w.shape[1] * w.shape[2], chwn(y))] if args else []
