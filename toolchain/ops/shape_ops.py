"""Reshape and Transpose: ops that only move or reinterpret elements (any dtype, no requantization).

Reshape is a view (no copy, no kernel; the planner aliases its output to its input). Transpose
is a real copy with the portable `ecc_transpose_s8` kernel (rank <= 4). ONNX Reshape-14,
Flatten-13, Squeeze/Unsqueeze-13 and Transpose-13 map here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, OpDef, portable, register


@dataclass(frozen=True)
class ReshapeAttrs:
    shape: tuple[int, ...]


@dataclass(frozen=True)
class TransposeAttrs:
    perm: tuple[int, ...]


@register("RESHAPE", "Reshape")
class Reshape(OpDef):
    is_view = True

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        src = graph.t(node.inputs[0])
        if int(np.prod(node.attrs.shape, dtype=np.int64)) != src.size:
            raise ValueError(f"cannot reshape {list(src.shape)} to {list(node.attrs.shape)}")
        return [node.attrs.shape]

    stacks_samples = True  # interpret_each stacks only graphs whose activations all lead with 1
    stacks_samples_int8 = True
    ignores_observed_range = True  # output_qparams: the input's

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if ins[0].shape[:1] != graph.t(node.inputs[0]).shape[:1]:  # stacked samples: keep them on axis 0
            return [ins[0].reshape(ins[0].shape[0], *node.attrs.shape[1:])]
        return [ins[0].reshape(node.attrs.shape)]

    reference_s8 = reference_f32
    reference_s16 = reference_f32  # a view: int16 bytes (16x8) as they are

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # a view cannot change the quantization


@register("TRANSPOSE", "Transpose")
class Transpose(OpDef):
    variants = (portable("transpose"),)  # the neon kernel: toolchain/isa/neon_relayout.py

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        src = graph.t(node.inputs[0]).shape
        if sorted(node.attrs.perm) != list(range(len(src))):
            raise ValueError(f"perm {list(node.attrs.perm)} does not fit rank {len(src)}")
        return [tuple(src[p] for p in node.attrs.perm)]

    stacks_samples_int8 = True
    ignores_observed_range = True  # output_qparams: the input's

    def stacks_samples_f32(self, node: Node, graph: Graph) -> bool:
        return node.attrs.perm[:1] == (0,)  # the sample axis stays first

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(np.transpose(ins[0], node.attrs.perm))]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        shape = graph.t(node.inputs[0]).shape
        if len(shape) > 4:
            raise ValueError("transpose of rank > 4")
        pad = 4 - len(shape)  # leading unit axes keep the kernel at rank 4
        dims = np.array((1,) * pad + shape, np.int32)
        perm = np.array(tuple(range(pad)) + tuple(p + pad for p in node.attrs.perm), np.int32)
        return [CArg.lit(4), CArg("array", dims, "dims"), CArg("array", perm, "perm"),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
