"""Softmax: the int8 reference semantics of softmax over the last axis; TFLite int8 spec, TFLM
reference_ops::Softmax<int8_t, int8_t> (reference/softmax.h) with gemmlowp fixed point
(exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1) and common.h GetReciprocal. 16x8 (int16
in and out, Q0.15 output): activation_s16.softmax_s16, kernel portable/softmax_s16.c.j2.

Owns `softmax_s8` and the vectorised gemmlowp transcendental helpers it needs. Output scale is
1/256 and zero point -128 by the spec. Parameters come from fixed_point.softmax_params.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import (INT32_MAX, SoftmaxParams, rounding_divide_by_pot,
                                       saturating_left_shift, wrap_int32)
from toolchain.ops.fixed_point import saturating_rounding_doubling_high_mul as _mul
from dataclasses import dataclass
from toolchain.ir import DType, Graph, Node, QuantParams
from toolchain.ops.activation_s16 import UNIT_OUT_S16, softmax_luts, softmax_s16, softmax_s16_params
from toolchain.ops.fixed_point import softmax_params
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, register

_ACCUM_INTEGER_BITS = 12   # kAccumulationIntegerBits: sum of exps in Q12.19
# (exponent e, Q0.31 raw of exp(-2^e)): gemmlowp's barrel shifter for Q5.26 inputs.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_interval_neg_quarter_to_0(a: np.ndarray) -> np.ndarray:
    """gemmlowp exp on [-1/4, 0), Q0.31 in and out: 4th-order Taylor series around -1/8."""
    x = a + (1 << 28)                                      # x = a + 1/8
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(_mul(x4_over_4 + x3, 715827883) + x2, 1)   # 715827883 = 1/3
    c = 1895147668                                         # exp(-1/8)
    return c + _mul(c, x + poly)


def exp_on_negative_values_q5_26(a: np.ndarray) -> np.ndarray:
    """gemmlowp exp_on_negative_values for FixedPoint<int32, 5>: raw Q5.26 (<= 0) -> raw Q0.31.
    Splits a into (a mod 1/4) - 1/4 plus whole quarters, then multiplies in exp(-2^e) per set bit."""
    a = np.asarray(a, np.int64)
    one_quarter = 1 << 24
    a_mod = (a & (one_quarter - 1)) - one_quarter
    result = exp_on_interval_neg_quarter_to_0(saturating_left_shift(a_mod, 5))   # Rescale<0>
    remainder = a_mod - a
    for e, mult in _EXP_BARREL:
        result = np.where(remainder & (1 << (26 + e)), _mul(result, mult), result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp 1/(1+x) for x in [0, 1): raw Q0.31 in and out, Newton-Raphson with 3 steps."""
    a = np.asarray(a, np.int64)
    s = a + INT32_MAX
    half_den = np.where(s >= 0, (s + 1) // 2, -((-s + 1) // 2))   # RoundingHalfSum, C division
    x = 1515870810 + _mul(half_den, -1010580540)                  # Q2.29: 48/17 - 32/17 * d
    for _ in range(3):
        one_minus = (1 << 29) - _mul(half_den, x)
        x = x + saturating_left_shift(_mul(x, one_minus), 2)
    return saturating_left_shift(x, 1)                           # Rescale<0>(ExactMulByPot<-1>)


def _clz32(v: np.ndarray) -> np.ndarray:
    """Count leading zeros of v as uint32 (32 for 0)."""
    u = np.asarray(v, np.int64) & 0xFFFFFFFF
    n = np.full(u.shape, 32, np.int64)
    nz = u > 0
    n[nz] = 31 - np.floor(np.log2(u[nz].astype(np.float64))).astype(np.int64)
    # log2 of a float can round up just below a power of two; fix with an exact check.
    n = np.where(nz & ((u >> (31 - n)) == 0), n - 1, n)
    return n


def softmax_s8(x: np.ndarray, p: SoftmaxParams) -> np.ndarray:
    """int8 softmax over the last axis (TFLM reference_ops::Softmax, int8 in and out).

    x: int8 [..., row_size] (the contract's [rows, row_size]); p from softmax_params(input_scale,
    beta). Output int8, same shape, scale 1/256, zero point -128. Entries with
    x - max < diff_min output -128 and add nothing to the sum. TFLM checks the final shift
    num_bits_over_unit + 23 <= 31 and aborts on rows whose exp-sum is >= 512 (BL-29); this
    reference computes those rows exactly instead.
    """
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"softmax needs a non-empty last axis, got shape {x.shape}")
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    live = diff >= p.diff_min
    # MultiplyByQuantizedMultiplierGreaterThanOne; diff_min keeps diff << left_shift inside int32.
    rescaled = np.where(live, _mul(np.where(live, diff, 0) << p.input_left_shift, p.input_multiplier), 0)
    exps = exp_on_negative_values_q5_26(rescaled)
    terms = np.where(live, rounding_divide_by_pot(exps, _ACCUM_INTEGER_BITS), 0)  # Rescale<12>
    sum_of_exps = wrap_int32(terms.sum(axis=-1, keepdims=True))          # int32 accumulator
    # GetReciprocal: normalise the sum to [1, 2) and take 1/(1 + (sum - 1)).
    headroom = _clz32(sum_of_exps)
    num_bits_over_unit = _ACCUM_INTEGER_BITS - headroom
    shifted_minus_one = wrap_int32(((sum_of_exps & 0xFFFFFFFF) << headroom) - (1 << 31))
    shifted_scale = one_over_one_plus_x_for_x_in_0_1(shifted_minus_one)
    exponent = num_bits_over_unit + 31 - 8
    out = rounding_divide_by_pot(_mul(shifted_scale, exps), exponent) - 128
    return np.where(live, np.clip(out, -128, 127), -128).astype(np.int8)


