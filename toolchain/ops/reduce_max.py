"""ReduceMax: the int8 maximum over axes; TFLite REDUCE_MAX, TFLM reduce.cc EvalMax ->
reference_ops::ReduceGeneric with max (initial -128) on the raw int8 values. TFLM requires the
input and output scales to be equal and ignores the zero points; the frontends accept only equal
qparams (then the raw max is the quantized max) and our quantizer gives the output the input's.
ONNX ReduceMax and GlobalMaxPool map here. The reduced axes must be contiguous once size-1 axes
are ignored (mean.reduce_layout). Owns `reduce_max_s8`.
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.mean import reduce_layout, reduced_shape
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register


def reduce_max_s8(x: np.ndarray, axes: tuple[int, ...], keep_dims: bool = True) -> np.ndarray:
    """int8 max of x over `axes` (raw values: input and output share their qparams)."""
    return np.max(np.asarray(x, np.int8), axis=tuple(axes), keepdims=keep_dims).astype(np.int8)


@register("REDUCE_MAX", "ReduceMax")
class ReduceMax(OpDef):
    """attrs: mean.MeanAttrs (axes of the IR shape, keep_dims)."""

    variants = (portable("reduce_max"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [reduced_shape(node, graph)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.max(np.asarray(ins[0], np.float32), axis=node.attrs.axes, keepdims=node.attrs.keep_dims)]

    def output_qparams(self, node: Node, graph: Graph, observed: QuantParams) -> QuantParams:
        return graph.t(node.inputs[0]).quant

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        q_in, q_out = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        if q_in != q_out:
            raise ValueError(f"ReduceMax needs equal input/output qparams, got {q_in} and {q_out}")
        return [reduce_max_s8(ins[0], node.attrs.axes, node.attrs.keep_dims)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        outer, n, inner = reduce_layout(graph.t(node.inputs[0]).shape, node.attrs.axes)
        return [*map(CArg.lit, (outer, n, inner)), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(0, 0, c.act_read_bytes, c.act_write_bytes)
