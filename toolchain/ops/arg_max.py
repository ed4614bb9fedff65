"""ArgMax: the index of the largest value along one axis, as int32; TFLite ARG_MAX (TFLM
micro/kernels/arg_min_max.cc -> reference_ops::ArgMinMax with std::greater). Owns `arg_max_s8`.

The comparison is strict, so ties give the FIRST index (TFLM, and np.argmax). The int8 values are
compared raw: a positive scale keeps the order, so the index is the same as on the real values, and
the float twin (reference_f32) is the same function. The output has no quantization (dtype INT32);
it is the usual graph output of a classifier, and may also feed other int32 consumers (none yet).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register


@dataclass(frozen=True)
class ArgMaxAttrs:
    """axis: the reduced axis of the IR shape, in [0, rank) (the output drops it)."""

    axis: int


def arg_max_s8(x: np.ndarray, axis: int) -> np.ndarray:
    """int32 index of the maximum along `axis`, the first one on ties (TFLM ArgMinMax)."""
    return np.argmax(np.asarray(x), axis=axis).astype(np.int32)


def arg_max_layout(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, axis size, inner) element counts of a row-major shape around `axis`."""
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(shape[axis]),
            int(np.prod(shape[axis + 1:], dtype=np.int64)))


@register("ARG_MAX", "ArgMax")
class ArgMax(OpDef):
    variants = (portable("arg_max"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shape, axis = graph.t(node.inputs[0]).shape, node.attrs.axis
        if not 0 <= axis < len(shape) or shape[axis] < 1:
            raise ValueError(f"arg_max axis {axis} of shape {list(shape)}")
        return [tuple(d for i, d in enumerate(shape) if i != axis)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [arg_max_s8(ins[0], node.attrs.axis)]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return None  # an index, not a quantized value

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        dims = arg_max_layout(graph.t(node.inputs[0]).shape, node.attrs.axis)
        return [*map(CArg.lit, dims), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, 0, c.act_read_bytes, c.act_write_bytes)
