"""The cases of the Helium kernels under rounding "onnx" (the `_onnx` and `_onnx_ties` entry points,
toolchain/isa/helium_rq.py) and of the depthwise kernel with -128 weights (every entry point): random
layers (no tie can occur: both onnx entry points apply), tie-heavy layers (power-of-two multipliers
whose accumulators fall exactly halfway: only `_onnx_ties`), shifts 0 and above (the saturating
pre-shift), both signs, per-channel parameters, channel counts that leave predicated tails; add and
average pooling with scales that tie. Expected: the numpy references of toolchain/ops under
rounding_mode("onnx") (the oracle the portable `_onnx` C twins are tested against), or under "tflm"
for the TFLM entry points. Through the compiler's own plans (isa/helium.py), like helium_cases.py.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import isa_cases
from helium_cases import function
from helium_harness import Case
from isa_cases import _act, _requant
from toolchain.isa import helium as hv
from toolchain.isa.helium_rq import MODES, ONNX, ONNX_TIES
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import add_params, rounding_mode
from toolchain.ops.pool2d import avg_pool2d_s8

ISA = "helium"
ONNX_MODES = (ONNX, ONNX_TIES)


def _ref(rounding: str, f, *args, **kw) -> np.ndarray:
    """f(*args, **kw) under `rounding` (the numpy references read the mode in effect)."""
    with rounding_mode(rounding):
        return f(*args, **kw)


def _cases(tag: str, x, reference, entry_points, modes) -> list[Case]:
    """One case per mode of `modes` and entry point (name, plan(mode, y_shape)) that accepts the call;
    expected: reference() under the mode's rounding."""
    cases = []
    for mode in modes:
        y = _ref(hv.rounding_of(mode), reference)
        cases += isa_cases.planned_cases(ISA, tag, x, y, [(function(*name, mode), plan(mode, y.shape))
                                                          for name, plan in entry_points])
    return cases


def conv_cases(tag: str, x, w, bias, k: dict, modes=ONNX_MODES) -> list[Case]:
    """Every conv2d / conv2d_1x1 / conv2d_1x1_sparse entry point of `modes` that accepts the layer."""
    return _cases(tag, x, lambda: conv2d.conv2d_s8(x, w, bias, **k), [
        (("conv2d", v), lambda mode, ys, pw=pw, sp=sp: hv.conv_plan(k, x.shape, w, bias, ys, mode=mode, pointwise=pw,
                                                                    sparse=sp))
        for v, pw, sp in (("", False, False), ("1x1", True, False), ("1x1_sparse", True, True))], modes)


def dw_cases(tag: str, x, w, bias, k: dict, modes=ONNX_MODES) -> list[Case]:
    return _cases(tag, x, lambda: depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **k), [
        (("depthwise_conv2d", ""), lambda mode, ys: hv.dw_plan(k, x.shape, w, bias, ys, mode=mode))], modes)


def fc_cases(tag: str, x, w, bias, k: dict, modes=ONNX_MODES) -> list[Case]:
    return _cases(tag, x, lambda: fully_connected.fully_connected_s8(x, w, bias, **k), [
        (("fully_connected", ""), lambda mode, ys: hv.fc_plan(k, x.shape, w, bias, ys, mode=mode))], modes)


