"""Logistic (sigmoid): the int8 reference semantics; TFLite int8 spec, TFLM
reference_integer_ops::Logistic with the Prepare of micro/kernels/logistic_common.cc.

(x - zp) is rescaled to Q4.27 (inputs beyond the radius saturate to -128 / 127), gemmlowp's
fixed-point logistic gives Q0.31, and RoundingDivideByPOT(., 23) - 128 the int8 result. The output
quantization is fixed by the spec: scale 1/256, zero point -128. Owns `logistic_s8`. 16x8 (int16 in and out, Q0.15
output): activation_s16.logistic_s16, kernel portable/logistic_s16.c.j2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import DType, Graph, Node, QuantParams
from toolchain.ops.activation_s16 import UNIT_OUT_S16, logistic_s16, sigmoid_s16_params, sigmoid_table_u16
from toolchain.ops.registry import CArg, OpDef, portable, portable_s16, register
from toolchain.ops.transcendental import input_rescale_params, logistic_q4, rescale_input, to_int8

LOGISTIC_OUT = QuantParams.per_tensor(1.0 / 256.0, -128)


def logistic_s8(x: np.ndarray, input_scale: float, input_zp: int) -> np.ndarray:
    """int8 sigmoid (TFLM reference_integer_ops::Logistic); output scale 1/256, zero point -128."""
    mult, shift, radius = input_rescale_params(input_scale)
    d = np.asarray(x, np.int64) - input_zp
    inside = np.abs(d) < radius
    raw = logistic_q4(rescale_input(np.where(inside, x, input_zp), input_zp, mult, shift))
    y = np.where(inside, to_int8(raw, 31 - 8, -128), np.where(d > 0, 127, -128))
    return y.astype(np.int8)


@dataclass(frozen=True)
class LogisticAttrs:
    """Logistic has no attributes (ONNX Sigmoid-13, TFLite LOGISTIC)."""


@register("LOGISTIC", "Logistic")
class Logistic(OpDef):
    variants = (portable("logistic"), portable_s16("logistic", args=lambda n, g: _s16_args(n, g), inplace_inputs=(0,)))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [(1.0 / (1.0 + np.exp(-np.asarray(ins[0], np.float64)))).astype(np.float32)]

    def output_qparams(self, node, graph, observed):
        # 16x8 (an int16 input): Q0.15, as TFLM's int16 logistic requires
        return UNIT_OUT_S16 if graph.t(node.inputs[0]).dtype == DType.INT16 else LOGISTIC_OUT

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        q = graph.t(node.inputs[0]).quant
        return [logistic_s8(ins[0], q.s, q.zp)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [logistic_s16(ins[0], *sigmoid_s16_params(graph.t(node.inputs[0]).quant.s, tanh=False))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        q = graph.t(node.inputs[0]).quant
        mult, shift, radius = input_rescale_params(q.s)
        ints = [q.zp, radius, mult, shift, graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """ecc_logistic_s16 (portable/logistic_s16.c.j2): the input rescaling, the size, TFLM's uint16 sigmoid table."""
    mult, shift = sigmoid_s16_params(graph.t(node.inputs[0]).quant.s, tanh=False)
    return [*map(CArg.lit, (mult, shift, graph.t(node.inputs[0]).size)), CArg("array", sigmoid_table_u16(), "table"),
            CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
