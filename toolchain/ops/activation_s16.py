"""16x8 SOFTMAX, LOGISTIC and TANH: the int16 arithmetic of TFLM's reference kernels and the
parameters their Prepare computes, bit for bit (TFLite 16x8 spec: int16 activations, zero point 0).

- SOFTMAX (micro/kernels/softmax_common.cc, reference_ops::SoftmaxInt16): two 513-entry int16 tables
  built at Prepare by LUTPopulate<int16_t> in float32 arithmetic (exp on [-10, 0] and 1/(1+x) on
  [0, 1]); they depend on nothing of the model (TFLM passes constant scales), only the input
  multiplier double(s_in) * double(beta) / (10 / 65535) does. Per row: x - max rescaled and recentred
  to int16, exp by table look-up with 7-bit linear interpolation, int32 sum, the reciprocal from the
  second table, output Q0.15 (scale 1/32768, zero point 0).
- LOGISTIC / TANH (micro/kernels/logistic_common.cc, tanh.cc, reference_integer_ops::Logistic /
  Tanh on int16): the input rescaled to units of 1/(3 * 4096) (input_multiplier, input_left_shift;
  power-of-two scales 2^-12, and 2^-11 for tanh, take the multiplier 3 << shift), then a 256-entry
  uint16 sigmoid table with 9 (logistic) or 8 (tanh) interpolation bits; output Q0.15.

The float32 steps are computed as C computes them on an IEEE machine without FMA contraction (the
TFLM oracle, x86-64); std::exp(float) and std::log(float) as the correctly rounded float32 of the
float64 function. glibc's expf / logf are not always correctly rounded, yet they give the same tables
and the same CheckedLog2 results (expf is one ulp off at one of the 1,537 exp-table sample points,
which changes no entry; tests/ops/test_s16x8_lut.py compares both with the C library's).
Owns the tables, params and numpy kernels; the OpDefs live in softmax.py, logistic.py, tanh.py and
the C twins in c_templates/kernels/portable/{softmax,logistic,tanh}_s16.c.j2.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from toolchain.ir import QuantParams
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier

F32 = np.float32
# the output of the three ops in 16x8: Q0.15 (TFLM checks scale 1/32768, zero point 0)
UNIT_OUT_S16 = QuantParams.per_tensor(1.0 / 32768.0, 0)
LUT_SIZE = 513  # LUTSize<int16_t>(): 512 segments and their end point
MAX_SOFTMAX_ROW = 65536  # beyond, the int32 sum of up to 32767 per entry may wrap (C UB)


# ---- float32 helpers: C's float arithmetic on the TFLM oracle ------------------------------------
def _round_f32(v) -> np.ndarray:
    """TfLiteRound on float (std::round: half away from zero), exact via float64."""
    d = np.asarray(v, F32).astype(np.float64)
    return (np.sign(d) * np.floor(np.abs(d) + 0.5)).astype(F32)


def expf(v) -> np.ndarray:
    """std::exp(float): the float32 nearest exp(v), from math.exp in float64 (numpy's float32 exp is
    not correctly rounded: it differs from glibc's expf in about 4 inputs of 10 on [-10.5, 0.5])."""
    flat = np.asarray(v, F32).reshape(-1)
    return np.array([math.exp(float(x)) for x in flat], np.float64).astype(F32).reshape(np.shape(v))


def logf(x: float) -> np.float32:
    """std::log(float) as the correctly rounded float32 of log(x)."""
    return F32(math.log(float(F32(x))))


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite CheckedLog2(float x): (is x within 1e-3 in log2 of a power of two, round(log2 x)),
    with log2 computed as logf(x) * (1.0f / logf(2.0f)) in float32."""
    x_log2 = F32(logf(x) * F32(F32(1.0) / logf(2.0)))
    rounded = _round_f32(x_log2)
    frac = F32(x_log2 - rounded)
    return bool(abs(frac) < F32(1e-3)), int(rounded)


# ---- int16 look-up tables (LUTPopulate<int16_t>, LUTLookup) --------------------------------------
def lut_populate_s16(fn, input_scale, input_zp: int, output_scale, output_zp: int) -> np.ndarray:
    """TFLite LUTPopulateInt16<float>: the 513-entry int16 table of float32 function `fn` (vectorised
    on float32 arrays) over the int16 range of (input_scale, input_zp), each of the 512 segments'
    start value biased by half the interpolation error at its midpoint, quantized with output_scale
    (float32 everywhere, rounding half away from zero, clamped to int16). Returns int16 [513]."""
    s_in, s_out = F32(input_scale), F32(output_scale)
    in_min, in_max = F32(s_in * F32(-32768 - input_zp)), F32(s_in * F32(32767 - input_zp))
    out_min, out_max = F32(s_out * F32(-32768 - output_zp)), F32(s_out * F32(32767 - output_zp))
    step = F32(F32(in_max - in_min) / F32(512))
    half = F32(step / F32(2))
    inv = F32(F32(65536) / F32(out_max - out_min))
    i = np.arange(512, dtype=F32)
    start = (in_min + i * step).astype(F32)
    val = fn(start)
    mid = fn((start + half).astype(F32))
    nxt = fn((in_min + (i + F32(1)) * step).astype(F32))
    sample = _round_f32(val * inv)
    interp = _round_f32((nxt * inv + _round_f32(val * inv)) / F32(2))
    bias = _round_f32((interp - _round_f32(mid * inv)) / F32(2))
    last = _round_f32(fn(np.array([in_max], F32)) * inv)
    return np.clip(np.concatenate([sample - bias, last]), -32768, 32767).astype(np.int16)


def lut_lookup_s16(v, lut: np.ndarray) -> np.ndarray:
    """TFLite LUTLookup(int16 value, lut): segment 256 + (v >> 7), linear interpolation on the low
    7 bits, (slope * offset + 64) >> 7; int16 in and out (the int16 stores wrap as C's do)."""
    v = np.asarray(v, np.int64)
    lut = np.asarray(lut, np.int64)
    index = 256 + (v >> 7)
    base = lut[index]
    slope = ((lut[index + 1] - base + 32768) & 0xFFFF) - 32768
    delta = (slope * (v & 0x7F) + 64) >> 7
    return (((base + delta + 32768) & 0xFFFF) - 32768).astype(np.int16)


@lru_cache(maxsize=1)
def softmax_luts() -> tuple[np.ndarray, np.ndarray]:
    """(exp table, 1/(1+x) table) of TFLM's int16 softmax (softmax_common.cc): exp on
    [-10, 0] (input scale 10/65535, zero point 32767) and 1/(1+x) on [0, 1] (scale 1/65535,
    zero point -32768), both with output scale 2/65535; the same for every model."""
    r = F32(65535)
    exp_lut = lut_populate_s16(expf, F32(10.0) / r, 32767, F32(2.0) / r, 0)
    recip_lut = lut_populate_s16(lambda v: (F32(1.0) / (F32(1.0) + v)).astype(F32), F32(1.0) / r, -32768,
                                 F32(2.0) / r, 0)
    for t in (exp_lut, recip_lut):
        t.setflags(write=False)
    return exp_lut, recip_lut


# ---- SOFTMAX ---------------------------------------------------------------------------------------
def check_unit_output(scale: float, zero_point: int, op: str, near: bool) -> None:
    """ValueError unless an int16 output is Q0.15 as TFLM's Prepare wants: zero point 0 and scale
    1/32768, within 0.001/32768 in float32 (`near`: SOFTMAX's TF_LITE_ENSURE_NEAR) or within 1e-3 in
    log2 (LOGISTIC / TANH: CheckedLog2(scale) == -15)."""
    if near:
        s = F32(scale)
        ok = not abs(F32(s - F32(1.0 / 32768))) > F32(F32(F32(0.001) * F32(1.0)) / F32(32768))
    else:
        pot, log2 = checked_log2(scale)
        ok = pot and log2 == -15
    if zero_point != 0 or not ok:
        raise ValueError(f"int16 {op} output scale {float(scale):.9g} / zero point {zero_point} "
                         "(TFLM needs 1/32768, 0)")


def softmax_s16_params(input_scale: float, beta: float) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of TFLM's int16 softmax: QuantizeMultiplier of
    double(float scale) * double(float beta) / (10.0 / 65535.0), mapping differences [-65535, 0] to
    the exp table's [-10, 0]. ValueError for a shift above 15: TFLM's int32 `diff << shift` would
    overflow (input scale * beta from 32768 * 10 / 65535 on)."""
    real = float(F32(input_scale)) * float(F32(beta)) / (10.0 / 65535.0)
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"int16 softmax input scale * beta {real!r} is not a finite non-negative number")
    mult, shift = quantize_multiplier(real)
    if shift > 15:
        raise ValueError(f"int16 softmax input scale * beta {float(F32(input_scale)) * float(F32(beta)):.6g} "
                         "(from 32768 * 10 / 65535 = 5.0001 on, TFLM's int32 rescaling of x - max overflows)")
    return mult, shift


def softmax_s16(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM reference_ops::SoftmaxInt16 over the last axis of int16 x [..., depth] (depth <=
    MAX_SOFTMAX_ROW): exp of the rescaled x - max by table, int32 sum normalised to a Q0.15 table
    index for 1/(1+x), each exp times the reciprocal shifted back, clamped to [0, 32767]. int16 out."""
    exp_lut, recip_lut = softmax_luts()
    xi = np.asarray(x, np.int64)
    if xi.ndim < 1 or not 1 <= xi.shape[-1] <= MAX_SOFTMAX_ROW:
        raise ValueError(f"int16 softmax rows of {xi.shape[-1:]} entries (1 to {MAX_SOFTMAX_ROW} supported)")
    diff = xi - xi.max(axis=-1, keepdims=True)
    scaled = multiply_by_quantized_multiplier(diff, input_multiplier, input_left_shift)
    exps = lut_lookup_s16(np.clip(scaled + 32767, -32768, 32767), exp_lut).astype(np.int64)
    total = exps.sum(axis=-1, keepdims=True)  # < 2^31: at most 65536 entries of at most 32767
    clz = 32 - np.frexp(total.astype(np.float64))[1].astype(np.int64)  # CountLeadingZeros; exact below 2^53
    shifted = ((total << (clz - 1)) + (1 << 13)) >> 14
    recip = lut_lookup_s16(np.clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), recip_lut).astype(np.int64)
    right = 31 - clz
    y = (exps * recip + (np.int64(1) << (right - 1))) >> right
    return np.clip(y, 0, 32767).astype(np.int16)


# ---- LOGISTIC / TANH ------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def sigmoid_table_u16() -> np.ndarray:
    """The uint16 table both int16 kernels interpolate (kernels/internal/common.h
    sigmoid_table_uint16): 65536 * sigmoid(i / 24) for i in [0, 255) (inputs in units of 1/24: the
    256 entries span [0, 10.7)), each lowered by half the linear-interpolation error at its segment's
    midpoint (the value minimising the segment's worst error), rounded; the last entry is the
    saturation value 65535. Derived here from that rule; the tests check every entry through TFLM."""
    s = lambda v: 65536.0 / (1.0 + np.exp(-v))  # noqa: E731
    i = np.arange(256, dtype=np.float64)
    val, mid, nxt = s(i / 24), s((i + 0.5) / 24), s((i + 1) / 24)
    t = np.floor(val - ((val + nxt) / 2 - mid) / 2 + 0.5)
    t[255] = 65535
    out = t.astype(np.uint16)
    out.setflags(write=False)
    return out


def sigmoid_s16_params(input_scale: float, tanh: bool) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of TFLM's int16 LOGISTIC (tanh False) or TANH Prepare,
    with the power-of-two case resolved as the kernels resolve it: a scale CheckedLog2 takes for
    2^-12 (or 2^-11 for tanh) gives multiplier 3 << (12 + log2), shift 0; any other scale
    int(scale * 12288 * 2^n) with n the first shift (<= 31) taking it above 16383.5.
    ValueError when the multiplier exceeds 32767 (TFLM DCHECKs it: input scale above 2.67)."""
    pot, log2 = checked_log2(input_scale)
    left = 12 + log2
    if pot and (left == 0 or (tanh and left == 1)):
        return 3 << left, 0
    mult, left = float(F32(input_scale)) * 4096.0 * 3.0, 0
    while mult <= 32767.0 / 2.0 and left <= 30:
        left += 1
        mult *= 2.0
    if mult > 32767:
        raise ValueError(f"int16 {'tanh' if tanh else 'logistic'} input scale {float(input_scale):.6g} "
                         "(TFLM takes at most 32767 / 12288)")
    return int(mult), left


def _rescale(x: np.ndarray, mult: int, left: int) -> np.ndarray:
    """(x * mult + round) >> left in int32 (no overflow for mult <= 32767, see sigmoid_s16_params)."""
    rnd = (1 << (left - 1)) if left > 0 else 0
    return (np.asarray(x, np.int64) * mult + rnd) >> left


def logistic_s16(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM reference_integer_ops::Logistic on int16 (Q0.15 out): |rescaled x| split into a table
    index (>> 9) and 9 interpolation bits, mirrored for negative inputs, rounded back to 16 bits."""
    v = _rescale(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    uh = a >> 9
    t = sigmoid_table_u16().astype(np.int64)
    idx = np.minimum(uh, 254)
    r = np.where(uh >= 255, 0x7FFF << 10, (t[idx] << 9) + (a & 0x1FF) * (t[idx + 1] - t[idx]))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return _to_int16(r >> 10)


def tanh_s16(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """TFLM reference_integer_ops::Tanh on int16 (Q0.15 out): as logistic_s16 with 8 interpolation
    bits (tanh(x) = 2 sigmoid(2x) - 1) and the result recentred around 0."""
    v = _rescale(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    uh = a >> 8
    t = sigmoid_table_u16().astype(np.int64)
    idx = np.minimum(uh, 254)
    r = np.where(uh >= 255, 0xFFFF << 8, (t[idx] << 8) + (a & 0xFF) * (t[idx + 1] - t[idx]))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return _to_int16(r >> 8)


def _to_int16(v: np.ndarray) -> np.ndarray:
    """The C store of an int32 into int16 (wraps; the kernels' results are inside int16 anyway)."""
    return (((np.asarray(v, np.int64) + 32768) & 0xFFFF) - 32768).astype(np.int16)
