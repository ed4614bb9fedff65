"""The DSP kernel cases of `rounding: onnx` (onnxruntime's requantization) and of weights holding -128,
for every dsp kernel with a requantization epilogue (conv2d general, 1x1, 1x1 sparse, depthwise general
and 3x3, fully_connected and its conv2d GEMM fallback, transpose_conv).

Each case goes through the compiler's own plans (toolchain/isa/dsp.py) for the onnx modes: packing.F32
(the `_onnx` entry points of Conv / depthwise / FC: onnxruntime's float32 output stage) and, for
transpose conv, packing.ONNX_MODES (the exact product rounded once, ties to even). The expected output
is the numpy reference under fixed_point.rounding_mode("onnx"), the oracle the portable `_onnx` C twins
are held to (requantize_s8_f32 for Conv / depthwise / FC, multiply_by_quantized_multiplier_rne for
transpose conv). Kinds of layers:
- random: ordinary calibrated multipliers;
- ties: multipliers 2^30 and 3 * 2^29 (odd parts 1 and 3, as power-of-two scales give) with small
  shifts and small accumulators, so that many outputs are exact ties (in the reals and in float32);
- edges: shift 0 (e = 0), multiplier 0, shifts below -31 (they give 0 under onnx), narrow ranges;
- minus128: weights holding -128 in every kernel, under both roundings (TFLM's modes too);
- f32ties (f32_tie_cases): per channel a float32 scale S and an accumulator whose float32 product
  fl32(fl32(acc) S) is exactly k + 1/2 while the real product is not (below it and above it, k odd and
  even), some accumulators past 2^24 (fl32(acc) != acc): onnxruntime's rounding and the exact one differ.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import dsp_cases
import isa_cases
from dsp_cases import CONV_SHAPES, DW_SHAPES, TCONV_SHAPES, _act, _requant
from dsp_harness import Case
from toolchain.isa import dsp
from fractions import Fraction

from toolchain.isa.packing import F32, MODES, ONNX_MODES
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import add_params, f32_scale, quantize_multiplier, rounding_mode
from toolchain.ops.pool2d import avg_pool2d_s8
from toolchain.ops.transpose_conv import transpose_conv_s8

TIE_MULTS = (1 << 30, 3 << 29)  # odd parts 1 and 3: ties reachable (packing.tie_free is False)


def tie_requant(rng: np.random.Generator, n: int, acc_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (mult, shift) with odd parts 1 or 3 and the shift that maps ~acc_scale onto ~32:
    acc * 2^30 / 2^(31 + e) = acc / 2^(e + 1), a tie for every accumulator = 2^e (mod 2^(e + 1))."""
    e = max(0, int(np.round(np.log2(max(acc_scale, 1.0) / 32))) - 1)
    mult = np.array([TIE_MULTS[int(i)] for i in rng.integers(0, 2, n)], np.int32)
    shift = -np.full(n, e, np.int32) - rng.integers(0, 2, n).astype(np.int32)
    return mult, shift


def _weights(rng: np.random.Generator, shape, *, lo: int = -127, hi: int = 128, minus128: bool = False):
    w = rng.integers(lo, hi, shape, dtype=np.int8)
    if minus128:  # about one weight in eight, every output channel at least once (OHWI / [O, K] / [1, KH, KW, C])
        flat = w.reshape(-1)
        flat[rng.random(flat.size) < 0.125] = -128
        w.reshape(-1, w.shape[-1])[0, :] = -128 if w.shape[0] == 1 else w.reshape(-1, w.shape[-1])[0, :]
        w.reshape(w.shape[0], -1)[:, 0] = -128
    return w


KINDS = ("random", "ties", "edges", "minus128")


def _layer_params(rng, kind: str, n: int, acc_scale: float):
    """(mult, shift) of one layer of `kind` (KINDS)."""
    if kind == "ties":
        return tie_requant(rng, n, acc_scale)
    mult, shift = _requant(rng, n, acc_scale, e0=kind == "edges")
    if kind == "edges" and n > 3:
        mult[3], shift[3] = 1 << 30, -40  # below 2^-32: 0 under onnx, whatever the accumulator
    return mult, shift


