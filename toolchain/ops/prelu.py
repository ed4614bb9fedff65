"""PRelu: x for x >= 0, alpha * x otherwise with a (broadcast) int8 constant alpha; the int8
reference semantics of TFLM reference_ops::BroadcastPrelu4DSlow with the Prepare of
micro/kernels/prelu_common.cc: (x - zp) >= 0 -> MBQM(x - zp, s_in / s_out), else
MBQM((x - zp) * (alpha - zp_alpha), s_in * s_alpha / s_out); then + zp_out, saturated.

alpha broadcasts against x (typically one slope per channel); the kernel walks the loop plan of
ops/binary.py. Float alpha of an ONNX model is quantized per tensor (asymmetric, TFLite's rule for
constant operands). Owns `prelu_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.binary import broadcast_args, operand
from toolchain.ops.common import quantize_operand
from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.registry import CArg, OpDef, portable, rounding_twins, register


def prelu_params(s_in: float, s_alpha: float, s_out: float) -> tuple[int, int, int, int]:
    """(mult_1, shift_1, mult_2, shift_2) of TFLM CalculatePreluParams (double ratios)."""
    m1, s1 = quantize_multiplier(float(s_in) / float(s_out))
    m2, s2 = quantize_multiplier(float(s_in) * float(s_alpha) / float(s_out))
    return m1, s1, m2, s2


def prelu_s8(x: np.ndarray, alpha: np.ndarray, z_in: int, z_alpha: int, z_out: int,
             params: tuple[int, int, int, int]) -> np.ndarray:
    """int8 PReLU with alpha broadcast against x (TFLM reference_ops::BroadcastPrelu4DSlow); the
    output rescale rounds as the rounding mode in effect (fixed_point.rescale)."""
    m1, s1, m2, s2 = params
    d = np.asarray(x, np.int64) - z_in
    a = np.broadcast_to(np.asarray(alpha, np.int64) - z_alpha, np.broadcast_shapes(np.shape(x), np.shape(alpha)))
    d = np.broadcast_to(d, a.shape)
    y = np.where(d >= 0, rescale(d, m1, s1), rescale(d * a, m2, s2))
    return np.clip(y + z_out, -128, 127).astype(np.int8)


@dataclass(frozen=True)
class PReluAttrs:
    """PRelu (ONNX PRelu-16, TFLite PRELU): inputs x and the constant slope alpha (broadcast to x)."""


@register("PRELU", "PRelu")
class PRelu(OpDef):
    variants = rounding_twins(portable("prelu"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        x, a = (graph.t(n).shape for n in node.inputs[:2])
        if tuple(np.broadcast_shapes(x, a)) != x:
            raise ValueError(f"alpha {list(a)} does not broadcast to the input {list(x)}")
        broadcast_args(node, graph)  # at most four loop levels
        return [x]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float32)
        return [np.where(x >= 0, x, x * np.asarray(ins[1], np.float32)).astype(np.float32)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        a = graph.t(node.inputs[1])
        return quantize_operand(graph, a.name) if a.is_const and a.quant is None else graph

    def _q(self, node: Node, graph: Graph):
        x, a, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
        return x.zp, a.zp, y.zp, prelu_params(x.s, a.s, y.s)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [prelu_s8(ins[0], ins[1], *self._q(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        zi, za, zo, (m1, s1, m2, s2) = self._q(node, graph)
        return [*map(CArg.lit, (zi, za, zo, m1, s1, m2, s2)), *broadcast_args(node, graph),
                operand(graph, node.inputs[0]), operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]
