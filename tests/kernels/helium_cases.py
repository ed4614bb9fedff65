"""The cases of the Helium kernel tests: every CMSIS-NN conformance set of the families the helium
kernels implement, and seeded random cases for the corners (odd channel counts, K not a multiple of
16, strides, padding on every side, dilation, zero points -128/127, -128 weights in the GEMM
kernels, dead channels, both requantization modes).

Each case goes through the compiler's own glue (toolchain/isa/helium.py) for every helium
entry point that accepts it, so the re-packed weights, folded biases and requantization records are
the ones a model would get; the expected output is the conformance output_ref or the numpy
reference of toolchain/ops. Sizes stay small: QEMU emulates MVE at about 14 M instructions/s. The
shared half (conformance sets, pool / add argument lists) is isa_cases.py.
"""
from __future__ import annotations

import numpy as np

import isa_cases
from helium_harness import Case
from isa_cases import CONF, FAMILIES, _act, _requant, conformance_sets  # noqa: F401 - re-exported
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.isa import helium as hv
from toolchain.isa.helium_rq import TFLM_MODES
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import AddParams, add_params
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8

ISA = "helium"


def function(op: str, variant: str, mode: str) -> str:
    """The C entry point of a helium variant (isa/helium.helium_variant's naming rule)."""
    return f"ecc_helium_{op}{'_' + variant if variant else ''}{hv.TAILS[mode]}_s8"


# ---- per-op case builders: every helium entry point that accepts the call ---------------------
def conv_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1" if pointwise else "", mode),
         hv.conv_plan(k, x.shape, w, bias, expected.shape, mode=mode, pointwise=pointwise))
        for pointwise in (True, False) for mode in TFLM_MODES))


def sparse_conv_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    """The conv2d_1x1_sparse entry points that accept the call (a 1x1 layer with a constant channel)."""
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1_sparse", mode),
         hv.conv_plan(k, x.shape, w, bias, expected.shape, mode=mode, pointwise=True, sparse=True))
        for mode in TFLM_MODES))


def depthwise_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("depthwise_conv2d", v, mode), plan(k, x.shape, w, bias, expected.shape, mode=mode))
        for v, plan in (("", hv.dw_plan), ("3x3", hv.dw3_plan)) for mode in TFLM_MODES))


def fc_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("fully_connected", "", mode), hv.fc_plan(k, x.shape, w, bias, expected.shape, mode=mode))
        for mode in TFLM_MODES))


pool_cases = isa_cases.pool_cases_for(ISA, isa_cases.avg_window_fits_u8)


