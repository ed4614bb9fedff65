"""ONNX converters of the data-movement ops Slice (opset 10+: starts/ends/axes/steps initializers),
Split (split input opset 13+, split attribute opset 11, num_outputs opset 18) and Gather (initializer
indices), onto the IR's SLICE and GATHER; registered into toolchain.frontend.onnx.CONVERTERS.

Layout: a 4-D NHWC activation stays NHWC (axes mapped NCHW -> NHWC), except a Gather whose scalar
index drops an axis (it works in ONNX order). Nodes on constants are evaluated here (exporters'
shape arithmetic). Squeeze/Unsqueeze are Reshape views (toolchain/frontend/onnx.py).
"""
from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import Builder, Val
from toolchain.ops.gather import GatherAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.slice import SliceAttrs, slice_count

NCHW_TO_NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}


def _layout(b: Builder, data: str) -> tuple[str, bool]:
    """(IR tensor, is it NHWC) of an activation, as stored."""
    return (b.nhwc(data), True) if b.is_nhwc(data) else (b.onnx_order(data), False)


def _ir_axis(ax: int, nhwc: bool) -> int:
    return NCHW_TO_NHWC_AXIS[ax] if nhwc else ax


def _emit_slice(b: Builder, x: str, nhwc: bool, bounds: dict[int, tuple[int, int, int]], out: str | None) -> None:
    """A SLICE of IR tensor x; bounds: ONNX axis -> (start, step, count). out: the ONNX value it
    defines (None: the node's first output)."""
    shape = b.shape(x)
    begin, step, size = [0] * len(shape), [1] * len(shape), list(shape)
    for ax, (s, p, n) in bounds.items():
        k = _ir_axis(ax, nhwc)
        begin[k], step[k], size[k] = s, p, n
    if min(size) < 1:
        raise b.unsupported(f"empty slice (size {size})")
    y = b.emit(OpKind.SLICE, [x], SliceAttrs(tuple(begin), tuple(step), tuple(size)), nhwc=nhwc,
               intermediate=out is not None)
    if out is not None:
        b.vals[out] = Val(y, nhwc)


def onnx_slice_bounds(d: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """(start, step, count) of ONNX Slice-13 on an axis of size d (negative indices, clamping)."""
    if step == 0:
        raise ValueError("step 0")
    start = start + d if start < 0 else start
    end = end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
    else:
        start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return start, step, slice_count(start, end, step)


@converter("Slice")
def slice_(b: Builder, data, starts, ends, axes=None, steps=None):
    shape = tuple(b.const(data, "data").shape) if b.is_const(data) else b.onnx_shape(data)
    st, en = b.ints(starts, "starts"), b.ints(ends, "ends")
    ax = b.ints(axes, "axes") if axes else list(range(len(st)))
    sp = b.ints(steps, "steps") if steps else [1] * len(st)
    if not len(st) == len(en) == len(ax) == len(sp):
        raise b.invalid(f"starts/ends/axes/steps {st}/{en}/{ax}/{sp} of different lengths")
    ax = b.axes(ax, len(shape))
    if 0 in sp:
        raise b.invalid(f"step 0 in steps {sp}")
    bounds = {a: onnx_slice_bounds(shape[a], s, e, p) for a, s, e, p in zip(ax, st, en, sp, strict=True)}
    if b.is_const(data):  # shape arithmetic of the exporter: evaluate now
        idx = tuple(slice(s, s + p * n if s + p * n >= 0 else None, p) if n else slice(0, 0)
                    for s, p, n in (bounds.get(k, (0, 1, d)) for k, d in enumerate(shape)))
        b.consts[b.node.output[0]] = np.asarray(b.const(data, "data"))[idx]
        return
    x, nhwc = _layout(b, data)
    _emit_slice(b, x, nhwc, bounds, None)


@converter("Split")
def split(b: Builder, input, split_input=None, *, axis=0, split=None, num_outputs=None):  # noqa: A002
    shape = b.onnx_shape(input)
    r = len(shape)
    b.axis(axis, r)
    ax, n_out = axis % r, len(b.node.output)
    d = shape[ax]
    if split_input:
        sizes = b.ints(split_input, "split")
    elif split is not None:
        sizes = [int(v) for v in split]
    elif num_outputs is not None:  # Split-18: ceil(d / n) each, the last one smaller
        if num_outputs != n_out:
            raise b.unsupported(f"num_outputs {num_outputs} with {n_out} outputs")
        part = -(-d // num_outputs)
        sizes = [min(part, d - k * part) for k in range(num_outputs)]
    else:
        if d % n_out:
            raise b.unsupported(f"equal split of {d} into {n_out} outputs")
        sizes = [d // n_out] * n_out
    if len(sizes) != n_out or sum(sizes) != d or min(sizes) < 0:  # ONNX Split: sizes sum to the axis
        raise b.invalid(f"split sizes {sizes} of {d} into {n_out} outputs")
    if min(sizes) < 1:
        raise b.unsupported(f"split sizes {sizes} of {d} into {n_out} outputs (empty parts are not supported)")
    x, nhwc = _layout(b, input)
    start = 0
    for out, n in zip(b.node.output, sizes, strict=True):
        if out:
            _emit_slice(b, x, nhwc, {ax: (start, 1, n)}, out)
        start += n


@converter("Gather")
def gather(b: Builder, data, indices, *, axis=0):
    shape = tuple(b.const(data, "data").shape) if b.is_const(data) else b.onnx_shape(data)
    r = len(shape)
    b.axis(axis, r)
    ax = axis % r
    idx = np.asarray(b.const(indices, "indices"), np.int64)
    if np.any(idx < -shape[ax]) or np.any(idx >= shape[ax]):
        raise b.unsupported(f"indices {idx.reshape(-1).tolist()} outside [-{shape[ax]}, {shape[ax]})")
    idx = np.where(idx < 0, idx + shape[ax], idx)
    if b.is_const(data):  # shape arithmetic of the exporter: evaluate now
        b.consts[b.node.output[0]] = np.take(b.const(data, "data"), idx, axis=ax)
        return
    if idx.size == 0:
        raise b.unsupported("Gather with no indices")
    nhwc = b.is_nhwc(data) and idx.ndim == 1
    x = b.nhwc(data) if nhwc else b.onnx_order(data)
    attrs = GatherAttrs(_ir_axis(ax, nhwc), tuple(int(i) for i in idx.reshape(-1)), tuple(idx.shape))
    b.emit(OpKind.GATHER, [x], attrs, nhwc=nhwc)
