"""DepthToSpace and SpaceToDepth: data movement between the channel axis and 2x2..bxb spatial blocks
of a 4-D NHWC int8 tensor, keeping the input's quantization (TFLite DEPTH_TO_SPACE / SPACE_TO_DEPTH,
TFLM reference_ops::DepthToSpace / SpaceToDepth; ONNX DepthToSpace-13 / SpaceToDepth-13).

Channel order inside a block: "DCR" (TFLite's only order, ONNX's default) puts block offset (i, j)
outermost: input channel (i * b + j) * C_out + c feeds output pixel (h * b + i, w * b + j), channel c.
"CRD" (ONNX DepthToSpace mode=CRD) puts it innermost: input channel c * b * b + i * b + j. The ONNX
NCHW channel index is the NHWC channel index, so both map onto the NHWC IR without a transpose.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, OpDef, portable, register


@dataclass(frozen=True)
class DepthToSpaceAttrs:
    block_size: int
    mode: str = "DCR"   # "DCR" (TFLite, ONNX default) or "CRD" (ONNX DepthToSpace mode=CRD)


@dataclass(frozen=True)
class SpaceToDepthAttrs:
    block_size: int


def depth_to_space(x: np.ndarray, b: int, mode: str = "DCR") -> np.ndarray:
    """NHWC [N, H, W, C] -> [N, H*b, W*b, C/(b*b)] (any dtype)."""
    n, h, w, c = x.shape
    co = c // (b * b)
    if mode == "DCR":
        t = x.reshape(n, h, w, b, b, co).transpose(0, 1, 3, 2, 4, 5)
    else:
        t = x.reshape(n, h, w, co, b, b).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(t.reshape(n, h * b, w * b, co))


def space_to_depth(x: np.ndarray, b: int) -> np.ndarray:
    """NHWC [N, H, W, C] -> [N, H/b, W/b, C*b*b] (any dtype), block offset outermost."""
    n, h, w, c = x.shape
    t = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(t.reshape(n, h // b, w // b, b * b * c))


def _rank4(node: Node, graph: Graph) -> tuple[int, int, int, int]:
    shape = graph.t(node.inputs[0]).shape
    if len(shape) != 4:
        raise ValueError(f"{node.op.value} needs a 4-D NHWC input, got {list(shape)}")
    if node.attrs.block_size < 1:
        raise ValueError(f"block_size {node.attrs.block_size} (needs >= 1)")
    return shape


class _BlockMove(OpDef):
    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # a byte permutation cannot change the quantization

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return self.reference_f32(node, graph, ins)


@register("DEPTH_TO_SPACE", "DepthToSpace")
class DepthToSpace(_BlockMove):
    variants = (portable("depth_to_space"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, c = _rank4(node, graph)
        b = node.attrs.block_size
        if c % (b * b):
            raise ValueError(f"{c} channels are not a multiple of block_size^2 = {b * b}")
        if node.attrs.mode not in ("DCR", "CRD"):
            raise ValueError(f"DepthToSpace mode {node.attrs.mode!r} (DCR or CRD)")
        return [(n, h * b, w * b, c // (b * b))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [depth_to_space(np.asarray(ins[0]), node.attrs.block_size, node.attrs.mode)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        dims = graph.t(node.inputs[0]).shape
        ints = (node.attrs.block_size, int(node.attrs.mode == "CRD"), *dims)
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


@register("SPACE_TO_DEPTH", "SpaceToDepth")
class SpaceToDepth(_BlockMove):
    variants = (portable("space_to_depth"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, c = _rank4(node, graph)
        b = node.attrs.block_size
        if h % b or w % b:
            raise ValueError(f"spatial size {h}x{w} is not a multiple of block_size {b}")
        return [(n, h // b, w // b, c * b * b)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [space_to_depth(np.asarray(ins[0]), node.attrs.block_size)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        dims = graph.t(node.inputs[0]).shape
        return [*map(CArg.lit, (node.attrs.block_size, *dims)), CArg("act", node.inputs[0]),
                CArg("act", node.outputs[0])]
