"""Maximum and Minimum: element-wise max / min of two int8 tensors with numpy broadcasting (up to
four loop levels, binary.broadcast_plan); TFLite MAXIMUM / MINIMUM (TFLM maximum_minimum.cc: no
Prepare, reference_ops::MaximumMinimumBroadcastSlow compares the raw int8 values), ONNX Max / Min.

TFLite's int8 spec requires the inputs and the output to share one scale and zero point; then the
op is a raw compare, which is what TFLM computes. Our PTQ (ONNX float models) gives each tensor its
own calibrated qparams, so each input is first moved exactly onto the output's grid (concat.py
float32_ratio / rescale_exact_s8, as Concat does: round((q - zp_in) * s_in / s_out) + zp_out,
saturated, ties as the rounding mode in effect) and the results compared; an input with the output's
qparams is used as is (so the TFLite case stays a raw compare, bit-exact with TFLM). Max and min are
monotone, so rescaling before the compare equals rescaling its result.

Under rounding "onnx" the rescale is onnxruntime's instead (concat.onnx_rescale_table): ORT runs
Max / Min in float between DequantizeLinear and QuantizeLinear, whose float32 product and division
move exact ties of the real ratio (s_in / s_out = 1.5: q * 1.5 = k + 0.5) to either side; a 256-entry
table per input, computed offline, reproduces it bit for bit (the `_onnx` C twin indexes the tables).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.binary import broadcast_args, broadcast_shape, operand
from toolchain.ops.common import quantize_constant_operands
from toolchain.ops.concat import COPY, concat_params, onnx_rescale_table, rescale_exact_s8
from toolchain.ops.fixed_point import current_rounding
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register, rounding_twins


@dataclass(frozen=True)
class MaxMinAttrs:
    """Maximum / Minimum have no options (TFLite MAXIMUM/MINIMUM; ONNX Max-13/Min-13 are split into
    a chain of binary nodes by the frontend)."""


def onto_output(x: np.ndarray, params: tuple[int, int, int, int]) -> np.ndarray:
    """int8 x moved onto the output's qparams (concat_params(input, output)); a copy when equal."""
    off, m, k, out_off = params
    if (m, k) == COPY and off + out_off == 0:
        return np.asarray(x, np.int8)
    return rescale_exact_s8(x, off, m, k, out_off)


def max_min_s8(a: np.ndarray, b: np.ndarray, pa: tuple[int, int, int, int], pb: tuple[int, int, int, int],
               is_max: bool) -> np.ndarray:
    """int8 max / min with broadcasting of the inputs rescaled onto the output grid."""
    f = np.maximum if is_max else np.minimum
    return f(onto_output(a, pa), onto_output(b, pb)).astype(np.int8)


def max_min_table_s8(a: np.ndarray, b: np.ndarray, ta: np.ndarray, tb: np.ndarray, is_max: bool) -> np.ndarray:
    """int8 max / min with broadcasting of the inputs mapped through 256-entry tables (index q + 128;
    concat.onnx_rescale_table, rounding "onnx")."""
    f = np.maximum if is_max else np.minimum
    ra = ta[np.asarray(a, np.int16) + 128]
    rb = tb[np.asarray(b, np.int16) + 128]
    return f(ra, rb).astype(np.int8)


class _MaxMin(OpDef):
    is_max: bool

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, graph)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        f = np.maximum if self.is_max else np.minimum
        return [f(np.asarray(ins[0], np.float32), np.asarray(ins[1], np.float32)).astype(np.float32)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        # a float constant (ONNX Max(x, c)) is quantized on the output's grid: a plain copy then
        return quantize_constant_operands(node, graph, graph.t(node.outputs[0]).quant)

    def _params(self, node: Node, graph: Graph) -> list[tuple[int, int, int, int]]:
        y: QuantParams = graph.t(node.outputs[0]).quant
        return [concat_params(graph.t(n).quant, y) for n in node.inputs[:2]]

    def _tables(self, node: Node, graph: Graph) -> list[np.ndarray]:
        y: QuantParams = graph.t(node.outputs[0]).quant
        return [onnx_rescale_table(graph.t(n).quant, y) for n in node.inputs[:2]]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if current_rounding() == "onnx":
            ta, tb = self._tables(node, graph)
            return [max_min_table_s8(ins[0], ins[1], ta, tb, self.is_max)]
        pa, pb = self._params(node, graph)
        return [max_min_s8(ins[0], ins[1], pa, pb, self.is_max)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        pa, pb = self._params(node, graph)
        ints = [*pa[:3], *pb[:3], pa[3]]
        return [*map(CArg.lit, ints), *broadcast_args(node, graph), operand(graph, node.inputs[0]),
                operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]

    @staticmethod
    def onnx_kernel_args(node: Node, graph: Graph) -> list[CArg]:
        """Arguments of the `_onnx` twin: the two rescale tables instead of the offsets and ratios."""
        ta, tb = _MaxMin._tables(None, node, graph)
        return [CArg("array", ta, "table1"), CArg("array", tb, "table2"), *broadcast_args(node, graph),
                operand(graph, node.inputs[0]), operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, c.weight_bytes, c.act_read_bytes, c.act_write_bytes)


@register("MAXIMUM", "Maximum")
class Maximum(_MaxMin):
    is_max = True
    variants = rounding_twins(portable("maximum"), args=_MaxMin.onnx_kernel_args)


@register("MINIMUM", "Minimum")
class Minimum(_MaxMin):
    is_max = False
    variants = rounding_twins(portable("minimum"), args=_MaxMin.onnx_kernel_args)
