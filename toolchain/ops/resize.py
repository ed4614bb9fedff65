"""Resize (nearest neighbour and bilinear) over H and W of NHWC tensors, int8 output keeping the
input's quantization (TFLite rule: both kernels move or blend raw int8 values).

Semantics are in the per-axis coordinate tables, computed here in Python and passed to the C
kernels as int32 arrays, so one kernel serves every coordinate convention:
- TFLite (RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR, TFLM reference_ops): nearest follows
  GetNearestNeighbor in float32 (align_corners rounds, else floor; half_pixel_centers adds 0.5,
  BL-30); bilinear int8 follows ResizeBilinearInteger: Q10 source coordinates, int64 products,
  rounding (+-2^19) then division by 2^20.
- ONNX Resize-11..19 (mode nearest|linear): coordinate_transformation_mode half_pixel,
  pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, half_pixel_symmetric and
  nearest_mode round_prefer_floor|round_prefer_ceil|floor|ceil, in float64 as the ONNX reference;
  linear weights are rounded to Q10 for the int8 kernel (the float reference is exact).
Owns `resize_nearest_s8`, `resize_bilinear_s8` and the tables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register

ONNX_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
              "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class ResizeAttrs:
    """Output (H, W) and the coordinate convention. convention "tflite": align_corners and
    half_pixel_centers as in the TFLite options; "onnx": coord_mode, nearest_mode and the
    per-axis scale (output/input, or the model's `scales`) of ONNX Resize."""

    out_hw: tuple[int, int]
    convention: str = "tflite"
    align_corners: bool = False
    half_pixel_centers: bool = False
    coord_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    scale: tuple[float, float] | None = None


# ---- coordinate tables -----------------------------------------------------------------------
def _onnx_coords(attrs: ResizeAttrs, axis: int, in_size: int, out_size: int) -> np.ndarray:
    """ONNX get_original_coordinate for every output index of one axis (float64)."""
    scale = attrs.scale[axis] if attrs.scale else out_size / in_size
    x = np.arange(out_size, dtype=np.float64)
    mode = attrs.coord_mode
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_size > 1 else np.zeros_like(x)
    if mode == "align_corners":  # ONNX uses the unrounded output length in * scale when scales are given
        length = in_size * attrs.scale[axis] if attrs.scale else out_size
        return x * (in_size - 1) / (length - 1) if out_size > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if mode == "half_pixel_symmetric":
        adj = out_size / (scale * in_size)
        return in_size * (1 - adj) / 2 + (x + 0.5) / scale - 0.5
    raise ValueError(f"coordinate_transformation_mode {mode!r}")


def _round_nearest(c: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil":
        return np.ceil(c)
    tie = c - np.floor(c) == 0.5
    if mode == "round_prefer_floor":
        return np.where(tie, np.floor(c), np.round(c))
    if mode == "round_prefer_ceil":
        return np.where(tie, np.ceil(c), np.round(c))
    raise ValueError(f"nearest_mode {mode!r}")


def nearest_table(attrs: ResizeAttrs, axis: int, in_size: int, out_size: int) -> np.ndarray:
    """Source index of every output index along one axis (int32)."""
    if attrs.convention == "onnx":
        idx = _round_nearest(_onnx_coords(attrs, axis, in_size, out_size), attrs.nearest_mode)
        return np.clip(idx, 0, in_size - 1).astype(np.int32)
    f = np.float32  # TFLM GetNearestNeighbor, float32 arithmetic
    scale = f(in_size - 1) / f(out_size - 1) if attrs.align_corners and out_size > 1 else f(in_size) / f(out_size)
    offset = f(0.5) if attrs.half_pixel_centers else f(0.0)
    out = []
    for v in range(out_size):
        c = (f(v) + offset) * scale
        i = math.floor(abs(float(c)) + 0.5) * (1 if c >= 0 else -1) if attrs.align_corners else math.floor(float(c))
        i = min(int(i), in_size - 1)
        out.append(max(0, i) if attrs.half_pixel_centers else i)
    return np.array(out, np.int32)


def bilinear_table(attrs: ResizeAttrs, axis: int, in_size: int, out_size: int) -> np.ndarray:
    """[out_size, 3] int32 rows (i0, i1, d): the int8 kernel blends v[i0] * (1024 - d) + v[i1] * d
    (TFLM ResizeBilinearInteger: d = Q10 source coordinate - 1024 * i0, may fall outside [0, 1024])."""
    v = np.arange(out_size, dtype=np.int64)
    if attrs.convention == "onnx":
        c = np.clip(_onnx_coords(attrs, axis, in_size, out_size), 0, in_size - 1)
        i0 = np.floor(c).astype(np.int64)
        i1 = np.minimum(i0 + 1, in_size - 1)
        d = np.floor((c - i0) * 1024 + 0.5).astype(np.int64)
        return np.stack([i0, i1, d], axis=1).astype(np.int32)
    if attrs.align_corners and out_size > 1:
        scale10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale10 = ((1 << 10) * in_size + out_size // 2) // out_size
    scaled = v * scale10 + (scale10 // 2 - (1 << 9) if attrs.half_pixel_centers else 0)
    trunc = np.where(scaled >= 0, scaled >> 10, -((-scaled) >> 10))   # C '/' by 2^10
    i0 = np.maximum(trunc, 0)
    up = scaled + (1 << 10) - 1
    i1 = np.minimum(np.where(up >= 0, up >> 10, -((-up) >> 10)), in_size - 1)
    return np.stack([i0, i1, scaled - (i0 << 10)], axis=1).astype(np.int32)


def _float_table(attrs: ResizeAttrs, axis: int, in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, weight of i1) of the float bilinear reference (TFLite float kernel / ONNX linear)."""
    if attrs.convention == "onnx":
        c = np.clip(_onnx_coords(attrs, axis, in_size, out_size), 0, in_size - 1)
    else:
        f = np.float32
        scale = f(in_size - 1) / f(out_size - 1) if attrs.align_corners and out_size > 1 else f(in_size) / f(out_size)
        v = np.arange(out_size, dtype=np.float32)
        c = ((v + f(0.5)) * scale - f(0.5) if attrs.half_pixel_centers else v * scale).astype(np.float64)
    i0 = np.maximum(np.floor(c), 0).astype(np.int64)
    i1 = np.minimum(np.ceil(c), in_size - 1).astype(np.int64)
    return i0, i1, c - i0


# ---- int8 semantics --------------------------------------------------------------------------
def resize_nearest_s8(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """out[n, y, x, c] = in[n, rows[y], cols[x], c] (int8 copy)."""
    return np.ascontiguousarray(np.asarray(x)[:, rows][:, :, cols])


def resize_bilinear_s8(x: np.ndarray, ytab: np.ndarray, xtab: np.ndarray) -> np.ndarray:
    """TFLM ResizeBilinearInteger (double-rounding build): the Q20 blend of the four raw int8
    neighbours, + 2^19 (or - 2^19 when negative), divided by 2^20 with truncation."""
    v = np.asarray(x, np.int64)
    y0, y1, dy = (ytab[:, k] for k in range(3))
    x0, x1, dx = (xtab[:, k] for k in range(3))
    top, bottom = v[:, y0], v[:, y1]                                   # [N, OH, W, C]
    dy = dy.astype(np.int64)[None, :, None, None]
    dx = dx.astype(np.int64)[None, None, :, None]
    one = 1 << 10
    s = (top[:, :, x0] * (one - dy) * (one - dx) + bottom[:, :, x0] * dy * (one - dx)
         + top[:, :, x1] * (one - dy) * dx + bottom[:, :, x1] * dy * dx)
    t = s + np.where(s > 0, 1 << 19, -(1 << 19))
    out = np.where(t >= 0, t >> 20, -((-t) >> 20))
    return out.astype(np.int8)  # static_cast<int8_t>: the blend stays inside int8


class _Resize(OpDef):
    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shape = graph.t(node.inputs[0]).shape
        a = node.attrs
        if len(shape) != 4 or min(a.out_hw) < 1:
            raise ValueError(f"resize of {list(shape)} to {list(a.out_hw)} (needs NHWC input, output >= 1)")
        if a.convention == "onnx" and a.coord_mode not in ONNX_MODES:
            raise ValueError(f"coordinate_transformation_mode {a.coord_mode!r}")
        return [(shape[0], *a.out_hw, shape[3])]

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # int8 resize moves or blends raw values

    def _sizes(self, node: Node, graph: Graph) -> list[tuple[int, int]]:
        shape = graph.t(node.inputs[0]).shape
        return [(shape[1], node.attrs.out_hw[0]), (shape[2], node.attrs.out_hw[1])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).size, 0, c.act_read_bytes, c.act_write_bytes)


def _io_args(node: Node, graph: Graph) -> tuple[list[int], list[int]]:
    n, h, w, c = graph.t(node.inputs[0]).shape
    return [n, h, w, c], list(node.attrs.out_hw)


@register("RESIZE_NEAREST", "ResizeNearestNeighbor")
class ResizeNearest(_Resize):
    variants = (portable("resize_nearest"),)

    def _tables(self, node: Node, graph: Graph) -> list[np.ndarray]:
        return [nearest_table(node.attrs, k, i, o) for k, (i, o) in enumerate(self._sizes(node, graph))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [resize_nearest_s8(ins[0], *self._tables(node, graph)).astype(np.float32)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [resize_nearest_s8(ins[0], *self._tables(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        dims, out_hw = _io_args(node, graph)
        rows, cols = self._tables(node, graph)
        return [*map(CArg.lit, dims), CArg("act", node.inputs[0]), *map(CArg.lit, out_hw),
                CArg("array", rows, "rows"), CArg("array", cols, "cols"), CArg("act", node.outputs[0])]


@register("RESIZE_BILINEAR", "ResizeBilinear")
class ResizeBilinear(_Resize):
    variants = (portable("resize_bilinear"),)

    def _tables(self, node: Node, graph: Graph) -> list[np.ndarray]:
        return [bilinear_table(node.attrs, k, i, o) for k, (i, o) in enumerate(self._sizes(node, graph))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float64)
        (yi0, yi1, wy), (xi0, xi1, wx) = (_float_table(node.attrs, k, i, o)
                                          for k, (i, o) in enumerate(self._sizes(node, graph)))
        wy, wx = wy[None, :, None, None], wx[None, None, :, None]
        top = x[:, yi0][:, :, xi0] * (1 - wx) + x[:, yi0][:, :, xi1] * wx
        bottom = x[:, yi1][:, :, xi0] * (1 - wx) + x[:, yi1][:, :, xi1] * wx
        return [(top * (1 - wy) + bottom * wy).astype(np.float32)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [resize_bilinear_s8(ins[0], *self._tables(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        dims, out_hw = _io_args(node, graph)
        ytab, xtab = self._tables(node, graph)
        return [*map(CArg.lit, dims), CArg("act", node.inputs[0]), *map(CArg.lit, out_hw),
                CArg("array", ytab.reshape(-1), "ytab"), CArg("array", xtab.reshape(-1), "xtab"),
                CArg("act", node.outputs[0])]
