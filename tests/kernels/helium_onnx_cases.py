"""The cases of the Helium kernels under rounding "onnx" (the `_onnx` entry points: onnxruntime's
float32 output stage for Conv / depthwise / FC, toolchain/isa/helium_rq.py) and of the depthwise
kernel with -128 weights (every entry point): random layers, tie-heavy layers (power-of-two
multipliers whose accumulators fall exactly halfway in reals, hence in float32 too), built float32
ties (f32_tie_layers: fl32(fl32(acc) * S) exactly k + 1/2 while acc * S is not, from above and from
below, and accumulators past 2^24 whose float conversion moves the product across k + 1/2), shifts
0 and above, both signs, per-channel parameters, channel counts that leave predicated tails; add and
average pooling with scales that tie. Expected: the numpy references of toolchain/ops under
rounding_mode("onnx") (requantize_s8_f32 for the weighted ops, the oracle the portable `_onnx` C
twins are tested against), or under "tflm" for the TFLM entry points. Through the compiler's own
plans (isa/helium.py), like helium_cases.py.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import isa_cases
from helium_cases import function
from helium_harness import Case
from isa_cases import _act, _requant
from toolchain.isa import helium as hv
from toolchain.isa.helium_rq import MODES, ONNX
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import add_params, f32_scale, quantize_multiplier, rounding_mode
from toolchain.ops.pool2d import avg_pool2d_s8

ISA = "helium"
ONNX_MODES = (ONNX,)


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
        (("depthwise_conv2d", v), lambda mode, ys, plan=plan: plan(k, x.shape, w, bias, ys, mode=mode))
        for v, plan in (("", hv.dw_plan), ("3x3", hv.dw3_plan))], modes)


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
    (3, 15, 19, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),  # >= 16 channels: the 3x3 kernel too
    (5, 5, 24, 3, 3, (2, 1), (0, 1, 1, 1), (1, 1)),
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
    return cases + f32_tie_cases(rng) + sparse_cases(rng) + add_cases(rng) + avg_cases(rng)


# ---- built float32 ties -----------------------------------------------------------------------------
TIE_KINDS = ("above", "below", "real", "wide")  # f32_tie: where the exact product lies, or acc past 2^24


def f32_tie(rng: np.random.Generator, kind: str) -> tuple[np.float32, int]:
    """(S, acc): a float32 scale and an int32 accumulator with |acc * S| < 120 where
    - "above" / "below": fl32(fl32(acc) * S) is exactly k + 1/2 (rint rounds it to even) while the
      exact product lies above / below it (rounded once it goes the other way for half the k);
    - "real": acc * S is exactly k + 1/2 (a tie in reals is one in float32: acc < 2^24 and the
      product k + 1/2 are representable, so no in-range real tie escapes float32);
    - "wide": acc in (2^24, 2^24 + 2^16), fl32(acc) != acc, and rint(fl32(fl32(acc) * S)) differs
      from the exact product rounded. Exact products: float64 (at most 25 + 24 bits)."""
    while True:
        if kind == "wide":
            s = np.float32(rng.uniform(2.0 ** -19, 2.0 ** -18))
            acc = np.arange(2**24 + 1, 2**24 + 2**16, 2, dtype=np.int64)
        elif kind == "real":  # S = m 2^-e (m odd, a few bits) and acc an odd multiple of 2^(e-1) / m
            e, m = int(rng.integers(8, 14)), int(rng.choice([1, 3, 5, 7, 9, 11]))
            s = np.float32(m * 2.0 ** -e)
            acc = np.arange(1, 200, 2, dtype=np.int64) * 2 ** (e - 1)
            acc = acc[acc * m < 240 * 2 ** (e - 1)] * np.where(rng.random() < 0.5, 1, -1)
        else:
            s = np.float32(rng.uniform(0.004, 0.05))
            lim = int(120 / float(s))
            acc = np.arange(-lim, lim, dtype=np.int64)
        p32 = acc.astype(np.float32) * s
        exact = acc.astype(np.float64) * np.float64(s)
        rounded_apart = np.rint(p32) != np.rint(exact)
        hit = {"above": (p32 % 1 == 0.5) & (exact > p32) & rounded_apart,
               "below": (p32 % 1 == 0.5) & (exact < p32) & rounded_apart,
               "real": (exact % 1 == 0.5) & (np.abs(exact) < 120),
               "wide": rounded_apart & (np.abs(p32) < 120)}[kind]
        if np.any(hit):
            return s, int(rng.choice(acc[hit]))


def f32_tie_layers(rng: np.random.Generator, per_kind: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                           list[str]]:
    """Per output channel a built tie (f32_tie, per_kind of each TIE_KINDS): (mult, shift) with
    f32_scale(mult, shift) == S exactly, the accumulator (the bias of a layer whose input 0 adds
    nothing) and the kind. int32 [C] x 3, list [C]."""
    mult, shift, acc, kinds = [], [], [], []
    for kind in TIE_KINDS:
        for _ in range(per_kind):
            s, a = f32_tie(rng, kind)
            m, e = quantize_multiplier(float(s))
            assert f32_scale(m, e) == s  # float32 S survives the (mult, shift) pair bit for bit
            mult.append(m), shift.append(e), acc.append(a), kinds.append(kind)
    return (np.array(mult, np.int32), np.array(shift, np.int32), np.array(acc, np.int64).astype(np.int32), kinds)


def f32_tie_cases(rng: np.random.Generator) -> list[Case]:
    """Layers whose channel c accumulates bias[c] + x (one weight 1, input offset 0) over every int8 x
    (256 pixels / rows: x = 0 hits the built tie, its neighbours the values around it): FC, 1x1 and
    3x3 conv (centre tap, padding 1), the 1x1 sparse kernel (one more channel with weight 0: a
    constant channel at a tie, its row from requantize_s8_f32), depthwise 1x1 and 3x3."""
    mult, shift, bias, _ = f32_tie_layers(rng)
    c = mult.size
    vals = np.arange(-128, 128, dtype=np.int8)
    zout = int(rng.integers(-5, 6))
    common = dict(input_offset=0, output_offset=zout, out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
    cases = fc_cases("onnx_f32tie_fc", rng.permutation(vals).reshape(256, 1), np.ones((c, 1), np.int8), bias,
                     dict(filter_offset=0, **common))
    x = rng.permutation(vals).reshape(1, 16, 16, 1)
    for kh, pad in ((1, 0), (3, 1)):
        w = np.zeros((c + 1, kh, kh, 1), np.int8)
        w[:c, kh // 2, kh // 2, 0] = 1  # the last channel: weight 0, constant
        k = dict(common, stride=(1, 1), pad=(pad, pad), dilation=(1, 1), out_hw=(16, 16),
                 out_mult=np.append(mult, mult[0]), out_shift=np.append(shift, shift[0]))
        cases += conv_cases(f"onnx_f32tie_conv{kh}", x, w, np.append(bias, bias[0]), k)
    xd = np.stack([rng.permutation(vals) for _ in range(c)], axis=-1).reshape(1, 16, 16, c)
    for kh, pad in ((1, 0), (3, 1)):
        w = np.zeros((1, kh, kh, c), np.int8)
        w[0, kh // 2, kh // 2, :] = 1
        k = dict(stride=(1, 1), pad=(pad, pad), dilation=(1, 1), out_hw=(16, 16), depth_multiplier=1, **common)
        cases += dw_cases(f"onnx_f32tie_dw{kh}", xd, w, bias, k)
    return cases + saturation_cases(rng)


def saturation_cases(rng: np.random.Generator) -> list[Case]:
    """Products far past int32 (S = 2^30 on accumulators near +-2^31: VCVTN saturates at int32) with
    output zero points of both signs: the offset must be added with saturation (a wrapped INT32_MAX +
    100 would come out as -128); channels 2, 3 keep moderate products."""
    cases = []
    for zout in (100, -100):
        x = rng.integers(-128, 128, (3, 8), dtype=np.int8)
        w = rng.integers(-128, 128, (6, 8), dtype=np.int8)
        bias = np.array([2**31 - 2**18, -2**31 + 2**18, 300, -300, 2**30, -2**30], np.int32)
        m30, s30 = quantize_multiplier(2.0**30)
        m1, s1 = quantize_multiplier(2e-4)
        k = dict(input_offset=int(rng.integers(-128, 128)), filter_offset=0, output_offset=zout,
                 out_mult=np.array([m30, m30, m1, m1, m30, m30]), out_shift=np.array([s30, s30, s1, s1, s30, s30]),
                 act_min=-128, act_max=127)
        cases += fc_cases(f"onnx_sat_fc{zout}", x, w, bias, k)
        kc = dict(k, stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(1, 3))
        del kc["filter_offset"]
        cases += conv_cases(f"onnx_sat_conv{zout}", x.reshape(1, 1, 3, 8), w.reshape(6, 1, 1, 8), bias, kc)
    return cases


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
