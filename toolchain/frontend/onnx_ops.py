"""ONNX converters of the element-wise, data-movement and activation ops (Add/Sub/Mul/Div with
broadcast and constant operands, Concat, Pad, Sigmoid, Tanh, HardSwish, LeakyRelu,
PRelu, Resize), registered into toolchain.frontend.onnx.CONVERTERS. Same contract as there: keyword
parameters are the ONNX attribute names with the spec defaults (all opsets 11-21 merged).

Layout: a 4-D activation stays NHWC when every other operand can follow it (constants are
broadcast to rank 4 and permuted; axes are mapped NCHW -> NHWC); otherwise operands are brought
to ONNX order first. Constant-only nodes are evaluated here (shape arithmetic of exporters).
"""
from __future__ import annotations

import math

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import TO_NHWC, Builder
from toolchain.ops.add import AddAttrs
from toolchain.ops.binary import BinaryAttrs
from toolchain.ops.common import NO_ACT
from toolchain.ops.concat import ConcatAttrs
from toolchain.ops.hard_swish import HardSwishAttrs
from toolchain.ops.leaky_relu import LeakyReluAttrs
from toolchain.ops.logistic import LogisticAttrs
from toolchain.ops.pad import PadAttrs
from toolchain.ops.prelu import PReluAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.resize import NEAREST_MODES, ONNX_MODES, ResizeAttrs
from toolchain.ops.tanh import TanhAttrs

NCHW_TO_NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}
_NUMPY = {OpKind.ADD: np.add, OpKind.SUB: np.subtract, OpKind.MUL: np.multiply}


def _const_nhwc(b: Builder, c: np.ndarray) -> np.ndarray:
    """A constant broadcast against an NCHW 4-D value, as the NHWC IR needs it."""
    if c.ndim > 4:
        raise b.unsupported(f"constant operand of rank {c.ndim} against a 4-D activation")
    return np.ascontiguousarray(c.reshape((1,) * (4 - c.ndim) + c.shape).transpose(TO_NHWC))


def _operands(b: Builder, names: list[str]) -> tuple[list[str], bool]:
    """IR tensors of the operands of an element-wise node and whether the result is NHWC."""
    acts = [n for n in names if not b.is_const(n)]
    nhwc = all(b.is_nhwc(n) for n in acts) and all(b.const(n, "operand").ndim <= 4 for n in names if b.is_const(n))
    out = []
    for k, n in enumerate(names):
        if b.is_const(n):
            c = b.const(n, "operand").astype(np.float32)
            out.append(b.add_const(f"c{k}", _const_nhwc(b, c) if nhwc else c))
        else:
            out.append(b.nhwc(n) if nhwc else b.onnx_order(n))
    return out, nhwc


def _binary(b: Builder, kind: OpKind, A: str, B: str) -> str | None:
    if b.is_const(A) and b.is_const(B):  # shape arithmetic of the exporter: evaluate now
        b.consts[b.node.output[0]] = _NUMPY[kind](b.const(A, "A"), b.const(B, "B"))
        return None
    (xa, xb), nhwc = _operands(b, [A, B])
    return b.emit(kind, [xa, xb], AddAttrs(NO_ACT) if kind == OpKind.ADD else BinaryAttrs(NO_ACT), nhwc=nhwc)


@converter("Add")
def add(b: Builder, A, B):
    _binary(b, OpKind.ADD, A, B)


@converter("Sub")
def sub(b: Builder, A, B):
    _binary(b, OpKind.SUB, A, B)


@converter("Mul")
def mul(b: Builder, A, B):
    _binary(b, OpKind.MUL, A, B)


@converter("Div")
def div(b: Builder, A, B):
    if b.is_const(A) and b.is_const(B):
        b.consts[b.node.output[0]] = np.divide(b.const(A, "A"), b.const(B, "B"))
        return
    if not b.is_const(B):
        raise b.unsupported("division by an activation (only by a constant)")
    d = b.const(B, "B").astype(np.float64)
    if np.any(d == 0):
        raise b.unsupported("division by a constant holding 0")
    # x / d as x * (1 / d): the int8 graph holds one multiply either way
    b.consts[f"{B}__reciprocal"] = (1.0 / d).astype(np.float32)
    _binary(b, OpKind.MUL, A, f"{B}__reciprocal")


@converter("Concat")
def concat(b: Builder, *inputs, axis=None):
    if axis is None:
        raise b.invalid("no axis (required by the ONNX spec)")
    if all(b.is_const(n) for n in inputs):
        b.axis(axis, b.const(inputs[0], "input").ndim)
        b.consts[b.node.output[0]] = np.concatenate([b.const(n, "input") for n in inputs], axis=axis)
        return
    rank = next(len(b.onnx_shape(n)) for n in inputs if not b.is_const(n))
    ax = b.axis(axis, rank)
    xs, nhwc = _operands(b, list(inputs))
    if nhwc and rank != 4:
        nhwc = False
        xs = [x if b.is_const(n) else b.onnx_order(n) for x, n in zip(xs, inputs, strict=True)]
    b.emit(OpKind.CONCAT, xs, ConcatAttrs(NCHW_TO_NHWC_AXIS[ax] if nhwc else ax), nhwc=nhwc)


