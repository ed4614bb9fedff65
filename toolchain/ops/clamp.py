"""Clamp: ONNX Relu / Clip-13 when not fused into a producer. With identical input and output
quantization the int8 form is a clamp at zp + round(bound / scale) (never at literal 0, BL-27)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.common import act_range_s8
from toolchain.ops.elementwise import clamp_s8
from toolchain.ops.registry import CArg, OpDef, portable, register


@dataclass(frozen=True)
class ClampAttrs:
    lo: float
    hi: float


@register("CLAMP", "Clamp")
class Clamp(OpDef):
    variants = (portable("clamp", inplace_inputs=(0,)),)  # the kernel allows output == input

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    stacks_samples = True  # elementwise, exact
    stacks_samples_int8 = True
    ignores_observed_range = True  # output_qparams: the input's

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(ins[0], node.attrs.lo, node.attrs.hi).astype(np.float32)]

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # same qparams: the int8 op is a pure clamp

    def _range(self, node: Node, graph: Graph) -> tuple[int, int]:
        return act_range_s8((node.attrs.lo, node.attrs.hi), graph.t(node.outputs[0]).quant)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        lo, hi = self._range(node, graph)
        return [clamp_s8(ins[0], lo, hi)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        lo, hi = self._range(node, graph)
        return [CArg.lit(lo), CArg.lit(hi), CArg.lit(graph.t(node.inputs[0]).size),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
