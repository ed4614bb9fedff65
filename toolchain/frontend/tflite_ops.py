"""TFLite converters of the element-wise, data-movement, activation and type-edge ops (SUB, MUL,
CONCATENATION, PAD/PADV2, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, PRELU, RESIZE_*,
QUANTIZE, DEQUANTIZE, SQUARED_DIFFERENCE), registered into toolchain.frontend.tflite.CONVERTERS. Same
contract as the
converters there: keyword parameters are the schema.fbs options, the file's own qparams are kept.
"""
from __future__ import annotations


import numpy as np

from toolchain.frontend.tflite import Builder, converter
from toolchain.frontend.tflite_16x8 import is_int16, sigmoid16
from toolchain.frontend.tflite_16x8_ops import binary16, concat16, pad16
from toolchain.ir import DType
from toolchain.ops.binary import BinaryAttrs
from toolchain.ops.concat import ConcatAttrs
from toolchain.ops.hard_swish import HardSwishAttrs, hard_swish_params
from toolchain.ops.leaky_relu import LeakyReluAttrs
from toolchain.ops.logistic import LogisticAttrs
from toolchain.ops.pad import PadAttrs
from toolchain.ops.prelu import PReluAttrs
from toolchain.ops.quantize_ops import QuantizeAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.resize import ResizeAttrs
from toolchain.ops.squared_difference import SquaredDifferenceAttrs
from toolchain.ops.tanh import TanhAttrs


# ---- converters added with issue 4: element-wise, data movement, activations, type edges ----
def _binary(b: Builder, kind: OpKind, input1: int, input2: int, act: int) -> None:
    if is_int16(b, input1):  # 16x8 (tflite_16x8_ops.py)
        return binary16(b, kind, input1, input2, act)
    x1, x2 = b.operand(input1, "input1"), b.operand(input2, "input2")
    b.emit(kind, [x1, x2], BinaryAttrs(b.fused(act)))


@converter("SUB")
def sub(b: Builder, input1: int, input2: int, *, fused_activation_function: int = 0,
        pot_scale_int16: bool = True) -> None:  # pot_scale_int16 only matters for int16 SUB
    _binary(b, OpKind.SUB, input1, input2, fused_activation_function)


@converter("MUL")
def mul(b: Builder, input1: int, input2: int, *, fused_activation_function: int = 0) -> None:
    _binary(b, OpKind.MUL, input1, input2, fused_activation_function)


@converter("SQUARED_DIFFERENCE")
def squared_difference(b: Builder, input1: int, input2: int) -> None:
    b.emit(OpKind.SQUARED_DIFFERENCE, [b.operand(input1, "input1"), b.operand(input2, "input2")],
           SquaredDifferenceAttrs())


@converter("CONCATENATION")
def concatenation(b: Builder, *inputs: int, axis: int = 0, fused_activation_function: int = 0) -> None:
    # TFLM refuses a fused activation on CONCATENATION; the IR has none either
    if fused_activation_function:
        raise b.unsupported(f"fused activation {fused_activation_function} on CONCATENATION")
    if inputs and is_int16(b, inputs[0]):
        return concat16(b, inputs, axis)
    xs = [b.operand(i, f"input{k}") for k, i in enumerate(inputs)]
    b.emit(OpKind.CONCAT, xs, ConcatAttrs(int(axis) % len(xs[0].shape)))


def _const_ints(b: Builder, idx: int, role: str) -> np.ndarray:
    t = b.tensor(idx, role)
    if not t.is_const or t.dtype != DType.INT32:
        raise b.unsupported(f"{role} {t.name!r}: needs a constant int32 tensor")
    return np.asarray(t.data, np.int64)


@converter("PAD")
def pad(b: Builder, input: int, paddings: int) -> None:
    if is_int16(b, input):
        return pad16(b, input, _const_ints(b, paddings, "paddings").reshape(-1, 2))
    x = b.act(input)
    p = _const_ints(b, paddings, "paddings").reshape(-1, 2)
    b.emit(OpKind.PAD, [x], PadAttrs(tuple((int(a), int(c)) for a, c in p), 0.0))


@converter("PADV2")
def pad_v2(b: Builder, input: int, paddings: int, constant_values: int = -1) -> None:
    if is_int16(b, input):
        return pad16(b, input, _const_ints(b, paddings, "paddings").reshape(-1, 2), constant_values)
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    p = _const_ints(b, paddings, "paddings").reshape(-1, 2)
    value = 0.0
    if constant_values >= 0:
        c = b.operand(constant_values, "constant_values")
        if not c.is_const or c.size != 1 or c.quant != y.quant:
            raise b.unsupported("constant_values: needs one int8 constant with the output's quantization")
        value = float(c.quant.dequantize(c.data.reshape(-1))[0])
    b.emit(OpKind.PAD, [x], PadAttrs(tuple((int(a), int(c)) for a, c in p), value))


