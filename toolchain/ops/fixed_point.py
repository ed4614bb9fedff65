"""Fixed-point arithmetic of the TFLite int8 spec, as vectorised numpy, and the Prepare-time
parameter helpers (multiplier/shift pairs, ADD/MUL/Softmax parameters, activation bounds).

Owns: gemmlowp's int32 primitives (SaturatingRoundingDoublingHighMul, RoundingDivideByPOT,
saturating shift), TFLite's MultiplyByQuantizedMultiplier in its default gemmlowp *double*
rounding form (the one every reference kernel here uses) plus the single-rounding variant for
tests only, and TFLite's QuantizeMultiplier / PreprocessSoftmaxScaling / CalculateInputRadius /
CalculateActivationRangeQuantized.

Rounding modes (the per-model YAML key `rounding`, kept in graph.meta["rounding"]; its default,
config.rounding_of, is "onnx" for a quantized ONNX model and "tflm" otherwise): "tflm"
= gemmlowp double rounding in requantization and half away from zero elsewhere, what TFLM's
reference kernels do; "onnx" = one rounding of the real value, ties to even (onnxruntime's
QuantizeLinear after its float simulation of QDQ) in every *output* rounding step: `rescale` (the
requantization of conv / depthwise / FC / add / sub / mul / concat / requantize / mean / leaky relu /
prelu), `rounding_divide` (average pooling), activation bounds and QuantizeLinear (`quantize_real`).
Internal fixed-point steps (ADD's input rescale, softmax / logistic / tanh / hard-swish, bilinear
blends) are TFLite's in both modes. The mode is chosen per call (`rounding=`) or for a block with
`rounding_mode(...)`, a context variable, so the op references need no extra argument; the
interpreter and the code generator open that block from `graph_rounding(graph)`. The C twins of
these functions are in c_templates/kernels/portable/ecc_fixed_point.h (same names, `ecc_` prefix);
tests/ops/test_rounding_c.py checks they agree on random and edge values.

Values are carried in int64 arrays holding int32 quantities; where the C reference depends on
int32 behaviour (saturation, wrap-around) we emulate it explicitly. Not here: the op kernels
(one module per op) and anything float-valued beyond parameter preparation.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

ROUNDING_MODES = ("tflm", "onnx")
_ROUNDING: ContextVar[str] = ContextVar("edgecc_rounding", default="tflm")


def check_rounding(mode: str) -> str:
    """`mode` if it is a rounding mode, else ValueError naming the allowed ones."""
    if mode not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDING_MODES)}, not {mode!r}")
    return mode


@contextmanager
def rounding_mode(mode: str) -> Iterator[None]:
    """Within the block, `requantize_s8`, `activation_range` and `quantize_real` round as `mode`."""
    token = _ROUNDING.set(check_rounding(mode))
    try:
        yield
    finally:
        _ROUNDING.reset(token)


def current_rounding() -> str:
    """The rounding mode in effect ("tflm" outside any rounding_mode block)."""
    return _ROUNDING.get()


def graph_rounding(graph) -> str:
    """The rounding mode of an IR graph: graph.meta["rounding"] (set by toolchain.pipeline from
    config.rounding_of: the YAML's `rounding` or the model kind's default), "tflm" when absent. The
    one place the mode is read from a graph."""
    return check_rounding(graph.meta.get("rounding") or "tflm")


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32 range (what an int32 add/mul does in C)."""
    x = _i64(x)
    if x.ndim and x.size and INT32_MIN <= x.min() and x.max() <= INT32_MAX:  # the usual case: nothing wraps
        return x
    return ((x + 2**31) & 0xFFFFFFFF) - 2**31


