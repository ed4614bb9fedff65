"""SiLU (swish): y = x * sigmoid(x) (torch nn.SiLU; ONNX writes it as Mul(x, Sigmoid(x)), fused
into this op by passes/fuse_decomposed_activations.py). No TFLite builtin exists, so the int8 semantics are
ours, element by element: y_q = quantize(x * sigmoid(x)) of the real value of x_q, all in float64,
rounded as the model's `rounding` (ops/lut.py lut_table). The output quantization is calibrated.
The kernel is the generic table look-up (ops/lut.py), bit-exact by construction. Owns `silu_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import graph_rounding
from toolchain.ops.lut import lut_s8, lut_table, lut_variant
from toolchain.ops.registry import OpDef, register


def silu_f(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) in float64 (stable for large |x|)."""
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))                       # never overflows
    return x * np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def silu_table(s_in: float, z_in: int, s_out: float, z_out: int, rounding: str) -> np.ndarray:
    """The 256-entry int8 table of SiLU (t[x + 128])."""
    return lut_table(silu_f, s_in, z_in, s_out, z_out, rounding)


@dataclass(frozen=True)
class SiLUAttrs:
    """SiLU has no attributes."""


def _table(node: Node, graph: Graph) -> np.ndarray:
    a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
    return silu_table(a.s, a.zp, y.s, y.zp, graph_rounding(graph))


@register("SILU", "SiLU")
class SiLU(OpDef):
    variants = (lut_variant(_table),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [silu_f(ins[0]).astype(np.float32)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [lut_s8(ins[0], _table(node, graph))]

    def kernel_args(self, node: Node, graph: Graph):
        return self.variants[0].args(node, graph)
