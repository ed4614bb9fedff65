"""The fast forms of the calibration and reference code (issue 14 item 4) equal their plain
definitions bit for bit: each plain form below is the code the fast one replaced (numpy, one step at
a time), run on random values and on the edge cases where the two could part (ties, -0.0, int32
limits, values on histogram edges)."""
from __future__ import annotations

import numpy as np
import pytest

from quantize.observers import KL_BINS, KL_STEP, SAMPLE_PER_TENSOR, Observer, kl_range
from toolchain.blas import _openblas, one_blas_thread
from toolchain.ir import QuantParams
from toolchain.ops.common import Window, conv_f32, requant_arrays
from toolchain.ops.conv2d import conv2d_acc, im2col_s8_offset
from toolchain.ops.depthwise_conv2d import _acc as depthwise_acc
from toolchain.ops.fixed_point import (INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier,
                                       rounding_divide_by_pot, saturate_int32,
                                       saturating_rounding_doubling_high_mul, wrap_int32)

RNG = np.random.default_rng(14)


# ---- fixed point (gemmlowp) -------------------------------------------------------------------------
def _srdhm_plain(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = np.where(t >= 0, t >> 31, -((-t) >> 31))  # C's '/' truncates toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, q)


def _rdbp_plain(x, e):
    x, e = np.asarray(x, np.int64), np.asarray(e, np.int64)
    mask = (np.int64(1) << e) - 1
    return (x >> e) + ((x & mask) > (mask >> 1) + (x < 0))


def _int32_values(n: int) -> np.ndarray:
    edges = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -1, 0, 1, 1 << 30, INT32_MAX - 1, INT32_MAX]
    return np.concatenate([edges, RNG.integers(INT32_MIN, INT32_MAX, n, endpoint=True),
                           RNG.integers(-5000, 5000, n)]).astype(np.int64)


def test_saturating_rounding_doubling_high_mul_is_gemmlowps():
    a = _int32_values(20000)
    for b in (INT32_MIN, -(1 << 30) - 7, -1, 0, 1, 1 << 30, 1518500250, INT32_MAX):
        np.testing.assert_array_equal(saturating_rounding_doubling_high_mul(a, b), _srdhm_plain(a, b))
    b = RNG.integers(INT32_MIN, INT32_MAX, a.size, endpoint=True)
    np.testing.assert_array_equal(saturating_rounding_doubling_high_mul(a, b), _srdhm_plain(a, b))


def test_rounding_divide_by_pot_is_gemmlowps():
    x = _int32_values(20000)
    for e in range(0, 32):
        np.testing.assert_array_equal(rounding_divide_by_pot(x, e), _rdbp_plain(x, e))
    ties = np.array([-12, -10, -6, -2, 2, 6, 10, 12])  # exactly half-way for e = 2: away from zero
    np.testing.assert_array_equal(rounding_divide_by_pot(ties, 2), [-3, -3, -2, -1, 1, 2, 3, 3])
    e = RNG.integers(0, 32, x.size)                     # per element, as per-channel shifts broadcast
    np.testing.assert_array_equal(rounding_divide_by_pot(x, e), _rdbp_plain(x, e))
    big = np.array([(1 << 62) + 5, -(1 << 62) - 5])   # past the one-shift form's range: the plain steps
    np.testing.assert_array_equal(rounding_divide_by_pot(big, 3), _rdbp_plain(big, 3))


def test_multiply_by_quantized_multiplier_fast_path_is_the_definition():
    x = _int32_values(5000)
    cases = [(1 << 30, -1), (1583594044, -9), (INT32_MAX, 0), (1 << 30, 0), (1073741825, -31), (INT32_MIN, -2),
             (1 << 30, 3), (1518500250, 1)]
    for mult, shift in cases:
        want = rounding_divide_by_pot(_srdhm_plain(saturate_int32(x << max(shift, 0)), mult), max(-shift, 0))
        np.testing.assert_array_equal(multiply_by_quantized_multiplier(x, mult, shift), want)
    mult = RNG.integers(1 << 30, 1 << 31, 16)           # per channel, as the conv references pass them
    shift = RNG.integers(-31, 1, 16)
    acc = RNG.integers(-(1 << 24), 1 << 24, (7, 16))
    want = _rdbp_plain(_srdhm_plain(acc, mult), -shift)
    np.testing.assert_array_equal(multiply_by_quantized_multiplier(acc, mult, shift), want)
    assert int(multiply_by_quantized_multiplier(7984, 1583594044, -9)) == 12  # BL-01


def test_wrap_int32_wraps_only_what_overflows():
    x = np.array([INT32_MAX, INT32_MIN, 0, -7])
    assert wrap_int32(x) is x or np.array_equal(wrap_int32(x), x)
    np.testing.assert_array_equal(wrap_int32(np.array([INT32_MAX + 1, INT32_MIN - 1, 5])), [INT32_MIN, INT32_MAX, 5])