def saturate_int32(x) -> np.ndarray:
    return np.clip(_i64(x), INT32_MIN, INT32_MAX)


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul (ARM VQRDMULH) on int32 values, broadcast.
    a*b / 2^31 rounded to nearest with ties toward +inf (the nudge 1 - 2^30 for negative products,
    then C's truncating division); INT32_MIN*INT32_MIN saturates to INT32_MAX."""
    a, b = _i64(a), _i64(b)
    # gemmlowp adds the nudge 2^30 (ab >= 0) or 1 - 2^30 (ab < 0) and truncates toward zero:
    # (ab + 2^30) >> 31 (a floor) either way, as for ab < 0 the truncation of ab + 1 - 2^30 < 0 is the
    # floor of ab + 1 - 2^30 + 2^31 - 1. |ab| <= 2^62: exact in int64.
    q = a * b
    q += 1 << 30
    q >>= 31
    if np.any(b == INT32_MIN) and np.any(a == INT32_MIN):  # (b: a multiplier, per channel: cheap first)
        q = np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, q)
    return q


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero
    (arithmetic shift plus a sign-aware threshold). exponent >= 0, broadcastable with x.
    gemmlowp asserts exponent <= 31; the int64 emulation stays exact beyond that."""
    x, e = _i64(x), _i64(exponent)
    if np.any(e < 0):
        raise ValueError("rounding_divide_by_pot needs exponent >= 0")
    if np.all(e <= 62) and x.size and -(1 << 62) < x.min() and x.max() < (1 << 62):  # (x + half fits int64)
        # gemmlowp's (x >> e) + (remainder > threshold) in one shift: ties up for x >= 0 ((x + half) >> e),
        # down for x < 0 ((x + half - 1) >> e, e > 0); e == 0 leaves x as it is
        half = (np.int64(1) << e) >> 1
        out = np.where(x < 0, np.maximum(half - 1, 0), half)
        out += x
        out >>= e
        return out if out.ndim else out[()]  # (a scalar for scalars, as the plain steps give)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def saturating_left_shift(x, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT with a positive exponent: x << e clamped to int32."""
    return saturate_int32(_i64(x) << exponent)


