"""Gather with constant indices: TFLite GATHER (batch_dims 0) and ONNX Gather with initializer
indices, a pure data movement (TFLM gather.cc copies slices: the output keeps the input's qparams).

The IR node carries the axis, the indices (already in [0, dim): the frontends normalise negative
ONNX indices and refuse out-of-range ones, which TFLM rejects too) and their shape; the output shape
is input[:axis] + indices_shape + input[axis+1:] (a scalar index, shape (), drops the axis).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, OpDef, portable, register


@dataclass(frozen=True)
class GatherAttrs:
    axis: int
    indices: tuple[int, ...]          # flattened, each in [0, input.shape[axis])
    indices_shape: tuple[int, ...]


def _geometry(node: Node, graph: Graph) -> tuple[int, int, int]:
    """(outer, axis size, inner) of the input around the gathered axis."""
    shape, a = graph.t(node.inputs[0]).shape, node.attrs
    if not 0 <= a.axis < len(shape):
        raise ValueError(f"gather axis {a.axis} out of range for rank {len(shape)}")
    if int(np.prod(a.indices_shape, dtype=np.int64)) != len(a.indices) or not a.indices:
        raise ValueError(f"{len(a.indices)} indices for indices shape {list(a.indices_shape)}")
    if any(not 0 <= i < shape[a.axis] for i in a.indices):
        raise ValueError(f"gather indices {list(a.indices)} outside [0, {shape[a.axis]})")
    return (int(np.prod(shape[:a.axis], dtype=np.int64)), shape[a.axis],
            int(np.prod(shape[a.axis + 1:], dtype=np.int64)))


SHORT_ROW = 16  # output rows below this many bytes are copied byte by byte (gather_s8.c.j2)


def index_runs(indices: tuple[int, ...]) -> list[tuple[int, int]]:
    """The indices as runs (first, count) of consecutive values, in order: (0, 1, 2, 5, 5) ->
    [(0, 3), (5, 1), (5, 1)]; the C kernel copies one run at a time."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return [(a, n) for a, n in runs]


@register("GATHER", "Gather")
class Gather(OpDef):
    variants = (portable("gather"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        _geometry(node, graph)
        shape, a = graph.t(node.inputs[0]).shape, node.attrs
        return [shape[:a.axis] + tuple(a.indices_shape) + shape[a.axis + 1:]]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        a = node.attrs
        idx = np.array(a.indices, np.int64).reshape(a.indices_shape)
        return [np.ascontiguousarray(np.take(np.asarray(ins[0]), idx, axis=a.axis))]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # a copy of elements: the quantization cannot change

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        return gather_args(*_geometry(node, graph), node.attrs.indices, node.inputs[0], node.outputs[0])


def gather_args(outer: int, dim: int, inner: int, indices, x: str, y: str) -> list[CArg]:
    """The gather_s8 argument list (every ISA's) for an input [outer][dim][inner] (activation x) and
    row indices in [0, dim), output y: the runs of consecutive indices, and for an output row
    shorter than SHORT_ROW bytes its byte offsets within a slice."""
    runs = np.array(index_runs(tuple(indices)), np.int32).reshape(-1)
    row = len(indices) * inner
    short = row < SHORT_ROW  # byte offsets within a slice: the kernel's per-byte path
    idx = np.array(indices, np.int32)
    offs = (idx[:, None] * inner + np.arange(inner, dtype=np.int32)).reshape(-1) if short else np.zeros(1, np.int32)
    return [CArg.lit(len(runs) // 2), CArg("array", runs, "runs"), CArg.lit(row if short else 0),
            CArg("array", offs, "bytes"), CArg.lit(outer), CArg.lit(dim), CArg.lit(inner),
            CArg("act", x), CArg("act", y)]
