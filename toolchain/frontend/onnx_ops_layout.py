"""ONNX converters of the layout group: DepthToSpace-13 (DCR, CRD), SpaceToDepth-13, Upsample-7/9
(nearest, linear), Softmax-13 over any axis and LogSoftmax-13, registered into
toolchain.frontend.onnx.CONVERTERS.

Layout: ONNX is NCHW, the IR keeps 4-D activations NHWC. The NCHW channel index is the NHWC
channel index, so DepthToSpace / SpaceToDepth run on the NHWC tensor as they are; Softmax over
ONNX axis 1 of a 4-D value is the NHWC last axis (no transpose).
"""
from __future__ import annotations

import math

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import Builder
from toolchain.ops.depth_space import DepthToSpaceAttrs, SpaceToDepthAttrs
from toolchain.ops.log_softmax import LogSoftmaxAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.resize import ResizeAttrs
from toolchain.ops.shape_ops import ReshapeAttrs, TransposeAttrs
from toolchain.ops.softmax import SoftmaxAttrs


@converter("DepthToSpace")
def depth_to_space(b: Builder, input, *, blocksize=None, mode="DCR"):  # noqa: A002
    if mode not in ("DCR", "CRD"):
        raise b.unsupported(f"DepthToSpace mode {mode!r} (DCR or CRD)")
    if blocksize is None or blocksize < 1:
        raise b.invalid(f"blocksize {blocksize} (required, at least 1)")
    if len(b.onnx_shape(input)) != 4:
        raise b.unsupported("DepthToSpace on a non-4-D input")
    return b.emit(OpKind.DEPTH_TO_SPACE, [b.nhwc(input)], DepthToSpaceAttrs(int(blocksize), mode), nhwc=True)


@converter("SpaceToDepth")
def space_to_depth(b: Builder, input, *, blocksize=None, mode="DCR"):  # noqa: A002
    if mode != "DCR":  # newer ONNX SpaceToDepth takes a mode; only DCR (the opset 13 order) here
        raise b.unsupported(f"SpaceToDepth mode {mode!r} (DCR only)")
    if blocksize is None or blocksize < 1:
        raise b.invalid(f"blocksize {blocksize} (required, at least 1)")
    if len(b.onnx_shape(input)) != 4:
        raise b.unsupported("SpaceToDepth on a non-4-D input")
    return b.emit(OpKind.SPACE_TO_DEPTH, [b.nhwc(input)], SpaceToDepthAttrs(int(blocksize)), nhwc=True)


# ---- Softmax / LogSoftmax over any axis ---------------------------------------------------------
def _softmax_like(b: Builder, kind: OpKind, attrs, input, axis):  # noqa: A002
    """The op over ONNX axis `axis` of `input`: Softmax-13 / LogSoftmax-13 take one axis (default
    -1); opset < 13 coerces to 2-D at `axis` (default 1). The IR op works on the last axis, so:
    the last ONNX axis runs in ONNX order; axis 1 of a 4-D value is the NHWC last axis (no
    transpose); any other axis is moved last by a transpose and back."""
    shape = b.onnx_shape(input)
    rank = len(shape)
    ax = b.axis(axis if axis is not None else (-1 if b.opset >= 13 else 1), rank)
    if b.opset < 13 and ax != rank - 1:  # Softmax-11: over the flattened axes [ax:]
        x = b.onnx_order(input)
        rows = int(np.prod(shape[:ax], dtype=np.int64))
        x = b.reshape_to(x, (rows, int(np.prod(shape[ax:], dtype=np.int64))))
        y = b.emit(kind, [x], attrs, intermediate=True)
        return b.emit(OpKind.RESHAPE, [y], ReshapeAttrs(tuple(shape)))
    if ax == rank - 1:
        return b.emit(kind, [b.onnx_order(input)], attrs)
    if rank == 4 and ax == 1:
        return b.emit(kind, [b.nhwc(input)], attrs, nhwc=True)
    if rank > 4:
        raise b.unsupported(f"{b.op_type} over axis {ax} of rank {rank} (an inner axis needs a transpose, rank <= 4)")
    perm = tuple(a for a in range(rank) if a != ax) + (ax,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    x = b.transpose_to(b.onnx_order(input), perm)
    y = b.emit(kind, [x], attrs, intermediate=True)
    return b.emit(OpKind.TRANSPOSE, [y], TransposeAttrs(inverse))


@converter("Softmax")
def softmax(b: Builder, input, *, axis=None):  # noqa: A002
    return _softmax_like(b, OpKind.SOFTMAX, SoftmaxAttrs(1.0), input, axis)


@converter("LogSoftmax")
def log_softmax(b: Builder, input, *, axis=None):  # noqa: A002
    return _softmax_like(b, OpKind.LOG_SOFTMAX, LogSoftmaxAttrs(), input, axis)


# ---- Upsample-7/9 -> Resize (asymmetric coordinates, nearest rounds down) ---------------------
@converter("Upsample")
def upsample(b: Builder, X, scales_input=None, *, mode="nearest", scales=None):
    """Upsample-7 (scales attribute) / Upsample-9 (scales input): output size floor(d * scale),
    source coordinate x_out / scale (asymmetric); nearest takes floor, linear blends (onnxruntime
    runs Upsample as Resize with these conventions)."""
    shape = b.onnx_shape(X)
    if mode not in ("nearest", "linear"):
        raise b.unsupported(f"Upsample mode {mode!r} (nearest or linear)")
    if scales_input:
        sc = [float(v) for v in b.const(scales_input, "scales").reshape(-1)]
    elif scales is not None:
        sc = [float(v) for v in scales]
    else:
        raise b.unsupported("Upsample without scales")
    if not all(0 < v < math.inf for v in sc):
        raise b.invalid(f"scales {sc} (ONNX: finite and positive)")
    if len(shape) != 4 or len(sc) != 4:
        raise b.unsupported(f"Upsample of rank {len(shape)} (4-D NCHW only)")
    if sc[0] != 1.0 or sc[1] != 1.0 or min(sc) < 1.0:
        raise b.unsupported(f"Upsample scales {sc} (batch and channel 1, spatial >= 1)")
    out_hw = (math.floor(shape[2] * sc[2]), math.floor(shape[3] * sc[3]))
    attrs = ResizeAttrs(out_hw, "onnx", coord_mode="asymmetric", nearest_mode="floor", scale=(sc[2], sc[3]))
    kind = OpKind.RESIZE_NEAREST if mode == "nearest" else OpKind.RESIZE_BILINEAR
    return b.emit(kind, [b.nhwc(X)], attrs, nhwc=True)