@converter("LOGISTIC")
def logistic(b: Builder, input: int) -> None:
    if is_int16(b, input):  # 16x8: TFLM's int16 logistic
        return sigmoid16(b, input, OpKind.LOGISTIC, LogisticAttrs())
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    if y.quant.zp != -128:  # TFLM LogisticPrepare checks the int8 output zero point
        raise b.unsupported(f"logistic output zero point {y.quant.zp} (needs -128)")
    b.emit(OpKind.LOGISTIC, [x], LogisticAttrs())


@converter("TANH")
def tanh(b: Builder, input: int) -> None:
    if is_int16(b, input):  # 16x8: TFLM's int16 tanh
        return sigmoid16(b, input, OpKind.TANH, TanhAttrs())
    b.emit(OpKind.TANH, [b.act(input)], TanhAttrs())


@converter("HARD_SWISH")
def hard_swish(b: Builder, input: int) -> None:
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    try:
        hard_swish_params(x.quant.s, x.quant.zp, y.quant.s, y.quant.zp)
    except ValueError as e:
        raise b.unsupported(str(e)) from None
    b.emit(OpKind.HARD_SWISH, [x], HardSwishAttrs())


@converter("LEAKY_RELU")
def leaky_relu(b: Builder, input: int, *, alpha: float = 0.0) -> None:
    b.emit(OpKind.LEAKY_RELU, [b.act(input)], LeakyReluAttrs(float(np.float32(alpha))))


@converter("PRELU")
def prelu(b: Builder, input: int, alpha: int) -> None:
    b.emit(OpKind.PRELU, [b.act(input), b.operand(alpha, "alpha")], PReluAttrs())


def _resize(b: Builder, kind: OpKind, input: int, size: int, align_corners: bool, half_pixel_centers: bool) -> None:
    x = b.act(input)
    hw = _const_ints(b, size, "size").reshape(-1)
    if len(x.shape) != 4 or hw.size != 2:
        raise b.unsupported(f"resize of {list(x.shape)} to size {hw.tolist()}")
    if align_corners and half_pixel_centers:  # TFLM rejects the combination
        raise b.unsupported("align_corners together with half_pixel_centers")
    attrs = ResizeAttrs((int(hw[0]), int(hw[1])), "tflite", bool(align_corners), bool(half_pixel_centers))
    b.emit(kind, [x], attrs)


@converter("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest_neighbor(b: Builder, input: int, size: int, *, align_corners: bool = False,
                            half_pixel_centers: bool = False) -> None:
    _resize(b, OpKind.RESIZE_NEAREST, input, size, align_corners, half_pixel_centers)


@converter("RESIZE_BILINEAR")
def resize_bilinear(b: Builder, input: int, size: int, *, align_corners: bool = False,
                    half_pixel_centers: bool = False) -> None:
    _resize(b, OpKind.RESIZE_BILINEAR, input, size, align_corners, half_pixel_centers)


@converter("QUANTIZE")
def quantize(b: Builder, input: int) -> None:
    """float32 -> int8 / int16 (Quantize), int8 / int16 -> int8 / int16 (Requantize; 16x8: TFLM
    quantize_common.cc takes every pair of the two)."""
    x = b.tensor(input, "input")
    out16 = is_int16(b, b.op.outputs[0])
    if x.dtype == DType.FLOAT32 and not x.is_const:
        b.emit(OpKind.QUANTIZE, [x], QuantizeAttrs(), b.act(b.op.outputs[0], "output", out16))
    else:  # int8 -> int8 with other qparams
        x, y = b.act(input, int16=is_int16(b, input)), b.act(b.op.outputs[0], "output", out16)
        if x.quant == y.quant and x.dtype == y.dtype:  # e.g. uint8 -> int8 of equal scale at a uint8 model
            b.reshape(x, y.shape, y)  # input: a -128 shift, 0 here; a view: TFLM's Requantize copies the values
        else:
            b.emit(OpKind.REQUANTIZE, [x], QuantizeAttrs(), y)


@converter("DEQUANTIZE")
def dequantize(b: Builder, input: int) -> None:
    y = b.tensor(b.op.outputs[0], "output")
    if y.dtype != DType.FLOAT32:
        raise b.unsupported(f"DEQUANTIZE to {y.dtype.value} (float32 only)")
    b.emit(OpKind.DEQUANTIZE, [b.act(input, int16=is_int16(b, input))], QuantizeAttrs(), y)


