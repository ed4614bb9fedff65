"""A convolution or fully-connected layer whose weights keep a zero point, exactly on the ISA kernels
in ONE node (quantize.zero_point_split): v = w - zw (int8 w and zw, v in [-255, 254]) is
c + r with c = clip(v, -128, 127) and the residual r = v - c in [-127, 127], non-zero only where v
overflows int8 (onnxruntime's U8U8 MobileNetV2: one or two weights in a layer). With cols the input
channels where some r is non-zero,

    sum_(tap, ch) x * v = sum_(tap, ch) x * c + sum_(tap, j) x[.., cols[j]] * r[.., cols[j]]

is one convolution of the input widened by its channels cols (a Gather: x' = x[..., 0..C-1, cols])
with the symmetric int8 weights concat(c, r[..., cols]) along input channels: the same int32
accumulator as the layer with its zero point (x' repeats x's zero point, so padding still adds 0),
hence the same output in every channel, and no filter_offset nor ScatterChannels. The widened depth
is padded with zero-weight copies of cols[0] to a multiple of 8 (or 4) where C is one, the depths the
ISA 1x1 kernels take. Not here: depthwise layers (quantize.zero_point_halves).
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


def _depth_step(c: int) -> int:
    return 8 if c % 8 == 0 else 4 if c % 4 == 0 else 1


def widen_node(node: Node, tensors: dict[str, Tensor], v: np.ndarray) -> list[Node] | None:
    """[Gather, the layer on widened input and symmetric weights] computing `node` (CONV2D ungrouped
    with OHWI weights, or FULLY_CONNECTED with [O, I] weights) exactly from the weight differences
    `v` (int16, the weight layout; see the module docstring); new tensors go into `tensors`. None
    when the residuals do not fit int8 (the caller keeps another path)."""
    split = residual_split(v)
    if split is None:
        return None
    c, r = split
    x, wname = node.inputs[0], node.inputs[1]
    xt, w = tensors[x], tensors[wname]
    depth = xt.shape[-1]
    cols = [int(i) for i in np.flatnonzero(r.reshape(-1, depth).any(axis=0))]
    q = w.quant
    sym_q = QuantParams(q.scale, (0,) * len(q.scale), q.axis)
    if not cols:  # every v within [-128, 127]: the symmetric weights alone
        sym = fresh_name(tensors, f"{wname}__sym")
        tensors[sym] = Tensor(sym, c.shape, DType.INT8, sym_q, np.ascontiguousarray(c))
        return [replace(node, inputs=(x, sym, *node.inputs[2:]))]
    step = _depth_step(depth)
    pad = -(depth + len(cols)) % step
    idx = [*range(depth), *cols, *[cols[0]] * pad]
    extra = np.concatenate([np.take(r, cols, axis=-1), np.zeros((*r.shape[:-1], pad), np.int8)], axis=-1)
    data = np.ascontiguousarray(np.concatenate([c, extra], axis=-1))
    wide_w = fresh_name(tensors, f"{wname}__wide")
    tensors[wide_w] = Tensor(wide_w, data.shape, DType.INT8, sym_q, data)
    wide_x = fresh_name(tensors, f"{x}__wide")
    tensors[wide_x] = replace(xt, name=wide_x, shape=(*xt.shape[:-1], len(idx)))
    axis = len(xt.shape) - 1
    return [Node(f"{node.name}__widen", OpKind.GATHER, (x,), (wide_x,), GatherAttrs(axis, tuple(idx), (len(idx),)),
                 node.source),
            replace(node, inputs=(wide_x, wide_w, *node.inputs[2:]))]
