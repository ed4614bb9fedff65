"""`rounding: onnx` on the DSP kernels (issue 13 item 1) and weights of -128 on them (BL-04).

- Conv / depthwise / FC (`_onnx` entry points, ECC_DSP_F32): onnxruntime's float32 output stage; the
  packed scale words (Folded.multipliers: f32_scale * 2^-j for sums of 2^j acc) re-done in numpy float32
  equal requantize_s8_f32 on random, float32-tie and large accumulators; the built float32 ties
  (dsp_onnx_cases.f32_ties) are ties in float32 and not in the reals, in both directions.
- Transpose conv and Add keep the exact product rounded once (ECC_DSP_RNE: the high word of the 64-bit
  product, rounded half up with the RELU mode's k trick; ECC_DSP_RNE_CLAMP: half up minus the tie
  term): re-done in numpy integers it equals the oracle multiply_by_quantized_multiplier_rne on random
  and tie-only inputs, and ECC_DSP_RNE is only chosen where no tie changes an output (packing.tie_free).
- The cases of dsp_onnx_cases.py (every dsp kernel with a requantization epilogue, random, tie-heavy,
  edge, float32-tie and -128-weight layers) run bit-exact on the Cortex-M4, M7 and M33 under QEMU
  against the numpy reference of rounding "onnx"; the tie-heavy layers do hold ties, where TFLM's double
  rounding differs.
- Plans: -128 weights keep every kernel but dsp/fully_connected (16-bit lane pairs), whose reason is
  given; the reasons (why_not) of the other variants.
"""
from __future__ import annotations

import numpy as np
import pytest

import dsp_harness
import dsp_onnx_cases
from toolchain.isa import dsp
from toolchain.isa.packing import F32, F32_DOUBLED, F32_FC, F32_GEMM, TIE_FREE_ODD, fold_layer, tie_free
from toolchain.ops import conv2d
from toolchain.ops.fixed_point import (multiply_by_quantized_multiplier_rne, requantize_s8, requantize_s8_f32,
                                       rounding_mode)

CASES = dsp_onnx_cases.onnx_cases()


def _rne_fast(acc: np.ndarray, mult: np.ndarray, e: np.ndarray, off: int) -> np.ndarray:
    """ECC_DSP_RNE in integers: hi = (2 acc mult) >> 32, ssat8(((hi >> (e - 1)) + 2 off + 1) >> 1)."""
    hi = (2 * acc * mult) >> 32
    return np.clip(((hi >> (e - 1)) + 2 * off + 1) >> 1, -128, 127)


def _rne_exact(acc: np.ndarray, mult: np.ndarray, e: np.ndarray) -> np.ndarray:
    """ecc_dsp_rne_exact in integers (python ints: the 64-bit masks of the C)."""
    out = []
    for a, m, s in zip(acc.tolist(), mult.tolist(), e.tolist()):
        p, t = 2 * a * m, 32 + s
        up = (p + (1 << (t - 1))) >> t
        tie = ((p % (1 << 64)) << (63 - t)) % (1 << 64) == 1 << 62
        out.append(up - tie)
    return np.array(out, np.int64)


def test_rne_exact_formula_is_the_oracle():
    """Half up minus the tie term == one rounding to even, on random accumulators and on exact ties
    (acc = 2^(t - 1 - a) * odd for mult = m_odd 2^a), both signs, every shift 0..31."""
    rng = np.random.default_rng(1)
    n = 20000
    e = rng.integers(0, 32, n)
    mult = np.where(rng.random(n) < 0.5, rng.integers(1 << 30, 1 << 31, n), (rng.integers(1, 64, n) | 1) << 24)
    acc = rng.integers(-(1 << 29), 1 << 29, n)
    a = np.array([int(m & -m).bit_length() - 1 for m in mult])
    tie_acc = np.where(30 + e - a >= 0, (rng.integers(-7, 8, n) | 1) << np.clip(30 + e - a, 0, 28), 1)
    for x in (acc, tie_acc):
        np.testing.assert_array_equal(_rne_exact(x, mult, e), multiply_by_quantized_multiplier_rne(x, mult, -e))
    ties = [(x * m) % (1 << (31 + s)) == 1 << (30 + s) for x, m, s in zip(tie_acc.tolist(), mult.tolist(), e.tolist())]
    assert np.mean(ties) > 0.3  # exact ties indeed


