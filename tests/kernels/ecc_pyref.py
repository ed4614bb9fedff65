"""A small, independent, deliberately plain int8 oracle for the kernel edge-case tests.

Written straight from the TFLite Micro reference kernels (loops over the output and the kernel
window, numpy only across batches/channels) so that the C kernels can be checked even where
toolchain/ops is not importable. Values are int64 arrays holding int32 quantities.
"""
from __future__ import annotations

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul: (a*b + 2^30) >> 31 with floor == nudge+truncate."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    r = (a * b + (1 << 30)) >> 31
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, r)


def rdbp(x, e):
    """gemmlowp RoundingDivideByPOT, exact in int64 for any e >= 0 (ties away from zero)."""
    x, e = np.asarray(x, np.int64), np.asarray(e, np.int64)
    mask = (np.int64(1) << e) - 1
    return (x >> e) + ((x & mask) > ((mask >> 1) + (x < 0)))


def mbqm(x, m, s):
    """MultiplyByQuantizedMultiplier, double rounding, saturating left shift."""
    x, m, s = np.asarray(x, np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64)
    left = np.clip(s, 0, 32)
    xs = np.clip(x << left, INT32_MIN, INT32_MAX)
    return rdbp(srdhm(xs, m), np.maximum(-s, 0))


def requant(acc, m, s, zo, lo, hi):
    return np.clip(mbqm(acc, m, s) + zo, lo, hi).astype(np.int8)


def conv2d(x, w, bias, *, stride, pad, dilation=(1, 1), out_hw, input_offset, output_offset,
           out_mult, out_shift, act_min, act_max):
    x = x.astype(np.int64) + input_offset
    w = w.astype(np.int64)
    n, h, wd, c = x.shape
    oc, kh, kw, wc = w.shape
    groups = c // wc
    opg = oc // groups
    acc = np.zeros((n, out_hw[0], out_hw[1], oc), np.int64)
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            for ky in range(kh):
                for kx in range(kw):
                    iy = oy * stride[0] - pad[0] + ky * dilation[0]
                    ix = ox * stride[1] - pad[1] + kx * dilation[1]
                    if not (0 <= iy < h and 0 <= ix < wd):
                        continue
                    for g in range(groups):
                        acc[:, oy, ox, g * opg:(g + 1) * opg] += (
                            x[:, iy, ix, g * wc:(g + 1) * wc] @ w[g * opg:(g + 1) * opg, ky, kx, :].T)
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return requant(acc, np.asarray(out_mult), np.asarray(out_shift), output_offset, act_min, act_max)


def depthwise_conv2d(x, w, bias, *, stride, pad, dilation=(1, 1), out_hw, depth_multiplier, input_offset,
                     output_offset, out_mult, out_shift, act_min, act_max):
    x = np.repeat(x.astype(np.int64) + input_offset, depth_multiplier, axis=3)   # channel ic*dm + m
    w = w.astype(np.int64)[0]
    n, h, wd, oc = x.shape
    kh, kw, _ = w.shape
    acc = np.zeros((n, out_hw[0], out_hw[1], oc), np.int64)
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            for ky in range(kh):
                for kx in range(kw):
                    iy = oy * stride[0] - pad[0] + ky * dilation[0]
                    ix = ox * stride[1] - pad[1] + kx * dilation[1]
                    if 0 <= iy < h and 0 <= ix < wd:
                        acc[:, oy, ox, :] += x[:, iy, ix, :] * w[ky, kx, :]
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return requant(acc, np.asarray(out_mult), np.asarray(out_shift), output_offset, act_min, act_max)


def fully_connected(x, w, bias, *, input_offset, filter_offset, output_offset, out_mult, out_shift,
                    act_min, act_max):
    acc = (x.astype(np.int64) + input_offset) @ (w.astype(np.int64) + filter_offset).T
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return requant(acc, np.asarray(out_mult).reshape(-1), np.asarray(out_shift).reshape(-1), output_offset,
                   act_min, act_max)


