"""The 16x8 side of the TFLite frontend: which operators take int16 activations, the checks TFLite's
16x8 quantization spec and TFLM's int16 reference kernels imply, and the int64 biases.

16x8 (TFLite post-training quantization with int16 activations and int8 weights): activations int16,
per-tensor, symmetric (zero point 0: TFLM's int16 conv, depthwise and FC kernels add no offsets, so a
non-zero zero point would be silently dropped there: refused); weights int8 symmetric; biases int64
(the int16 conv and FC kernels of TFLM accumulate in int32 with the 32-bit requantization when the
bias is int32, and the depthwise kernel reads any bias as int64: only int64 biases are taken); every
accumulator below 2^47 and every requantization shift at most 7, as TFLM's 64-bit
MultiplyByQuantizedMultiplier assumes (quant16.py). SOFTMAX, LOGISTIC and TANH: int16 in and out, the
output Q0.15 as TFLM's Prepare checks it, the input scales their int32 arithmetic takes
(activation_s16.py). Operators outside S16_OPS with an int16 tensor are refused by name (Builder.act).
Not here: the converters themselves (tflite.py, tflite_ops.py; softmax16 / sigmoid16 are their 16x8
branches; the int16 bodies of ADD / SUB / MUL, CONCATENATION, PAD and MEAN / SUM: tflite_16x8_ops.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from toolchain.ir import DType, Tensor
from toolchain.ops.activation_s16 import MAX_SOFTMAX_ROW, check_unit_output, sigmoid_s16_params, softmax_s16_params
from toolchain.ops.quant16 import ACC_LIMIT, accumulator_bound, weighted_requant_s16
from toolchain.ops.registry import OpKind

if TYPE_CHECKING:
    from toolchain.frontend.tflite import Builder

# TFLite builtin ops the frontend maps with int16 activations (the kernels of quant16.py, activation_s16.py)
S16_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "QUANTIZE", "DEQUANTIZE", "RESHAPE",
           "SUB", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D", "CONCATENATION", "PAD", "PADV2", "MEAN", "SUM",
           "SOFTMAX", "LOGISTIC", "TANH")
NOT_16X8 = f"16x8 (int16 activations) is supported for {', '.join(S16_OPS)} only"


def is_int16(b: Builder, idx: int) -> bool:
    """Whether tensor `idx` of the file is int16 (a 16x8 activation)."""
    t = b.m.tensors[idx] if idx >= 0 else None
    return t is not None and t.dtype == DType.INT16


def int16_reason(t: Tensor, role: str) -> str | None:
    """Why an int16 tensor is not a 16x8 activation (per-tensor, zero point 0), None when it is."""
    if t.quant is None or t.quant.is_per_channel or len(t.quant.scale) != 1:
        return f"{role} {t.name!r}: int16 without per-tensor quantization"
    if t.quant.zp != 0:
        return (f"{role} {t.name!r}: int16 with zero point {t.quant.zp} (the 16x8 spec and TFLM's int16 kernels "
                "take zero point 0)")
    return None


def bias64(b: Builder, idx: int, cout: int, x: Tensor, w: Tensor) -> Tensor:
    """The int64 bias [cout] of a 16x8 Conv / DepthwiseConv / FC; an absent bias becomes int64 zeros
    (TFLM adds nothing: the same result; its int16 depthwise kernel crashes without one, tflite-micro
    0.dev20261023, so there is no TFLM result to differ from)."""
    if idx < 0:
        return b.zero_bias(cout, x, w, DType.INT64)
    t = b.tensor(idx, "bias")
    if t.dtype == DType.INT32:
        raise b.unsupported(f"bias {t.name!r} of type int32 with int16 activations (TFLM then accumulates in "
                            "int32 with the 32-bit requantization; 16x8 files from the TFLite converter carry "
                            "int64 biases, the only kind supported)")
    if not t.is_const or t.dtype != DType.INT64 or t.shape != (cout,):
        raise b.unsupported(f"bias {t.name!r}: need constant int64 [{cout}] with int16 activations")
    return t


def check_weighted(b: Builder, out_axis: int, taps: int) -> None:
    """After emitting a 16x8 Conv / DepthwiseConv / FC node (the last of b.nodes): its accumulators stay
    below 2^47 (taps products of 127 x 32768 plus the bias) and its requantization shifts are at most 7,
    the ranges TFLM's 64-bit requantization is defined on."""
    from toolchain.ir import Graph

    node = b.nodes[-1]
    probe = Graph("probe", (node,), b.tensors, (), ())
    if accumulator_bound(node, probe, taps) >= ACC_LIMIT:
        raise b.unsupported(f"int16 accumulators may reach 2^47 (bias up to "
                            f"{int(np.max(np.abs(probe.t(node.inputs[2]).data)))}; TFLM's int16 kernels assume less)")
    try:
        weighted_requant_s16(node, probe, out_axis)
    except ValueError as e:
        raise b.unsupported(str(e)) from None


def _unit_activation16(b: Builder, input: int, op: str, params: Callable[[Tensor], object]) -> tuple[Tensor, Tensor]:
    """(x, y) of a 16x8 SOFTMAX / LOGISTIC / TANH: int16 in and out with zero point 0, the output Q0.15
    as TFLM's Prepare checks it (activation_s16.check_unit_output) and `params(x)` (the kernel's
    parameters from the input scale) computable; the reason is refused by name otherwise."""
    x, y = b.act(input, int16=True), b.act(b.op.outputs[0], "output", True)
    try:
        check_unit_output(y.quant.s, y.quant.zp, op, near=op == "softmax")
        params(x)
    except ValueError as e:
        raise b.unsupported(str(e)) from None
    return x, y


def softmax16(b: Builder, input: int, beta: float) -> None:
    """A 16x8 SOFTMAX (TFLM's int16 kernel: activation_s16.softmax_s16); rows of at most
    MAX_SOFTMAX_ROW entries (beyond, TFLM's int32 sum of exps may wrap)."""
    from toolchain.ops.softmax import SoftmaxAttrs

    x, y = _unit_activation16(b, input, "softmax", lambda x: softmax_s16_params(x.quant.s, beta))
    if x.shape[-1:] and x.shape[-1] > MAX_SOFTMAX_ROW:
        raise b.unsupported(f"int16 softmax rows of {x.shape[-1]} entries (TFLM's int32 sum of exps may wrap "
                            f"beyond {MAX_SOFTMAX_ROW})")
    b.emit(OpKind.SOFTMAX, [x], SoftmaxAttrs(beta), y)


def sigmoid16(b: Builder, input: int, kind: OpKind, attrs: object) -> None:
    """A 16x8 LOGISTIC or TANH (TFLM's int16 kernels: activation_s16.logistic_s16 / tanh_s16)."""
    tanh = kind == OpKind.TANH
    x, y = _unit_activation16(b, input, "tanh" if tanh else "logistic",
                              lambda x: sigmoid_s16_params(x.quant.s, tanh=tanh))
    b.emit(kind, [x], attrs, y)
