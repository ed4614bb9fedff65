"""The offline numbers of the dsp 16x8 kernels (toolchain/isa/dsp_s16.py), in numpy, no board needed:
the requantization records against TFLM's 64-bit MultiplyByQuantizedMultiplier (the wide record's two
forms and the int32 cast's wrap; the narrow SMMLA record), the weight reorder against SXTB16, the
int32 chunk bound (exact and tight), the narrow rule at its boundaries, the blob layout, and the
plans' reasons."""
from __future__ import annotations

import numpy as np
import pytest

from toolchain.isa import dsp_s16
from toolchain.ops.quant16 import multiply_by_quantized_multiplier_s64


def _multipliers(rng: np.random.Generator, n: int) -> np.ndarray:
    """Q31 multipliers: ordinary ones, 0, and the range where the Q15 reduction saturates at 0x7FFF."""
    m = rng.integers(1 << 30, 1 << 31, n)
    m[::7] = 0
    m[1::7] = rng.integers(0x7FFF0000, 1 << 31, m[1::7].size)
    m[2::7] = 0x7FFF7FFF  # rounds to 0x7FFF without saturating
    return m


@pytest.mark.parametrize("shift", range(-31, 8))
def test_requant_record_is_tflm_mbqm(shift):
    """(int32)(hi32(acc M + R) >> S) mod 2^64 == TFLM's (int32)((acc m15 + 2^(t-1)) >> t) for every
    shift TFLM allows, random accumulators below 2^47 of both signs (the int32 cast wraps for large
    ones at positive shifts), the extremes, and ties (acc m15 = odd * 2^(t-1))."""
    rng = np.random.default_rng(100 + shift)
    n = 700
    mult = _multipliers(rng, n)
    acc = np.concatenate([rng.integers(-(1 << 47) + 1, 1 << 47, n // 2), rng.integers(-(1 << 20), 1 << 20, n // 2)])
    acc[:4] = [(1 << 47) - 1, -(1 << 47) + 1, 0, -1]
    m15 = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    t = 15 - shift
    ties = (rng.integers(-1000, 1000, n) * 2 + 1) << (t - 1)  # acc m15 = odd * 2^(t-1) for m15 = 1
    records = dsp_s16.requant_records(mult, np.full(n, shift))
    want = multiply_by_quantized_multiplier_s64(acc, mult, shift)
    np.testing.assert_array_equal(dsp_s16.emulate_rq(acc[None, :], records)[0], want)
    ones = dsp_s16.requant_records(np.full(n, 1 << 15), np.full(n, shift))  # m15 = 1
    np.testing.assert_array_equal(dsp_s16.emulate_rq(ties[None, :], ones)[0],
                                  multiply_by_quantized_multiplier_s64(ties, 1 << 15, shift))
    if shift >= 1:  # the int32 cast wraps here: the records reproduce it
        assert np.any(np.abs((acc * m15) >> t) >= 1 << 31)


@pytest.mark.parametrize("shift", range(-31, -1))
def test_narrow_record_is_tflm_mbqm(shift):
    """Narrow layers (accumulator inside int32, t >= 17): the 3-word record is one SMMLA and an ASR,
    hi32(A * 2^32 + acc * M) >> S, with M < 2^31 (a signed operand), equal to TFLM's value for every
    int32 accumulator (the extremes and ties acc m15 = odd * 2^(t-1) included)."""
    rng = np.random.default_rng(200 + shift)
    mult = _multipliers(rng, 600)
    rec = dsp_s16.narrow_records(mult, np.full(600, shift))
    assert np.all(rec[:, 0] < 1 << 31) and np.all(rec[:, 1] < 1 << 31) and np.all(rec[:, 2] >= 1)
    acc = rng.integers(-(1 << 31), 1 << 31, 600)
    acc[:2] = [-(1 << 31), (1 << 31) - 1]
    np.testing.assert_array_equal(dsp_s16.emulate_narrow(acc, rec),
                                  multiply_by_quantized_multiplier_s64(acc, mult, shift))
    t = 15 - shift
    ties = np.clip((rng.integers(-1000, 1000, 600) * 2 + 1) << (t - 1), -(1 << 31), (1 << 31) - 1)
    ones = dsp_s16.narrow_records(np.full(600, 1 << 15), np.full(600, shift))  # m15 = 1
    np.testing.assert_array_equal(dsp_s16.emulate_narrow(ties, ones),
                                  multiply_by_quantized_multiplier_s64(ties, 1 << 15, shift))


def test_records_refuse_shifts_outside_their_range():
    with pytest.raises(ValueError, match="shift"):
        dsp_s16.requant_records([1 << 30], [8])
    with pytest.raises(ValueError, match="shift"):
        dsp_s16.narrow_records([1 << 30], [-1])  # t = 16: M would need 32 bits unsigned


def _sxtb16(word: np.ndarray, ror: int) -> tuple[np.ndarray, np.ndarray]:
    b = word.view(np.int8).reshape(-1, 4).astype(np.int64)
    return (b[:, 1], b[:, 3]) if ror else (b[:, 0], b[:, 2])


def test_reorder_groups_pairs_with_the_int16_words():
    """SXTB16 of a reordered group word is (w0, w1), SXTB16 ROR 8 is (w2, w3); a partial last group is
    zero-padded."""
    w = np.arange(-64, -64 + 3 * 11, dtype=np.int8).reshape(3, 11)
    r = dsp_s16.reorder_groups(w)
    assert r.shape == (3, 12)
    words = np.ascontiguousarray(r).view(np.int32).reshape(-1)
    lo, hi = _sxtb16(words, 0)
    lo2, hi2 = _sxtb16(words, 8)
    padded = np.pad(w, ((0, 0), (0, 1))).reshape(-1, 4).astype(np.int64)
    np.testing.assert_array_equal(np.stack([lo, hi, lo2, hi2], 1), padded)


def _windows_ok(w2d: np.ndarray, chunk: int) -> bool:
    """The kernels' chunks (groups [0, c), [c, 2c), ..., the tail group with the last) each below 2^31
    in 32768 * sum |w|, brute force."""
    o, k = w2d.shape
    full, groups = k // 4, -(-k // 4)
    a = np.abs(w2d.astype(np.int64))
    starts = list(range(0, max(full, 1), chunk))
    for i, s in enumerate(starts):
        end = groups if i == len(starts) - 1 else s + chunk
        if a[:, 4 * s:min(4 * end, k)].sum(axis=1).max() * 32768 >= 1 << 31:
            return False
    return True


@pytest.mark.parametrize("k", [1, 3, 4, 509, 511, 512, 513, 2000, 4097])
def test_accumulator_chunk_is_safe_and_tight(k):
    """The chunk keeps every int32 partial sum below 2^31 for every input (brute force over the
    kernels' windows) and one more group would not (unless it covers the whole K already); with all
    weights -128, 127 groups of four (2^31 - 2^24) is the limit."""
    rng = np.random.default_rng(k)
    for w in (np.full((2, k), -128, np.int8), rng.integers(-128, 128, (5, k)).astype(np.int8),
              np.where(rng.random((3, k)) < 0.5, 127, -128).astype(np.int8)):
        c = dsp_s16.accumulator_chunk(w)
        assert _windows_ok(w, c)
        groups = -(-k // 4)
        assert c == groups or not _windows_ok(w, c + 1)
    if k >= 512:
        assert dsp_s16.accumulator_chunk(np.full((1, k), -128, np.int8)) == 127


def test_narrow_rule_at_its_boundaries():
    """narrow: |bias| + 32768 * sum |w| < 2^31 for every channel and every t = 15 - shift >= 17."""
    w = np.full((2, 100), -128, np.int8)
    top = (1 << 31) - 1 - 32768 * 12800
    assert dsp_s16.narrow(w, np.array([top, -top]), np.array([-2, -31]))
    assert not dsp_s16.narrow(w, np.array([top + 1, 0]), np.array([-2, -2]))
    assert not dsp_s16.narrow(w, np.array([0, -top - 1]), np.array([-2, -2]))
    assert not dsp_s16.narrow(w, None, np.array([-2, -1]))  # t = 16: the record's M needs 64 bits
    assert dsp_s16.narrow(w, None, np.array([-2, -2]))


@pytest.mark.parametrize("narrow_layer", [True, False])
def test_gemm_blob_layout(narrow_layer):
    """Per pair of channels: two biases (narrow: int32, else int64), 8 bytes per 4-k group, two records
    (narrow: 3 words, else 5); an odd last channel: bias, 4 bytes per group, one record. The biases
    read back as written."""
    rng = np.random.default_rng(1)
    bw, rw = (4, 12) if narrow_layer else (8, 20)
    for o, k in ((1, 1), (2, 4), (3, 9), (7, 33)):
        w = rng.integers(-128, 128, (o, k)).astype(np.int8)
        bias = rng.integers(-(1 << 30), 1 << 30, o) if narrow_layer else rng.integers(-(1 << 46), 1 << 46, o)
        blob = dsp_s16.pack_gemm_blob(w, bias, np.full(o, 1 << 30), np.full(o, -10), narrow_layer)
        g = -(-k // 4)
        assert blob.dtype == np.int8
        assert blob.size == (o // 2) * (2 * bw + 8 * g + 2 * rw) + (o % 2) * (bw + 4 * g + rw)
        assert blob[:bw].view("<i4" if narrow_layer else "<i8")[0] == bias[0]
        if o > 1:
            assert blob[bw:2 * bw].view("<i4" if narrow_layer else "<i8")[0] == bias[1]


def test_plans_give_reasons():
    """Grouped convolution, and for the 1x1 entry point another kernel size, padding or an output beyond
    the strided input, in the user's words; a depthwise kernel row whose products overflow int32."""
    k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -20),
             act_min=-32768, act_max=32767)
    w = np.ones((4, 1, 1, 4), np.int8)
    assert dsp_s16.conv2d_plan_why(k, (1, 3, 3, 8), w, None, (1, 3, 3, 4), pointwise=True) == "grouped convolution"
    assert dsp_s16.conv2d_plan_why(k, (1, 3, 3, 4), np.ones((4, 3, 3, 4), np.int8), None, (1, 1, 1, 4),
                                   pointwise=True) == "kernel is not 1x1"
    assert dsp_s16.conv2d_plan_why({**k, "pad": (1, 0)}, (1, 3, 3, 4), w, None, (1, 5, 3, 4),
                                   pointwise=True) == "padding"
    args, scratch = dsp_s16.conv2d_plan_why(k, (1, 3, 3, 4), np.ones((4, 3, 3, 4), np.int8), None, (1, 1, 1, 4),
                                            pointwise=False)
    assert scratch == 2 * 2 * 36 and args[6].value == 0  # two int16 columns of k4 = 36; narrow
    kd = {**k, "depth_multiplier": 1}
    wide = np.full((1, 1, 600, 4), -128, np.int8)
    assert "overflow" in dsp_s16.depthwise_plan_why(kd, (1, 1, 600, 4), wide, None, (1, 1, 1, 4))