def tie_requant(rng: np.random.Generator, n: int, shifts=(-1, -2, -3, -4)) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (mult, shift) with normalised multipliers of many trailing zeros (2^30, 3 * 2^29,
    5 * 2^28, 7 * 2^28): accumulators tie often; one channel multiplier 0."""
    mults = np.array([1 << 30, 3 << 29, 5 << 28, 7 << 28])
    mult = rng.choice(mults, n)
    shift = rng.choice(np.array(shifts), n)
    if n > 2:
        mult[2] = 0
    return mult.astype(np.int32), shift.astype(np.int32)


CONV_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pads t/l/b/r, dilation): tails in Cout and Cin
    (5, 6, 3, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (5, 5, 16, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    (4, 5, 13, 9, 1, 1, (2, 1), (0, 0, 0, 0), (1, 1)),
    (6, 6, 8, 5, 3, 3, (2, 2), (0, 0, 1, 1), (2, 2)),
]
DW_SHAPES = [  # (H, W, C, KH, KW, stride, pads, dilation): 3x3, other windows, lanes_px > 1, tails
    (5, 6, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (6, 5, 20, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1)),
    (5, 7, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),
    (6, 4, 3, 5, 4, (2, 1), (2, 1, 2, 2), (1, 1)),
    (4, 9, 1, 2, 3, (1, 1), (0, 1, 1, 1), (1, 2)),
]


def random_cases(seed: int = 113) -> list[Case]:
    """Random and tie-heavy layers of every GEMM / depthwise entry point under onnx; the depthwise
    layers with -128 weights (x = -128 at many taps: the int16 pair sum would overflow) under every mode."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(CONV_SHAPES):
        for j, (zin, zout, act, ties) in enumerate(((-128, -128, "full", False), (127, 5, "relu", False),
                                                    (3, -7, "narrow", True), (-20, 0, "full", True))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            w = rng.integers(-128, 128, (cout, kh, kw, cin), dtype=np.int8)
            if ties:  # small weights and accumulators: a few bits above the shift, both signs
                w = rng.integers(-3, 4, w.shape).astype(np.int8)
                bias = rng.integers(-64, 64, cout).astype(np.int32)
                mult, shift = tie_requant(rng, cout, (-1, -2, -3, -4, -6) if j == 2 else (-1, 0, 1, -2))
            else:
                bias = rng.integers(-5000, 5000, cout).astype(np.int32)
                mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"onnx_conv{i}_{j}", x, w, bias, k)
    for i, (h, wd, c, kh, kw, st, pads, dil) in enumerate(DW_SHAPES):
        for j, (zin, zout, act, kind) in enumerate(((-128, -128, "full", "random"), (10, -128, "relu", "ties"),
                                                    (-7, 5, "narrow", "neg128"), (127, 127, "relu", "neg128"))):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, c), dtype=np.int8)
            w = rng.integers(-127, 128, (1, kh, kw, c), dtype=np.int8)
            bias = rng.integers(-3000, 3000, c).astype(np.int32)
            mult, shift = _requant(rng, c, 80.0 * np.sqrt(kh * kw) * 60)
            modes = ONNX_MODES
            if kind == "ties":
                w = rng.integers(-2, 3, w.shape).astype(np.int8)
                bias = rng.integers(-32, 32, c).astype(np.int32)
                mult, shift = tie_requant(rng, c, (-1, -2, 0, -3))
            elif kind == "neg128":  # -128 weights against -128 inputs: 2 * 16384 does not fit an int16 pair sum
                w = np.where(rng.random(w.shape) < 0.4, -128, w).astype(np.int8)
                x = np.where(rng.random(x.shape) < 0.5, -128, x).astype(np.int8)
                modes = MODES
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     depth_multiplier=1, input_offset=-zin, output_offset=zout, out_mult=mult, out_shift=shift,
                     act_min=lo, act_max=hi)
            cases += dw_cases(f"onnx_dw{i}_{j}", x, w, bias, k, modes)
    for i, (b, kdim, o) in enumerate(((1, 7, 5), (3, 33, 6), (2, 64, 13))):
        for j, ties in enumerate((False, True)):
            x = rng.integers(-128, 128, (b, kdim), dtype=np.int8)
            w = rng.integers(-128, 128, (o, kdim), dtype=np.int8)
            bias = rng.integers(-3000, 3000, o).astype(np.int32)
            mult, shift = _requant(rng, o if i else 1, 80.0 * np.sqrt(kdim) * 60)  # i == 0: per-tensor
            if ties:
                w = rng.integers(-2, 3, w.shape).astype(np.int8)
                mult, shift = tie_requant(rng, o)
            k = dict(input_offset=int(rng.integers(-128, 128)), filter_offset=0,
                     output_offset=int(rng.integers(-20, 20)),
                     out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
            cases += fc_cases(f"onnx_fc{i}_{j}", x, w, bias, k)
    return cases + sparse_cases(rng) + add_cases(rng) + avg_cases(rng)


def sparse_cases(rng: np.random.Generator) -> list[Case]:
    """1x1 layers with constant channels (helium_cases.CONSTANT_LAYERS' corners) under onnx: the
    sparse entry points' constant rows re-derived with ties to even."""
    from dsp_cases import constant_channel_layers
    from helium_cases import CONSTANT_LAYERS

    acts = ((-128, -128, "relu"), (127, 127, "full"))
    return [c for tag, x, w, bias, k, _ in constant_channel_layers(rng, CONSTANT_LAYERS[:5], acts,
                                                                   lambda a, z: _act(rng, a, z))
            for c in conv_cases(f"onnx_{tag}", x, w, bias, k)]


def add_cases(rng: np.random.Generator) -> list[Case]:
    """ecc_helium_add_onnx_s8: random scales, and power-of-two scales (exact ties in the output
    requantization), sizes with tails."""
    cases = []
    for i, (size, scales, zout, lo, hi) in enumerate(((300, None, 11, -30, 90), (77, (0.5, 0.25, 1.0), -3, -128, 127),
                                                      (1024, (0.125, 0.125, 0.5), 0, -128, 127),
                                                      (65, (0.0625, 0.25, 0.25), 127, -128, 127))):
        s1, s2, so = rng.uniform(0.01, 0.1, 3) if scales is None else scales
        z1, z2 = (int(v) for v in rng.integers(-128, 128, 2))
        p = add_params(s1, z1, s2, z2, so, zout)
        x1 = rng.integers(-128, 128, size, dtype=np.int8)
        x2 = rng.integers(-128, 128, size, dtype=np.int8)
        if hv.add_why_not(p, ONNX) is None:
            c = isa_cases.add_case(ISA, f"onnx_add{i}", x1, x2, p, lo, hi, _ref("onnx", add.add_s8, x1, x2, p, lo, hi),
                                   2048)
            cases.append(replace(c, function="ecc_helium_add_onnx_s8"))
    return cases


def avg_cases(rng: np.random.Generator) -> list[Case]:
    """ecc_helium_avg_pool2d_onnx_s8: even window counts (ties every count-th sum), count_include_pad
    with the padding worth the zero point, odd zero points (ties to even are not shift invariant)."""
    cases = []
    pools = [((6, 7, 13), (2, 2), (2, 2), (1, 1, 1, 1)), ((5, 5, 20), (4, 2), (1, 1), (0, 0, 1, 1)),
             ((4, 6, 35), (3, 2), (1, 2), (1, 0, 1, 1)), ((8, 8, 16), (8, 8), (1, 1), (0, 0, 0, 0))]
    for i, ((h, wd, ch), kern, st, pads) in enumerate(pools):
        for j, zp in enumerate((-3, 7)):
            x = rng.integers(-128, 128, (1 + j, h, wd, ch), dtype=np.int8)
            kw = dict(kernel=kern, stride=st, pad=pads[:2], out_hw=Window(kern, st, (1, 1), pads).out_hw(h, wd),
                      act_min=-128, act_max=127 if j else 100)
            pad = dict(count_include_pad=j == 1, pad_end=pads[2:], pad_value=zp)
            y = _ref("onnx", avg_pool2d_s8, x, **pad, **kw, zero_point=zp)
            c = isa_cases.pool_case(ISA, f"onnx_avg{i}_{j}", "avg", x, kw, y, **pad)
            cases.append(replace(c, function="ecc_helium_avg_pool2d_onnx_s8"))
    return cases
