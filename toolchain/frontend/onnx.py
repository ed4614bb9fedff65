"""ONNX -> Graph. One converter per ONNX op; a converter's keyword parameters are the ONNX
attribute names with the spec's defaults (ONNX operator docs, opset 11-21), so an attribute we do
not know fails loudly instead of being ignored.

Layout: ONNX is NCHW; the IR keeps 4-D activations NHWC. Conv weights are permuted offline, a
4-D graph input gets a Transpose NCHW->NHWC, and an op that needs ONNX element order (Flatten,
Reshape, Softmax, Gemm) on a 4-D value gets a Transpose back. Passes later cancel or drop the
transposes that move only size-1 axes. Not here: folding, fusion, quantization.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from toolchain.errors import InputError
from toolchain.frontend.onnx_builder import Builder, Val
from toolchain.frontend.onnx_canonical import canonical_onnx, opset_of
from toolchain.frontend.unsupported import summary_error
from toolchain.ir import DType, Graph
from toolchain.ops.batch_norm import BatchNormAttrs
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import NO_ACT, Window, same_pads
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.depthwise_conv2d import DepthwiseConv2DAttrs
from toolchain.ops.fully_connected import FullyConnectedAttrs
from toolchain.ops.pool2d import Pool2DAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import ReshapeAttrs, TransposeAttrs

CONVERTERS = {}


class DynamicShape(InputError):
    """A graph input with a dynamic dimension other than the batch axis and no `input_shapes` entry."""


def converter(*names: str):
    """Register a function as the converter of the named ONNX op types."""

    def deco(fn):
        for n in names:
            if n in CONVERTERS:  # one converter per op: a second would win or lose by import order
                raise ValueError(f"ONNX {n}: converters {CONVERTERS[n].__module__}.{CONVERTERS[n].__name__} and "
                                 f"{fn.__module__}.{fn.__name__}")
            CONVERTERS[n] = fn
        return fn

    return deco


MAX_WINDOW = 1 << 20  # a kernel, stride, dilation or pad past this is no real model's
SPATIAL = {"kernel_shape": (1, 1), "strides": (1, 1), "dilations": (1, 1), "pads": (2, 0), "output_padding": (1, 0)}


def spatial_attrs(b: Builder, n: int, **attrs: Any) -> dict[str, tuple[int, ...] | None]:
    """The spatial attributes of a convolution or pooling node (kernel_shape, strides, dilations,
    pads, output_padding; None when absent) as int tuples, checked against the ONNX operator spec
    (Conv, ConvTranspose, AveragePool, MaxPool): n values each (pads 2n), kernel_shape / strides /
    dilations >= 1, pads / output_padding >= 0, none above MAX_WINDOW. `n`: the spatial rank.

    Raises InputError (Builder.invalid) naming the node and the attribute."""
    out: dict[str, tuple[int, ...] | None] = {}
    for name, value in attrs.items():
        if value is None:
            out[name] = None
            continue
        per, least = SPATIAL[name]
        v = tuple(int(x) for x in value)
        if len(v) != per * n:
            raise b.invalid(f"{name} {list(v)} has {len(v)} values for {n} spatial axes (needs {per * n})")
        if any(x < least or x > MAX_WINDOW for x in v):
            raise b.invalid(f"{name} {list(v)} (each must be in [{least}, {MAX_WINDOW}])")
        out[name] = v
    return out


def _window(b: Builder, x: Val, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode=0) -> Window:
    n, h, w, c = b.shape(x)
    if kernel_shape is None:
        raise b.invalid("no kernel_shape (required by the ONNX spec)")
    a = spatial_attrs(b, 2, kernel_shape=kernel_shape, strides=strides, dilations=dilations, pads=pads)
    kernel = a["kernel_shape"]
    strides = a["strides"] or (1, 1)
    dil = a["dilations"] or (1, 1)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        ph = same_pads(h, kernel[0], strides[0], dil[0], auto_pad == "SAME_UPPER")
        pw = same_pads(w, kernel[1], strides[1], dil[1], auto_pad == "SAME_UPPER")
        p = (ph[0], pw[0], ph[1], pw[1])
    elif auto_pad in ("NOTSET", "VALID"):
        p = a["pads"] if a["pads"] and auto_pad == "NOTSET" else (0, 0, 0, 0)
    else:
        raise b.invalid(f"auto_pad {auto_pad!r} (NOTSET, SAME_UPPER, SAME_LOWER or VALID)")
    return Window(kernel, strides, dil, p, bool(ceil_mode))


@converter("Conv")
def conv(b: Builder, X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
         pads=None, strides=None):
    w = b.const(W, "weights")
    if w.ndim != 4:
        raise b.unsupported(f"only 2-D convolution is supported (weights of rank {w.ndim})")
    x = b.nhwc(X)
    cin = b.shape(x)[3]
    if kernel_shape is not None and tuple(kernel_shape) != w.shape[2:]:
        raise b.invalid(f"kernel_shape {list(kernel_shape)} for weights of shape {list(w.shape)}")
    win = _window(b, x, w.shape[2:], strides, dilations, pads, auto_pad)
    bias = b.const(B, "bias") if B else np.zeros(w.shape[0], np.float32)
    cout = w.shape[0]
    if group < 1 or cin != group * w.shape[1] or cout % group:  # ONNX Conv: W is [M, C / group, kH, kW]
        raise b.invalid(f"group {group} with {cin} input channels and weights of shape {list(w.shape)} "
                        "(needs C = group * W.shape[1] and M divisible by group)")
    if bias.shape != (cout,):
        raise b.invalid(f"bias of shape {list(bias.shape)} for {cout} output channels")
    if group == 1 or group != cin or cout % cin:
        args = [x, b.add_const("w", w.transpose(0, 2, 3, 1)), b.add_const("b", bias)]
        return b.emit(OpKind.CONV2D, args, Conv2DAttrs(win, group, NO_ACT), nhwc=True)
    dw = w.transpose(1, 2, 3, 0)  # [Cout,1,KH,KW] -> [1,KH,KW,Cout]; oc = ic*mult + m as ONNX
    attrs = DepthwiseConv2DAttrs(win, cout // cin, NO_ACT)
    return b.emit(OpKind.DEPTHWISE_CONV2D, [x, b.add_const("w", dw), b.add_const("b", bias)], attrs, nhwc=True)


@converter("Gemm")
def gemm(b: Builder, A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0):
    w = b.const(B, "B") * np.float32(alpha)
    w = w if transB else w.T
    n = w.shape[0]
    bias = np.zeros(n, np.float32)
    if C:
        c = b.const(C, "C") * np.float32(beta)
        if c.size not in (1, n) or (c.ndim == 2 and c.shape[-1] != c.size):
            raise b.unsupported(f"bias C of shape {list(c.shape)} (needs [N], [1] or [1,N])")
        bias = np.broadcast_to(c.reshape(-1), (n,)).astype(np.float32)  # aligns with N (BL-16)
    x = b.onnx_order(A)
    if len(b.shape(x)) != 2:
        raise b.unsupported(f"input of rank {len(b.shape(x))} (Gemm needs 2-D)")
    if transA:  # an activation [K, M]: transpose it (a copy, or a free view when M == 1)
        x = b.transpose_to(x, (1, 0))
    args = [x, b.add_const("w", np.ascontiguousarray(w)), b.add_const("b", bias)]
    return b.emit(OpKind.FULLY_CONNECTED, args, FullyConnectedAttrs(NO_ACT))


@converter("MatMul")
def matmul(b: Builder, A, B):
    w = b.const(B, "B")
    x = b.onnx_order(A)
    if w.ndim != 2 or len(b.shape(x)) != 2:
        raise b.unsupported("only [M,K] x constant [K,N] MatMul is supported")
    args = [x, b.add_const("w", np.ascontiguousarray(w.T)), b.add_const("b", np.zeros(w.shape[1], np.float32))]
    return b.emit(OpKind.FULLY_CONNECTED, args, FullyConnectedAttrs(NO_ACT))


@converter("Relu")
def relu(b: Builder, X):
    return b.emit(OpKind.CLAMP, [b.any_layout(X)], ClampAttrs(0.0, math.inf), nhwc=b.is_nhwc(X))


@converter("Clip")
def clip(b: Builder, X, min=None, max=None):  # noqa: A002 - ONNX input names
    lo = b.scalar(min, "min") if isinstance(min, str) and min else (-math.inf if min in (None, "") else min)
    hi = b.scalar(max, "max") if isinstance(max, str) and max else (math.inf if max in (None, "") else max)
    return b.emit(OpKind.CLAMP, [b.any_layout(X)], ClampAttrs(float(lo), float(hi)), nhwc=b.is_nhwc(X))


@converter("AveragePool")
def average_pool(b: Builder, X, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, kernel_shape=None,
                 pads=None, strides=None, dilations=None):
    x = b.nhwc(X)
    win = _window(b, x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    if win.dilation != (1, 1):
        raise b.unsupported("dilated AveragePool")
    return b.emit(OpKind.AVG_POOL2D, [x], Pool2DAttrs(win, bool(count_include_pad), NO_ACT), nhwc=True)


@converter("MaxPool")
def max_pool(b: Builder, X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None,
             storage_order=0, strides=None):
    x = b.nhwc(X)
    win = _window(b, x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    if win.dilation != (1, 1):
        raise b.unsupported("dilated MaxPool")
    return b.emit(OpKind.MAX_POOL2D, [x], Pool2DAttrs(win, False, NO_ACT), nhwc=True)


@converter("GlobalAveragePool")
def global_average_pool(b: Builder, X):
    x = b.nhwc(X)
    _, h, w, _ = b.shape(x)
    return b.emit(OpKind.AVG_POOL2D, [x], Pool2DAttrs(Window((h, w)), False, NO_ACT), nhwc=True)


@converter("BatchNormalization")
def batch_normalization(b: Builder, X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9,
                        training_mode=0, spatial=1):
    if training_mode:
        raise b.unsupported("training_mode=1")
    shape = b.onnx_shape(X)
    values = {n: b.const(v, n) for n, v in (("scale", scale), ("bias", B), ("mean", input_mean), ("var", input_var))}
    channels = shape[1] if len(shape) > 1 else 1
    bad = next((n for n, v in values.items() if v.shape != (channels,)), None)
    if bad is not None:  # ONNX BatchNormalization: scale, B, mean, var are 1-D [C]
        raise b.invalid(f"{bad} of shape {list(values[bad].shape)} for {channels} channels (ONNX: 1-D [C])")
    params = [b.add_const(n, v) for n, v in values.items()]
    four_d = len(shape) == 4
    x = b.nhwc(X) if four_d else b.onnx_order(X)
    return b.emit(OpKind.BATCH_NORM, [x, *params], BatchNormAttrs(float(epsilon)), nhwc=four_d)


@converter("Flatten")
def flatten(b: Builder, input, *, axis=1):  # noqa: A002
    shape = b.onnx_shape(input)
    if not -len(shape) <= axis <= len(shape):  # ONNX Flatten: [-r, r]
        raise b.invalid(f"axis {axis} out of range for rank {len(shape)} (ONNX: [-{len(shape)}, {len(shape)}])")
    axis = axis % len(shape) if axis < 0 else axis
    new = (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))
    return b.emit(OpKind.RESHAPE, [b.onnx_order(input)], ReshapeAttrs(new))


@converter("Reshape")
def reshape(b: Builder, data, shape, *, allowzero=0):
    target = b.ints(shape, "shape")
    src = b.onnx_shape(data)
    size = int(np.prod(src, dtype=np.int64))
    # ONNX Reshape-14: one -1 at most, no other negative value, a 0 copies the input's dim (allowzero 0)
    if target.count(-1) > 1 or min(target, default=0) < -1 or (not allowzero and target[len(src):].count(0)):
        raise b.invalid(f"shape {target} for input of shape {list(src)}")
    target = [src[i] if s == 0 and not allowzero else s for i, s in enumerate(target)]
    if -1 in target:
        known = int(np.prod([s for s in target if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise b.invalid(f"shape {target} cannot hold the {size} elements of the input")
        target[target.index(-1)] = size // known
    if int(np.prod(target, dtype=np.int64)) != size:
        raise b.invalid(f"shape {target} for input of shape {list(src)} ({size} elements)")
    return b.emit(OpKind.RESHAPE, [b.onnx_order(data)], ReshapeAttrs(tuple(target)))


@converter("Squeeze", "Unsqueeze")
def squeeze(b: Builder, data, axes=None):
    src = b.onnx_shape(data)
    ax = b.ints(axes, "axes") if isinstance(axes, str) else [int(a) for a in axes or []]
    if b.op_type == "Squeeze":
        ax = b.axes(ax, len(src)) or [i for i, s in enumerate(src) if s == 1]
        if any(src[a] != 1 for a in ax):
            raise b.invalid(f"squeezes axes {ax} of shape {list(src)} (ONNX: only axes of size 1)")
        new = tuple(s for i, s in enumerate(src) if i not in ax)
    else:
        new_l = list(src)
        for a in sorted(b.axes(ax, len(src) + len(ax))):
            new_l.insert(a, 1)
        new = tuple(new_l)
    return b.emit(OpKind.RESHAPE, [b.onnx_order(data)], ReshapeAttrs(new))


@converter("Transpose")
def transpose(b: Builder, data, *, perm=None):
    rank = len(b.onnx_shape(data))
    perm = tuple(perm) if perm else tuple(reversed(range(rank)))
    if sorted(perm) != list(range(rank)):
        raise b.invalid(f"perm {list(perm)} is not a permutation of the {rank} axes")
    return b.emit(OpKind.TRANSPOSE, [b.onnx_order(data)], TransposeAttrs(perm))


@converter("Identity", "Dropout")
def identity(b: Builder, input, ratio=None, training_mode=None, *, seed=None):  # noqa: A002
    if training_mode and (not b.is_const(training_mode) or bool(b.scalar(training_mode, "training_mode"))):
        raise b.unsupported("Dropout with training_mode (inference only)")
    return b.alias(input)


from toolchain.frontend import converter_modules  # noqa: E402

converter_modules("onnx_ops")  # registers the converters of toolchain/frontend/onnx_ops*.py


def load_onnx(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
              nhwc_io: bool = False) -> Graph:
    """Read an ONNX model (float32; opset < 11 is upgraded) into a float Graph with NHWC activations,
    after toolchain.frontend.onnx_canonical (constants folded, Identity removed, static shapes).

    input_shapes overrides/sets the shape of graph inputs (needed for dynamic dimensions), in the
    file's own (NCHW) order. nhwc_io (YAML `io_layout: NHWC`): 4-D inputs and outputs NHWC.
    Raises InputError (missing/unreadable file, dynamic shape without override, non-float
    input) and UnsupportedModel (listing every unsupported node at once).
    """
    path = Path(path)
    model = canonical_onnx(path, input_shapes).model  # Constants, Identity, shape subgraphs, old opsets
    opset = opset_of(model)
    if opset < 11:  # only when the file imports no default-domain opset
        raise InputError(f"{path}: opset {opset} is too old (need >= 11); re-export the model")
    b = Builder(path, opset, model.graph.name or path.stem, nhwc_io)
    b.model = model
    b.check_statically(model.graph.node, CONVERTERS)   # every node with an unknown op or attribute
    try:
        _add_inputs(b, path, model, input_shapes)
    except DynamicShape:
        raise  # shape subgraphs stay unfolded behind a dynamic dimension: the unsupported nodes may be its echo
    except InputError:
        if b.errors:  # the model is unsupported anyway: say that first
            raise summary_error(path, b.errors) from None
        raise
    for node in model.graph.node:  # unsupported values, dtypes and shapes: all of them, then one error
        b.convert(node, CONVERTERS.get(node.op_type))
    if b.errors:
        raise summary_error(path, b.errors)
    return b.finish([o.name for o in model.graph.output])


def _add_inputs(b: Builder, path: Path, model, input_shapes) -> None:
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    unknown = sorted(set(input_shapes or {}) - set(names))
    if unknown:
        raise InputError(f"{path}: input_shapes names {unknown}, but the model's inputs are {names}")
    for init in model.graph.initializer:
        b.consts[init.name] = numpy_helper.to_array(init)
    for inp in model.graph.input:
        if inp.name not in b.consts:
            b.add_input(inp.name, input_shape(path, inp, (input_shapes or {}).get(inp.name)), _elem_type(path, inp))


def input_shape(path: Path, inp, override) -> tuple[int, ...]:
    if override is not None:
        return tuple(int(s) for s in override)
    dims = inp.type.tensor_type.shape.dim
    shape = tuple(d.dim_value if d.HasField("dim_value") else 0 for d in dims)
    if any(s <= 0 for s in shape):
        raise DynamicShape(f"{path}: input {inp.name!r} has a dynamic dimension {[d.dim_param or d.dim_value for d in dims]}; "
                         f"set `input_shapes: {{{inp.name}: [...]}}` in the YAML")
    return shape


def _elem_type(path: Path, inp) -> DType:
    if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise InputError(f"{path}: input {inp.name!r} is not float32; quantized ONNX input arrives with issue 4")
    return DType.FLOAT32
