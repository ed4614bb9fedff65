"""Concatenation: the int8 reference semantics of joining tensors along one axis, each input
requantized to the output's qparams with an integer multiplier/shift (TFLite's integer Requantize
arithmetic: out = MBQM(x - zp_in, s_in / s_out) + zp_out); an input that shares the output's qparams
is a plain copy.

TFLM is not the oracle here (BL-25): its int8 CONCATENATION refuses inputs whose scale differs from
the output's (Prepare check in the tflite-micro build we test against; older releases copied the bytes
unscaled), and TFLite's float path rescales with round(). With all inputs sharing the output's qparams,
which is what the TFLite converter produces, every one of them agrees with this module. Owns `concat_s8`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.binary import operand
from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.registry import CArg, OpDef, OpKind, portable, rounding_twins, register

COPY = (1 << 30, 1)  # quantize_multiplier(1.0): the (mult, shift) of an exact copy


def requant_params(src: QuantParams, dst: QuantParams) -> tuple[int, int, int, int]:
    """(input_offset, mult, shift, output_offset) taking int8 of `src` to int8 of `dst`
    (TFLM PrepareQuantizeReference: QuantizeMultiplier(double(s_in) / double(s_out)))."""
    mult, shift = quantize_multiplier(float(src.s) / float(dst.s))
    return -src.zp, mult, shift, dst.zp


def requantize_s8(x: np.ndarray, input_offset: int, mult: int, shift: int, output_offset: int) -> np.ndarray:
    """int8 -> int8 requantization (TFLM reference_ops::Requantize): MBQM(x + input_offset, mult,
    shift) + output_offset, saturated to int8; under rounding "onnx" the rescale rounds once, ties to
    even (ONNX DequantizeLinear -> QuantizeLinear; fixed_point.rescale)."""
    y = rescale(np.asarray(x, np.int64) + input_offset, mult, shift) + output_offset
    return np.clip(y, -128, 127).astype(np.int8)


def concat_s8(xs: Sequence[np.ndarray], axis: int, params: Sequence[tuple[int, int, int, int]]) -> np.ndarray:
    """int8 concatenation along `axis`; params[i] = requant_params(input i, output) (COPY = plain copy)."""
    parts = [x if (p[1], p[2]) == COPY and p[0] + p[3] == 0 else requantize_s8(x, *p)
             for x, p in zip(xs, params, strict=True)]
    return np.concatenate([np.asarray(p, np.int8) for p in parts], axis=axis)


# ---- IR glue ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConcatAttrs:
    """Concatenation along `axis` of the IR (NHWC) shapes (ONNX Concat-13, TFLite CONCATENATION)."""

    axis: int


def _axis(node: Node, graph: Graph) -> int:
    rank = len(graph.t(node.inputs[0]).shape)
    if not -rank <= node.attrs.axis < rank:
        raise ValueError(f"axis {node.attrs.axis} out of range for rank {rank}")
    return node.attrs.axis % rank


@register(OpKind.CONCAT)
class Concat(OpDef):
    variants = rounding_twins(portable("concat"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shapes = [graph.t(n).shape for n in node.inputs]
        ax = _axis(node, graph)
        first = shapes[0]
        for s in shapes[1:]:
            if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != ax):
                raise ValueError(f"inputs {[list(s) for s in shapes]} differ outside axis {ax}")
        return [tuple(sum(s[ax] for s in shapes) if i == ax else d for i, d in enumerate(first))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.concatenate([np.asarray(x, np.float32) for x in ins], axis=_axis(node, graph))]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        from toolchain.ops.common import quantize_operand

        for name in node.inputs:  # a constant input is stored with the output's qparams: a copy
            if graph.t(name).is_const and graph.t(name).quant is None:
                graph = quantize_operand(graph, name, graph.t(node.outputs[0]).quant)
        return graph

    def _params(self, node: Node, graph: Graph) -> list[tuple[int, int, int, int]]:
        y = graph.t(node.outputs[0]).quant
        return [requant_params(graph.t(n).quant, y) for n in node.inputs]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [concat_s8(ins, _axis(node, graph), self._params(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        ax = _axis(node, graph)
        shape = graph.t(node.outputs[0]).shape
        outer = int(np.prod(shape[:ax], dtype=np.int64))
        inner = [int(np.prod(graph.t(n).shape[ax:], dtype=np.int64)) for n in node.inputs]
        p = np.array(self._params(node, graph), np.int64)
        arr = np.stack([inner, p[:, 0], p[:, 1], p[:, 2], p[:, 3]], axis=1).astype(np.int32).reshape(-1)
        return [CArg.lit(len(node.inputs)), CArg.lit(outer), CArg.lit(sum(inner)), CArg("array", arr, "params"),
                CArg("ptrs", tuple(operand(graph, n) for n in node.inputs)), CArg("act", node.outputs[0])]
