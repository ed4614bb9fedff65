"""HardSigmoid: y = max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid-6, defaults alpha 0.2,
beta 0.5; torch's legacy export of nn.Hardsigmoid uses alpha 1/6). There is no TFLite builtin, so
the int8 semantics are ours, defined element by element: y_q = quantize(f(dequantize(x_q))), the
real value of x_q and f in float64, rounded as the model's `rounding` (ties away from zero under
"tflm", QuantizeLinear's float32 division and ties to even under "onnx"; ops/lut.py lut_table).

The output range is [0, 1], so the output quantization is fixed as Logistic's: scale 1/256, zero
point -128 (1.0 saturates to 127 = 255/256). The kernel is the generic table look-up (ops/lut.py):
a 256-entry table of this reference, bit-exact by construction. Owns `hard_sigmoid_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.fixed_point import graph_rounding
from toolchain.ops.lut import lut_s8, lut_table, lut_variant
from toolchain.ops.registry import OpDef, register

HARD_SIGMOID_OUT = QuantParams.per_tensor(1.0 / 256.0, -128)


def hard_sigmoid_f(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """max(0, min(1, alpha * x + beta)) in the precision of x."""
    return np.clip(alpha * x + beta, 0.0, 1.0)


def hard_sigmoid_table(alpha: float, beta: float, s_in: float, z_in: int, s_out: float, z_out: int,
                       rounding: str) -> np.ndarray:
    """The 256-entry int8 table of the hard sigmoid (t[x + 128])."""
    return lut_table(lambda r: hard_sigmoid_f(r, float(alpha), float(beta)), s_in, z_in, s_out, z_out, rounding)


@dataclass(frozen=True)
class HardSigmoidAttrs:
    """ONNX HardSigmoid-6 attributes (float32 values)."""

    alpha: float = 0.2
    beta: float = 0.5


def _table(node: Node, graph: Graph) -> np.ndarray:
    a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
    return hard_sigmoid_table(node.attrs.alpha, node.attrs.beta, a.s, a.zp, y.s, y.zp, graph_rounding(graph))


@register("HARD_SIGMOID", "HardSigmoid")
class HardSigmoid(OpDef):
    variants = (lut_variant(_table),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        f = np.float32
        x = np.asarray(ins[0], f)
        return [hard_sigmoid_f(x, f(node.attrs.alpha), f(node.attrs.beta)).astype(f)]

    def output_qparams(self, node, graph, observed):
        return HARD_SIGMOID_OUT

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [lut_s8(ins[0], _table(node, graph))]

    def kernel_args(self, node: Node, graph: Graph):
        return self.variants[0].args(node, graph)