def test_rne_fast_formula_where_tie_free():
    """ECC_DSP_RNE (e >= 1, full range) == the oracle + offset, saturated, for tie-free multipliers,
    including the accumulators of the ties nearest to zero (255.5 for odd part 511), |acc| < 2^30 (the
    bound fold_layer proves); and it would be wrong for the odd part 509 (packing.tie_free is tight)."""
    rng = np.random.default_rng(2)
    for odd in (TIE_FREE_ODD, TIE_FREE_ODD + 2, 2**24 + 1):
        a = 30 - odd.bit_length() + 1
        mult = np.full(4000, odd << a)
        assert tie_free(mult).all() and mult.max() < 2**31
        for e in (1, 2, 7, 31):
            acc = np.concatenate([rng.integers(-(1 << 29), 1 << 29, 2000),
                                  ((rng.integers(-50, 50, 2000) | 1) << min(max(0, 30 + e - a), 23))])
            for off in (-128, 0, 127):
                want = np.clip(multiply_by_quantized_multiplier_rne(acc, mult, -e) + off, -128, 127)
                np.testing.assert_array_equal(_rne_fast(acc, mult, np.full_like(acc, e), off), want)
    mult, e, off = np.array([509 << 21]), np.array([1]), -128
    assert not tie_free(mult).any()  # 1024 * 509 / 2^11 = 254.5: RNE 254 - 128, half up 255 - 128
    worst = [a for a in range(-4096, 4097, 1024)
             if _rne_fast(np.array([a]), mult, e, off)[0] != np.clip(multiply_by_quantized_multiplier_rne(
                 np.array([a]), mult, -e)[0] + off, -128, 127)]
    assert worst == [1024], "odd part 509 has an output-changing tie (the bound is tight)"


def _rne_tie(acc: np.ndarray, mult: np.ndarray, e: np.ndarray, off: int) -> np.ndarray:
    """ECC_DSP_OUT_RNE_TIE in integers: q = hi >> (e - 1); minus 2 when lo == 0, (q << (e - 1)) == hi and
    q mod 4 == 1; then ssat8((q + 2 off + 1) >> 1)."""
    p = 2 * acc * mult
    hi, lo = p >> 32, p & 0xFFFFFFFF
    sh = e - 1
    q = hi >> sh
    fix = (lo == 0) & ((q << sh) == hi) & (q & 3 == 1)
    return np.clip((q - 2 * fix + 2 * off + 1) >> 1, -128, 127)


def test_rne_tie_formula_is_the_oracle():
    """ECC_DSP_RNE_TIE (full range, e >= 1, any multiplier) == the oracle + offset, saturated, on random
    accumulators and on exact ties of power-of-two multipliers (odd parts 1, 3, 509)."""
    rng = np.random.default_rng(4)
    for odd, a in ((1, 30), (3, 29), (509, 21), (2**23 + 1, 7)):
        for e in (1, 2, 5, 13, 31):
            mult = np.full(6000, odd << a)
            acc = np.concatenate([rng.integers(-(1 << 29), 1 << 29, 2000), rng.integers(-3000, 3000, 2000),
                                  ((rng.integers(-300, 300, 2000) | 1) << min(max(0, 30 + e - a), 20))])
            for off in (-128, -1, 0, 127):
                want = np.clip(multiply_by_quantized_multiplier_rne(acc, mult, -e) + off, -128, 127)
                np.testing.assert_array_equal(_rne_tie(acc, mult, np.full_like(acc, e), off), want, (odd, e, off))


