"""TFLite converters of the layout group: DEPTH_TO_SPACE, SPACE_TO_DEPTH, TRANSPOSE (constant perm)
and LOG_SOFTMAX, registered into toolchain.frontend.tflite.CONVERTERS (same contract as
tflite_ops.py: keyword parameters are the schema.fbs options, the file's own qparams are kept).

The data-movement ops copy bytes (TFLM memcpy-style kernels), so an output whose quantization
differs from the input's is refused rather than silently reinterpreted.
"""
from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import Builder, converter
from toolchain.ir import DType, Tensor
from toolchain.ops.depth_space import DepthToSpaceAttrs, SpaceToDepthAttrs
from toolchain.ops.log_softmax import LOG_SOFTMAX_OUT, LogSoftmaxAttrs, log_softmax_params
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import TransposeAttrs


def _same_quant(b: Builder, x: Tensor, y: Tensor) -> None:
    if x.quant != y.quant:
        raise b.unsupported(f"{b.op.name} from scale {x.quant.s}/zp {x.quant.zp} to {y.quant.s}/zp {y.quant.zp} "
                            "(data movement keeps the input's quantization)")


def _moved(b: Builder, input: int) -> tuple[Tensor, Tensor]:
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    _same_quant(b, x, y)
    return x, y


@converter("DEPTH_TO_SPACE")
def depth_to_space(b: Builder, input: int, *, block_size: int = 0) -> None:
    x, _ = _moved(b, input)
    b.emit(OpKind.DEPTH_TO_SPACE, [x], DepthToSpaceAttrs(int(block_size), "DCR"))


@converter("SPACE_TO_DEPTH")
def space_to_depth(b: Builder, input: int, *, block_size: int = 0) -> None:
    x, _ = _moved(b, input)
    b.emit(OpKind.SPACE_TO_DEPTH, [x], SpaceToDepthAttrs(int(block_size)))


@converter("TRANSPOSE")
def transpose(b: Builder, input: int, perm: int) -> None:
    x, _ = _moved(b, input)
    p = b.tensor(perm, "perm")
    if not p.is_const or p.dtype != DType.INT32:
        raise b.unsupported(f"perm {p.name!r}: needs a constant int32 tensor")
    rank = len(x.shape)
    axes = tuple(int(a) for a in np.asarray(p.data).reshape(-1))
    if sorted(a % rank if -rank <= a < rank else a for a in axes) != list(range(rank)):
        raise b.unsupported(f"perm {list(axes)} for rank {rank}")
    if rank > 4:
        raise b.unsupported(f"TRANSPOSE of rank {rank} (at most 4)")
    b.emit(OpKind.TRANSPOSE, [x], TransposeAttrs(tuple(a % rank for a in axes)))


@converter("LOG_SOFTMAX")
def log_softmax(b: Builder, input: int) -> None:
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    # TFLM LogSoftmaxPrepare: int8 output exactly scale 16/256, zero point 127
    if y.quant.zp != LOG_SOFTMAX_OUT.zp or np.float32(y.quant.s) != np.float32(LOG_SOFTMAX_OUT.s):
        raise b.unsupported(f"log_softmax output quantization {y.quant.s}/zp {y.quant.zp} (needs 16/256, 127)")
    try:
        log_softmax_params(x.quant.s)
    except ValueError as e:
        raise b.unsupported(f"log_softmax parameters: {e}") from None
    b.emit(OpKind.LOG_SOFTMAX, [x], LogSoftmaxAttrs())
