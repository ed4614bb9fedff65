"""The cases of the DSP kernel tests: every CMSIS-NN conformance set of the families the dsp
kernels implement, and seeded random cases for the corners (odd channel counts, strides, padding
on every side, dilation, depth multipliers, zero points -128/127, every requantization mode).

Each case goes through the compiler's own glue (toolchain/isa/dsp.py's plans and `dsp_exact`) for every
dsp entry point that accepts it, so the re-packed weights, folded biases and requantization arrays
are the ones a model would get; the expected output is the conformance output_ref or the numpy
reference of toolchain/ops (the portable kernels are held to the same references). The shared
half (conformance sets, pool / add argument lists) is isa_cases.py.
"""
from __future__ import annotations

import numpy as np

import dsp_gemm3_cases
import isa_cases
from dsp_harness import Case
from isa_cases import CONF, FAMILIES, _act, _requant, conformance_sets  # noqa: F401 - re-exported
from toolchain.isa import dsp, dsp_transpose
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import AddParams, add_params
from toolchain.isa.packing import MODES, mode_rounding, mode_tail
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8
from toolchain.ops.transpose_conv import transpose_conv_s8

ISA = "dsp"


def function(op: str, variant: str, mode: str) -> str:
    """The C entry point of a dsp variant (packing.dsp_variant's naming rule)."""
    return f"ecc_dsp_{op}{'_' + variant if variant else ''}{mode_tail(mode)}_s8"


# ---- per-op case builders: every dsp entry point that accepts the call ------------------------
# modes: the requantization modes tried (packing.MODES: TFLM's rounding; F32 or, for transpose conv,
# ONNX_MODES: onnx's, whose expected output the caller computes under fixed_point.rounding_mode("onnx"))
def conv_cases(tag: str, x, w, bias, k: dict, expected, modes=MODES) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1" if pointwise else "", mode),
         dsp.conv2d_plan(k, x.shape, w, bias, expected.shape, mode=mode, pointwise=pointwise))
        for pointwise in (True, False) for mode in modes)) + isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1_sparse", mode),
         dsp.conv2d_plan(k, x.shape, w, bias, expected.shape, mode=mode, pointwise=True, sparse=True))
        for mode in modes))


def depthwise_cases(tag: str, x, w, bias, k: dict, expected, modes=MODES) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("depthwise_conv2d", "3x3" if three else "", mode),
         dsp.depthwise_plan(k, x.shape, w, bias, expected.shape, mode=mode, three=three))
        for three in (True, False) for mode in modes))


def fc_cases(tag: str, x, w, bias, k: dict, expected, modes=MODES) -> list[Case]:
    rounding = mode_rounding(modes[0])
    return isa_cases.planned_cases(ISA, tag, x, expected, [
        (f"ecc_dsp_fully_connected{'_onnx' if rounding == 'onnx' else ''}_s8",
         dsp.fc_plan(k, x.shape, w, bias, expected.shape, rounding=rounding))])


def transpose_conv_cases(tag: str, x, w, bias, k: dict, expected, modes=MODES) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("transpose_conv", "", mode),
         dsp_transpose.transpose_conv_plan(k, x.shape, w, bias, expected.shape, mode=mode)) for mode in modes))


pool_cases = isa_cases.pool_cases_for(ISA, isa_cases.avg_window_fits_u8)


def add_cases(tag: str, x1, x2, p: AddParams, lo: int, hi: int, expected) -> list[Case]:
    if not dsp.dsp_exact(p):
        return []
    return [isa_cases.add_case(ISA, tag, x1, x2, p, lo, hi, expected, 2048)]


# ---- CMSIS-NN conformance sets (isa_cases.conformance_sets) ------------------------------------
def conformance_cases(family: str, name: str) -> list[Case]:
    return isa_cases.conformance_cases(family, name, conv_cases, depthwise_cases, fc_cases, pool_cases, add_cases)


