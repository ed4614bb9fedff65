"""SquaredDifference: (x1 - x2)^2 element-wise with numpy broadcasting; the int8 reference semantics
of TFLM micro/kernels/squared_difference.cc (Prepare and the int8 SquaredDifference function).

Both inputs are offset by their zero points, shifted left by 7 and rescaled by s_i / (2 max(s1, s2))
(TFLite's QuantizeMultiplierSmallerThanOneExp, computed in double); the squared difference of the
rescaled values (at most 255^2 * 2^14 / 4, inside int32) is requantized by (2 max)^2 / (2^14 s_out)
and offset by the output zero point, clamped to int8. TFLite only: ONNX has no such op (an ONNX
Sub then Mul stays two ops). Owns `squared_difference_s8`; broadcasting as binary.py's loop plan.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.binary import broadcast_args, broadcast_shape, operand
from toolchain.ops.common import quantize_constant_operands
from toolchain.ops.fixed_point import AddParams, multiply_by_quantized_multiplier, quantize_multiplier, requantize_s8
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register

LEFT_SHIFT = 7  # TFLM: 255^2 * 2^(2*7) stays inside int32


def squared_difference_params(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int) -> AddParams:
    """TFLM SquaredDifferencePrepare for int8: the ratios in double from the float32 scales."""
    twice_max = 2.0 * float(max(np.float32(s1), np.float32(s2)))
    m1, sh1 = quantize_multiplier(float(np.float32(s1)) / twice_max)
    m2, sh2 = quantize_multiplier(float(np.float32(s2)) / twice_max)
    mo, sho = quantize_multiplier(twice_max * twice_max / ((1 << 2 * LEFT_SHIFT) * float(np.float32(s_out))))
    return AddParams(-int(z1), m1, sh1, -int(z2), m2, sh2, LEFT_SHIFT, int(z_out), mo, sho)


def squared_difference_s8(x1: np.ndarray, x2: np.ndarray, p: AddParams) -> np.ndarray:
    """int8 (x1 - x2)^2 with numpy broadcasting (TFLM int8 SquaredDifference): s_i = MBQM((x_i +
    offset_i) << 7, mult_i, shift_i); out = MBQM((s1 - s2)^2, output_mult, output_shift) + output_offset,
    clamped to [-128, 127]."""
    shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    a = np.broadcast_to(np.asarray(x1, np.int64), shape)
    b = np.broadcast_to(np.asarray(x2, np.int64), shape)
    s1 = multiply_by_quantized_multiplier((a + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = multiply_by_quantized_multiplier((b + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    return requantize_s8((s1 - s2) ** 2, p.output_mult, p.output_shift, p.output_offset, -128, 127)


@dataclass(frozen=True)
class SquaredDifferenceAttrs:
    """TFLite SQUARED_DIFFERENCE (no options, no fused activation)."""


@register("SQUARED_DIFFERENCE", "SquaredDifference")
class SquaredDifference(OpDef):
    variants = (portable("squared_difference"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, graph)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        d = np.subtract(ins[0], ins[1], dtype=np.float32)
        return [d * d]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        return quantize_constant_operands(node, graph)  # a constant operand: int8 with its own qparams

    def _params(self, node: Node, graph: Graph) -> AddParams:
        a, b, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
        return squared_difference_params(a.s, a.zp, b.s, b.zp, y.s, y.zp)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [squared_difference_s8(ins[0], ins[1], self._params(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p = self._params(node, graph)
        ints = [p.input1_offset, p.input1_mult, p.input1_shift, p.input2_offset, p.input2_mult, p.input2_shift,
                p.output_offset, p.output_mult, p.output_shift]
        return [*map(CArg.lit, ints), *broadcast_args(node, graph), operand(graph, node.inputs[0]),
                operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).size, c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
