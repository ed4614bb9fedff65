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

Where the layer has stride_w 1, no vertical dilation and k in 1, 2, 4 or 8, the fix channels run
instead as a DEPTHWISE layer over their input rows taken twice (`rows_fix_nodes`): x' [N, 2H, W, k]
with x'[2h + s, w] = x[h, w, (c_1..c_k)] (s = 0, 1; two gathers: the channels, then each row twice)
and the window [2KH, KW], stride (2 sh, sw), pads (2 pt, pl, 2 pb, pr), weight row 2u = a[u], row
2u + 1 = b[u]: output row y reads x' rows 2(y sh - pt) .. + 2KH - 1, i.e. every x row of the
original window twice (padding rows twice too, holding the zero point: still 0), so the same int32
sum x * a + x * b, the same output. The depthwise kernels then pack 16 / k neighbouring pixels per
vector (Helium), where the regular convolution of the halves paid its im2col per pixel (measured on
the Cortex-M55: 315 k instructions for one channel of a 48x48 layer).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import DType, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.common import Window
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


def _layer_halves(node: Node, tensors: dict[str, Tensor], v: np.ndarray, idx: list[int]):
    """(input name, input tensor, weight name, weight tensor, half a, half b) of channels `idx`, or
    None when the halves of `v` do not fit int8."""
    x, wname = node.inputs[0], node.inputs[1]
    ab = halves(np.take(v, idx, axis=3))
    return None if ab is None else (x, tensors[x], wname, tensors[wname], *ab)


def halves_fix_nodes(node: Node, tensors: dict[str, Tensor], v: np.ndarray, idx: list[int],
                     bias: str | None, fix_y: str) -> list[Node] | None:
    """The nodes computing output channels `idx` of `node` (DEPTHWISE_CONV2D, multiplier 1) into `fix_y`
    from the weight differences `v` (int16, [1, KH, KW, C]) with the halves scheme of the module
    docstring; new tensors go into `tensors`.
    None when the halves do not fit int8 (the caller keeps the zero-point kernel)."""
    got = _layer_halves(node, tensors, v, idx)
    if got is None:
        return None
    x, xt, wname, w, a, b = got
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


def rows_fix_nodes(node: Node, tensors: dict[str, Tensor], v: np.ndarray, idx: list[int],
                   bias: str | None, fix_y: str) -> list[Node] | None:
    """The nodes computing output channels `idx` of `node` (DEPTHWISE_CONV2D, multiplier 1, NHWC input)
    into `fix_y` as a depthwise layer over the input rows taken twice (module docstring), or None where
    that form does not apply (stride_w != 1, vertical dilation, ceil mode, k not 1, 2, 4 or 8) or the
    halves do not fit int8."""
    win, k = node.attrs.window, len(idx)
    if win.stride[1] != 1 or win.dilation[0] != 1 or win.ceil_mode or k not in (1, 2, 4, 8):
        return None
    got = _layer_halves(node, tensors, v, idx)
    if got is None:
        return None
    x, xt, wname, w, a, b = got
    n, h, wd = xt.shape[:3]
    xk = fresh_name(tensors, f"{x}__fixch")
    tensors[xk] = replace(xt, name=xk, shape=(n, h, wd, k))
    xx = fresh_name(tensors, f"{x}__rows")
    tensors[xx] = replace(xt, name=xx, shape=(n, 2 * h, wd, k))
    data = np.zeros((1, 2 * a.shape[1], a.shape[2], k), np.int8)  # [1, KH, KW, k] twice, rows interleaved
    data[:, 0::2], data[:, 1::2] = a, b
    fw = fresh_name(tensors, f"{wname}__rows")
    tensors[fw] = Tensor(fw, data.shape, DType.INT8, _sym_quant(w.quant, idx, 3), np.ascontiguousarray(data))
    pt, pl, pb, pr = win.pads
    rows = Window((2 * win.kernel[0], win.kernel[1]), (2 * win.stride[0], 1), win.dilation, (2 * pt, pl, 2 * pb, pr))
    return [Node(f"{node.name}__fixch", OpKind.GATHER, (x,), (xk,), GatherAttrs(3, tuple(idx), (k,)), node.source),
            Node(f"{node.name}__rows", OpKind.GATHER, (xk,), (xx,),
                 GatherAttrs(1, tuple(i // 2 for i in range(2 * h)), (2 * h,)), node.source),
            replace(node, name=f"{node.name}__fix", inputs=(xx, fw) + ((bias,) if bias else ()), outputs=(fix_y,),
                    attrs=replace(node.attrs, window=rows))]
