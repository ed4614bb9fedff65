"""LogSoftmax over the last axis: the int8 semantics of TFLite LOG_SOFTMAX (TFLM log_softmax.cc,
reference_ops::LogSoftmaxQuantized in reference/log_softmax.h) with its fixed output quantization
scale 16/256, zero point 127 (outputs in [-16, 0)).

Pipeline per row (gemmlowp fixed point): diff = x - max; the diffs >= diff_min are rescaled to Q5.26
(the softmax multiplier, beta 1), exp'ed to Q0.31 and summed in Q12.19; log(sum) comes from TFLite's
log_x_for_x_greater_than_or_equal_to_1<5> (common.h) in Q5.26; an entry whose diff is above
max(diff_min - 1, reverse-scaled (log_sum + INT32_MIN)) outputs RoundingDivideByPOT(diff_q5 -
log_sum, 22) + 127 clamped, any other entry -128. ONNX LogSoftmax maps here with the same output
qparams (the quantizer forces them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.fixed_point import (INT32_MIN, multiply_by_quantized_multiplier,
                                       quantize_multiplier, rounding_divide_by_pot, saturate_int32,
                                       saturating_left_shift, softmax_params, wrap_int32)
from toolchain.ops.fixed_point import saturating_rounding_doubling_high_mul as _mul
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register
from toolchain.ops.softmax import exp_on_negative_values_q5_26, one_over_one_plus_x_for_x_in_0_1

LOG_SOFTMAX_OUT = QuantParams.per_tensor(16.0 / 256.0, 127)  # TFLM LogSoftmaxPrepare checks these exactly
_IN_BITS = 5      # kInputIntegerBits: the diffs and log(sum) in Q5.26
_ACC_BITS = 12    # kAccumulationIntegerBits: the sum of exps in Q12.19
_OUT_BITS = 4     # kOutputIntegerBits


@dataclass(frozen=True)
class LogSoftmaxAttrs:
    """LogSoftmax over the last axis (TFLite LOG_SOFTMAX, ONNX LogSoftmax-13 axis=-1)."""


@dataclass(frozen=True)
class LogSoftmaxParams:
    """TFLM LogSoftmaxOpData: input_multiplier/input_left_shift (PreprocessSoftmaxScaling, beta 1),
    reverse_scaling_divisor/reverse_scaling_shift (QuantizeMultiplierSmallerThanOneExp of
    2^(31 - left_shift) / multiplier; shift <= 0 in MultiplyByQuantizedMultiplier's convention) and
    diff_min = -CalculateInputRadius(5, left_shift)."""

    input_multiplier: int
    input_left_shift: int
    reverse_scaling_divisor: int
    reverse_scaling_shift: int
    diff_min: int


def log_softmax_params(input_scale: float) -> LogSoftmaxParams:
    """TFLM PreprocessLogSoftmaxScalingExp (beta 1, 5 integer bits) and CalculateInputRadius."""
    p = softmax_params(input_scale, 1.0)
    rev, rev_shift = quantize_multiplier((1 << (31 - p.input_left_shift)) / float(p.input_multiplier))
    return LogSoftmaxParams(p.input_multiplier, p.input_left_shift, rev, rev_shift, p.diff_min)


def _clz32(v: np.ndarray) -> np.ndarray:
    """Leading zero bits of v as uint32 (32 for 0), exact integer loop."""
    u = np.asarray(v, np.int64) & 0xFFFFFFFF
    n = np.zeros(u.shape, np.int64)
    for bits in (16, 8, 4, 2, 1):
        small = u < (np.int64(1) << (32 - bits))
        n = np.where(small, n + bits, n)
        u = np.where(small, u << bits, u)
    return np.where((np.asarray(v, np.int64) & 0xFFFFFFFF) == 0, 32, n)


def _pot(x, exponent) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOTParam: x * 2^exponent, saturating left or rounding right."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    left = saturate_int32(x << np.maximum(e, 0))
    return np.where(e >= 0, left, rounding_divide_by_pot(x, np.maximum(-e, 0)))


def log_x_q5(x: np.ndarray, input_bits: int = _ACC_BITS) -> np.ndarray:
    """TFLite log_x_for_x_greater_than_or_equal_to_1<5>: raw Q(input_bits).(31-input_bits) x >= 1
    -> raw Q5.26 log(x). Range reduction to r in [sqrt(1/2), sqrt(2)) by a power of two, then a
    rational (Pade-like) approximation around 2^-1/4; accumulated with 6 integer bits."""
    acc_bits = _IN_BITS + 1
    log_2, sqrt_sqrt_half, sqrt_half, one_quarter = 1488522236, 1805811301, 1518500250, 536870912
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = rounding_divide_by_pot(one_quarter, acc_bits)     # Rescale<6> of Q0.31
    z_a = np.asarray(x, np.int64)
    za_headroom_plus_1 = _clz32(z_a)
    r_a_tmp = _pot(z_a, za_headroom_plus_1 - 1)
    r_a = _pot(_mul(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = saturate_int32(_pot(input_bits - za_headroom_plus_1, 31 - acc_bits) + shifted_quarter)
    z_b = _mul(z_a, sqrt_half)
    zb_headroom = _clz32(z_b) - 1
    r_b = _pot(z_a, zb_headroom)
    z_b_pow_2_adj = saturate_int32(_pot(input_bits - zb_headroom, 31 - acc_bits) - shifted_quarter)
    r = np.minimum(r_a, r_b)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    s = r + sqrt_sqrt_half
    p = np.where(s >= 0, (s + 1) // 2, -((-s + 1) // 2))               # RoundingHalfSum
    q = wrap_int32(r - sqrt_sqrt_half)
    q = wrap_int32(q + q)
    common_sq = _mul(q, q)
    num = wrap_int32(_mul(q, r) + _mul(_mul(q, common_sq), alpha_n))
    inner = wrap_int32(alpha_i + q + _mul(alpha_d, common_sq))
    denom_minus_one = wrap_int32(_mul(p, inner) + _mul(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = rounding_divide_by_pot(num, acc_bits)                  # Rescale<6> of Q0.31
    total = wrap_int32(_mul(z_pow_2_adj, log_2) + _mul(num_scaled, recip_denom))
    return saturating_left_shift(total, acc_bits - _IN_BITS)           # Rescale<5> of Q6.25


def log_softmax_s8(x: np.ndarray, p: LogSoftmaxParams) -> np.ndarray:
    """int8 log-softmax over the last axis (TFLM reference_ops::LogSoftmaxQuantized<int8_t>).
    Output int8, same shape, scale 16/256, zero point 127."""
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"log_softmax needs a non-empty last axis, got shape {x.shape}")
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    live = diff >= p.diff_min
    diff_q5 = multiply_by_quantized_multiplier(np.where(live, diff, 0), p.input_multiplier, p.input_left_shift)
    exps = exp_on_negative_values_q5_26(diff_q5)
    terms = np.where(live, rounding_divide_by_pot(exps, _ACC_BITS), 0)      # Rescale<12>
    sum_q12 = wrap_int32(terms.sum(axis=-1, keepdims=True))
    log_sum_q5 = log_x_q5(sum_q12)
    shifted = wrap_int32(log_sum_q5 + INT32_MIN)
    adjusted_diff_min = np.maximum(p.diff_min - 1, multiply_by_quantized_multiplier(
        shifted, p.reverse_scaling_divisor, p.reverse_scaling_shift))
    keep = diff > adjusted_diff_min
    diff_q5 = multiply_by_quantized_multiplier(np.where(keep, diff, 0), p.input_multiplier, p.input_left_shift)
    out = rounding_divide_by_pot(wrap_int32(diff_q5 - log_sum_q5), 31 - _IN_BITS - _OUT_BITS) + 127
    return np.where(keep, np.clip(out, -128, 127), -128).astype(np.int8)


@register("LOG_SOFTMAX", "LogSoftmax")
class LogSoftmax(OpDef):
    variants = (portable("log_softmax"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shape = graph.t(node.inputs[0]).shape
        if not shape or shape[-1] < 1:
            raise ValueError(f"log_softmax needs a non-empty last axis, got {list(shape)}")
        return [shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        z = ins[0].astype(np.float64)
        z = z - z.max(axis=-1, keepdims=True)
        return [(z - np.log(np.exp(z).sum(axis=-1, keepdims=True))).astype(np.float32)]

    def output_qparams(self, node, graph, observed):
        return LOG_SOFTMAX_OUT

    def _rows(self, graph: Graph, node: Node) -> tuple[int, int]:
        shape = graph.t(node.inputs[0]).shape
        return int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p = log_softmax_params(graph.t(node.inputs[0]).quant.s)
        rows, size = self._rows(graph, node)
        return [log_softmax_s8(ins[0].reshape(rows, size), p).reshape(ins[0].shape)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p = log_softmax_params(graph.t(node.inputs[0]).quant.s)
        ints = [p.input_multiplier, p.input_left_shift, p.reverse_scaling_divisor, p.reverse_scaling_shift,
                p.diff_min, *self._rows(graph, node)]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, 0, c.act_read_bytes, c.act_write_bytes)