def multiply_by_quantized_multiplier(x, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier, gemmlowp double rounding (TFLITE_SINGLE_ROUNDING off):
    RoundingDivideByPOT(SRDHM(x << max(shift, 0), mult), max(-shift, 0)).

    x: int32 values (any int array); mult (Q31, int32) and shift broadcast against x.
    Returns int64 holding int32. A positive shift's left shift saturates to int32 before the
    high multiply (TFLite would overflow `x * (1 << shift)`, which is UB; saturation gives the
    real-valued answer's sign and clamps it — BL-02)."""
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    left = np.clip(shift, 0, 32)  # any non-zero x << 32 saturates anyway
    right = np.maximum(-shift, 0)
    int32 = x.size == 0 or INT32_MIN <= x.min() <= x.max() <= INT32_MAX
    if int32 and not np.any(left) and not np.any(mult == INT32_MIN) \
            and np.broadcast_shapes(x.shape, mult.shape, shift.shape) == np.broadcast_shapes(x.shape, mult.shape):
        # the usual case (a real multiplier below 1 on int32 accumulators), the same steps in place:
        # SRDHM as (x * mult + 2^30) >> 31 (saturating_rounding_doubling_high_mul), then
        # RoundingDivideByPOT as (t + half - (t < 0 and right > 0)) >> right (rounding_divide_by_pot)
        t = x * mult
        t += 1 << 30
        t >>= 31
        down = t < 0
        down &= right > 0
        t += (np.int64(1) << right) >> 1
        t -= down
        t >>= right
        return t
    if np.any(left) or not int32:
        x = saturate_int32(x << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, mult), right)


def multiply_by_quantized_multiplier_single(x, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier with TFLITE_SINGLE_ROUNDING: (x*mult + 2^(30-shift))
    >> (31-shift), one rounding, ties toward +inf. Only for tests of the rounding mode (BL-01)."""
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    total = 31 - shift
    return (x * mult + (np.int64(1) << (total - 1))) >> total


def multiply_by_quantized_multiplier_rne(x, mult, shift) -> np.ndarray:
    """x * mult * 2^(shift - 31) rounded once, ties to even, saturated to int32: the exact real
    product rounded as ONNX QuantizeLinear / QLinearConv requantization round (rounding "onnx").
    BL-01: (7984, 1583594044, -9) -> 11 and (1, 2^30, -1) -> 0 (double rounding: 12 and 1).
    Integer only: p = x * mult (exact in int64), q = floor(p / 2^t) with t = 31 - shift clipped to
    [0, 62], then +1 when the remainder is above half, or exactly half and q is odd. shift > 31 (a
    real multiplier >= 2^31) saturates every non-zero product. C: ecc_multiply_by_quantized_multiplier_rne."""
    x, mult, shift = np.broadcast_arrays(_i64(x), _i64(mult), _i64(shift))
    p = x * mult                                   # |p| < 2^62: exact in int64
    total = np.clip(31 - shift, 0, 62)             # shift >= 31 only for reals >= 2^30: saturates below
    q = p >> total                                 # floor
    rem = p - (q << total)
    half = np.int64(1) << np.maximum(total - 1, 0)
    up = (total > 0) & ((rem > half) | ((rem == half) & (q & 1 == 1)))
    q = q + up
    q = np.where((shift > 31) & (p != 0), np.where(p > 0, INT32_MAX, INT32_MIN), q)
    return saturate_int32(q)


def rescale(x, mult, shift, rounding: str | None = None) -> np.ndarray:
    """The output rounding step of every requantizing op: x * mult * 2^(shift - 31) as int32.
    "tflm": TFLite MultiplyByQuantizedMultiplier (double rounding); "onnx": one rounding, ties to
    even (multiply_by_quantized_multiplier_rne); None = the mode in effect. x, mult, shift broadcast.
    C: ecc_multiply_by_quantized_multiplier / ecc_multiply_by_quantized_multiplier_rne."""
    if check_rounding(rounding or current_rounding()) == "onnx":
        return multiply_by_quantized_multiplier_rne(x, mult, shift)
    return multiply_by_quantized_multiplier(x, mult, shift)


def rounding_divide(num, den, rounding: str | None = None) -> np.ndarray:
    """num / den (den > 0, integers) rounded to nearest: ties away from zero ("tflm": TFLM's
    average pooling, (num +- den/2) / den with C's truncating '/') or to even ("onnx"). int64.
    C: the average-pool kernels (c_templates/kernels/portable/avg_pool2d_s8.c.j2)."""
    num, den = _i64(num), _i64(den)
    if check_rounding(rounding or current_rounding()) == "onnx":
        q = num // den                             # floor; remainder in [0, den)
        twice = 2 * (num - q * den)
        return q + ((twice > den) | ((twice == den) & (q & 1 == 1)))
    half = den // 2
    return np.where(num > 0, (num + half) // den, -((-num + half) // den))


def round_half(v, rounding: str | None = None) -> np.ndarray:
    """Round to integers (float64 results): ties away from zero ("tflm", TfLiteRound) or to even
    ("onnx", nearbyint); `rounding` None = the mode in effect."""
    v = np.asarray(v, np.float64)
    if check_rounding(rounding or current_rounding()) == "onnx":
        return np.rint(v)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def quantize_real(x, scale: float, zero_point: int, rounding: str | None = None) -> np.ndarray:
    """float -> int8 with a per-tensor scale and zero point: saturate(round(x / scale) + zp).
    "onnx": QuantizeLinear (float32 division, ties to even); "tflm": TFLite's rule (ties away)."""
    mode = check_rounding(rounding or current_rounding())
    if mode == "onnx":
        r = np.asarray(x, np.float32) / np.float32(scale)
    else:
        r = np.asarray(x, np.float64) / float(scale)
    return np.clip(round_half(r, mode) + int(zero_point), -128, 127).astype(np.int8)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real = mult_q31 * 2^(shift - 31), mult in [2^30, 2^31).

    frexp based, rounding half away from zero (TfLiteRound); real may be >= 1 (shift > 0).
    real == 0 -> (0, 0); shift < -31 -> (0, 0) as in TFLite. Negative or non-finite reals are
    rejected (no TFLite kernel uses them)."""
    real = float(real)
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"quantize_multiplier needs a finite real >= 0, got {real!r}")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = math.floor(q * (1 << 31) + 0.5)  # q > 0: floor(v + .5) is round half away
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(q_fixed), int(shift)


def requantize_s8(acc, mult, shift, output_offset: int, act_min: int, act_max: int,
                  rounding: str | None = None) -> np.ndarray:
    """The common int8 output stage: rescale(acc, mult, shift) + output_offset, clamp, int8.
    Rounding "tflm": double rounding (TFLM); "onnx": one rounding, ties to even; None = the mode
    in effect (see rounding_mode). C: ecc_requantize_s8 / ecc_requantize_s8_rne."""
    check_act_range(act_min, act_max)
    y = rescale(acc, mult, shift, rounding) + int(output_offset)
    y = np.clip(y, act_min, act_max, out=y) if isinstance(y, np.ndarray) else np.clip(y, act_min, act_max)
    return y.astype(np.int8)


def f32_scale(mult, shift) -> np.ndarray:
    """The float32 output scale of a weighted op under rounding "onnx": float32(mult) * 2^(shift - 31)
    (float32 [...] broadcast of mult, shift). Exact when mult came from a float32 scale through
    quantize_multiplier (24 significant bits, as weighted_requant makes them under "onnx"); a
    31-bit multiplier is rounded to nearest even first, as C's (float)mult does. Every ISA packer
    stores this value (or half of it, see the DSP kernels), so the board and this module agree."""
    mult, shift = np.broadcast_arrays(_i64(mult), _i64(shift))
    return (mult.astype(np.float32) * np.exp2(shift - 31).astype(np.float32)).astype(np.float32)


def requantize_s8_f32(acc, mult, shift, output_offset: int, act_min: int, act_max: int) -> np.ndarray:
    """The output stage of Conv / depthwise / FC under rounding "onnx": onnxruntime's integer
    kernels (QLinearConv, QLinearMatMul, QGemm; MLAS MlasRequantizeOutput) convert the int32
    accumulator to float32, multiply by the float32 scale fl32(fl32(s_x * s_w) / s_y), round to
    nearest even and add the zero point: y = clamp(rint(fl32(fl32(acc) * S)) + zp). Not the exact
    real product rounded once: the float32 product can land on a tie (acc 10113 x 0.011717591 ->
    118.5 exactly: 118 here, 119 exact). S from f32_scale(mult, shift). acc int32-valued [...];
    int8 [...] out. C: ecc_requantize_s8_f32; DSP / Helium / NEON use the FPU the same way."""
    check_act_range(act_min, act_max)
    prod = np.asarray(acc, np.int64).astype(np.float32) * f32_scale(mult, shift)
    lo, hi = np.float32(act_min - int(output_offset)), np.float32(act_max - int(output_offset))
    return (np.rint(np.clip(prod, lo, hi)).astype(np.int64) + int(output_offset)).astype(np.int8)


def requantize_weighted_s8(acc, mult, shift, output_offset: int, act_min: int, act_max: int) -> np.ndarray:
    """Conv2D / DepthwiseConv2D / FullyConnected output stage in the rounding mode in effect:
    "tflm" requantize_s8 (TFLM), "onnx" requantize_s8_f32 (onnxruntime's float32 requantization)."""
    if current_rounding() == "onnx":
        return requantize_s8_f32(acc, mult, shift, output_offset, act_min, act_max)
    return requantize_s8(acc, mult, shift, output_offset, act_min, act_max, "tflm")


def check_act_range(act_min: int, act_max: int) -> None:
    if not -128 <= act_min <= act_max <= 127:
        raise ValueError(f"activation range [{act_min}, {act_max}] is not inside int8")


@dataclass(frozen=True)
class AddParams:
    """TFLite int8 ADD ArithmeticParams (micro/kernels/add_common.cc CalculateOpDataAdd)."""

    input1_offset: int
    input1_mult: int
    input1_shift: int
    input2_offset: int
    input2_mult: int
    input2_shift: int
    left_shift: int
    output_offset: int
    output_mult: int
    output_shift: int


def add_params(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int, left_shift: int = 20) -> AddParams:
    """TFLite int8 ADD Prepare: both inputs shifted left by 20 (15 for int16 outputs, TFLM
    add_common.cc) and rescaled by s_i / (2 max(s1,s2)); the sum is rescaled by
    2 max(s1,s2) / (2^left_shift s_out). That last factor may be >= 1 (BL-02):
    TFLite aborts there (QuantizeMultiplierSmallerThanOneExp); we give it a positive shift."""
    twice_max = 2.0 * max(float(s1), float(s2))
    m1, sh1 = quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier(float(s2) / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << left_shift) * float(s_out)))
    return AddParams(-int(z1), m1, sh1, -int(z2), m2, sh2, left_shift, int(z_out), mo, sho)


@dataclass(frozen=True)
class MulParams:
    """TFLite int8 MUL ArithmeticParams (offsets as in ADD; one multiplier s1*s2/s_out)."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    output_mult: int
    output_shift: int


def mul_params(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int) -> MulParams:
    """TFLite int8 MUL Prepare: real multiplier s1*s2/s_out, QuantizeMultiplier."""
    m, sh = quantize_multiplier(float(s1) * float(s2) / float(s_out))
    return MulParams(-int(z1), -int(z2), int(z_out), m, sh)


@dataclass(frozen=True)
class SoftmaxParams:
    """TFLM int8 softmax OpData: input_multiplier/input_left_shift feed
    MultiplyByQuantizedMultiplierGreaterThanOne on (x - max); entries with x - max < diff_min
    contribute 0 and output -128."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int


SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5


def softmax_params(input_scale: float, beta: float = 1.0) -> SoftmaxParams:
    """TFLite PreprocessSoftmaxScaling (double rounding: cap 2^31 - 1) with kScaledDiffIntegerBits=5,
    then diff_min = -CalculateInputRadius(5, input_left_shift)."""
    bits = SOFTMAX_SCALED_DIFF_INTEGER_BITS
    real = min(float(beta) * float(input_scale) * (1 << (31 - bits)), float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"softmax beta*input_scale*2^26 must exceed 1, got {real!r}")
    mult, left_shift = quantize_multiplier(real)
    radius = math.floor(((1 << bits) - 1) * (1 << (31 - bits)) / (1 << left_shift))
    return SoftmaxParams(mult, left_shift, -radius)


def activation_range(act, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127) -> tuple[int, int]:
    """TFLite CalculateActivationRangeQuantized: bounds zp + round(b / scale) (float32 division,
    rounding half away from zero; ties to even under rounding "onnx") intersected with the output
    type's [qmin, qmax] (int8 by default; int16 for 16x8, quant16.activation_range_s16).
    act: 'none' | 'relu' | 'relu6' | 'relu_n1_to_1' | (lo, hi) real bounds (+-inf allowed)."""
    named = {"none": (-math.inf, math.inf), "relu": (0.0, math.inf), "relu6": (0.0, 6.0),
             "relu_n1_to_1": (-1.0, 1.0)}
    if isinstance(act, str):
        if act not in named:
            raise ValueError(f"unknown activation {act!r}")
        act = named[act]
    lo, hi = (float(v) for v in act)
    if lo > hi:
        raise ValueError(f"activation bounds ({lo}, {hi}) are reversed")

    def q(v: float) -> float:
        r = float(np.float32(v) / np.float32(scale))  # TFLite divides in float
        return float(round_half(r)) if math.isfinite(r) else r  # ties away ("tflm") or to even ("onnx")

    act_min = qmin if lo == -math.inf else max(qmin, min(qmax, zero_point + q(lo)))
    act_max = qmax if hi == math.inf else min(qmax, max(qmin, zero_point + q(hi)))
    return int(act_min), int(act_max)


def inv_sqrt_quantized_multiplier_exp(x, reverse_shift: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp (kernels/internal/common.h), vectorised: for int32
    x >= 0, (mult, shift) with 1/sqrt(x) ~ mult * 2^(shift - 31) for reverse_shift -1, computed by
    five gemmlowp Newton-Raphson steps in Q3.28 from the start guess 1 after normalising x into
    [2^27, 2^29) by pairs of bits. x <= 1 gives (INT32_MAX, 0) (x = 0 is treated as 1, as TFLite
    does). The returned shift is TFLite's output_shift times reverse_shift (TFLM passes
    kReverseShift = -1, so a left-shift exponent <= 0). C: ecc_inv_sqrt_quantized_multiplier_exp
    (c_templates/kernels/portable/rsqrt_s8.c.j2)."""
    x = _i64(x)
    if np.any(x < 0):
        raise ValueError("inv_sqrt_quantized_multiplier_exp needs x >= 0")
    small = x <= 1
    v = np.where(small, 2, x)
    shift = np.full(v.shape, 11, np.int64)
    big = v >= (1 << 29)                           # int32 input: one division by 4 brings it below 2^29
    v = np.where(big, v // 4, v)
    shift = shift + big
    bit_length = np.frexp(v.astype(np.float64))[1].astype(np.int64)  # v < 2^31: exact
    clz = 32 - bit_length
    pairs = (clz - 1) // 2 - 1
    shift = shift - pairs
    v = v << (2 * pairs)
    srdhm = saturating_rounding_doubling_high_mul
    half_input = rounding_divide_by_pot(v >> 1, 1)    # Q3.28 input / 2 (SaturatingRoundingMultiplyByPOT<-1>)
    half_three = (1 << 28) + (1 << 27)                # 1.5 in Q3.28
    r = np.full(v.shape, 1 << 28, np.int64)           # 1.0 in Q3.28
    for _ in range(5):
        r3 = saturating_left_shift(srdhm(srdhm(r, r), r), 6)          # Rescale<3> of a Q9 product
        r = saturating_left_shift(wrap_int32(srdhm(half_three, r) - srdhm(half_input, r3)), 3)
    r = srdhm(r, 1518500250)                          # * sqrt(2)/2 in Q0.31
    neg = shift < 0
    r = np.where(neg, wrap_int32(r << np.where(neg, -shift, 0)), r)
    shift = np.where(neg, 0, shift)
    return np.where(small, INT32_MAX, r), np.where(small, 0, shift * reverse_shift)
