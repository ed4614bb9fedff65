"""A convolution or fully-connected layer whose weights keep a zero point, exactly on the ISA kernels
(quantize.zero_point_split): v = w - zw (int8 w and zw, v in [-255, 254]) is c + r with
c = clip(v, -128, 127) and the residual r = v - c in [-127, 127], non-zero only where v overflows
int8 (onnxruntime's U8U8 MobileNetV2: one or two weights in a layer). With cols the input channels
where some r is non-zero,

    sum_(tap, ch) x * v = sum_(tap, ch) x * c + sum_(tap, j) x[.., cols[j]] * r[.., cols[j]]

is one convolution of the input widened by a few channels covering cols (a Gather:
x' = x[..., 0..C-1, extra]) with the symmetric int8 weights concat(c, r[..., extra]) along input
channels: the same int32 accumulator as the layer with its zero point (x' repeats x's zero point,
so padding still adds 0), hence the same output, with no filter_offset. The extra channels are one
contiguous window where it is short (one copy per pixel), padded with zero-weight channels so the
widened depth stays a multiple of 4 (8 from 32 channels) where C is one: the depths the ISA 1x1
kernels take. Either the whole layer runs widened (`widen_node`: one node, no scatter; few output
channels) or only its overflowing output channels do (`widen_fix_nodes`, put back by the caller's
ScatterChannels; many output channels, where widening every one would cost more). Not here:
depthwise layers (quantize.zero_point_halves).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import DType, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.gather import GatherAttrs
from toolchain.ops.registry import OpKind


def residual_split(v: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(c, r) int8 with c + r == v elementwise, c = clip(v, -128, 127); None when some r leaves int8
    (v = 255: onnxruntime's uint8 zero point 0 with a weight of 255)."""
    v = np.asarray(v, np.int32)
    c = np.clip(v, -128, 127)
    r = v - c
    if r.size and (r.min() < -128 or r.max() > 127):
        return None
    return c.astype(np.int8), r.astype(np.int8)


def extra_channels(cols: list[int], depth: int) -> list[int]:
    """Input channels appended to a depth-`depth` input to carry the residuals of channels `cols`
    (sorted, non-empty): a contiguous window covering them when that is no longer than cols plus
    padding, else cols and a contiguous padding window; the widened depth a multiple of 8 (depth a
    multiple of 8, at least 32) or of 4 (depth a multiple of 4), or anything otherwise."""
    step = 8 if depth % 8 == 0 and depth >= 32 else 4 if depth % 4 == 0 else 1
    padded = len(cols) + -(depth + len(cols)) % step
    width = cols[-1] - cols[0] + 1
    width += -(depth + width) % step
    if width <= max(padded, step) and width <= depth:
        lo = min(cols[0], depth - width)
        return list(range(lo, lo + width))
    pad = padded - len(cols)
    return [*cols, *range(min(pad, depth)), *[0] * max(pad - depth, 0)]


def _widened(node: Node, tensors: dict[str, Tensor], c: np.ndarray, r: np.ndarray, out_idx: list[int] | None,
             suffix: str) -> tuple[Node, str, str]:
    """(Gather node, widened input name, widened weight name) for output channels `out_idx` (all: None)."""
    x, wname = node.inputs[0], node.inputs[1]
    xt, q = tensors[x], tensors[wname].quant
    depth = xt.shape[-1]
    cols = [int(i) for i in np.flatnonzero(r.reshape(-1, depth).any(axis=0))]
    extra = extra_channels(cols, depth)
    # each residual once: the padding may repeat a channel of cols (its copy carries zero weights)
    carry = [ch in cols and ch not in extra[:j] for j, ch in enumerate(extra)]
    wide = np.concatenate([c, np.where(carry, np.take(r, extra, axis=-1), 0)], axis=-1)
    if out_idx is not None:
        wide = np.take(wide, out_idx, axis=0)
        q = QuantParams(tuple(q.scale[i] for i in out_idx), (0,) * len(out_idx), 0) if q.is_per_channel else q
    sym_q = QuantParams(q.scale, (0,) * len(q.scale), q.axis)
    wide_w = fresh_name(tensors, f"{wname}__{suffix}")
    tensors[wide_w] = Tensor(wide_w, wide.shape, DType.INT8, sym_q, np.ascontiguousarray(wide.astype(np.int8)))
    wide_x = fresh_name(tensors, f"{x}__wide")
    idx = (*range(depth), *extra)
    tensors[wide_x] = replace(xt, name=wide_x, shape=(*xt.shape[:-1], len(idx)))
    gather = Node(f"{node.name}__widen", OpKind.GATHER, (x,), (wide_x,),
                  GatherAttrs(len(xt.shape) - 1, idx, (len(idx),)), node.source)
    return gather, wide_x, wide_w


def widen_node(node: Node, tensors: dict[str, Tensor], v: np.ndarray, n_fix: int) -> list[Node] | None:
    """[Gather, the layer on widened input and symmetric weights] computing `node` (CONV2D ungrouped
    with OHWI weights, or FULLY_CONNECTED with [O, I] weights) exactly from the weight differences
    `v` (int16, the weight layout; module docstring), or [the layer on symmetric weights] when no
    weight overflows; new tensors go into `tensors`. None when the residuals do not fit int8, or when
    widening all output channels would cost more than recomputing the `n_fix` overflowing ones
    (widen_fix_nodes): multiply-accumulates O * extra against n_fix * (C + extra) plus 4C + 16 for
    the second pass's scatter and per-pixel overhead (measured on the M4 and M55 kernels)."""
    split = residual_split(v)
    if split is None:
        return None
    c, r = split
    depth = tensors[node.inputs[0]].shape[-1]
    cols = [int(i) for i in np.flatnonzero(r.reshape(-1, depth).any(axis=0))]
    if not cols:  # every v within [-128, 127]: the symmetric weights alone
        q = tensors[node.inputs[1]].quant
        sym = fresh_name(tensors, f"{node.inputs[1]}__sym")
        tensors[sym] = Tensor(sym, c.shape, DType.INT8, QuantParams(q.scale, (0,) * len(q.scale), q.axis),
                              np.ascontiguousarray(c))
        return [replace(node, inputs=(node.inputs[0], sym, *node.inputs[2:]))]
    m = len(extra_channels(cols, depth))
    if c.shape[0] * m > n_fix * (depth + m) + 4 * depth + 16:
        return None
    gather, wide_x, wide_w = _widened(node, tensors, c, r, None, "wide")
    return [gather, replace(node, inputs=(wide_x, wide_w, *node.inputs[2:]))]


def widen_fix_nodes(node: Node, tensors: dict[str, Tensor], v: np.ndarray, idx: list[int], bias: str | None,
                    fix_y: str) -> list[Node] | None:
    """[Gather, the layer's output channels `idx` on widened input] into `fix_y` (CONV2D ungrouped or
    FULLY_CONNECTED; `bias`: the bias of those channels), or None when the residuals do not fit int8."""
    split = residual_split(v)
    if split is None:
        return None
    gather, wide_x, wide_w = _widened(node, tensors, *split, idx, "fixwide")
    return [gather, replace(node, name=f"{node.name}__fix", inputs=(wide_x, wide_w) + ((bias,) if bias else ()),
                            outputs=(fix_y,))]