def add_cases(tag: str, x1, x2, p: AddParams, lo: int, hi: int, expected) -> list[Case]:
    if not hv.add_exact(p):
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
    (5, 7, 16, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    (9, 9, 32, 7, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1)),
    (5, 3, 12, 9, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    (4, 6, 13, 9, 1, 3, (1, 2), (0, 1, 0, 1), (1, 1)),
    (6, 6, 4, 16, 5, 5, (1, 1), (2, 1, 2, 3), (1, 1)),
    (3, 3, 20, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (3, 4, 48, 5, 1, 1, (1, 2), (0, 0, 0, 0), (1, 1)),
    (6, 6, 8, 16, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    (9, 7, 3, 8, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
]
DW_SHAPES = [  # (H, W, C, KH, KW, stride, pads, dilation)
    (7, 7, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (9, 8, 20, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (5, 6, 16, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1)),
    (6, 6, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (5, 5, 35, 3, 3, (1, 2), (1, 0, 1, 2), (1, 1)),
    (8, 8, 8, 5, 5, (1, 1), (4, 4, 4, 4), (2, 2)),
    (3, 3, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
    (6, 4, 3, 10, 4, (2, 1), (4, 1, 5, 2), (1, 1)),
    # the 3x3 kernel (helium depthwise_conv2d_3x3: stride_w 1, >= 16 channels): rows of odd and even width,
    # channels not a multiple of 16 or 4, padding on every side or none, stride_h 2
    (5, 5, 17, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (4, 6, 40, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1)),
    (3, 7, 18, 3, 3, (1, 1), (0, 1, 1, 1), (1, 1)),
    (6, 3, 33, 3, 3, (2, 1), (1, 1, 1, 1), (1, 1)),
    (3, 14, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (4, 6, 3, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (5, 7, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (4, 9, 1, 3, 3, (1, 1), (0, 1, 2, 1), (1, 1)),
    (3, 5, 2, 2, 3, (1, 1), (1, 0, 0, 2), (1, 2)),
]


def random_cases(seed: int = 61) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for j, (zin, zout, act) in enumerate(((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"),
                                              (3, 20, "narrow"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            w = rng.integers(-127, 128, (cout, kh, kw, cin), dtype=np.int8)
            if j == 1:
                w.reshape(-1)[rng.integers(0, w.size, 3)] = -128  # GEMM kernels take -128 weights
            bias = rng.integers(-5000, 5000, cout).astype(np.int32)
            mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60, e0=j == 3)
            if j == 3 and cout > 2:
                bias[2] = 2**31 - 1  # dead channel (multiplier 0) with a saturated bias, as in real models
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, input_offset=-zin, output_offset=zout,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"rand_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    for i, (h, wd, c, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for j, (zin, zout, act) in enumerate(((-128, -128, "full"), (127, 127, "relu"), (10, -128, "relu"),
                                              (-7, 5, "narrow"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, c), dtype=np.int8)
            w = rng.integers(-127, 128, (1, kh, kw, c), dtype=np.int8)
            if j == 0:
                w[..., :] = np.where(rng.random(w.shape) < 0.3, -127, w)  # the extreme pair sums
                x[...] = np.where(rng.random(x.shape) < 0.3, -128, x)
            if j == 1 and kh == kw == 3:  # -128 weights against -128 inputs (no int16 pair sum in the 3x3 kernel)
                w[..., :] = np.where(rng.random(w.shape) < 0.3, -128, w)
                x[...] = np.where(rng.random(x.shape) < 0.3, -128, x)
            bias = rng.integers(-3000, 3000, c).astype(np.int32)
            mult, shift = _requant(rng, c, 80.0 * np.sqrt(kh * kw) * 60, e0=j == 3)
            if j == 3 and c > 2:
                bias[2] = -(2**31)
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, depth_multiplier=1, input_offset=-zin,
                     output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += depthwise_cases(f"rand_dw{i}_{j}", x, w, bias, k,
                                     depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k))
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13), (4, 40, 6))):
        for j, (zin, zout, act) in enumerate(((-128, -6, "full"), (127, -128, "relu"), (4, 9, "narrow"))):
            x = rng.integers(-128, 128, (b, kdim), dtype=np.int8)
            w = rng.integers(-128, 128, (o, kdim), dtype=np.int8)
            bias = rng.integers(-3000, 3000, o).astype(np.int32)
            mult, shift = _requant(rng, o if j else 1, 80.0 * np.sqrt(kdim) * 60)  # j == 0: per-tensor
            lo, hi = _act(rng, act, zout)
            k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            cases += fc_cases(f"rand_fc{i}_{j}", x, w, bias, k, fully_connected.fully_connected_s8(x, w, bias, **k))
    pools = [((6, 7, 13), (3, 3), (2, 2), (1, 1, 1, 1)), ((5, 5, 8), (2, 2), (2, 2), (0, 0, 1, 1)),
             ((8, 8, 20), (8, 8), (1, 1), (0, 0, 0, 0)), ((4, 6, 35), (3, 2), (1, 2), (1, 0, 1, 1))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, (lo, hi) in enumerate(((-128, 127), (-20, 60))):
            x = rng.integers(-128, 128, (1 + j, h, wd, ch), dtype=np.int8)
            if i == 2 and j == 0:
                x[...] = -128  # the most negative window sum
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
    return cases + constant_channel_cases(rng) + isa_cases.maxmin_cases(ISA, np.random.default_rng(seed + 1000)) \
        + isa_cases.lut_cases(ISA, np.random.default_rng(seed + 2000)) \
        + isa_cases.copy_cases(ISA, np.random.default_rng(seed + 3000))


# (H, W, Cin, Cout, stride, batches, constant channels), the dsp CONSTANT_LAYERS' corners for quads of
# 16-k chunks: none, all, a single live channel, constants at both ends and adjacent, live counts
# 1, 3, 5, 7 (quads repeating their last channel), Cin not a multiple of 16 (staged rows), odd pixel
# counts (the one-row pass), stride 2, a VWW-like layer (most of 64 constant). Small: MVE is slow in QEMU.
CONSTANT_LAYERS = [
    (3, 5, 16, 10, 1, 1, ()),
    (3, 3, 8, 7, 1, 2, tuple(range(7))),
    (3, 3, 12, 9, 1, 1, (0, 1, 8)),
    (5, 5, 16, 12, 2, 1, (0, 3, 4, 5, 11)),
    (3, 3, 4, 5, 1, 2, (0, 1, 2, 4)),
    (2, 3, 20, 16, 1, 1, tuple(range(1, 15))),
    (3, 1, 24, 13, 1, 1, (2, 3, 4, 5, 6, 7)),
    (2, 2, 64, 64, 1, 1, tuple(sorted(set(range(64)) - {2, 3, 17, 30, 31, 32, 50, 63}))),
]


def constant_channel_cases(rng: np.random.Generator) -> list[Case]:
    """1x1 layers mixing live channels with channels proven constant (CONSTANT_LAYERS, the four kinds of
    dsp_cases.constant_weights_bias), zero points -128 and 127, both modes: the sparse entry points
    next to the dense ones, both exact against conv2d_s8 (the sparse ones apply only with a constant
    channel)."""
    from dsp_cases import constant_channel_layers

    acts = ((-128, -128, "relu"), (127, 127, "full"))
    return [c for layer in constant_channel_layers(rng, CONSTANT_LAYERS, acts, lambda a, z: _act(rng, a, z))
            for c in conv_cases(*layer) + sparse_conv_cases(*layer)]
