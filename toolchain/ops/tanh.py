"""Tanh: the int8 reference semantics; TFLite int8 spec, TFLM reference_integer_ops::Tanh with the
Prepare of micro/kernels/tanh.cc.

(x - zp) is rescaled to Q4.27 (inputs beyond the radius saturate to -128 / 127), gemmlowp's
fixed-point tanh gives Q0.31 and RoundingDivideByPOT(., 24) the int8 result. The output quantization
is fixed by the spec: scale 1/128, zero point 0. Owns `tanh_s8`. 16x8 (int16 in and out, Q0.15
output): activation_s16.tanh_s16, kernel portable/tanh_s16.c.j2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import DType, Graph, Node, QuantParams
from toolchain.ops.activation_s16 import UNIT_OUT_S16, tanh_s16, sigmoid_s16_params, sigmoid_table_u16
from toolchain.ops.registry import CArg, OpDef, portable, portable_s16, register
from toolchain.ops.transcendental import input_rescale_params, rescale_input, tanh_q4, to_int8

TANH_OUT = QuantParams.per_tensor(1.0 / 128.0, 0)


def tanh_s8(x: np.ndarray, input_scale: float, input_zp: int) -> np.ndarray:
    """int8 tanh (TFLM reference_integer_ops::Tanh); output scale 1/128, zero point 0."""
    mult, shift, radius = input_rescale_params(input_scale)
    d = np.asarray(x, np.int64) - input_zp
    inside = np.abs(d) < radius
    raw = tanh_q4(rescale_input(np.where(inside, x, input_zp), input_zp, mult, shift))
    y = np.where(inside, to_int8(raw, 31 - 7, 0), np.where(d > 0, 127, -128))
    return y.astype(np.int8)


@dataclass(frozen=True)
class TanhAttrs:
    """Tanh has no attributes (ONNX Tanh-13, TFLite TANH)."""


@register("TANH", "Tanh")
class Tanh(OpDef):
    variants = (portable("tanh"), portable_s16("tanh", args=lambda n, g: _s16_args(n, g), inplace_inputs=(0,)))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.tanh(np.asarray(ins[0], np.float64)).astype(np.float32)]

    def output_qparams(self, node, graph, observed):
        # 16x8 (an int16 input): Q0.15, as TFLM's int16 tanh requires
        return UNIT_OUT_S16 if graph.t(node.inputs[0]).dtype == DType.INT16 else TANH_OUT

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        q = graph.t(node.inputs[0]).quant
        return [tanh_s8(ins[0], q.s, q.zp)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [tanh_s16(ins[0], *sigmoid_s16_params(graph.t(node.inputs[0]).quant.s, tanh=True))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        q = graph.t(node.inputs[0]).quant
        mult, shift, radius = input_rescale_params(q.s)
        ints = [q.zp, radius, mult, shift, graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """ecc_tanh_s16 (portable/tanh_s16.c.j2): the input rescaling, the size, TFLM's uint16 sigmoid table."""
    mult, shift = sigmoid_s16_params(graph.t(node.inputs[0]).quant.s, tanh=True)
    return [*map(CArg.lit, (mult, shift, graph.t(node.inputs[0]).size)), CArg("array", sigmoid_table_u16(), "table"),
            CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
