"""ONNX converters of the reductions and the transposed convolution (ReduceSum, ReduceMax,
GlobalMaxPool, ConvTranspose), registered into toolchain.frontend.onnx.CONVERTERS. Same contract as
onnx_ops.py: keyword parameters are the ONNX attribute names with the spec defaults (opsets 11-21
merged); axes come from the attribute (< opset 13 for ReduceSum, < 18 for ReduceMax) or the input.
"""
from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx import converter, spatial_attrs
from toolchain.frontend.onnx_builder import Builder
from toolchain.frontend.onnx_ops import NCHW_TO_NHWC_AXIS
from toolchain.ops.common import NO_ACT
from toolchain.ops.mean import MeanAttrs, gathering_perm
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import ReshapeAttrs
from toolchain.ops.transpose_conv import TransposeConvAttrs


def emit_reduction(b: Builder, kind: OpKind, x: str, axes: tuple[int, ...], keep: bool, nhwc: bool = False) -> str:
    """The reduction of IR tensor x over IR `axes` (after the layout mapping); axes that are not
    contiguous there are first gathered at the end by a Transpose (mean.gathering_perm), the
    keepdims shape restored by a Reshape view."""
    shape = b.tensors[x].shape
    perm = gathering_perm(shape, axes)
    if perm is None:
        return b.emit(kind, [x], MeanAttrs(axes, keep), nhwc=nhwc)
    tail = tuple(range(len(shape) - len(axes), len(shape)))
    t = b.transpose_to(x, perm)
    if not keep:
        return b.emit(kind, [t], MeanAttrs(tail, False), nhwc=nhwc)
    y = b.emit(kind, [t], MeanAttrs(tail, False), intermediate=True)
    kept_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return b.emit(OpKind.RESHAPE, [y], ReshapeAttrs(kept_shape), nhwc=nhwc)


def _reduce(b: Builder, kind: OpKind, data, axes_input, axes, keepdims, noop_with_empty_axes):
    """onnx_ops.reduce_mean's layout rules for every reduction kind; non-contiguous IR axes are
    gathered first (emit_reduction)."""
    shape = b.onnx_shape(data)
    ax = b.ints(axes_input, "axes") if axes_input else list(axes or [])
    if not ax:
        if noop_with_empty_axes:
            return b.alias(data)
        ax = list(range(len(shape)))
    ax = sorted({b.axis(a, len(shape), "axes") for a in ax})
    if b.is_nhwc(data):
        mapped = tuple(sorted(NCHW_TO_NHWC_AXIS[a] for a in ax))
        if keepdims:
            return emit_reduction(b, kind, b.nhwc(data), mapped, True, nhwc=True)
        # without keepdims the NHWC result is in ONNX order when the kept axes keep their order
        if [a for a in (0, 2, 3, 1) if a not in ax] == [a for a in range(4) if a not in ax]:
            return emit_reduction(b, kind, b.nhwc(data), mapped, False)
    return emit_reduction(b, kind, b.onnx_order(data), tuple(ax), bool(keepdims))


@converter("ReduceMean")
def reduce_mean(b: Builder, data, axes_input=None, *, axes=None, keepdims=1, noop_with_empty_axes=0):
    # MEAN shares the lowering of the other reductions (non-contiguous axes included)
    return _reduce(b, OpKind.MEAN, data, axes_input, axes, keepdims, noop_with_empty_axes)


@converter("ReduceSum")
def reduce_sum(b: Builder, data, axes_input=None, *, axes=None, keepdims=1, noop_with_empty_axes=0):
    return _reduce(b, OpKind.SUM, data, axes_input, axes, keepdims, noop_with_empty_axes)


@converter("ReduceMax")
def reduce_max(b: Builder, data, axes_input=None, *, axes=None, keepdims=1, noop_with_empty_axes=0):
    return _reduce(b, OpKind.REDUCE_MAX, data, axes_input, axes, keepdims, noop_with_empty_axes)


