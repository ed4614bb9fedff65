"""Mean: the int8 reference semantics of averaging over axes; TFLite MEAN, TFLM
reduce_common.cc (the tflite-micro build we test against sends every int8 MEAN, shared qparams
included, to reference_ops::QuantizedMeanOrSum):

    out = MBQM(sum - zp_in * n, m', s') + zp_out, saturated,

where (m', s') folds 1/n into QuantizeMultiplier(s_in / s_out): with k = floor(log2 n) clamped to
min(k, 32, 31 + s), m' = (m << k) // n and s' = s - k. (Older TFLM releases divided the raw sum
with truncation when the qparams were equal; that path is gone.)

ONNX ReduceMean and GlobalAveragePool map here. The reduced axes must be contiguous once size-1
axes are ignored (the kernel walks [outer, reduced, inner]). Owns `mean_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.registry import CArg, Cost, OpDef, portable, rounding_twins, register


def mean_multiplier(s_in: float, s_out: float, n: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's multiplier and shift of s_in / (s_out * n) (see the module docstring)."""
    m, s = quantize_multiplier(float(s_in) / float(s_out))
    k = min(int(n).bit_length() - 1, 32, 31 + s)
    return int((m << k) // n), s - k


def mean_s8(x: np.ndarray, axes: tuple[int, ...], q_in: QuantParams, q_out: QuantParams,
            keep_dims: bool = True) -> np.ndarray:
    """int8 mean of x over `axes` (TFLM MEAN int8; see the module docstring for both paths)."""
    x = np.asarray(x, np.int64)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    total = x.sum(axis=axes, keepdims=keep_dims)                  # int32 accumulation, |sum| < 2^31
    m, s = mean_multiplier(q_in.s, q_out.s, n)
    y = rescale(total - q_in.zp * n, m, s) + q_out.zp                # double rounding, or ties to even (onnx)
    return np.clip(y, -128, 127).astype(np.int8)


# ---- IR glue ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MeanAttrs:
    """Mean over `axes` (non-negative, of the IR's NHWC shape), keeping them as size-1 axes or not."""

    axes: tuple[int, ...]
    keep_dims: bool = True


def reduce_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int]:
    """(outer, reduced, inner) element counts; ValueError unless the reduced axes are contiguous
    once size-1 axes are ignored."""
    big = [i for i, d in enumerate(shape) if d != 1]
    red = [i for i in big if i in axes]
    if red and big.index(red[-1]) - big.index(red[0]) + 1 != len(red):
        raise ValueError(f"mean over axes {list(axes)} of {list(shape)}: reduced axes are not contiguous")
    lo, hi = (red[0], red[-1] + 1) if red else (len(shape), len(shape))
    prod = lambda s: int(np.prod(s, dtype=np.int64))
    return prod(shape[:lo]), prod([shape[i] for i in red]), prod(shape[hi:])


@register("MEAN", "Mean")
class Mean(OpDef):
    variants = rounding_twins(portable("mean"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shape = graph.t(node.inputs[0]).shape
        axes = node.attrs.axes
        if not axes or any(not 0 <= a < len(shape) for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"axes {list(axes)} do not fit rank {len(shape)}")
        reduce_layout(shape, axes)
        if node.attrs.keep_dims:
            return [tuple(1 if i in axes else d for i, d in enumerate(shape))]
        return [tuple(d for i, d in enumerate(shape) if i not in axes)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        y = np.mean(np.asarray(ins[0], np.float64), axis=node.attrs.axes, keepdims=node.attrs.keep_dims)
        return [np.asarray(y, np.float32)]

    def _q(self, node: Node, graph: Graph) -> tuple[QuantParams, QuantParams]:
        return graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [mean_s8(ins[0], node.attrs.axes, *self._q(node, graph), node.attrs.keep_dims)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        outer, n, inner = reduce_layout(graph.t(node.inputs[0]).shape, node.attrs.axes)
        q_in, q_out = self._q(node, graph)
        m, s = mean_multiplier(q_in.s, q_out.s, n)
        ints = [outer, n, inner, q_in.zp, m, s, q_out.zp]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.inputs[0]).size, 0, c.act_read_bytes, c.act_write_bytes)