def _x(rng, kind: str, shape):
    return rng.integers(-16, 16, shape, dtype=np.int8) if kind == "ties" else rng.integers(-128, 128, shape,
                                                                                            dtype=np.int8)


def conv_onnx_cases(rng: np.random.Generator, kinds=KINDS) -> list[Case]:
    """conv2d (1x1, 1x1 sparse, general) of CONV_SHAPES per kind, full range and narrow."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for kind in kinds:
            zin, zout, act = ((-128, -128, "full"), (5, 3, "narrow"), (127, -7, "full"), (-3, -128, "relu"))[i % 4]
            x = _x(rng, kind, (1 + i % 2, h, wd, cin))
            w = _weights(rng, (cout, kh, kw, cin), lo=-4 if kind == "ties" else -127, hi=5 if kind == "ties" else 128,
                         minus128=kind == "minus128")
            bias = rng.integers(-5000, 5000, cout).astype(np.int32) // (10 if kind == "ties" else 1)
            if kind in ("random", "ties") and cout > 2:
                w[-1] = 0  # a constant channel: the sparse 1x1 entry points apply too
            scale = (4.0 * 16 if kind == "ties" else 80.0 * 60) * np.sqrt(kh * kw * cin)
            mult, shift = _layer_params(rng, kind, cout, scale)
            zin = 0 if kind == "ties" else zin
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += _both(f"onnx_conv{i}_{kind}", dsp_cases.conv_cases, conv2d.conv2d_s8, x, w, bias, k, kind)
    return cases


def _both(tag: str, builder, reference, x, w, bias, k: dict, kind: str, modes=(F32,)) -> list[Case]:
    """The onnx-mode cases of one layer (`modes`: F32, transpose conv ONNX_MODES), plus its TFLM-mode
    cases for the minus128 kind."""
    with rounding_mode("onnx"):
        cases = builder(tag, x, w, bias, k, reference(x, w, bias, **k), modes=modes)
    if kind == "minus128":
        cases += builder(f"{tag}_tflm", x, w, bias, k, reference(x, w, bias, **k), modes=MODES)
    return cases


def depthwise_onnx_cases(rng: np.random.Generator, kinds=KINDS) -> list[Case]:
    """depthwise (3x3 and general) of DW_SHAPES per kind."""
    cases: list[Case] = []
    for i, (h, wd, cin, m, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for kind in kinds:
            zin, zout, act = ((-128, -128, "full"), (10, -128, "relu"), (-7, 5, "narrow"), (127, 127, "full"))[i % 4]
            x = _x(rng, kind, (1 + i % 2, h, wd, cin))
            w = _weights(rng, (1, kh, kw, cin * m), lo=-4 if kind == "ties" else -127, hi=5 if kind == "ties" else 128,
                         minus128=kind == "minus128")
            bias = rng.integers(-300, 300, cin * m).astype(np.int32)
            mult, shift = _layer_params(rng, kind, cin * m,
                                        (4.0 * 16 if kind == "ties" else 80.0 * 60) * np.sqrt(kh * kw))
            zin = 0 if kind == "ties" else zin
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     depth_multiplier=m, input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            cases += _both(f"onnx_dw{i}_{kind}", dsp_cases.depthwise_cases, depthwise_conv2d.depthwise_conv2d_s8,
                           x, w, bias, k, kind)
    return cases


def fc_onnx_cases(rng: np.random.Generator, kinds=KINDS) -> list[Case]:
    """fully_connected per kind and its conv2d GEMM fallback (-128 weights: the fully_connected kernel's
    16-bit lane pairs step aside, the GEMM takes them)."""
    cases: list[Case] = []
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13), (1, 640, 16))):
        for kind in kinds:
            zin, zout, act = ((-128, -6, "full"), (127, -128, "relu"), (4, 9, "narrow"))[i % 3]
            x = _x(rng, kind, (b, kdim))
            w = _weights(rng, (o, kdim), lo=-4 if kind == "ties" else -127, hi=5 if kind == "ties" else 128,
                         minus128=kind == "minus128")
            bias = rng.integers(-300, 300, o).astype(np.int32)
            mult, shift = _layer_params(rng, kind, o, (4.0 * 16 if kind == "ties" else 80.0 * 60) * np.sqrt(kdim))
            lo, hi = _act(rng, act, zout)
            k = dict(input_offset=0 if kind == "ties" else -zin, filter_offset=0, output_offset=zout, out_mult=mult,
                     out_shift=shift, act_min=lo, act_max=hi)
            cases += _both(f"onnx_fc{i}_{kind}", fc_and_gemm_cases, fully_connected.fully_connected_s8, x, w,
                           bias, k, kind)
    return cases


def fc_and_gemm_cases(tag: str, x, w, bias, k: dict, expected, modes) -> list[Case]:
    """dsp_cases.fc_cases plus the conv2d GEMM fallback of fully_connected (dsp.fc_as_conv_plan_why:
    1x1 when K % 4 == 0, general), the kernels that take its -128 weights."""
    plans = ((dsp_cases.function("conv2d", "1x1" if pw else "", mode),
              dsp.plan_or_none(dsp.fc_as_conv_plan_why(k, x.shape, w, bias, expected.shape, mode=mode, pointwise=pw)))
             for pw in (True, False) for mode in modes)
    return dsp_cases.fc_cases(tag, x, w, bias, k, expected, modes) + isa_cases.planned_cases(
        "dsp", f"{tag}_gemm", x, expected, plans)


def tconv_onnx_cases(rng: np.random.Generator, kinds=KINDS) -> list[Case]:
    """transpose_conv of TCONV_SHAPES per kind."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pad, out_hw) in enumerate(TCONV_SHAPES):
        for kind in kinds:
            zin, zout, act = ((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"), (3, 20, "narrow"))[i % 4]
            x = _x(rng, kind, (1 + i % 2, h, wd, cin))
            w = _weights(rng, (cout, kh, kw, cin), lo=-4 if kind == "ties" else -127, hi=5 if kind == "ties" else 128,
                         minus128=kind == "minus128")
            bias = rng.integers(-300, 300, cout).astype(np.int32)
            taps = -(-kh // st[0]) * -(-kw // st[1]) * cin
            mult, shift = _layer_params(rng, kind, cout, (4.0 * 16 if kind == "ties" else 80.0 * 60) * np.sqrt(taps))
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pad, out_hw=out_hw, input_offset=0 if kind == "ties" else -zin,
                     output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += _both(f"onnx_tconv{i}_{kind}", dsp_cases.transpose_conv_cases, transpose_conv_s8, x, w, bias, k,
                           kind, ONNX_MODES)
    return cases


def boundary_cases() -> list[Case]:
    """1x1 convs whose accumulators sweep across the exact ties odd * m_odd / 2 near 255
    (1024 * m_odd * 2^21 / 2^32; odd parts 509 and 511, the tie-free bound of transpose conv's RNE
    `_onnx` mode, packing.TIE_FREE_ODD): on the F32 entry points these are float32 ties too."""
    cases: list[Case] = []
    for odd in (509, 511):
        x = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1).repeat(4, axis=3)
        w = np.array([[[[4, 0, 0, 0]]], [[[-4, 0, 0, 0]]], [[[2, 1, 1, 0]]], [[[64, 0, 0, 0]]]], np.int8)
        bias = np.array([512, -512, 0, 0], np.int32)
        k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(16, 16), input_offset=0, output_offset=-128,
                 out_mult=np.full(4, odd << 21, np.int32), out_shift=np.full(4, -1, np.int32), act_min=-128,
                 act_max=127)
        with rounding_mode("onnx"):
            cases += dsp_cases.conv_cases(f"onnx_tiebound{odd}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k),
                                          modes=(F32,))
    return cases


def add_onnx_cases(rng: np.random.Generator) -> list[Case]:
    """dsp/add's onnx entry point: ordinary output multipliers (ECC_DSP_RNE), ties (2^30, ECC_DSP_RNE_CLAMP),
    output shift 0, narrow ranges; expected: add_s8 under rounding onnx."""
    cases: list[Case] = []
    for i, (size, zout, lo, hi, tie) in enumerate(((1024, -128, -128, 127, False), (77, 127, -128, 127, True),
                                                   (300, 11, -30, 90, False), (513, -3, -128, 127, True),
                                                   (64, 0, -128, 127, False))):
        s1, s2, so = rng.uniform(0.01, 0.1, 3)
        z1, z2 = (int(v) for v in rng.integers(-128, 128, 2))
        p = add_params(s1, z1, s2, z2, so * (40 if i == 4 else 1), zout)
        if tie:  # output multiplier with odd part 1: many sums are exact ties
            p = replace(p, output_mult=1 << 30, output_shift=min(p.output_shift, -1))
        x1 = rng.integers(-128, 128, size, dtype=np.int8)
        x2 = rng.integers(-128, 128, size, dtype=np.int8)
        with rounding_mode("onnx"):
            for c in dsp_cases.add_cases(f"onnx_add{i}", x1, x2, p, lo, hi, add.add_s8(x1, x2, p, lo, hi)):
                cases.append(replace(c, name=c.name + "_onnx", function="ecc_dsp_add_onnx_s8"))
    return cases


def avg_pool_onnx_cases(rng: np.random.Generator) -> list[Case]:
    """dsp/avg_pool2d's onnx entry point (pad_value = the input zero point, the `_onnx` twin's arguments):
    odd channel counts, padding counted or not, windows whose means are exact ties (2 and 4 cells),
    zero points -128, 0, 127 and between; expected: avg_pool2d_s8 under rounding onnx."""
    cases: list[Case] = []
    pools = [((6, 7, 13), (3, 3), (2, 2), (1, 1, 1, 1)), ((5, 5, 8), (2, 2), (2, 2), (0, 0, 1, 1)),
             ((4, 8, 5), (1, 2), (1, 2), (0, 0, 0, 0)), ((4, 6, 20), (3, 2), (1, 2), (1, 0, 1, 1))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, zp in enumerate((-128, 0, 127, -37)):
            lo, hi = ((-128, 127), (-20, 60))[j % 2]
            x = rng.integers(-128, 128, (1 + j % 2, h, wd, ch), dtype=np.int8)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=lo, act_max=hi)
            pad = dict(count_include_pad=j % 2 == 1, pad_end=pads[2:], pad_value=zp)
            with rounding_mode("onnx"):
                y = avg_pool2d_s8(x, **pad, **kw, zero_point=zp)
            c = isa_cases.pool_case("dsp", f"onnx_avg{i}_{j}", "avg", x, kw, y, **pad)
            cases.append(replace(c, name=c.name + "_onnx", function="ecc_dsp_avg_pool2d_onnx_s8"))
    return cases


def f32_ties(rng: np.random.Generator, n: int, big: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n channels (acc int64, mult int32, shift int32) whose float32 product fl32(fl32(acc) S),
    S = f32_scale(mult, shift), is exactly k + 1/2 while the real product acc S is not: alternately
    below and above k + 1/2, k of both parities and signs (so rint goes up where the reals go down, and
    the reverse). big: accumulators in [2^24, 2^29) (fl32(acc) rounds acc), else in [2^9, 2^22).
    (mult, shift) = quantize_multiplier(S), exact for a float32 S (f32_scale gives S back)."""
    accs, mults, shifts = [], [], []
    while len(accs) < n:
        acc = int(rng.integers(1 << 24, 1 << 29)) if big else int(rng.integers(1 << 9, 1 << 22))
        acc *= 1 if rng.random() < 0.5 else -1
        k = int(rng.integers(-110, 110))
        s = np.float32((k + 0.5) / acc)
        if not 2.0**-31 < abs(float(s)) < 0.5 or s <= 0:
            continue
        m, sh = quantize_multiplier(float(s))
        if np.float32(f32_scale(m, sh)) != s:
            continue
        prod = np.float32(np.float32(acc) * s)
        exact = Fraction(acc) * Fraction(float(s))
        want_above = len(accs) % 2 == 0
        if float(prod) != k + 0.5 or exact == Fraction(2 * k + 1, 2) or (exact > Fraction(2 * k + 1, 2)) != want_above:
            continue
        accs.append(acc)
        mults.append(m)
        shifts.append(sh)
    return np.array(accs, np.int64), np.array(mults, np.int32), np.array(shifts, np.int32)


def f32_tie_cases(rng: np.random.Generator) -> list[Case]:
    """Layers whose accumulators hit f32_ties: 1x1 conv (and 1x1 sparse, general), depthwise 3x3 and
    general, fully connected (and its GEMM fallback). Channel c reads input x_c running over [-128, 127]
    with weight 1 (the centre tap for depthwise) and bias acc_c - t_c: the pixel (or row) where x = t_c
    accumulates exactly acc_c, its neighbours acc_c +- 1.. Output zero points 0, -128 and 5, full range
    and narrow ones (the C walk and the assembly of the F32 mode)."""
    cases: list[Case] = []
    perm = lambda n: rng.permutation(np.arange(-128, 128)).astype(np.int8).reshape(n)  # noqa: E731
    for i, (big, zout, lo, hi) in enumerate(((False, 0, -128, 127), (True, -128, -128, 127), (False, 5, -60, 90),
                                             (True, 3, -128, 127))):
        n = 12 if big else 16
        acc, mult, shift = f32_ties(rng, n, big)
        t = rng.integers(-128, 128, n)
        cin = -(-n // 4) * 4
        x = np.stack([perm((16, 16)) for _ in range(cin)], axis=-1)[None]
        bias = np.zeros(n, np.int64)
        w = np.zeros((n, 1, 1, cin), np.int8)
        for c in range(n):
            w[c, 0, 0, c] = 1
            bias[c] = acc[c] - int(t[c])
            x[0, rng.integers(0, 16), rng.integers(0, 16), c] = t[c]  # one more pixel at the tie
        k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(16, 16), input_offset=0, output_offset=zout,
                 out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
        with rounding_mode("onnx"):
            cases += dsp_cases.conv_cases(f"onnx_conv_f32ties{i}", x, w, bias.astype(np.int32), k,
                                          conv2d.conv2d_s8(x, w, bias.astype(np.int32), **k), modes=(F32,))
        # depthwise: the same channels, 3x3 with only the centre tap, padding 1
        wd = np.zeros((1, 3, 3, cin), np.int8)
        wd[0, 1, 1, :n] = 1
        xd = x[..., :cin]
        md = np.concatenate([mult, np.zeros(cin - n, np.int32)])
        sd = np.concatenate([shift, np.zeros(cin - n, np.int32)])
        bd = np.concatenate([bias, np.zeros(cin - n, np.int64)]).astype(np.int32)
        kd = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(16, 16), depth_multiplier=1, input_offset=0,
                  output_offset=zout, out_mult=md, out_shift=sd, act_min=lo, act_max=hi)
        with rounding_mode("onnx"):
            cases += dsp_cases.depthwise_cases(f"onnx_dw_f32ties{i}", xd, wd, bd, kd,
                                               depthwise_conv2d.depthwise_conv2d_s8(xd, wd, bd, **kd), modes=(F32,))
        # fully connected: 256 rows, row r of input c is x[.., c] flattened
        xf = x.reshape(256, cin)[:, :cin]
        wf = w.reshape(n, cin)
        kf = dict(input_offset=0, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo,
                  act_max=hi)
        with rounding_mode("onnx"):
            cases += fc_and_gemm_cases(f"onnx_fc_f32ties{i}", xf, wf, bias.astype(np.int32), kf,
                                       fully_connected.fully_connected_s8(xf, wf, bias.astype(np.int32), **kf), (F32,))
    return cases


def onnx_cases(seed: int = 13) -> list[Case]:
    """Every onnx-rounding and -128-weight case (test_dsp_kernels runs them on every dsp board)."""
    rng = np.random.default_rng(seed)
    return (conv_onnx_cases(rng) + depthwise_onnx_cases(rng) + fc_onnx_cases(rng) + tconv_onnx_cases(rng)
            + boundary_cases() + f32_tie_cases(rng) + add_onnx_cases(rng) + avg_pool_onnx_cases(rng))
