"""The cases of the NEON kernel tests: every CMSIS-NN conformance set of the families the neon kernels
implement, and seeded random cases for the corners: output channels 1..40 (SDOT tiles of 16/8/4,
out_c % 4 != 0), K tails (K % 16 = 4, 8, 12), pixel counts not a multiple of 4, strides, padding on
every side, dilation, zero points -128/127, activations all -128 against weights +-127 (the largest
int16 pair), -128 weights (BL-04: the pairing entry points must not apply, the others must), shifts
-31..+positive, dead channels with saturated biases, narrow activation ranges, batches.

Each case goes through the compiler's own glue (toolchain/isa/neon.py) for every neon entry
point that accepts it, so the packed weights, folded biases and requantization blobs are the ones a
model would get; the expected output is the conformance output_ref or the numpy reference of
toolchain/ops (the portable kernels are held to the same references). The shared half (conformance
sets, pool / add argument lists) is isa_cases.py.
"""
from __future__ import annotations

import numpy as np

import isa_cases
from isa_cases import CONF, FAMILIES, conformance_sets  # noqa: F401 - re-exported
from isa_harness import case
from neon_harness import Case
from toolchain.isa import neon as nv
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import AddParams, add_params, quantize_multiplier
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8
from toolchain.ops.registry import CArg

ISA = "neon"
KINDS = ("dot", "pair", "nopair")


def function(op: str, variant: str, kind: str) -> str:
    """The C entry point of a neon GEMM/depthwise variant."""
    parts = [op] + ([variant] if variant else []) + ({"dot": ["dot"], "pair": [], "nopair": ["nopair"]}[kind])
    return "ecc_neon_" + "_".join(parts) + "_s8"


# ---- per-op case builders: every neon entry point that accepts the call ----------------------
def conv_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1" if pointwise else "", kind),
         nv.conv2d_plan(k, x.shape, w, bias, expected.shape, kind=kind, pointwise=pointwise))
        for pointwise in (True, False) for kind in KINDS))


def sparse_conv_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    """The conv2d_1x1_sparse entry points that accept the call (a 1x1 layer with a constant channel)."""
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("conv2d", "1x1_sparse", kind),
         nv.conv2d_plan(k, x.shape, w, bias, expected.shape, kind=kind, pointwise=True, sparse=True))
        for kind in KINDS))


def depthwise_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("depthwise_conv2d", "3x3" if three else "", "pair" if pair else "nopair"),
         nv.depthwise_plan(k, x.shape, w, bias, expected.shape, pair=pair, three=three))
        for three in (True, False) for pair in (True, False)))


def fc_cases(tag: str, x, w, bias, k: dict, expected) -> list[Case]:
    return isa_cases.planned_cases(ISA, tag, x, expected, (
        (function("fully_connected", "", kind), nv.fc_plan(k, x.shape, w, bias, expected.shape, kind=kind))
        for kind in KINDS))


pool_cases = isa_cases.pool_cases_for(  # 8-channel vectors; avg windows nv.avg_window_ok takes
    ISA, lambda kind, x, kw: x.shape[3] % 8 == 0 and (kind != "avg" or nv.avg_window_ok(kw["kernel"])))


def add_cases(tag: str, x1, x2, p: AddParams, lo: int, hi: int, expected) -> list[Case]:
    if not nv.add_exact(p):
        return []
    return [isa_cases.add_case(ISA, tag, x1, x2, p, lo, hi, expected, 48)]


# ---- CMSIS-NN conformance sets (isa_cases.conformance_sets) ------------------------------------
def conformance_cases(family: str, name: str) -> list[Case]:
    return isa_cases.conformance_cases(family, name, conv_cases, depthwise_cases, fc_cases, pool_cases, add_cases)