def test_quantize_rounds_half_away_from_zero_as_before():
    qp = QuantParams.per_tensor(0.5, -3)
    x = np.concatenate([np.arange(-70, 70) * 0.25, [-0.0, 0.0, 1e9, -1e9, 0.7499999, -0.7499999],
                        RNG.standard_normal(5000) * 40]).astype(np.float32)
    q = np.asarray(x, np.float64) / qp.s
    want = np.clip(np.sign(q) * np.floor(np.abs(q) + 0.5) + qp.zp, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(qp.quantize(x), want)


# ---- calibration ------------------------------------------------------------------------------------
def _kl_plain(vals, lo, hi):
    signed = lo < 0
    top = max(abs(lo), abs(hi)) if signed else hi
    levels = 128 if signed else 256
    vals = vals[vals != 0]
    hist = np.histogram(np.abs(vals) if signed else vals, bins=KL_BINS, range=(0.0, top))[0].astype(np.float64)
    best = (np.inf, KL_BINS)
    for i in range(levels, KL_BINS + 1, KL_STEP):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()
        starts = (np.arange(levels) * i) // levels
        merged = np.add.reduceat(hist[:i], starts)
        nonzero = (hist[:i] > 0).astype(np.float64)
        spread = np.add.reduceat(nonzero, starts)
        group = np.repeat(np.arange(levels), np.diff(np.append(starts, i)))
        q = np.where(nonzero > 0, merged[group] / np.maximum(spread[group], 1), 0.0)
        ps, qs = p.sum(), q.sum()
        if ps <= 0 or qs <= 0:
            continue
        pn, qn = p / ps, q / qs
        m = pn > 0
        kl = float(np.sum(pn[m] * np.log(pn[m] / np.maximum(qn[m], 1e-12))))
        if kl < best[0] - 1e-12:
            best = (kl, i)
    t = best[1] * top / KL_BINS
    return (max(lo, -t), min(hi, t)) if signed else (lo, min(hi, t))


@pytest.mark.parametrize("kind", ["relu", "normal", "heavy", "sparse"])
def test_kl_range_is_the_plain_definition(kind):
    n = 60_000
    v = {"relu": np.maximum(RNG.standard_normal(n), 0), "normal": RNG.standard_normal(n) * 3,
         "heavy": RNG.standard_t(2, n), "sparse": np.where(RNG.random(n) < 0.97, 0, RNG.exponential(5, n))}[kind]
    v = v.astype(np.float32)
    lo, hi = float(v.min()), float(v.max())
    assert kl_range(v, lo, hi) == _kl_plain(v, lo, hi)


def test_update_many_is_that_many_updates():
    data = (RNG.standard_normal((9, 1, 5, 3000)) * 2).astype(np.float32)  # 15,000 values per sample
    assert data[0].size <= SAMPLE_PER_TENSOR
    big = RNG.standard_normal((6, 1, SAMPLE_PER_TENSOR + 1000)).astype(np.float32)  # subsampled
    for x in (data, big):
        one, many = Observer(seed=3), Observer(seed=3, capacity=len(x))
        for sample in x:
            one.update(sample)
        many.update_many(x[:4])
        many.update_many(x[4:])
        assert many.samples == one.samples == len(x)
        np.testing.assert_array_equal(many.values(), one.values())
        np.testing.assert_array_equal(many.values([5, 1]), one.values([5, 1]))
        for m in ("minmax", "percentile", "kl", "mse"):
            assert many.range(m) == one.range(m) and many.range(m, [0, 2, 4]) == one.range(m, [0, 2, 4])


def test_observer_of_varying_sizes_and_extremes_only():
    o = Observer(seed=0)
    o.update(np.arange(4, dtype=np.float32))
    o.update(np.arange(6, dtype=np.float32) - 9)   # another size: one array per sample from here
    np.testing.assert_array_equal(o.values(), [0, 1, 2, 3, -9, -8, -7, -6, -5, -4])
    assert o.range("minmax") == (-9.0, 3.0)
    e = Observer(seed=0, keep_values=False)
    e.update_many(np.arange(12, dtype=np.float32).reshape(3, 4) - 5)
    assert e.range("minmax") == (-5.0, 6.0) and e.samples == 3
    with pytest.raises(ValueError, match="extremes"):
        e.range("mse")


def test_range_results_are_kept_until_the_next_update():
    o = Observer(seed=1)
    o.update(np.linspace(-1, 1, 100, dtype=np.float32))
    first = o.range("mse")
    assert o.range("mse") is first                  # memoised
    o.update(np.linspace(-5, 5, 100, dtype=np.float32))
    assert o.range("mse") != first                  # a new sample: computed again


# ---- float and int8 convolutions ---------------------------------------------------------------------
def _conv_rows_plain(x, w, b, groups):
    """conv_f32 of a 1x1 convolution as it was: zero float64 accumulator, one product per output row."""
    n, h, wd, cin = x.shape
    cout, gin = w.shape[0], w.shape[3]
    gout = cout // groups
    y = np.zeros((n, h, wd, cout))
    xp = x.astype(np.float64)
    for g in range(groups):
        y[..., g * gout:(g + 1) * gout] += xp[..., g * gin:(g + 1) * gin] @ w[g * gout:(g + 1) * gout, 0, 0].astype(
            np.float64).T
    if b is not None:
        y += b
    return y.astype(np.float32)


@pytest.mark.parametrize("n, hw, cin, cout, groups, bias", [(1, 6, 128, 128, 1, True), (5, 7, 9, 13, 1, False),
                                                            (3, 5, 8, 12, 2, True), (2, 48, 8, 16, 1, True)])
def test_pointwise_conv_is_the_per_row_product(n, hw, cin, cout, groups, bias):
    x = RNG.standard_normal((n, hw, hw, cin)).astype(np.float32)
    x[0, 0, 0] = 0.0                                 # a pixel of zeros: 0 * w products, and for output
    w = RNG.standard_normal((cout, 1, 1, cin // groups)).astype(np.float32)
    w[0] = -np.abs(w[0])                             # channel 0 (negative weights) a product of -0.0 alone
    b = RNG.standard_normal(cout).astype(np.float32) if bias else None
    got, want = conv_f32(x, w, b, Window((1, 1)), groups), _conv_rows_plain(x, w, b, groups)
    assert got.tobytes() == want.tobytes()          # bit for bit, signs of zeros too


def test_int8_convolution_accumulators_are_the_integer_sums():
    x = RNG.integers(-128, 128, (3, 9, 8, 6)).astype(np.int8)
    w = RNG.integers(-127, 128, (10, 1, 1, 6)).astype(np.int8)
    b = RNG.integers(-5000, 5000, 10)
    got = conv2d_acc(x, w, b, stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(9, 8), input_offset=7)
    want = np.einsum("nhwc,oc->nhwo", x.astype(np.int64) + 7, w[:, 0, 0].astype(np.int64)) + b
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


@pytest.mark.parametrize("mult, stride, pad, dilation, dtype", [(1, (1, 1), (1, 1), (1, 1), np.int8),
                                                                (2, (2, 1), (0, 2), (1, 2), np.int8),
                                                                (1, (1, 1), (1, 1), (1, 1), np.int16)])
def test_depthwise_accumulators_are_the_integer_sums(mult, stride, pad, dilation, dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 9, 10, 4), endpoint=True).astype(dtype)
    w = RNG.integers(-127, 128, (1, 3, 3, 4 * mult)).astype(np.int8)
    b = RNG.integers(-5000, 5000, 4 * mult)
    oh, ow = ((9 + pad[0] * 2 - (2 * dilation[0] + 1)) // stride[0] + 1, (10 + pad[1] * 2 - (2 * dilation[1] + 1))
              // stride[1] + 1)
    off, foff = (-3, 2) if dtype == np.int8 else (0, 0)
    got = depthwise_acc(x, w, b, stride, pad, dilation, (oh, ow), mult, off, foff)
    p = im2col_s8_offset(x, (3, 3), stride=stride, pad=pad, dilation=dilation, out_hw=(oh, ow), input_offset=off)
    wk = w.reshape(3, 3, 4, mult).astype(np.int64) + foff
    want = np.einsum("nhwijc,ijcm->nhwcm", p, wk).reshape(2, oh, ow, 4 * mult) + b
    np.testing.assert_array_equal(got, want)


# ---- parameters and threads ---------------------------------------------------------------------------
def test_requant_arrays_cache_is_read_only_and_type_exact():
    a = requant_arrays(0.02, (0.001, 0.0042), 0.05)
    assert a[0] is requant_arrays(0.02, (0.001, 0.0042), 0.05)[0]  # cached
    assert not a[0].flags.writeable and not a[1].flags.writeable
    f32 = requant_arrays(0.02, (np.float32(0.001), np.float32(0.0042)), 0.05)  # computed in float32 steps
    assert f32[0].flags.writeable                                             # not from the cache


def test_one_blas_thread_restores_the_thread_count():
    fns = _openblas()
    if fns is None:
        pytest.skip("no OpenBLAS found in this process")
    get, put = fns
    before = get()
    put(2)
    with one_blas_thread():
        assert get() == 1
    assert get() == 2
    put(before)


def test_template_cache_renders_what_a_fresh_compile_renders():
    from jinja2 import Environment

    from toolchain.codegen.emit import TEMPLATE_DIR, template_cache, template_env

    env = template_env()
    if env.bytecode_cache is None:
        pytest.skip("no temporary folder for Jinja's cache here")
    assert template_cache(Environment(trim_blocks=True)).pattern != template_cache(Environment()).pattern
    fresh = Environment(loader=env.loader, undefined=env.undefined, trim_blocks=True, lstrip_blocks=True,
                        keep_trailing_newline=True, autoescape=False)
    fresh.filters.update(env.filters)
    for path in sorted((TEMPLATE_DIR / "kernels" / "portable").glob("*.c.j2"))[:6]:
        name = f"kernels/portable/{path.name}"
        for _ in range(2):  # compiled (or read from the cache), then read back from the cache
            assert env.get_template(name).render() == fresh.get_template(name).render()
            env.cache.clear()  # Jinja's in-memory cache: the next get_template reads the bytecode cache