# ---- IR glue: attrs, shapes, float semantics, kernel call -----------------------------------
@dataclass(frozen=True)
class SoftmaxAttrs:
    """Softmax over the last axis (ONNX Softmax-13 axis=-1, TFLite SOFTMAX with beta)."""

    beta: float = 1.0


SOFTMAX_OUT = QuantParams.per_tensor(1.0 / 256.0, -128)  # TFLite int8 spec: fixed output qparams


@register("SOFTMAX", "Softmax")
class Softmax(OpDef):
    stacks_samples = True  # over the last axis only, row by row
    stacks_samples_int8 = True  # softmax_s8: fixed point, row by row
    ignores_observed_range = True  # output_qparams: SOFTMAX_OUT (int8) or 1/32768 (16x8)
    variants = (portable("softmax"), portable_s16("softmax", args=lambda n, g: _s16_args(n, g)))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        z = ins[0].astype(np.float64) * node.attrs.beta
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]

    def output_qparams(self, node, graph, observed):
        # 16x8 (an int16 input): Q0.15, as TFLM's int16 softmax requires
        return UNIT_OUT_S16 if graph.t(node.inputs[0]).dtype == DType.INT16 else SOFTMAX_OUT

    def _rows(self, graph: Graph, node: Node) -> tuple[int, int]:
        shape = graph.t(node.inputs[0]).shape
        return int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p = softmax_params(graph.t(node.inputs[0]).quant.s, node.attrs.beta)
        size = graph.t(node.inputs[0]).shape[-1]  # rows: the graph's, or those of stacked samples
        return [softmax_s8(ins[0].reshape(-1, size), p).reshape(ins[0].shape)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        mult, shift = softmax_s16_params(graph.t(node.inputs[0]).quant.s, node.attrs.beta)
        return [softmax_s16(ins[0], mult, shift)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p = softmax_params(graph.t(node.inputs[0]).quant.s, node.attrs.beta)
        ints = [p.input_multiplier, p.input_left_shift, p.diff_min, *self._rows(graph, node)]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, 0, c.act_read_bytes, c.act_write_bytes)


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """ecc_softmax_s16 (portable/softmax_s16.c.j2): the input rescaling, rows, TFLM's two int16 tables."""
    mult, shift = softmax_s16_params(graph.t(node.inputs[0]).quant.s, node.attrs.beta)
    exp_lut, recip_lut = softmax_luts()
    shape = graph.t(node.inputs[0]).shape
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return [*map(CArg.lit, (mult, shift, rows, shape[-1])), CArg("array", exp_lut, "exp_lut"),
            CArg("array", recip_lut, "recip_lut"), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