def _pool(x, kernel, stride, pad, out_hw, reduce):
    n, h, wd, c = x.shape
    out = np.zeros((n, out_hw[0], out_hw[1], c), np.int64)
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            y0, x0 = oy * stride[0] - pad[0], ox * stride[1] - pad[1]
            win = x[:, max(y0, 0):max(min(y0 + kernel[0], h), 0), max(x0, 0):max(min(x0 + kernel[1], wd), 0), :]
            out[:, oy, ox, :] = reduce(win.astype(np.int64))
    return out


def avg_pool2d(x, *, kernel, stride, pad, out_hw, act_min, act_max, count_include_pad=False):
    def avg(win):
        s = win.sum(axis=(1, 2))
        cnt = kernel[0] * kernel[1] if count_include_pad else win.shape[1] * win.shape[2]
        return np.where(s > 0, (s + cnt // 2) // cnt, -((-s + cnt // 2) // cnt))
    return np.clip(_pool(x, kernel, stride, pad, out_hw, avg), act_min, act_max).astype(np.int8)


def max_pool2d(x, *, kernel, stride, pad, out_hw, act_min, act_max):
    def mx(win):
        if win.shape[1] * win.shape[2] == 0:
            return np.full((win.shape[0], win.shape[3]), -128)
        return win.max(axis=(1, 2))
    return np.clip(_pool(x, kernel, stride, pad, out_hw, mx), act_min, act_max).astype(np.int8)


def add(x1, x2, p, act_min, act_max):
    s1 = mbqm((x1.astype(np.int64) + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = mbqm((x2.astype(np.int64) + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    return requant(s1 + s2, p.output_mult, p.output_shift, p.output_offset, act_min, act_max)


# ---- softmax: scalar gemmlowp fixed point with Python ints ----

def _srdhm1(a, b):
    return INT32_MAX if a == b == INT32_MIN else (a * b + (1 << 30)) >> 31


def _rdbp1(x, e):
    mask = (1 << e) - 1
    return (x >> e) + ((x & mask) > ((mask >> 1) + (x < 0)))


def _satshl1(x, e):
    return max(INT32_MIN, min(INT32_MAX, x << e))


def exp_on_negative_values_q5(a):
    a_mod = (a & ((1 << 24) - 1)) - (1 << 24)
    x = _satshl1(a_mod, 5) + (1 << 28)
    x2 = _srdhm1(x, x)
    x3 = _srdhm1(x2, x)
    x4 = _srdhm1(x2, x2)
    poly = _rdbp1(_srdhm1(_rdbp1(x4, 2) + x3, 715827883) + x2, 1)
    r = 1895147668 + _srdhm1(1895147668, x + poly)
    rem = a_mod - a
    for bit, mult in zip(range(24, 31), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if rem & (1 << bit):
            r = _srdhm1(r, mult)
    return INT32_MAX if a == 0 else r


def reciprocal(sum_q12):
    clz = 32 - sum_q12.bit_length()
    xm1 = ((sum_q12 << clz) & 0xFFFFFFFF) - (1 << 31)
    s = xm1 + INT32_MAX
    half = (s + 1) // 2 if s >= 0 else -((1 - s) // 2)     # RoundingHalfSum, C division
    x = 1515870810 + _srdhm1(half, -1010580540)
    for _ in range(3):
        x = x + _satshl1(_srdhm1(x, (1 << 29) - _srdhm1(half, x)), 2)
    return _satshl1(x, 1), 12 - clz


def softmax(x, p):
    out = np.empty(x.shape, np.int8)
    for r, row in enumerate(x.astype(int)):
        mx = int(row.max())
        live = [int(v) - mx >= p.diff_min for v in row]
        exps = [exp_on_negative_values_q5(int(mbqm(int(v) - mx, p.input_multiplier, p.input_left_shift)))
                if ok else 0 for v, ok in zip(row, live)]
        total = min(INT32_MAX, sum(_rdbp1(e, 12) for e, ok in zip(exps, live) if ok))
        scale, nbits = reciprocal(total)
        for c, (e, ok) in enumerate(zip(exps, live)):
            out[r, c] = max(-128, min(127, _rdbp1(_srdhm1(scale, e), nbits + 23) - 128)) if ok else -128
    return out
