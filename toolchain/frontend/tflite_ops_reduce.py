"""TFLite converters of the reductions and the transposed convolution (TRANSPOSE_CONV, REDUCE_MAX,
SUM), registered into toolchain.frontend.tflite.CONVERTERS. Same contract as tflite.py's converters:
keyword parameters are the schema.fbs options, the file's own qparams are kept.
"""
from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import SAME, VALID, Builder, converter
from toolchain.frontend.tflite_16x8 import is_int16
from toolchain.frontend.tflite_16x8_ops import reduce16
from toolchain.ir import DType
from toolchain.ops.mean import MeanAttrs, gathering_perm
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import TransposeAttrs
from toolchain.ops.transpose_conv import TransposeConvAttrs

_INT32 = 2  # schema.fbs TensorType INT32 (TransposeConvOptions.quantized_bias_type)


def _c_div(a: int, b: int) -> int:
    """C integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def transpose_conv_pad(out_size: int, kernel: int, stride: int, padding: int) -> int:
    """TFLM's pad (top or left) of TRANSPOSE_CONV: ComputePaddingHeightWidth with the *output* size
    as the image size and dilation 1 (ComputeOutSize, then max(((out - 1) * s + k - size) / 2, 0),
    C division); only this leading pad positions the window, the end is cropped."""
    if padding == SAME:
        n = _c_div(out_size + stride - 1, stride)
    elif padding == VALID:
        n = _c_div(out_size + stride - kernel, stride)
    else:
        raise ValueError(f"padding {padding}")
    return max(_c_div((n - 1) * stride + kernel - out_size, 2), 0)


@converter("TRANSPOSE_CONV")
def transpose_conv(b: Builder, output_shape: int, weights: int, input: int, bias: int = -1, *,
                   padding: int = SAME, stride_w: int = 0, stride_h: int = 0,
                   fused_activation_function: int = 0, quantized_bias_type: int = 0) -> None:
    # TFLM ignores output_shape (input 0, often computed by SHAPE/PACK ops) and takes the output
    # tensor's dims; a constant output_shape must agree with them.
    x, w = b.act(input), b.weights(weights, 4, axis=0)
    y = b.act(b.op.outputs[0], "output")
    if quantized_bias_type not in (0, _INT32):
        raise b.unsupported(f"quantized_bias_type {quantized_bias_type} (int32 bias only)")
    shape_t = b.m.tensors[output_shape] if output_shape >= 0 else None
    if shape_t is not None and shape_t.is_const and list(np.asarray(shape_t.data).reshape(-1)) != list(y.shape):
        raise b.unsupported(f"output_shape {np.asarray(shape_t.data).tolist()} != output tensor {list(y.shape)}")
    if len(x.shape) != 4 or len(y.shape) != 4 or x.shape[3] != w.shape[3] or y.shape[3] != w.shape[0] \
            or y.shape[0] != x.shape[0]:
        raise b.unsupported(f"input {list(x.shape)}, weights {list(w.shape)}, output {list(y.shape)}")
    if min(stride_h, stride_w) < 1 or padding not in (SAME, VALID):
        raise b.unsupported(f"stride ({stride_h}, {stride_w}) / padding {padding}")
    pads = tuple(transpose_conv_pad(y.shape[1 + i], w.shape[1 + i], (stride_h, stride_w)[i], padding) for i in (0, 1))
    attrs = TransposeConvAttrs((stride_h, stride_w), pads, y.shape[1:3], b.fused(fused_activation_function))
    b.emit(OpKind.TRANSPOSE_CONV, [x, w, b.bias(bias, w.shape[0], x, w)], attrs)


def _axes(b: Builder, idx: int, rank: int) -> tuple[int, ...]:
    t = b.tensor(idx, "axis")
    if not t.is_const or t.dtype != DType.INT32:
        raise b.unsupported(f"axis {t.name!r}: needs a constant int32 tensor")
    return tuple(sorted({int(a) % rank for a in np.asarray(t.data, np.int64).reshape(-1)}))


def emit_reduction(b: Builder, kind: OpKind, x, axes: tuple[int, ...], keep: bool) -> None:
    """The reduction of x over `axes` into the operator's output; axes that are not contiguous
    are first gathered at the end by a TRANSPOSE (mean.gathering_perm; exact data movement, TFLM
    reduces any axis set), the keep_dims shape restored by a RESHAPE view."""
    perm = gathering_perm(x.shape, axes)
    if perm is None:
        b.emit(kind, [x], MeanAttrs(axes, keep))
        return
    t = b.emit(OpKind.TRANSPOSE, [x], TransposeAttrs(perm), b.fresh(f"{x.name}_gathered", x,
                                                                  tuple(x.shape[p] for p in perm)))
    tail = tuple(range(len(x.shape) - len(axes), len(x.shape)))
    if not keep:
        b.emit(kind, [t], MeanAttrs(tail, False))
        return
    y = b.act(b.op.outputs[0], "output")
    r = b.emit(kind, [t], MeanAttrs(tail, False), b.fresh(f"{y.name}_flat", y, tuple(t.shape[:len(t.shape) - len(axes)])))
    b.reshape(r, y.shape, out=y)


@converter("SUM")
def sum_(b: Builder, input: int, axis: int, *, keep_dims: bool = False) -> None:
    if is_int16(b, input):  # 16x8: contiguous axes only (tflite_16x8_ops.py)
        x = b.act(input, int16=True)
        return reduce16(b, OpKind.SUM, x, _axes(b, axis, len(x.shape)), bool(keep_dims))
    x = b.act(input)
    emit_reduction(b, OpKind.SUM, x, _axes(b, axis, len(x.shape)), bool(keep_dims))


@converter("MEAN")
def mean(b: Builder, input: int, axis: int, *, keep_dims: bool = False) -> None:
    # MEAN shares the lowering of the other reductions (non-contiguous axes included)
    if is_int16(b, input):  # 16x8: contiguous axes only (tflite_16x8_ops.py)
        x = b.act(input, int16=True)
        return reduce16(b, OpKind.MEAN, x, _axes(b, axis, len(x.shape)), bool(keep_dims))
    x = b.act(input)
    emit_reduction(b, OpKind.MEAN, x, _axes(b, axis, len(x.shape)), bool(keep_dims))


@converter("REDUCE_MAX")
def reduce_max(b: Builder, input: int, axis: int, *, keep_dims: bool = False) -> None:
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    # TFLM: equal scales required (else an error), zero points ignored (the raw max): only equal
    # qparams give the max of the real values
    if x.quant != y.quant:
        raise b.unsupported(f"REDUCE_MAX from {x.quant.s}/zp {x.quant.zp} to {y.quant.s}/zp {y.quant.zp} "
                            "(needs equal input and output quantization)")
    emit_reduction(b, OpKind.REDUCE_MAX, x, _axes(b, axis, len(x.shape)), bool(keep_dims))
