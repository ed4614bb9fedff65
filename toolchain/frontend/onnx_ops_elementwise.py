"""ONNX converters of the "elementwise" group: Max / Min (ops/maximum_minimum.py) and Sum (onto
the ADD IR op), registered into toolchain.frontend.onnx.CONVERTERS. The three are variadic
(Max-8/13, Min-8/13, Sum-8/13, multidirectional broadcast): the constant inputs are combined here
into one, then the operands become a chain of binary nodes. One input is the identity.

Layout as in onnx_ops.py: a 4-D activation stays NHWC when every other operand can follow it
(constants are broadcast to rank 4 and permuted), otherwise every operand is brought to ONNX order.
"""
from __future__ import annotations

from functools import reduce

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import TO_NHWC, Builder
from toolchain.ops.add import AddAttrs
from toolchain.ops.common import NO_ACT
from toolchain.ops.maximum_minimum import MaxMinAttrs
from toolchain.ops.registry import OpKind

_FOLD = {OpKind.MAXIMUM: np.maximum, OpKind.MINIMUM: np.minimum, OpKind.ADD: np.add}


def _chain(b: Builder, kind: OpKind, names: tuple[str, ...]) -> None:
    if not names:
        raise b.unsupported(f"{b.node.op_type} without inputs")
    f = _FOLD[kind]
    consts = [b.const(n, "input").astype(np.float32) for n in names if b.is_const(n)]
    acts = [n for n in names if not b.is_const(n)]
    if not acts:  # shape arithmetic of the exporter: evaluate now
        b.consts[b.node.output[0]] = reduce(f, consts)
        return
    if len(acts) == 1 and not consts:
        b.alias(acts[0])
        return
    c = reduce(f, consts) if consts else None
    nhwc = all(b.is_nhwc(n) for n in acts) and (c is None or c.ndim <= 4)
    xs = [b.nhwc(n) if nhwc else b.onnx_order(n) for n in acts]
    if c is not None:
        if nhwc:
            c = np.ascontiguousarray(c.reshape((1,) * (4 - c.ndim) + c.shape).transpose(TO_NHWC))
        xs.append(b.add_const("c", c))
    attrs = AddAttrs(NO_ACT) if kind == OpKind.ADD else MaxMinAttrs()
    acc = xs[0]
    for k, x in enumerate(xs[1:], start=2):
        acc = b.emit(kind, [acc, x], attrs, nhwc=nhwc, intermediate=k < len(xs))


@converter("Max")
def max_(b: Builder, *data_0):
    _chain(b, OpKind.MAXIMUM, data_0)


@converter("Min")
def min_(b: Builder, *data_0):
    _chain(b, OpKind.MINIMUM, data_0)


@converter("Sum")
def sum_(b: Builder, *data_0):
    _chain(b, OpKind.ADD, data_0)
