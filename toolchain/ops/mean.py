"""Mean: the int8 reference semantics of averaging over axes; TFLite MEAN, TFLM
reduce_common.cc (the tflite-micro build we test against sends every int8 MEAN, shared qparams
included, to reference_ops::QuantizedMeanOrSum):

    out = MBQM(sum - zp_in * n, m', s') + zp_out, saturated,

where (m', s') folds 1/n into QuantizeMultiplier(s_in / s_out): with k = floor(log2 n) clamped to
min(k, 32, 31 + s), m' = (m << k) // n and s' = s - k. (Older TFLM releases divided the raw sum
with truncation when the qparams were equal; that path is gone.)

ONNX ReduceMean and GlobalAveragePool map here. SUM (sum.py) is the same computation with
compute_sum: multiplier QuantizeMultiplier(s_in / s_out), no 1/n; it shares this module's code
and kernel. The reduced axes must be contiguous once size-1
axes are ignored (the kernel walks [outer, reduced, inner]). Owns `mean_s8` and its 16x8 twin
`mean_s16` (int16, zero points 0, TFLM's int16 MEAN; kernel portable/mean_s16.c.j2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier, rescale
from toolchain.ops.registry import CArg, Cost, OpDef, opdef, portable, portable_s16, rounding_twins, register


def mean_multiplier(s_in: float, s_out: float, n: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's multiplier and shift of s_in / (s_out * n) (see the module docstring)."""
    m, s = quantize_multiplier(float(s_in) / float(s_out))
    k = min(int(n).bit_length() - 1, 32, 31 + s)
    return int((m << k) // n), s - k


def sum_multiplier(s_in: float, s_out: float, n: int, mean: bool = True) -> tuple[int, int]:
    """QuantizedMeanOrSum's (multiplier, shift): of s_in / (s_out * n) for MEAN, of s_in / s_out
    for SUM (compute_sum: no 1/n folded in)."""
    return mean_multiplier(s_in, s_out, n) if mean else quantize_multiplier(float(s_in) / float(s_out))


def mean_s8(x: np.ndarray, axes: tuple[int, ...], q_in: QuantParams, q_out: QuantParams,
            keep_dims: bool = True, mean: bool = True) -> np.ndarray:
    """int8 mean (or, mean=False, sum: TFLite SUM) of x over `axes` (TFLM QuantizedMeanOrSum;
    see the module docstring)."""
    x = np.asarray(x, np.int64)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    total = x.sum(axis=axes, keepdims=keep_dims)                  # int32 accumulation, |sum| < 2^31
    m, s = sum_multiplier(q_in.s, q_out.s, n, mean)
    y = rescale(total - q_in.zp * n, m, s) + q_out.zp                # double rounding, or ties to even (onnx)
    return np.clip(y, -128, 127).astype(np.int8)


def mean_s16(x: np.ndarray, axes: tuple[int, ...], s_in: float, s_out: float, keep_dims: bool = True,
             mean: bool = True) -> np.ndarray:
    """16x8 mean (mean=False: sum) of int16 x over `axes`, zero points 0 (TFLM QuantizedMeanOrSum<int16_t>:
    mean_s8's arithmetic, the 32-bit MBQM with double rounding whatever the graph's rounding, saturated
    to int16). ValueError where TFLM's int32 arithmetic would overflow (check_mean_s16)."""
    x = np.asarray(x, np.int64)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    m, s = check_mean_s16(n, s_in, s_out, mean)
    y = multiply_by_quantized_multiplier(x.sum(axis=axes, keepdims=keep_dims), m, s)
    return np.clip(y, -32768, 32767).astype(np.int16)


def check_mean_s16(n: int, s_in: float, s_out: float, mean: bool = True) -> tuple[int, int]:
    """(multiplier, shift) of a 16x8 MEAN / SUM over n elements; ValueError when the int32 sum
    (n * 32768) or the sum shifted left by a positive shift (s_in / (s_out n) >= 1) could leave int32,
    where TFLM's arithmetic overflows (undefined in C) and has no result to match."""
    m, s = sum_multiplier(s_in, s_out, n, mean)
    if n * 32768 << max(s, 0) > 1 << 31:
        raise ValueError(f"int16 {'MEAN' if mean else 'SUM'} over {n} elements with real multiplier "
                         f"{float(s_in) / float(s_out) / (n if mean else 1):.6g}: the int32 sum may overflow "
                         "(TFLM computes it in int32; use a larger output scale)")
    return m, s


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
        raise ValueError(f"reduction over axes {list(axes)} of {list(shape)}: reduced axes are not contiguous")
    lo, hi = (red[0], red[-1] + 1) if red else (len(shape), len(shape))
    prod = lambda s: int(np.prod(s, dtype=np.int64))
    return prod(shape[:lo]), prod([shape[i] for i in red]), prod(shape[hi:])


def gathering_perm(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...] | None:
    """None when the reduction over `axes` of `shape` is contiguous (reduce_layout accepts it), else
    the permutation kept axes (in order) + reduced axes (in order): a Transpose by it (exact data
    movement) makes the reduced axes the trailing ones, so the contiguous reduction over them gives
    the result in the kept axes' order. The frontends lower a non-contiguous reduction that way
    (TFLM reduces any axis set; SUM / MEAN stay one int32 sum and one requantization)."""
    try:
        reduce_layout(shape, axes)
        return None
    except ValueError:
        kept = [i for i in range(len(shape)) if i not in axes]
        return tuple(kept + sorted(axes))


def reduced_shape(node: Node, graph: Graph) -> tuple[int, ...]:
    """The output shape of a reduction with MeanAttrs (Mean, Sum, ReduceMax); ValueError for axes
    that do not fit or are not contiguous (reduce_layout)."""
    shape = graph.t(node.inputs[0]).shape
    axes = node.attrs.axes
    if not axes or any(not 0 <= a < len(shape) for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"axes {list(axes)} do not fit rank {len(shape)}")
    reduce_layout(shape, axes)
    if node.attrs.keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_mean_s16 (portable/mean_s16.c.j2): the [outer, n, inner] layout, multiplier, shift."""
    outer, n, inner = reduce_layout(graph.t(node.inputs[0]).shape, node.attrs.axes)
    m, s = check_mean_s16(n, graph.t(node.inputs[0]).quant.s, graph.t(node.outputs[0]).quant.s, opdef(node).is_mean)
    return [*map(CArg.lit, (outer, n, inner, m, s)), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


@register("MEAN", "Mean")
class Mean(OpDef):
    variants = (*rounding_twins(portable("mean")), portable_s16("mean", args=_s16_args))
    is_mean: bool = True  # False: SUM (toolchain/ops/sum.py), the same kernel without 1/n

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [reduced_shape(node, graph)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        y = np.mean(np.asarray(ins[0], np.float64), axis=node.attrs.axes, keepdims=node.attrs.keep_dims)
        return [np.asarray(y, np.float32)]

    def _q(self, node: Node, graph: Graph) -> tuple[QuantParams, QuantParams]:
        return graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [mean_s8(ins[0], node.attrs.axes, *self._q(node, graph), node.attrs.keep_dims, self.is_mean)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        q_in, q_out = self._q(node, graph)
        return [mean_s16(ins[0], node.attrs.axes, q_in.s, q_out.s, node.attrs.keep_dims, self.is_mean)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        outer, n, inner = reduce_layout(graph.t(node.inputs[0]).shape, node.attrs.axes)
        q_in, q_out = self._q(node, graph)
        m, s = sum_multiplier(q_in.s, q_out.s, n, self.is_mean)
        ints = [outer, n, inner, q_in.zp, m, s, q_out.zp]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.inputs[0]).size, 0, c.act_read_bytes, c.act_write_bytes)
