"""The recomputed channels of a depthwise layer in quantize.zero_point_split on the ISA kernels,
exactly: a fix channel's weight differences v = w - zw lie in [-255, 254] (int8 w and zw, zw != -128
for the upper end), so v = a + b with the halves a = floor(v / 2) in [-128, 127] and b = v - a in
[-127, 127], and

    sum x * v = sum x * a + sum x * b

is ONE convolution of the input taken twice with the symmetric int8 weights (a, b): the same int32
accumulator as the layer with its zero point, hence the same requantized output, and no
filter_offset for the ISA kernels to refuse (the input zero point is the same in both copies:
padding reads it, adding 0). The fix channels c_1..c_k become a regular convolution of the input
channels gathered as (c_1..c_k, c_1..c_k), weights [k, KH, KW, 2k] zero except a at (j, j) and b at
(j, k + j). A layer whose fix channels hold v = 255 (zw = -128,
onnxruntime's uint8 zero point 0) keeps the portable recomputation (halves returns None).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import DType, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.gather import GatherAttrs
from toolchain.ops.registry import OpKind


def halves(v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, b) int8 with a + b == v elementwise (v: integer weight differences w - zw), or None when some
    v lies outside [-256, 254], the sums of two int8 values of which the halves are exact."""
    v = np.asarray(v, np.int32)
    a = np.floor_divide(v, 2)
    b = v - a
    if a.size and (min(a.min(), b.min()) < -128 or max(a.max(), b.max()) > 127):
        return None
    return a.astype(np.int8), b.astype(np.int8)


def _sym_quant(q: QuantParams, idx: list[int], axis: int) -> QuantParams:
    """Symmetric qparams of the fix weights: the scales of channels `idx` (per-channel) along `axis`."""
    if q.is_per_channel:
        return QuantParams(tuple(q.scale[i] for i in idx), (0,) * len(idx), axis)
    return QuantParams(q.scale, (0,) * len(q.scale), q.axis)


def halves_fix_nodes(node: Node, tensors: dict[str, Tensor], v: np.ndarray, idx: list[int],
                     bias: str | None, fix_y: str) -> list[Node] | None:
    """The nodes computing output channels `idx` of `node` (DEPTHWISE_CONV2D, multiplier 1) into `fix_y`
    from the weight differences `v` (int16, [1, KH, KW, C]) with the halves scheme of the module
    docstring; new tensors go into `tensors`.
    None when the halves do not fit int8 (the caller keeps the zero-point kernel)."""
    x, wname = node.inputs[0], node.inputs[1]
    xt, w = tensors[x], tensors[wname]
    ab = halves(np.take(v, idx, axis=3))
    if ab is None:
        return None
    a, b = ab
    xx = fresh_name(tensors, f"{x}__pairs")
    k = len(idx)
    tensors[xx] = replace(xt, name=xx, shape=(*xt.shape[:-1], 2 * k))
    data = np.zeros((k, *a.shape[1:3], 2 * k), np.int8)  # [1, KH, KW, k] -> [k, KH, KW, 2k], block-diagonal
    for j in range(k):
        data[j, :, :, j], data[j, :, :, k + j] = a[0, :, :, j], b[0, :, :, j]
    first = Node(f"{node.name}__gather", OpKind.GATHER, (x,), (xx,), GatherAttrs(3, tuple(idx) * 2, (2 * k,)),
                 node.source)
    fix = Node(f"{node.name}__fix", OpKind.CONV2D, (xx,), (fix_y,), Conv2DAttrs(node.attrs.window, 1, node.attrs.act),
               node.source)
    fw = fresh_name(tensors, f"{wname}__halves")
    tensors[fw] = Tensor(fw, data.shape, DType.INT8, _sym_quant(w.quant, idx, 0), np.ascontiguousarray(data))
    return [first, replace(fix, inputs=(xx, fw) + ((bias,) if bias else ()))]
