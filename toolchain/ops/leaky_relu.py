"""LeakyRelu: x for x >= 0, alpha * x otherwise; the int8 reference semantics of TFLM
reference_ops::QuantizeLeakyRelu with the Prepare of micro/kernels/leaky_relu_common.cc.

Two requantizations of (x - zp_in): identity s_in / s_out for x >= zp_in, s_in * alpha / s_out
below, both ratios computed in float32 as TFLM does; a negative alpha gets a negative multiplier
(TFLite's QuantizeMultiplier handles the sign through frexp). Owns `leaky_relu_s8`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.registry import CArg, OpDef, portable, rounding_twins, register


def signed_quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier for any finite real: the sign rides on the Q31 multiplier."""
    m, s = quantize_multiplier(abs(real))
    return int(math.copysign(m, real)) if m else 0, s


def leaky_relu_params(s_in: float, s_out: float, alpha: float) -> tuple[int, int, int, int]:
    """(mult_identity, shift_identity, mult_alpha, shift_alpha) from float32 s_in/s_out, s_in*alpha/s_out."""
    f = np.float32
    mi, si = quantize_multiplier(float(f(s_in) / f(s_out)))
    ma, sa = signed_quantize_multiplier(float(f(s_in) * f(alpha) / f(s_out)))
    return mi, si, ma, sa


def leaky_relu_s8(x: np.ndarray, z_in: int, z_out: int, params: tuple[int, int, int, int]) -> np.ndarray:
    """int8 leaky ReLU (TFLM reference_ops::QuantizeLeakyRelu); the output rescale rounds as the
    rounding mode in effect (fixed_point.rescale)."""
    mi, si, ma, sa = params
    d = np.asarray(x, np.int64) - z_in
    y = np.where(d >= 0, rescale(d, mi, si), rescale(d, ma, sa))
    return np.clip(y + z_out, -128, 127).astype(np.int8)


@dataclass(frozen=True)
class LeakyReluAttrs:
    """ONNX LeakyRelu-16 / TFLite LEAKY_RELU slope for x < 0."""

    alpha: float = 0.01


@register("LEAKY_RELU", "LeakyRelu")
class LeakyRelu(OpDef):
    variants = rounding_twins(portable("leaky_relu"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float32)
        return [np.where(x >= 0, x, x * np.float32(node.attrs.alpha)).astype(np.float32)]

    def _q(self, node: Node, graph: Graph):
        a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        return a.zp, y.zp, leaky_relu_params(a.s, y.s, node.attrs.alpha)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [leaky_relu_s8(ins[0], *self._q(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        zi, zo, (mi, si, ma, sa) = self._q(node, graph)
        ints = [zi, zo, mi, si, ma, sa, graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
