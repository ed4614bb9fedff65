"""TFLite converters of the "elementwise" group: MAXIMUM, MINIMUM (ops/maximum_minimum.py) and
RELU / RELU6 whose output quantization differs from the input's (ops/relu.py). Same contract as
toolchain/frontend/tflite.py: keyword parameters are the schema.fbs options.
Equal qparams on RELU / RELU6 give a Clamp, different ones the requantizing Relu.
"""
from __future__ import annotations

import math

from toolchain.frontend.tflite import Builder, converter
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.maximum_minimum import MaxMinAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.relu import ReluAttrs, relu_params


def _max_min(b: Builder, kind: OpKind, input1: int, input2: int) -> None:
    x1, x2 = b.operand(input1, "input1"), b.operand(input2, "input2")
    y = b.act(b.op.outputs[0], "output")
    # TFLite's int8 spec: inputs and output share one scale and zero point; TFLM then compares raw
    # values (it checks nothing). Other qparams would make TFLM's raw compare mean nothing.
    for role, t in (("input1", x1), ("input2", x2)):
        if t.quant != y.quant:
            raise b.unsupported(f"{b.op.name} with {role} quantization {t.quant.s}/zp {t.quant.zp} != output "
                                f"{y.quant.s}/zp {y.quant.zp} (the TFLite int8 spec requires them equal)")
    b.emit(kind, [x1, x2], MaxMinAttrs())


@converter("MAXIMUM")
def maximum(b: Builder, input1: int, input2: int) -> None:
    _max_min(b, OpKind.MAXIMUM, input1, input2)


@converter("MINIMUM")
def minimum(b: Builder, input1: int, input2: int) -> None:
    _max_min(b, OpKind.MINIMUM, input1, input2)


def _relu(b: Builder, input: int, hi: float) -> None:
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    if x.quant == y.quant:  # the requantization is the identity: a clamp
        b.emit(OpKind.CLAMP, [x], ClampAttrs(0.0, hi))
        return
    try:
        relu_params(x.quant.s, x.quant.zp, y.quant.s, y.quant.zp, hi)
    except ValueError as e:
        raise b.unsupported(str(e)) from None
    b.emit(OpKind.RELU, [x], ReluAttrs(hi))


@converter("RELU")
def relu(b: Builder, input: int) -> None:
    _relu(b, input, math.inf)


@converter("RELU6")
def relu6(b: Builder, input: int) -> None:
    _relu(b, input, 6.0)


@converter("RELU_N1_TO_1")
def relu_n1_to_1(b: Builder, input: int) -> None:
    # TFLM registers no RELU_N1_TO_1 kernel (micro/kernels/activations.cc: RELU and RELU6 only), so
    # there is no reference to be bit-exact with
    raise b.unsupported("RELU_N1_TO_1 (TFLite Micro has no kernel for it)")
