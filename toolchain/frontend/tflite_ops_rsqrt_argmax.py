"""TFLite converters of the "rsqrt_argmax" group: RSQRT (ops/rsqrt.py), ARG_MAX (ops/arg_max.py). Same contract as
toolchain/frontend/tflite.py: keyword parameters are the schema.fbs options.
"""
from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import Builder, converter
from toolchain.ir import DType
from toolchain.ops.arg_max import ArgMaxAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.rsqrt import RsqrtAttrs

S_INT32 = 2  # schema.fbs TensorType.INT32


@converter("RSQRT")
def rsqrt(b: Builder, input: int) -> None:
    b.emit(OpKind.RSQRT, [b.act(input)], RsqrtAttrs())


@converter("ARG_MAX")
def arg_max(b: Builder, input: int, dim: int, *, output_type: int | None = None) -> None:
    """int8 input, constant int32 axis, int32 output (TFLM reads the output tensor's type; an INT64
    output tensor is refused: int32 indices only). output_type, when given, must agree."""
    x = b.act(input)
    axis_t = b.tensor(dim, "axis")
    if not axis_t.is_const or axis_t.dtype != DType.INT32 or axis_t.size != 1:
        raise b.unsupported(f"ARG_MAX axis {axis_t.name!r}: needs a constant int32 scalar")
    axis = int(np.asarray(axis_t.data).reshape(-1)[0])
    if not -len(x.shape) <= axis < len(x.shape):
        raise b.unsupported(f"ARG_MAX axis {axis} of a rank-{len(x.shape)} input")
    out = b.tensor(b.op.outputs[0], "output")
    if output_type not in (None, S_INT32) or out.dtype != DType.INT32 or out.is_const:
        raise b.unsupported("ARG_MAX with an int64 output (int32 indices only)")
    b.emit(OpKind.ARG_MAX, [x], ArgMaxAttrs(axis % len(x.shape)), out=out)