@converter("GlobalMaxPool")
def global_max_pool(b: Builder, X):
    # REDUCE_MAX over H, W: one pass over [N][H*W][C] (a MaxPool2D with a full window is the same
    # max, through the generic window loops)
    if len(b.onnx_shape(X)) != 4:
        raise b.unsupported(f"GlobalMaxPool of rank {len(b.onnx_shape(X))} (4-D only)")
    return b.emit(OpKind.REDUCE_MAX, [b.nhwc(X)], MeanAttrs((1, 2), True), nhwc=True)


def conv_transpose_geometry(in_hw, kernel, strides, pads, output_padding, output_shape, auto_pad):
    """ONNX ConvTranspose (dilation 1) -> ((pad_top, pad_left), (out_h, out_w)): out = s * (in - 1)
    + output_padding + k - pad_begin - pad_end; with output_shape (or auto_pad SAME_*: out = in * s)
    the total padding is split as the spec says (SAME_UPPER: the smaller half first; else: the
    larger half first); VALID pads nothing. ValueError for a negative pad."""
    begin, out = [], []
    for i in range(2):
        full = strides[i] * (in_hw[i] - 1) + output_padding[i] + kernel[i]
        if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            size = output_shape[i] if output_shape is not None else in_hw[i] * strides[i]
            total = full - size
            first = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        else:
            p0, p1 = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + 2])
            first, size = p0, full - p0 - p1
        if first < 0 or size < 1:
            raise ValueError(f"axis {i}: pad {first}, output size {size}")
        begin.append(first)
        out.append(size)
    return tuple(begin), tuple(out)


@converter("ConvTranspose")
def conv_transpose(b: Builder, X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
                   output_padding=None, output_shape=None, pads=None, strides=None):
    w = b.const(W, "weights")  # [Cin, Cout / group, KH, KW]
    if w.ndim != 4:
        raise b.unsupported(f"only 2-D ConvTranspose is supported (weights of rank {w.ndim})")
    a = spatial_attrs(b, 2, kernel_shape=kernel_shape, strides=strides, dilations=dilations, pads=pads,
                      output_padding=output_padding)
    if a["kernel_shape"] is not None and a["kernel_shape"] != w.shape[2:]:
        raise b.invalid(f"kernel_shape {list(kernel_shape)} for weights of shape {list(w.shape)}")
    if group < 1:
        raise b.invalid(f"group {group} (ONNX: at least 1)")
    if group != 1:
        raise b.unsupported(f"ConvTranspose group {group} (group 1 only)")
    if a["dilations"] not in (None, (1, 1)):
        raise b.unsupported(f"ConvTranspose dilations {list(dilations)} (1 only)")
    x = b.nhwc(X)
    n, h, wd, cin = b.shape(x)
    if cin != w.shape[0]:
        raise b.invalid(f"input channels {cin} for weights of shape {list(w.shape)} "
                        "(ONNX: W is [C, M / group, kH, kW])")
    strides = a["strides"] or (1, 1)
    pads, output_padding = a["pads"], a["output_padding"]
    if output_shape is not None:
        output_shape = tuple(int(s) for s in output_shape)[-2:]
    try:
        pad, out_hw = conv_transpose_geometry((h, wd), w.shape[2:], strides, tuple(pads or (0, 0, 0, 0)),
                                              tuple(output_padding or (0, 0)), output_shape, auto_pad)
    except ValueError as e:
        raise b.unsupported(f"ConvTranspose geometry: {e}") from None
    bias = b.const(B, "bias") if B else np.zeros(w.shape[1], np.float32)
    args = [x, b.add_const("w", np.ascontiguousarray(w.transpose(1, 2, 3, 0))), b.add_const("b", bias)]
    return b.emit(OpKind.TRANSPOSE_CONV, args, TransposeConvAttrs(strides, pad, out_hw, NO_ACT), nhwc=True)
