"""Slice: a strided slice of a tensor (TFLite STRIDED_SLICE / SLICE / SPLIT / SPLIT_V / UNPACK, ONNX
Slice / Split), a pure data movement: the int8 output is the input's bytes, with the input's qparams
(TFLM strided_slice.cc / slice.cc / split.cc copy elements; no requantization).

The IR node carries one normalised (start, step) per axis; the output shape is `size`, and element
i of axis k is input element start_k + i * step_k, always in range (the frontends resolve masks,
negative indices, clamping and end points, TFLM strided_slice_logic.h StartForAxis / StopForAxis).
Negative steps are allowed. Rank <= 5 in C (leading unit axes are added below rank 5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, OpDef, portable, register

MAX_RANK = 5


@dataclass(frozen=True)
class SliceAttrs:
    """Per axis: first input index `begin`, `step` (non-zero) and output length `size` (>= 1)."""

    begin: tuple[int, ...]
    step: tuple[int, ...]
    size: tuple[int, ...]


def slice_count(start: int, stop: int, step: int) -> int:
    """Number of indices start, start + step, ... strictly before `stop` (0 when none)."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


def strided_slice_s8(x: np.ndarray, begin, step, size) -> np.ndarray:
    """The elements begin_k + i * step_k, i < size_k, of every axis k (any dtype)."""
    idx = np.ix_(*[b + s * np.arange(n) for b, s, n in zip(begin, step, size, strict=True)])
    return np.ascontiguousarray(np.asarray(x)[idx])


def _check(node: Node, graph: Graph) -> tuple[int, ...]:
    shape = graph.t(node.inputs[0]).shape
    a = node.attrs
    if not len(a.begin) == len(a.step) == len(a.size) == len(shape):
        raise ValueError(f"slice of rank {len(a.begin)} on an input of rank {len(shape)}")
    if len(shape) > MAX_RANK:
        raise ValueError(f"slice of rank {len(shape)} (at most {MAX_RANK})")
    for d, b, s, n in zip(shape, a.begin, a.step, a.size, strict=True):
        if s == 0 or n < 1 or not (0 <= b < d and 0 <= b + s * (n - 1) < d):
            raise ValueError(f"slice begin {list(a.begin)} step {list(a.step)} size {list(a.size)} "
                             f"outside input {list(shape)}")
    return shape


@register("SLICE", "StridedSlice")
class Slice(OpDef):
    variants = (portable("slice"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        _check(node, graph)
        return [tuple(node.attrs.size)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        a = node.attrs
        return [strided_slice_s8(ins[0], a.begin, a.step, a.size)]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # a copy of elements: the quantization cannot change

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        shape, a = _check(node, graph), node.attrs
        lead = MAX_RANK - len(shape)
        begin = np.array((0,) * lead + a.begin, np.int32)
        step = np.array((1,) * lead + a.step, np.int32)
        in_dims = np.array((1,) * lead + shape, np.int32)
        out_dims = np.array((1,) * lead + a.size, np.int32)
        return [CArg("array", begin, "begin"), CArg("array", step, "step"), CArg("array", in_dims, "in_dims"),
                CArg("act", node.inputs[0]), CArg("array", out_dims, "out_dims"), CArg("act", node.outputs[0])]