# ---- seeded random cases ----------------------------------------------------------------------
def _requant(rng: np.random.Generator, n: int, acc_scale: float, corner: int = 0):
    """Per-channel (mult, shift) mapping accumulators of size ~acc_scale onto ~64. corner 1: one
    channel with shift 0, one dead channel (multiplier 0), one with shift -31; corner 2: one channel
    with a multiplier >= 1 (positive shift, saturating left shift)."""
    pairs = [quantize_multiplier(64.0 / acc_scale * rng.uniform(0.5, 2.0)) for _ in range(n)]
    mult, shift = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    if corner == 1 and n > 3:
        mult[1], shift[1] = quantize_multiplier(0.75)
        mult[2], shift[2] = 0, 0
        mult[3], shift[3] = quantize_multiplier(2.0**-31 * 1.5)
    if corner == 2 and n > 1:
        mult[0], shift[0] = quantize_multiplier(3.7)
    return mult.astype(np.int32), shift.astype(np.int32)


def _act(kind: str, zp: int) -> tuple[int, int]:
    return {"full": (-128, 127), "relu": (max(zp, -128), 127), "narrow": (max(zp, -100), min(zp + 90, 110))}[kind]


def _x(rng, shape, j: int) -> np.ndarray:
    """Random int8 activations; j == 1: all -128 (with the largest weights: int16 pair extremes)."""
    if j == 1:
        return np.full(shape, -128, np.int8)
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _w(rng, shape, j: int) -> np.ndarray:
    """Random weights in [-127, 127]; j == 1: +-127 only; j == 2: one -128 (BL-04)."""
    if j == 1:
        return (rng.integers(0, 2, shape) * 254 - 127).astype(np.int8)
    w = rng.integers(-127, 128, shape, dtype=np.int8)
    if j == 2:
        w.flat[rng.integers(0, w.size)] = -128
    return w