def test_tie_cases_hold_ties():
    """The tie-heavy conv layers of dsp_onnx_cases have outputs where onnx's and TFLM's roundings
    differ (so the cases can fail a kernel that rounds like TFLM)."""
    rng = np.random.default_rng(3)
    x = rng.integers(-16, 16, (1, 6, 6, 8), dtype=np.int8)
    w = rng.integers(-4, 5, (5, 3, 3, 8), dtype=np.int8)
    mult, shift = dsp_onnx_cases.tie_requant(rng, 5, 4.0 * 16 * np.sqrt(72))
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(6, 6), input_offset=0, output_offset=0,
             out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
    tflm = conv2d.conv2d_s8(x, w, None, **k)
    with rounding_mode("onnx"):
        onnx = conv2d.conv2d_s8(x, w, None, **k)
    assert (tflm != onnx).sum() >= 5  # 8 of 180 here
    assert not tie_free(mult).any()
    f = fold_layer(w.reshape(5, -1), None, 0, mult, shift, 0, (-128, 127), rounding="onnx")
    assert f.modes == ("onnx_tie", "onnx_clamp", F32)  # ties reachable: not transpose conv's plain `_onnx` mode


def _f32_kernel(acc: np.ndarray, words: np.ndarray, j: int, off: int, lo: int, hi: int) -> np.ndarray:
    """ecc_dsp_f32 in numpy: the kernel's sums 2^j acc to float32 (nearest even), times the stored
    scale word (float32 bits), rint, + off saturated, clamped."""
    prod = (acc.astype(np.int64) << j).astype(np.float32) * words.astype(np.int32).view(np.float32)
    return np.clip(np.rint(prod.astype(np.float32)).astype(np.int64) + off, lo, hi)


def test_f32_words_are_the_reference():
    """The F32 scale words of every kernel kind (GEMM S, depthwise S / 2, FC S / 256) give
    requantize_s8_f32 exactly, on random accumulators up to 2^22 (FC's bound) and 2^29, calibrated
    multipliers, float32 ties and shift 0, narrow ranges and every zero point kind."""
    rng = np.random.default_rng(7)
    acc, mult, shift = dsp_onnx_cases.f32_ties(rng, 60)
    big = dsp_onnx_cases.f32_ties(rng, 30, big=True)
    n = 400
    rmult = rng.integers(1 << 30, 1 << 31, n)
    rshift = rng.integers(-31, 1, n)
    cases = [(acc, mult, shift), (big[0], big[1], big[2]),
             (rng.integers(-(1 << 22), 1 << 22, n), rmult, rshift), (rng.integers(-(1 << 29), 1 << 29, n), rmult, rshift)]
    for a, m, sh in cases:
        w = np.zeros((m.size, 1), np.int8)
        for off, lo, hi in ((0, -128, 127), (-128, -128, 127), (9, -50, 100)):
            f = fold_layer(w, np.zeros(m.size, np.int32), 0, m, sh, off, (lo, hi), rounding="onnx")
            want = requantize_s8_f32(a, m, sh, off, lo, hi)
            for j in (F32_GEMM, F32_DOUBLED, F32_FC):
                if j == F32_FC and np.abs(a).max() >= 2**23:
                    continue
                got = _f32_kernel(a, f.multipliers(F32, j), j, off, lo, hi)
                np.testing.assert_array_equal(got, want, (j, off))


def test_f32_ties_are_float32_ties_only():
    """dsp_onnx_cases.f32_ties: fl32(fl32(acc) S) is k + 1/2 exactly, the real product is not, both sides
    of it; requantize_s8_f32 then differs from the exact rounding (requantize_s8 "onnx") on many of them,
    up and down, also past 2^24."""
    from fractions import Fraction

    from toolchain.ops.fixed_point import f32_scale

    rng = np.random.default_rng(11)
    for big in (False, True):
        acc, mult, shift = dsp_onnx_cases.f32_ties(rng, 40, big)
        s = f32_scale(mult, shift)
        prod = (acc.astype(np.float32) * s).astype(np.float32)
        assert np.all(prod - np.floor(prod) == 0.5)
        exact = [Fraction(int(a)) * Fraction(float(v)) for a, v in zip(acc, s)]
        above = [e > Fraction(int(2 * np.floor(p) + 1), 2) for e, p in zip(exact, prod)]
        assert all(e != Fraction(int(2 * np.floor(p) + 1), 2) for e, p in zip(exact, prod))
        assert 10 <= sum(above) <= 30
        f32 = requantize_s8_f32(acc, mult, shift, 0, -128, 127).astype(np.int64)
        real = requantize_s8(acc, mult, shift, 0, -128, 127, "onnx").astype(np.int64)
        assert (f32 > real).sum() >= 5 and (f32 < real).sum() >= 5, (f32 - real)