@converter("Pad")
def pad(b: Builder, data, pads=None, constant_value=None, axes=None, *, mode="constant", value=0.0):
    if mode != "constant":
        raise b.unsupported(f"Pad mode {mode!r} (constant only)")
    shape = b.onnx_shape(data)
    p = b.ints(pads, "pads") if isinstance(pads, str) else [int(v) for v in pads or []]
    ax = b.axes(b.ints(axes, "axes"), len(shape)) if axes else list(range(len(shape)))
    if len(p) != 2 * len(ax):
        raise b.invalid(f"pads {p} for axes {ax} (ONNX: 2 values per axis)")
    if any(v < 0 for v in p):
        raise b.unsupported(f"negative pads {p} (cropping)")
    per = [(0, 0)] * len(shape)
    for i, a in enumerate(ax):
        per[a] = (p[i], p[i + len(ax)])
    if constant_value:
        c = b.const(constant_value, "constant_value").reshape(-1)
        value = float(c[0]) if c.size else 0.0
    if b.is_nhwc(data):
        per = [per[i] for i in TO_NHWC]
        return b.emit(OpKind.PAD, [b.nhwc(data)], PadAttrs(tuple(per), float(value)), nhwc=True)
    return b.emit(OpKind.PAD, [b.onnx_order(data)], PadAttrs(tuple(per), float(value)))


def _unary(b: Builder, kind: OpKind, X: str, attrs) -> str:
    return b.emit(kind, [b.any_layout(X)], attrs, nhwc=b.is_nhwc(X))


@converter("Sigmoid")
def sigmoid(b: Builder, X):
    _unary(b, OpKind.LOGISTIC, X, LogisticAttrs())


@converter("Tanh")
def tanh(b: Builder, input):
    _unary(b, OpKind.TANH, input, TanhAttrs())


@converter("HardSwish")
def hard_swish(b: Builder, X):
    _unary(b, OpKind.HARD_SWISH, X, HardSwishAttrs())


@converter("LeakyRelu")
def leaky_relu(b: Builder, X, *, alpha=0.01):
    _unary(b, OpKind.LEAKY_RELU, X, LeakyReluAttrs(float(np.float32(alpha))))


@converter("PRelu")
def prelu(b: Builder, X, slope):
    if not b.is_const(slope):
        raise b.unsupported("PRelu with a non-constant slope")
    (x, a), nhwc = _operands(b, [X, slope])
    b.emit(OpKind.PRELU, [x, a], PReluAttrs(), nhwc=nhwc)


@converter("Resize")
def resize(b: Builder, X, roi=None, scales=None, sizes=None, *, mode="nearest", coordinate_transformation_mode="half_pixel",
           nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0,
           antialias=0, axes=None, keep_aspect_ratio_policy="stretch"):
    shape = b.onnx_shape(X)
    if len(shape) != 4 or mode not in ("nearest", "linear") or antialias or exclude_outside \
            or keep_aspect_ratio_policy != "stretch":
        raise b.unsupported(f"Resize of rank {len(shape)} with mode {mode!r} (4-D nearest/linear, no antialias)")
    if coordinate_transformation_mode not in ONNX_MODES or nearest_mode not in NEAREST_MODES:
        raise b.unsupported(f"coordinate_transformation_mode {coordinate_transformation_mode!r} / "
                            f"nearest_mode {nearest_mode!r}")
    if coordinate_transformation_mode == "tf_half_pixel_for_nn" and mode != "nearest":
        raise b.unsupported("tf_half_pixel_for_nn with linear mode")
    full = b.axes(list(axes), 4) if axes else list(range(4))
    if sizes and b.const(sizes, "sizes").size:
        out = b.ints(sizes, "sizes")
        if len(out) != len(full) or min(out) < 1:
            raise b.invalid(f"sizes {out} for axes {full} (ONNX: one positive size per axis)")
        full_out = list(shape)
        for a, v in zip(full, out, strict=True):
            full_out[a % 4] = v
        scale = None
    else:
        sc = [float(v) for v in b.const(scales, "scales").reshape(-1)]
        if len(sc) != len(full) or not all(0 < v < math.inf for v in sc):
            raise b.invalid(f"scales {sc} for axes {full} (ONNX: one finite positive scale per axis)")
        full_sc = [1.0] * 4
        for a, v in zip(full, sc, strict=True):
            full_sc[a % 4] = v
        full_out = [math.floor(d * s) for d, s in zip(shape, full_sc, strict=True)]
        scale = (full_sc[2], full_sc[3])
    if full_out[:2] != list(shape[:2]):
        raise b.unsupported(f"Resize of the batch or channel axis ({list(shape)} -> {full_out})")
    attrs = ResizeAttrs((full_out[2], full_out[3]), "onnx", coord_mode=coordinate_transformation_mode,
                        nearest_mode=nearest_mode, scale=scale)
    kind = OpKind.RESIZE_NEAREST if mode == "nearest" else OpKind.RESIZE_BILINEAR
    b.emit(kind, [b.nhwc(X)], attrs, nhwc=True)
