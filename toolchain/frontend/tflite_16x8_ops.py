"""The 16x8 (int16 activation) bodies of the TFLite converters of ADD, SUB, MUL, CONCATENATION, PAD /
PADV2, MEAN and SUM: each converter of tflite.py / tflite_ops*.py calls one of these when its first input
is int16 (tflite_16x8.is_int16). They take the operands TFLM's int16 kernels take, refuse what TFLM
refuses or computes without a defined result, by name and with what to do, and emit the IR node with
its int16 output. The checks, from TFLM's kernels (tflite-micro micro/kernels, read for semantics):

- ADD / SUB: every multiplier of add_common.cc / sub_common.cc goes through
  QuantizeMultiplierSmallerThanOneExp, which aborts for a real multiplier >= 1 (an output scale
  below 2 max(input scales) / 2^15): refused. Broadcasting is TFLM's general path: taken.
- MUL: real multiplier s1 s2 / s_out >= 1 refused (TFLM's int32 product << shift overflows).
- CONCATENATION: TFLM copies int16 values and checks only zero points; inputs on another scale than
  the output's would change their real values: refused (the TFLite converter writes equal scales).
- PAD / PADV2: TFLM copies int16 values and pads with 0 or PADV2's raw constant: input, output and
  constant must share one scale.
- MEAN / SUM: the int32 sum and its left shift must stay inside int32 (mean.check_mean_s16); reduced
  axes contiguous (no int16 TRANSPOSE).
Pooling's int16 checks live with the int8 ones (tflite._pool). Not here: the arithmetic (toolchain/ops).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from toolchain.ir import Graph, Node, Tensor
from toolchain.ops.add import AddAttrs, params_s16
from toolchain.ops.binary import BinaryAttrs, mul_params_s16, sub_params_s16
from toolchain.ops.concat import ConcatAttrs, check_s16_scales
from toolchain.ops.mean import MeanAttrs, check_mean_s16, gathering_perm, reduce_layout
from toolchain.ops.pad import PadAttrs
from toolchain.ops.registry import OpKind

if TYPE_CHECKING:
    from toolchain.frontend.tflite import Builder


def check_last(b: Builder, check: Callable[[Node, Graph], object]) -> None:
    """check(node, graph) on the node just emitted (the last of b.nodes); its ValueError becomes the
    operator's UnsupportedModel (Builder.convert would otherwise report it as a shape error)."""
    node = b.nodes[-1]
    try:
        check(node, Graph("probe", (node,), b.tensors, (), ()))
    except ValueError as e:
        raise b.unsupported(str(e)) from None


def _add_params(node: Node, graph: Graph) -> None:
    p, _ = params_s16(node, graph)
    if p.output_shift > 0:
        y = graph.t(node.outputs[0]).quant.s
        raise ValueError(f"int16 ADD with output scale {y:.6g} below 2 max(input scales) / 2^15 (real "
                         "multiplier >= 1: TFLM aborts in QuantizeMultiplierSmallerThanOneExp; use a larger "
                         "output scale)")


_BINARY = {OpKind.ADD: (AddAttrs, _add_params), OpKind.SUB: (BinaryAttrs, sub_params_s16),
           OpKind.MUL: (BinaryAttrs, mul_params_s16)}


def binary16(b: Builder, kind: OpKind, input1: int, input2: int, act: int) -> None:
    """ADD / SUB / MUL with int16 operands (activations or int16 constants, zero point 0), broadcasting
    as TFLM's int16 kernels do (at most four loop levels after merging axes), int16 output."""
    x1, x2 = b.operand(input1, "input1", int16=True), b.operand(input2, "input2", int16=True)
    y = b.act(b.op.outputs[0], "output", True)
    attrs, check = _BINARY[kind]
    b.emit(kind, [x1, x2], attrs(b.fused(act)), y)
    check_last(b, check)


def concat16(b: Builder, inputs: tuple[int, ...], axis: int) -> None:
    """CONCATENATION of int16 tensors (activations or constants) on the output's scale: a copy."""
    xs = [b.operand(i, f"input{k}", int16=True) for k, i in enumerate(inputs)]
    y = b.act(b.op.outputs[0], "output", True)
    b.emit(OpKind.CONCAT, xs, ConcatAttrs(int(axis) % len(xs[0].shape)), y)
    check_last(b, check_s16_scales)


def pad16(b: Builder, input: int, pads: np.ndarray, constant_values: int = -1) -> None:
    """PAD (pad value 0, the real 0) or PADV2 (its int16 constant) of an int16 tensor: input, output and
    constant on one scale, as TFLM copies raw int16 values."""
    x, y = b.act(input, int16=True), b.act(b.op.outputs[0], "output", True)
    if x.quant.s != y.quant.s:
        raise b.unsupported(f"int16 {b.op.name} from scale {x.quant.s} to {y.quant.s} (TFLM copies int16 values "
                            "without rescaling: input and output need one scale)")
    value = 0.0
    if constant_values >= 0:
        c = b.operand(constant_values, "constant_values", int16=True)
        if not c.is_const or c.size != 1 or c.quant.s != y.quant.s:
            raise b.unsupported("constant_values: needs one int16 constant with the output's scale (TFLM pads "
                                "with its raw value)")
        value = float(np.float64(c.data.reshape(-1)[0]) * np.float64(y.quant.s))  # exact: 16 x 24 bits
    b.emit(OpKind.PAD, [x], PadAttrs(tuple((int(a), int(e)) for a, e in pads), value), y)


def reduce16(b: Builder, kind: OpKind, x: Tensor, axes: tuple[int, ...], keep: bool) -> None:
    """MEAN or SUM of an int16 activation over contiguous axes (H, W of NHWC included), int16 output."""
    y = b.act(b.op.outputs[0], "output", True)
    if gathering_perm(x.shape, axes) is not None:
        raise b.unsupported(f"int16 {b.op.name} over the non-contiguous axes {list(axes)} of {list(x.shape)} (16x8 "
                            "has no TRANSPOSE to gather them)")
    b.emit(kind, [x], MeanAttrs(axes, keep), y)
    n = reduce_layout(x.shape, axes)[1]
    check_last(b, lambda node, g: check_mean_s16(n, x.quant.s, y.quant.s, kind == OpKind.MEAN))
