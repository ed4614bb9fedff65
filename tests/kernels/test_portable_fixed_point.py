"""ecc_fixed_point.h helpers against the independent oracle (and toolchain.ops.fixed_point if present)."""
import ctypes

import numpy as np
import pytest

import ecc_pyref as ref

I32MIN, I32MAX = -(2**31), 2**31 - 1
EDGES = np.array([I32MIN, I32MIN + 1, -(2**30) - 1, -(2**30), -(2**30) + 1, -65536, -3, -2, -1, 0, 1, 2, 3,
                  65535, 2**30 - 1, 2**30, 2**30 + 1, I32MAX - 1, I32MAX], np.int64)


def _call(lib, name, *arrays):
    arrays = [np.ascontiguousarray(a, dtype=np.int32) for a in arrays]
    out = np.zeros(arrays[0].shape, np.int32)
    p = ctypes.POINTER(ctypes.c_int32)
    getattr(lib, f"shim_{name}")(*[a.ctypes.data_as(p) for a in arrays], out.ctypes.data_as(p),
                                 ctypes.c_int32(out.size))
    return out.astype(np.int64)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(1234)


def _pairs(rng, n=20000):
    a = np.concatenate([np.repeat(EDGES, EDGES.size), rng.integers(I32MIN, I32MAX, n, endpoint=True)])
    b = np.concatenate([np.tile(EDGES, EDGES.size), rng.integers(I32MIN, I32MAX, n, endpoint=True)])
    return a, b


def test_srdhm(fixed_point_shim, rng):
    a, b = _pairs(rng)
    np.testing.assert_array_equal(_call(fixed_point_shim, "srdhm", a, b), ref.srdhm(a, b))
    assert _call(fixed_point_shim, "srdhm", [I32MIN], [I32MIN])[0] == I32MAX


def test_srdhm_matches_gemmlowp_nudge_truncate_form(rng):
    """The floor form used in C equals gemmlowp's (ab + nudge) / 2^31 with C truncation."""
    a, b = _pairs(rng)
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    trunc = np.where(t >= 0, t >> 31, -((-t) >> 31))
    ok = ~((a == I32MIN) & (b == I32MIN))
    np.testing.assert_array_equal(ref.srdhm(a, b)[ok], trunc[ok])


def test_rounding_divide_by_pot(fixed_point_shim, rng):
    x = np.concatenate([np.repeat(EDGES, 32), rng.integers(I32MIN, I32MAX, 20000, endpoint=True)])
    e = np.concatenate([np.tile(np.arange(32), EDGES.size), rng.integers(0, 32, 20000)])
    np.testing.assert_array_equal(_call(fixed_point_shim, "rdbp", x, e), ref.rdbp(x, e))
    # ties go away from zero
    np.testing.assert_array_equal(_call(fixed_point_shim, "rdbp", [5, -5, 6, -6, -1, 1], [1] * 6),
                                  [3, -3, 3, -3, -1, 1])


def test_saturating_left_shift(fixed_point_shim, rng):
    x = np.concatenate([np.repeat(EDGES, 32), rng.integers(I32MIN, I32MAX, 5000, endpoint=True)])
    e = np.concatenate([np.tile(np.arange(32), EDGES.size), rng.integers(0, 32, 5000)])
    np.testing.assert_array_equal(_call(fixed_point_shim, "sat_shl", x, e),
                                  np.clip(x << e, I32MIN, I32MAX))


def test_multiply_by_quantized_multiplier(fixed_point_shim, rng):
    n = 30000
    x = np.concatenate([np.repeat(EDGES, 10), rng.integers(-(2**24), 2**24, n), rng.integers(I32MIN, I32MAX, n)])
    m = rng.integers(2**30, 2**31 - 1, x.size, endpoint=True)
    m[:10] = [0, 2**30, I32MAX, 2**30 + 1, 1, 1 << 30, 1518500250, 1073741823, I32MAX, 2**30]
    s = rng.integers(-40, 36, x.size)     # includes positive (multiplier >= 1) and out-of-range shifts
    got = _call(fixed_point_shim, "mbqm", x, m, s)
    np.testing.assert_array_equal(got, ref.mbqm(x, m, s))
    try:
        from toolchain.ops.fixed_point import multiply_by_quantized_multiplier
    except Exception as exc:  # noqa: BLE001 - reference module may not exist yet
        pytest.skip(f"toolchain.ops.fixed_point not importable: {exc}")
    np.testing.assert_array_equal(got, multiply_by_quantized_multiplier(x, m, s))


def test_positive_shift_without_overflow_equals_tflite_int32_formula(fixed_point_shim, rng):
    """Where x << shift fits in int32, the saturating path is TFLite's x * (1 << shift) exactly."""
    s = rng.integers(1, 12, 20000)
    x = rng.integers(-(2**19), 2**19, s.size)
    m = rng.integers(2**30, 2**31 - 1, s.size)
    np.testing.assert_array_equal(_call(fixed_point_shim, "mbqm", x, m, s), ref.srdhm(x << s, m))


def test_exp_on_negative_values(fixed_point_shim, rng):
    a = np.concatenate([[0, -1, -(2**24), -(2**26), I32MIN, I32MIN + 1],
                        -rng.integers(0, 2**31, 4000, endpoint=True), -np.arange(0, 2**31, 2**21)])
    got = _call(fixed_point_shim, "exp_q5", a, np.zeros_like(a))
    np.testing.assert_array_equal(got, [ref.exp_on_negative_values_q5(int(v)) for v in a])
    # sanity: close to the real exponential
    np.testing.assert_allclose(got / 2.0**31, np.exp(a / 2.0**26), atol=2e-7)
    try:
        from toolchain.ops.softmax import exp_on_negative_values_q5_26
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"toolchain.ops.softmax not importable: {exc}")
    np.testing.assert_array_equal(got, exp_on_negative_values_q5_26(a))


def test_one_over_one_plus_x(fixed_point_shim, rng):
    a = np.concatenate([[0, 1, I32MAX, 2**30], rng.integers(0, 2**31, 4000)])
    got = _call(fixed_point_shim, "one_over_one_plus_x", a, np.zeros_like(a))
    np.testing.assert_allclose(got / 2.0**31, 1.0 / (1.0 + a / 2.0**31), atol=1e-8)
    try:
        from toolchain.ops.softmax import one_over_one_plus_x_for_x_in_0_1
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"toolchain.ops.softmax not importable: {exc}")
    np.testing.assert_array_equal(got, one_over_one_plus_x_for_x_in_0_1(a))


def test_count_leading_zeros(fixed_point_shim):
    vals = [0, 1, 2, 3, 0x7FFFFFFF, -1, I32MIN, 0x10000, 0xFFFF, 0x00800000, 0x01000000]
    got = _call(fixed_point_shim, "clz", vals, np.zeros(len(vals)))
    assert got.tolist() == [32 - (v & 0xFFFFFFFF).bit_length() for v in vals]


@pytest.mark.parametrize("dilation", [1, 2, 3])
def test_window_bounds(fixed_point_shim, dilation):
    out = np.zeros(2, np.int32)
    p = ctypes.POINTER(ctypes.c_int32)
    c = ctypes.c_int32
    for in_size in (1, 4, 7):
        for k in (1, 2, 3, 5):
            for origin in range(-12, 12):
                fixed_point_shim.shim_window(c(origin), c(dilation), c(k), c(in_size), out.ctypes.data_as(p))
                taps = [t for t in range(k) if 0 <= origin + t * dilation < in_size]
                s, e = out.tolist()
                assert list(range(s, e)) == taps, (origin, dilation, k, in_size)