# ---- seeded random cases ----------------------------------------------------------------------
CONV_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pads t/l/b/r, dilation)
    (7, 9, 3, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (8, 8, 16, 8, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (6, 5, 8, 5, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2)),
    (5, 7, 12, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    (9, 9, 8, 7, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1)),
    (4, 6, 13, 9, 1, 3, (1, 2), (0, 1, 0, 1), (1, 1)),
    (6, 6, 4, 16, 5, 5, (1, 1), (2, 1, 2, 3), (1, 1)),
    (3, 3, 20, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
]
DW_SHAPES = [  # (H, W, Cin, mult, KH, KW, stride, pads, dilation)
    (7, 7, 8, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (9, 8, 12, 1, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (5, 6, 4, 1, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1)),
    (6, 6, 13, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (6, 7, 3, 2, 3, 3, (1, 2), (1, 1, 1, 1), (1, 1)),
    (5, 5, 4, 3, 3, 3, (1, 1), (1, 0, 1, 2), (1, 1)),
    (8, 8, 8, 1, 5, 5, (1, 1), (4, 4, 4, 4), (2, 2)),
    (3, 3, 16, 1, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
]


def random_cases(seed: int = 6) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for j, (zin, zout, act) in enumerate(((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"),
                                              (3, 20, "narrow"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            w = rng.integers(-127, 128, (cout, kh, kw, cin), dtype=np.int8)
            bias = rng.integers(-5000, 5000, cout).astype(np.int32)
            mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60, e0=j == 3)
            if j == 3 and cout > 2:
                bias[2] = 2**31 - 1  # dead channel (multiplier 0) with a saturated bias, as in real models
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, input_offset=-zin, output_offset=zout,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"rand_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    for i, (h, wd, cin, m, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for j, (zin, zout, act) in enumerate(((-128, -128, "full"), (127, 127, "relu"), (10, -128, "relu"),
                                              (-7, 5, "narrow"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            w = rng.integers(-127, 128, (1, kh, kw, cin * m), dtype=np.int8)
            bias = rng.integers(-3000, 3000, cin * m).astype(np.int32)
            mult, shift = _requant(rng, cin * m, 80.0 * np.sqrt(kh * kw) * 60, e0=j == 3)
            if j == 3 and cin * m > 2:
                bias[2] = -(2**31)
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, depth_multiplier=m, input_offset=-zin,
                     output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += depthwise_cases(f"rand_dw{i}_{j}", x, w, bias, k,
                                     depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k))
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13))):
        for j, (zin, zout, act) in enumerate(((-128, -6, "full"), (127, -128, "relu"), (4, 9, "narrow"))):
            x = rng.integers(-128, 128, (b, kdim), dtype=np.int8)
            w = rng.integers(-127, 128, (o, kdim), dtype=np.int8)
            bias = rng.integers(-3000, 3000, o).astype(np.int32)
            mult, shift = _requant(rng, o if j else 1, 80.0 * np.sqrt(kdim) * 60)  # j == 0: per-tensor
            lo, hi = _act(rng, act, zout)
            k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            cases += fc_cases(f"rand_fc{i}_{j}", x, w, bias, k, fully_connected.fully_connected_s8(x, w, bias, **k))
    cases += fc_row_cases(rng) + saturated_bias_cases(rng) + constant_channel_cases(rng) + transpose_conv_random(rng)
    pools = [((6, 7, 13), (3, 3), (2, 2), (1, 1, 1, 1)), ((5, 5, 8), (2, 2), (2, 2), (0, 0, 1, 1)),
             ((8, 8, 3), (8, 8), (1, 1), (0, 0, 0, 0)), ((4, 6, 20), (3, 2), (1, 2), (1, 0, 1, 1))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, (lo, hi) in enumerate(((-128, 127), (-20, 60))):
            x = rng.integers(-128, 128, (1 + j, h, wd, ch), dtype=np.int8)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=lo, act_max=hi)
            pad = dict(count_include_pad=j == 1, pad_end=pads[2:], pad_value=int(rng.integers(-128, 128)))
            cases += pool_cases(f"rand_avg{i}_{j}", "avg", x, kw, avg_pool2d_s8(x, **pad, **kw), **pad)
            cases += pool_cases(f"rand_max{i}_{j}", "max", x, kw, max_pool2d_s8(x, **kw))
    for i, (size, zout, lo, hi) in enumerate(((1024, -128, -128, 127), (77, 127, -128, 127), (300, 11, -30, 90))):
        s1, s2, so = rng.uniform(0.01, 0.1, 3)
        z1, z2 = (int(v) for v in rng.integers(-128, 128, 2))
        p = add_params(s1, z1, s2, z2, so, zout)
        x1 = rng.integers(-128, 128, size, dtype=np.int8)
        x2 = rng.integers(-128, 128, size, dtype=np.int8)
        cases += add_cases(f"rand_add{i}", x1, x2, p, lo, hi, add.add_s8(x1, x2, p, lo, hi))
    return (cases + isa_cases.maxmin_cases(ISA, np.random.default_rng(seed + 1000))
            + dsp_gemm3_cases.gemm3_cases(conv_cases, np.random.default_rng(seed + 2000)))


def fc_row_cases(rng: np.random.Generator) -> list[Case]:
    """dsp/fully_connected at the edges of its blocking: output row counts around the 4 rows per pass,
    K around the 8-k blocks (and an odd number of blocks), zero points -128 and 127, every mode."""
    cases: list[Case] = []
    for i, (b, kdim, o) in enumerate(((1, 1, 1), (1, 3, 2), (2, 4, 3), (1, 5, 4), (1, 8, 5), (1, 9, 6), (3, 12, 7),
                                      (1, 15, 8), (1, 16, 9), (1, 17, 11), (1, 24, 12), (2, 40, 13), (1, 640, 16))):
        zin, zout, act = ((-128, -128, "full"), (127, 127, "full"), (-128, -128, "relu"), (127, 5, "narrow"))[i % 4]
        x = rng.integers(-128, 128, (b, kdim), dtype=np.int8)
        x[0, : kdim // 2] = -128 if i % 2 else 127  # the ends of the int8 range
        w = rng.integers(-127, 128, (o, kdim), dtype=np.int8)
        bias = rng.integers(-3000, 3000, o).astype(np.int32)
        mult, shift = _requant(rng, o, 80.0 * np.sqrt(kdim) * 60, e0=i % 3 == 0)
        lo, hi = _act(rng, act, zout)
        k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift,
                 act_min=lo, act_max=hi)
        cases += fc_cases(f"rows_fc{i}", x, w, bias, k, fully_connected.fully_connected_s8(x, w, bias, **k))
    return cases


def saturated_weights_bias(rng: np.random.Generator, o: int, kdim: int, every: int = 3):
    """[O, K] weights, int32 bias and (mult, shift) where every `every`-th channel is like the
    channels of real models whose bias saturated near +-2^30 (MobileNet VWW): its accumulator
    cannot be doubled in int32, yet its output is one value for every input (the dsp kernels pack
    it as a constant, packing.constant_channels); the others are ordinary."""
    w = rng.integers(-127, 128, (o, kdim), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int64)
    mult, shift = _requant(rng, o, 80.0 * np.sqrt(kdim) * 60)
    for c in range(0, o, every):
        bias[c] = (1 << 30) * (1 if c % 2 else -1) + int(rng.integers(-200, 200))
        mult[c], shift[c] = int(rng.integers(1 << 30, 1 << 31)), -int(rng.integers(25, 32))
    return w, bias.astype(np.int32), mult, shift


def saturated_bias_cases(rng: np.random.Generator) -> list[Case]:
    """conv2d (1x1 and general) and fully_connected layers holding saturated-bias constant channels,
    zero points -128 and 127, every mode: the dsp kernels take them (tests assert that) and stay
    exact."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, pad) in enumerate(((5, 6, 16, 9, 1, 0), (4, 4, 64, 12, 1, 0),
                                                     (5, 5, 8, 7, 3, 1), (6, 5, 3, 6, 3, 1))):
        for j, (zin, zout, act) in enumerate(((-128, -128, "relu"), (127, 127, "full"), (-128, 3, "narrow"))):
            x = rng.integers(-128, 128, (1, h, wd, cin), dtype=np.int8)
            x[0, 0] = -128 if j % 2 else 127
            w, bias, mult, shift = saturated_weights_bias(rng, cout, kh * kh * cin)
            w = w.reshape(cout, kh, kh, cin)
            pads = (pad,) * 4
            lo, hi = _act(rng, act, zout)
            out_hw = Window((kh, kh), (1, 1), (1, 1), pads).out_hw(h, wd)
            k = dict(stride=(1, 1), pad=pads[:2], dilation=(1, 1), out_hw=out_hw,
                     input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"sat_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    for i, (b, kdim, o) in enumerate(((1, 64, 10), (2, 13, 7), (1, 256, 4))):
        zin, zout, act = ((-128, -128, "relu"), (127, 127, "full"), (-128, 3, "narrow"))[i]
        x = rng.integers(-128, 128, (b, kdim), dtype=np.int8)
        w, bias, mult, shift = saturated_weights_bias(rng, o, kdim)
        lo, hi = _act(rng, act, zout)
        k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift,
                 act_min=lo, act_max=hi)
        cases += fc_cases(f"sat_fc{i}", x, w, bias, k, fully_connected.fully_connected_s8(x, w, bias, **k))
    return cases


# (H, W, Cin, Cout, stride, batches, constant channels): none, all, odd live counts (7, 1), constants
# at both ends and adjacent, a single live channel, a VWW-like layer (most of 64 constant)
CONSTANT_LAYERS = [
    (5, 6, 16, 10, 1, 1, ()),
    (3, 5, 8, 7, 1, 2, tuple(range(7))),
    (4, 4, 12, 9, 1, 1, (0, 1, 8)),
    (5, 5, 16, 12, 2, 1, (0, 3, 4, 5, 11)),
    (3, 3, 4, 5, 1, 2, (0, 1, 2, 4)),
    (6, 7, 8, 16, 1, 1, tuple(range(1, 15))),
    (3, 4, 64, 64, 1, 1, tuple(sorted(set(range(64)) - {2, 3, 17, 30, 31, 32, 50, 63}))),
]


def constant_weights_bias(rng: np.random.Generator, o: int, kdim: int, const: tuple[int, ...]):
    """[O, K] weights, int32 bias, (mult, shift) with the channels `const` made constant four ways in
    turn: a bias saturated far above the accumulator (+-2^30, clamps to an end of the output range),
    the same with a multiplier too large to double the accumulator (fold_layer rewrites it), zero
    weights with an ordinary bias (a value inside the range), multiplier 0 (the zero point)."""
    w = rng.integers(-127, 128, (o, kdim), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int64)
    mult, shift = _requant(rng, o, 80.0 * np.sqrt(kdim) * 60)
    for i, c in enumerate(const):
        kind = i % 4
        if kind == 0:
            bias[c] = (1 << 30) * (1 if c % 2 else -1)
        elif kind == 1:
            bias[c] = (1 << 30) * (1 if c % 3 else -1) + int(rng.integers(-200, 200))
            mult[c], shift[c] = int(rng.integers(1 << 30, 1 << 31)), -int(rng.integers(25, 32))
        elif kind == 2:
            w[c] = 0
            bias[c] = int(rng.integers(-20000, 20000))
        else:
            mult[c], shift[c] = 0, 0
    return w, bias.astype(np.int32), mult, shift


def constant_channel_layers(rng: np.random.Generator, layers, acts, act_range, *, neg128_weight: bool = False):
    """Yield (tag, x, w, bias, k, y) per 1x1 layer of `layers` (H, W, Cin, Cout, stride, batches, constant
    channels; the constant ones made by constant_weights_bias) and per (input zp, output zp, act kind) of
    `acts`: raw int8 x with an extreme first pixel, OHWI weights, conv2d_s8 keyword arguments `k` and the
    reference output y. act_range(kind, zp) -> (act_min, act_max); neg128_weight: the third act's layers
    put a -128 weight in their last live row (kernels pairing products in int16 lanes must step aside)."""
    for i, (h, wd, cin, cout, st, nb, const) in enumerate(layers):
        for j, (zin, zout, act) in enumerate(acts):
            x = rng.integers(-128, 128, (nb, h, wd, cin), dtype=np.int8)
            x[0, 0] = -128 if j % 2 else 127
            w, bias, mult, shift = constant_weights_bias(rng, cout, cin, const)
            live = [c for c in range(cout) if c not in const]
            if neg128_weight and j == 2 and live:
                w[live[-1], 0] = -128
            w = w.reshape(cout, 1, 1, cin)
            lo, hi = act_range(act, zout)
            out_hw = Window((1, 1), (st, st), (1, 1), (0, 0, 0, 0)).out_hw(h, wd)
            k = dict(stride=(st, st), pad=(0, 0), dilation=(1, 1), out_hw=out_hw,
                     input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            yield f"const_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k)


def constant_channel_cases(rng: np.random.Generator) -> list[Case]:
    """1x1 layers mixing live channels with channels proven constant (CONSTANT_LAYERS), zero points
    -128 and 127, every mode: the sparse entry points (dead channels neither stored nor computed)
    next to the dense ones, both exact against conv2d_s8."""
    acts = ((-128, -128, "relu"), (127, 127, "full"), (-128, 3, "narrow"))
    return [c for layer in constant_channel_layers(rng, CONSTANT_LAYERS, acts, lambda a, z: _act(rng, a, z))
            for c in conv_cases(*layer)]


TCONV_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pad top/left, out_hw)
    (4, 5, 16, 8, 3, 3, (2, 2), (0, 0), (8, 10)),   # decoder-like, SAME (TFLite pads the end)
    (3, 4, 3, 5, 3, 3, (2, 2), (0, 0), (7, 9)),     # VALID, in_c % 4 != 0
    (5, 3, 8, 7, 4, 4, (2, 2), (1, 1), (10, 6)),    # even kernel, pads on top/left
    (3, 3, 5, 3, 2, 2, (3, 3), (0, 0), (9, 9)),     # kernel < stride: phases without taps
    (4, 4, 4, 9, 3, 2, (1, 2), (1, 0), (4, 8)),     # mixed strides, odd pads
    (2, 3, 12, 2, 5, 3, (3, 2), (2, 1), (5, 6)),
    (3, 3, 7, 4, 3, 3, (1, 1), (1, 1), (3, 3)),     # stride 1
    (3, 3, 4, 4, 3, 3, (2, 2), (0, 0), (8, 8)),     # output beyond the last tap (bias only)
    (1, 1, 1, 1, 1, 1, (1, 1), (0, 0), (1, 1)),
]


def transpose_conv_random(rng: np.random.Generator) -> list[Case]:
    """dsp/transpose_conv over TCONV_SHAPES (odd channel counts, strides 1-3, kernels smaller than the
    stride, pads, outputs past the last tap), zero points -128 and 127, every mode, a dead channel
    with a saturated bias; expected: transpose_conv_s8 (the reference the portable kernel matches)."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pad, out_hw) in enumerate(TCONV_SHAPES):
        for j, (zin, zout, act) in enumerate(((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"),
                                              (3, 20, "narrow"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            x[0, 0, 0] = 127 if j % 2 else -128
            w = rng.integers(-127, 128, (cout, kh, kw, cin), dtype=np.int8)
            bias = None if i == 5 else rng.integers(-5000, 5000, cout).astype(np.int32)
            taps = -(-kh // st[0]) * -(-kw // st[1]) * cin
            mult, shift = _requant(rng, cout, 80.0 * np.sqrt(taps) * 60, e0=j == 3)
            if j == 3 and cout > 2 and bias is not None:
                bias[2] = 2**31 - 1  # dead channel (multiplier 0) with a saturated bias
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pad, out_hw=out_hw, input_offset=-zin, output_offset=zout, out_mult=mult,
                     out_shift=shift, act_min=lo, act_max=hi)
            cases += transpose_conv_cases(f"rand_tconv{i}_{j}", x, w, bias, k, transpose_conv_s8(x, w, bias, **k))
    return cases


# ---- the tap-paired 3x3 depthwise (dsp/depthwise_conv2d_3x3p: RELU mode, t-rows of >= 8 / 6 outputs) -------
PAIRED_SHAPES = [  # (H, W, C, stride, pads t/l/b/r, batches): what each exercises
    (10, 9, 8, (1, 1), (1, 1, 1, 1), 1),     # paired along the height (9 % 4 != 0, 10 > 9), tail of 2
    (6, 19, 4, (1, 1), (1, 1, 1, 1), 2),     # along the width, tail of 3 (two in assembly, one in C)
    (25, 5, 16, (1, 1), (1, 1, 1, 1), 1),    # KWS's shape: along the height, 6 steps and a tail of 1
    (8, 12, 4, (1, 1), (0, 0, 0, 0), 1),     # no padding, tail of 2
    (6, 10, 12, (1, 1), (2, 2, 2, 2), 1),    # padding 2 (a group of padding only), 12 channels
    (9, 16, 8, (2, 1), (1, 1, 1, 1), 1),     # stride 2 across the paired axis, no tail
    (9, 17, 12, (2, 2), (0, 0, 1, 1), 2),    # stride 2, padding only after, no tail
    (11, 25, 4, (2, 2), (1, 1, 1, 1), 1),    # stride 2, tail of 1
    (5, 22, 8, (2, 2), (0, 0, 1, 1), 1),     # stride 2, tail of 3 (two and one in assembly)
    (21, 6, 4, (2, 1), (1, 1, 1, 1), 1),     # along the height at stride 2, tail of 3
    (10, 16, 4, (3, 1), (1, 1, 1, 1), 1),    # stride 3 across the paired axis (no row kept in the ring)
]


def paired_cases(seed: int = 16) -> list[Case]:
    """dsp/depthwise_conv2d_3x3p on PAIRED_SHAPES with input zero points -128, 127 and 5 and weights of
    -128 and 127 among random ones; the plan must apply (RELU mode: output zero point -128, range
    [-128, 127])."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for i, (h, wd, c, st, pads, b) in enumerate(PAIRED_SHAPES):
        zin = (-128, 127, 5)[i % 3]
        x = rng.integers(-128, 128, (b, h, wd, c), dtype=np.int8)
        w = rng.integers(-128, 128, (1, 3, 3, c), dtype=np.int8)
        w[0, i % 3, (i + 1) % 3, :] = -128
        w[0, (i + 2) % 3, i % 3, ::2] = 127
        bias = rng.integers(-3000, 3000, c).astype(np.int32)
        mult, shift = _requant(rng, c, 80.0 * 3 * 60)
        out_hw = Window((3, 3), st, (1, 1), pads).out_hw(h, wd)
        k = dict(stride=st, pad=pads[:2], dilation=(1, 1), out_hw=out_hw, depth_multiplier=1, input_offset=-zin,
                 output_offset=-128, out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
        expected = depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k)
        tr = dsp.paired_transposed(*expected.shape[1:3])
        pstride = (st[0] if tr else st[1])
        plan = dsp.depthwise_paired_plan_why(k, x.shape, w, bias, expected.shape, pstride=pstride)
        assert not isinstance(plan, str), (PAIRED_SHAPES[i], plan)
        cases += isa_cases.planned_cases(ISA, f"paired{i}", x, expected, [
            (function("depthwise_conv2d", "3x3p" if pstride == 1 else "3x3p_s2", "relu"), plan)])
    return cases