def test_cases_cover_every_onnx_entry_point():
    used = {c.function for c in CASES}
    onnx = {f for f in dsp_harness.prototypes() if "_onnx" in f}
    assert onnx <= used, onnx - used
    kinds = {c.name.split("-")[0].rsplit("_", 1)[-1] for c in CASES}
    assert {"random", "ties", "edges", "minus128", "tflm"} <= kinds


def test_minus128_weights_keep_the_dsp_kernels():
    """-128 weights: every kernel but fully_connected plans them (exact); fully_connected says why and
    its conv2d GEMM fallback takes them."""
    names = {c.name for c in CASES if "minus128" in c.name}
    for stem in ("conv2d", "conv2d_1x1", "depthwise_conv2d", "depthwise_conv2d_3x3", "transpose_conv"):
        assert any(n.endswith(f"-{stem}_onnx_clamp") or n.endswith(f"-{stem}_onnx") for n in names), stem
        assert any(n.endswith(f"-{stem}") or n.endswith(f"-{stem}_clamp") or n.endswith(f"-{stem}_relu")
                   for n in names), stem
    assert not any("fully_connected" in n for n in names)  # its fallback instead: fc*_gemm-conv2d*
    assert any("_fc" in n and "_gemm-conv2d_1x1" in n for n in names)
    assert any("_fc" in n and "_gemm-conv2d" in n and "1x1" not in n for n in names)
    w = np.full((2, 16), -128, np.int8)
    k = dict(input_offset=0, filter_offset=0, output_offset=0, out_mult=np.array([1 << 30]),
             out_shift=np.array([-12]), act_min=-128, act_max=127)
    assert dsp.fc_plan_why(k, (1, 16), w, None, (1, 2)) == "weights hold -128"


def test_why_not_reasons():
    """The first reason of a conv plan, in the user's words."""
    w = np.ones((4, 3, 3, 6), np.int8)
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), input_offset=0, output_offset=-128,
             out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -5), act_min=-128, act_max=127)
    why = lambda **kw: dsp.conv2d_plan_why(k, (1, 5, 5, 6), w, None, (1, 5, 5, 4), **kw)  # noqa: E731
    assert why(mode=F32, pointwise=True) == "kernel is not 1x1"
    assert not isinstance(why(mode=F32, pointwise=False), str)
    assert dsp.conv2d_plan_why(k, (1, 5, 5, 12), w, None, (1, 5, 5, 4), mode="full",
                               pointwise=False) == "grouped convolution"
    w1 = np.ones((4, 1, 1, 6), np.int8)
    assert dsp.conv2d_plan_why(dict(k, pad=(0, 0)), (1, 5, 5, 6), w1, None, (1, 5, 5, 4), mode="full",
                               pointwise=True) == "input channels not a multiple of 4"
    big = dict(k, out_mult=np.full(4, 1 << 30), out_shift=np.full(4, 1))
    assert "out of range" in dsp.conv2d_plan_why(big, (1, 5, 5, 6), w, None, (1, 5, 5, 4), mode="clamp",
                                                 pointwise=False)


@pytest.fixture(scope="module")
def results(tmp_path_factory, need_board):
    return dsp_harness.results_getter(tmp_path_factory, need_board, CASES, "dsp_onnx")


@pytest.mark.parametrize("board", dsp_harness.BOARDS)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_dsp_onnx_bit_exact(results, board, index):
    dsp_harness.check_result(results(board)[index], CASES[index])