CONV_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pads t/l/b/r, dilation)
    (7, 9, 3, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),     # K = 27, out_c 13 = 8 + 4(1)
    (8, 8, 16, 8, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (6, 5, 8, 5, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2)),
    (5, 7, 12, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),     # pointwise, K = 12 (dot only direct)
    (9, 9, 8, 7, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1)),      # pointwise strided
    (4, 6, 13, 9, 1, 3, (1, 2), (0, 1, 0, 1), (1, 1)),
    (6, 6, 4, 16, 5, 5, (1, 1), (2, 1, 2, 3), (1, 1)),
    (3, 3, 20, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (5, 3, 32, 40, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),    # 15 pixels, out_c 40 = 16 + 16 + 8
    (6, 7, 24, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),    # K = 216, out_c 20 = 16 + 4
    (4, 4, 36, 33, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),    # K % 16 = 4, out_c 33
    (3, 5, 9, 1, 2, 2, (1, 1), (0, 0, 1, 1), (1, 1)),      # out_c 1
]
DW_SHAPES = [  # (H, W, Cin, mult, KH, KW, stride, pads, dilation)
    (7, 7, 8, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (9, 8, 24, 1, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (5, 6, 16, 1, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1)),
    (6, 6, 40, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (6, 7, 3, 2, 3, 3, (1, 2), (1, 1, 1, 1), (1, 1)),      # depth multiplier 2: portable only
    (5, 5, 8, 1, 2, 4, (1, 1), (1, 0, 1, 2), (1, 1)),
    (8, 8, 8, 1, 5, 5, (1, 1), (4, 4, 4, 4), (2, 2)),
    (3, 3, 16, 1, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1)),
    (4, 5, 32, 1, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
]


def random_cases(seed: int = 61) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    setups = ((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"), (3, 20, "narrow"))
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for j, (zin, zout, act) in enumerate(setups):
            x = _x(rng, (1 + (i + j) % 2, h, wd, cin), j)
            w = _w(rng, (cout, kh, kw, cin), j)
            bias = rng.integers(-5000, 5000, cout).astype(np.int32)
            mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60, corner=j % 3)
            if j == 3 and cout > 2:
                bias[2] = 2**31 - 1  # dead channel (multiplier 0) with a saturated bias, as in real models
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, input_offset=-zin, output_offset=zout,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"rand_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    for i, (h, wd, cin, m, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for j, (zin, zout, act) in enumerate(setups):
            x = _x(rng, (1 + (i + j) % 2, h, wd, cin), j)
            w = _w(rng, (1, kh, kw, cin * m), j)
            bias = rng.integers(-3000, 3000, cin * m).astype(np.int32)
            mult, shift = _requant(rng, cin * m, 80.0 * np.sqrt(kh * kw) * 60, corner=j % 3)
            if j == 3 and cin * m > 2:
                bias[2] = -(2**31)
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, depth_multiplier=m, input_offset=-zin,
                     output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += depthwise_cases(f"rand_dw{i}_{j}", x, w, bias, k,
                                     depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k))
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13), (5, 24, 17), (1, 256, 2))):
        for j, (zin, zout, act) in enumerate(setups[:3]):
            x = _x(rng, (b, kdim), j)
            w = _w(rng, (o, kdim), j)
            bias = rng.integers(-3000, 3000, o).astype(np.int32)
            mult, shift = _requant(rng, o if j else 1, 80.0 * np.sqrt(kdim) * 60)  # j == 0: per-tensor
            lo, hi = _act(act, zout)
            k = dict(input_offset=-zin, filter_offset=0, output_offset=zout, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            cases += fc_cases(f"rand_fc{i}_{j}", x, w, bias, k, fully_connected.fully_connected_s8(x, w, bias, **k))
    pools = [((6, 7, 16), (3, 3), (2, 2), (1, 1, 1, 1)), ((5, 5, 8), (2, 2), (2, 2), (0, 0, 1, 1)),
             ((8, 8, 24), (8, 8), (1, 1), (0, 0, 0, 0)), ((4, 6, 40), (3, 2), (1, 2), (1, 0, 1, 1)),
             ((16, 16, 8), (16, 16), (1, 1), (0, 0, 0, 0)), ((24, 24, 24), (24, 24), (1, 1), (0, 0, 0, 0))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, (lo, hi) in enumerate(((-128, 127), (-20, 60))):
            x = _x(rng, (1 + j, h, wd, ch), 1 if i >= 4 and j == 0 else 0)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=lo, act_max=hi)
            pad = dict(count_include_pad=j == 1, pad_end=pads[2:], pad_value=int(rng.integers(-128, 128)))
            cases += pool_cases(f"rand_avg{i}_{j}", "avg", x, kw, avg_pool2d_s8(x, **pad, **kw), **pad)
            cases += pool_cases(f"rand_max{i}_{j}", "max", x, kw, max_pool2d_s8(x, **kw))
    for i, (size, zout, lo, hi) in enumerate(((1024, -128, -128, 127), (77, 127, -128, 127), (300, 11, -30, 90),
                                              (16, 0, -128, 127), (5, -3, -128, 127))):
        s1, s2, so = rng.uniform(0.01, 0.1, 3)
        if i == 3:
            so = s1 / 3  # output multiplier >= 1: a positive output shift
        z1, z2 = (int(v) for v in rng.integers(-128, 128, 2))
        p = add_params(s1, z1, s2, z2, so, zout)
        x1 = rng.integers(-128, 128, size, dtype=np.int8)
        x2 = rng.integers(-128, 128, size, dtype=np.int8)
        if i == 4:
            x1[:], x2[:] = -128, -128
        cases += add_cases(f"rand_add{i}", x1, x2, p, lo, hi, add.add_s8(x1, x2, p, lo, hi))
    return cases + constant_channel_cases(rng) + isa_cases.maxmin_cases(ISA, np.random.default_rng(seed + 1000)) \
        + isa_cases.lut_cases(ISA, np.random.default_rng(seed + 2000)) \
        + isa_cases.copy_cases(ISA, np.random.default_rng(seed + 3000))


# (H, W, Cin, Cout, stride, batches, constant channels): the dsp CONSTANT_LAYERS' corners for the
# 16-channel merge blocks and the SDOT tiles: none, all, a single live channel, constants at both ends
# and adjacent, odd live counts, out_c not a multiple of 16 (the last block) nor 4, blocks with no
# live channel, pixel counts not a multiple of 4, stride 2, batches, a VWW-like layer.
CONSTANT_LAYERS = [
    (3, 5, 16, 10, 1, 1, ()),
    (3, 5, 8, 7, 1, 2, tuple(range(7))),
    (4, 4, 16, 9, 1, 1, (0, 1, 8)),
    (5, 5, 16, 12, 2, 1, (0, 3, 4, 5, 11)),
    (3, 3, 8, 5, 1, 2, (0, 1, 2, 4)),
    (6, 7, 8, 16, 1, 1, tuple(range(1, 15))),
    (3, 3, 24, 37, 1, 1, tuple(range(0, 20)) + (30, 31, 36)),
    (3, 4, 64, 64, 1, 1, tuple(sorted(set(range(64)) - {2, 3, 17, 30, 31, 32, 50, 63}))),
]


def constant_channel_cases(rng: np.random.Generator) -> list[Case]:
    """1x1 layers mixing live channels with channels proven constant (CONSTANT_LAYERS, the four kinds of
    dsp_cases.constant_weights_bias), zero points -128 and 127 (j 2: a -128 weight in a live row, the
    pairing entry points must not apply): the sparse entry points next to the dense ones, both exact
    against conv2d_s8 (the sparse ones apply only with a constant channel)."""
    from dsp_cases import constant_channel_layers

    acts = ((-128, -128, "relu"), (127, 127, "full"), (5, 3, "narrow"))
    return [c for layer in constant_channel_layers(rng, CONSTANT_LAYERS, acts, _act, neg128_weight=True)
            for c in conv_cases(*layer) + sparse_conv_cases(*layer)]


# ---- CHWN (batch innermost) kernels and the relayout kernel ----------------------------------------
def chwn(x: np.ndarray) -> np.ndarray:
    """A logical NHWC array in CHWN storage order."""
    return np.ascontiguousarray(x.transpose(3, 1, 2, 0))


def chwn_cases(seed: int = 62) -> list[Case]:
    """CHWN conv / depthwise / pooling cases (batches 8 and 16; the expected output is the NHWC
    reference in CHWN order) and relayout cases (the expected output is numpy's transpose)."""
    from toolchain.isa import neon_chwn
    from toolchain.ops import relayout

    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    setups = ((-128, -128, "full"), (127, 127, "full"), (-5, -128, "relu"), (3, 20, "narrow"))
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES[:9]):
        n = 8 * (1 + i % 2)
        zin, zout, act = setups[i % 4]
        x = _x(rng, (n, h, wd, cin), i % 4 == 1)
        w = _w(rng, (cout, kh, kw, cin), 1 if i % 4 == 1 else 2 * (i % 5 == 2))
        bias = rng.integers(-5000, 5000, cout).astype(np.int32)
        mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60, corner=i % 3)
        lo, hi = _act(act, zout)
        k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                 input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
        y = conv2d.conv2d_s8(x, w, bias, **k)
        args = neon_chwn.conv2d_chwn_plan(k, x.shape, w, bias, y.shape)
        cases.append(case(f"chwn_conv{i}", "ecc_neon_conv2d_chwn_s8", args, {"input": chwn(x)}, "output", 0, chwn(y)))
    for i, (h, wd, cin, m, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        if m != 1:
            continue
        n = 8 * (1 + i % 2)
        zin, zout, act = setups[i % 4]
        x = _x(rng, (n, h, wd, cin + i % 3), i % 4 == 1)  # any channel count
        c = x.shape[3]
        w = _w(rng, (1, kh, kw, c), 2 * (i % 3 == 0))
        bias = rng.integers(-3000, 3000, c).astype(np.int32)
        mult, shift = _requant(rng, c, 80.0 * np.sqrt(kh * kw) * 60, corner=i % 3)
        lo, hi = _act(act, zout)
        k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                 depth_multiplier=1, input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift,
                 act_min=lo, act_max=hi)
        y = depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k)
        args = neon_chwn.depthwise_chwn_plan(k, x.shape, w, bias, y.shape)
        cases.append(case(f"chwn_dw{i}", "ecc_neon_depthwise_conv2d_chwn_s8", args, {"input": chwn(x)}, "output",
                          2 * kh * kw, chwn(y)))
    pools = [((6, 7, 5), (3, 3), (2, 2), (1, 1, 1, 1)), ((8, 8, 3), (8, 8), (1, 1), (0, 0, 0, 0)),
             ((20, 20, 2), (20, 20), (1, 1), (0, 0, 0, 0)),
             ((4, 6, 12), (3, 2), (1, 2), (1, 0, 1, 1))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, (lo, hi) in enumerate(((-128, 127), (-20, 60))):
            x = _x(rng, (8 * (1 + j), h, wd, ch), 1 if i == 2 and j == 0 else 0)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=lo, act_max=hi)
            pad = dict(count_include_pad=j == 1, pad_end=pads[2:], pad_value=int(rng.integers(-128, 128)))
            for kind, y in (("avg", avg_pool2d_s8(x, **pad, **kw)), ("max", max_pool2d_s8(x, **kw))):
                extra = [int(pad["count_include_pad"]), *pad["pad_end"], pad["pad_value"]] if kind == "avg" else []
                ints = [*kw["stride"], *kw["pad"], *kw["kernel"], *extra, lo, hi, *relayout.storage_dims(x.shape, "CHWN")]
                args = [*map(CArg.lit, ints), CArg("act", "input"), *map(CArg.lit, kw["out_hw"]), CArg("act", "output")]
                cases.append(case(f"chwn_{kind}{i}_{j}", f"ecc_neon_{kind}_pool2d_chwn_s8", args, {"input": chwn(x)},
                                  "output", 0, chwn(y)))
    relayouts = [((8, 5, 6, 16), (0, 1, 2, 3), "NHWC", "CHWN"), ((16, 3, 4, 8), (0, 1, 2, 3), "CHWN", "NHWC"),
                 ((8, 3, 7, 9), (0, 2, 3, 1), "NHWC", "CHWN"), ((2, 3, 9, 11), (0, 2, 3, 1), "NHWC", "NHWC"),
                 ((1, 4, 5, 5), (0, 2, 3, 1), "NHWC", "NHWC"), ((3, 2, 3, 37), (0, 2, 3, 1), "NHWC", "NHWC"),
                 ((8, 1, 1, 24), (0, 1, 2, 3), "CHWN", "NHWC"), ((3, 5, 2, 7), (0, 1, 2, 3), "NHWC", "CHWN")]
    for i, (shape, perm, src, dst) in enumerate(relayouts):
        x = rng.integers(-128, 128, shape, dtype=np.int8)  # logical input, stored in `src`
        y = np.transpose(x, perm)                          # logical output, stored in `dst`
        stored_x = np.ascontiguousarray(np.transpose(x, relayout.LAYOUT_AXES[src]))
        stored_y = np.ascontiguousarray(np.transpose(y, relayout.LAYOUT_AXES[dst]))
        plan = relayout.relayout_plan(relayout.storage_dims(shape, src), relayout.storage_perm(perm, src, dst))
        assert plan is not None, (shape, perm, src, dst)
        args = [*map(CArg.lit, plan), CArg("act", "input"), CArg("act", "output")]
        cases.append(case(f"relayout{i}_{src}_{dst}", "ecc_neon_relayout_s8", args, {"input": stored_x}, "output", 0,
                          stored_y))
    return cases
