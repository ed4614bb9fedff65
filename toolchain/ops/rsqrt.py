"""Rsqrt: 1 / sqrt(x); the int8 reference semantics of TFLM micro/kernels/elementwise.cc
(RsqrtEvalQuantized with the Prepare SetRsqrtOutputMultiplier). Owns `rsqrt_s8`.

Per element, d = x - zp_in: d == 0 gives 127 (TFLM: "any value close to 0 represents the max
output value"); d > 0: (m, e) = GetInvSqrtQuantizedMultiplierExp(d) (fixed_point), then
data = MBQM(1, m, e + 20) (1/sqrt(d) in Q20) and out = MBQM(data, mult, shift - 20) + zp_out,
saturated, where (mult, shift) = QuantizeMultiplier(1 / (float32 sqrtf(s_in) * s_out)) in double.

Inputs below the zero point (negative reals): TFLM stops the whole invoke with "Rsqrt is only defined
for positive values". We cannot fail per element in C, so we DEFINE them as 127 (the int8 maximum,
what d == 0 gives: rsqrt of a non-positive value saturates at the top of the output range, as
rsqrt(+0) = +inf would); for every input TFLM accepts, the output is TFLM's bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import (
    inv_sqrt_quantized_multiplier_exp,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register

RSQRT_SHIFT = 20  # TFLM's kShift: 1/sqrt(d) is carried in Q20 between the two rescales
INVALID_OUTPUT = 127  # our defined value for x < zp_in, where TFLM fails (see the module docstring)


def rsqrt_params(s_in: float, s_out: float) -> tuple[int, int]:
    """TFLM SetRsqrtOutputMultiplier: QuantizeMultiplier(1. / double(sqrtf(s_in) * s_out))."""
    f = np.float32
    prod = f(np.sqrt(f(s_in))) * f(s_out)
    return quantize_multiplier(1.0 / float(prod))


def rsqrt_s8(x: np.ndarray, z_in: int, z_out: int, mult: int, shift: int) -> np.ndarray:
    """int8 rsqrt (TFLM RsqrtEvalQuantized); x < z_in gives INVALID_OUTPUT (TFLM errors there)."""
    d = np.asarray(x, np.int64) - int(z_in)
    m, e = inv_sqrt_quantized_multiplier_exp(np.maximum(d, 0))
    data = multiply_by_quantized_multiplier(1, m, e + RSQRT_SHIFT)
    y = multiply_by_quantized_multiplier(data, mult, shift - RSQRT_SHIFT) + int(z_out)
    y = np.where(d > 0, np.clip(y, -128, 127), INVALID_OUTPUT)
    return y.astype(np.int8)


@dataclass(frozen=True)
class RsqrtAttrs:
    """TFLite RSQRT has no options."""


@register("RSQRT", "Rsqrt")
class Rsqrt(OpDef):
    variants = (portable("rsqrt"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.float32(1.0) / np.sqrt(x)
        # non-positive reals: +inf, the float image of the int8 INVALID_OUTPUT (saturated maximum)
        return [np.where(x > 0, y, np.float32(np.inf)).astype(np.float32)]

    def _q(self, node: Node, graph: Graph) -> tuple[int, int, int, int]:
        a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        return (a.zp, y.zp, *rsqrt_params(a.s, y.s))

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [rsqrt_s8(ins[0], *self._q(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        ints = [*self._q(node, graph), graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, 0, c.act_read_bytes, c.act_write_bytes)
