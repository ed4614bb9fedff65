"""TFLite (.tflite, full int8, or 16x8 for the ops of tflite_16x8.S16_OPS) -> Graph: the same IR an
int8 graph has after our quantizer (int16 activations and int64 biases for 16x8), with the
model's own scales, zero points and per-channel axes (no re-quantization) and fused activations as
each op's `act` range. One converter per TFLite builtin op, registered by name; a converter's keyword
parameters are the op's builtin options (schema.fbs names and defaults), so an option we do not
handle fails loudly unless it holds its default.

TFLite is already NHWC with OHWI conv weights, [1, KH, KW, C*mult] depthwise weights and [O, K]
FC weights, which is the IR's layout: constants are used as stored. The op glue derives kernel
parameters from these scales exactly as the TFLM oracle does (per-tensor weight scales included).
Stages: tflite_reader.read_tflite -> check every op has a converter -> convert op by op, collecting
every unsupported node -> Graph. Not here: flatbuffer parsing (tflite_reader), kernel arithmetic (ops).
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite_16x8 import NOT_16X8, bias64, check_weighted, int16_reason, is_int16, softmax16
from toolchain.frontend.tflite_16x8_ops import binary16
from toolchain.frontend.tflite_reader import TflModel, TflOp, read_tflite, uint8_edges
from toolchain.frontend.unsupported import UNKNOWN_OP, NodeUnsupported, Problem, summary_error
from toolchain.io_dtypes import UINT8_IO
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.add import AddAttrs
from toolchain.ops.common import NO_ACT, Window, same_pads
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.depthwise_conv2d import DepthwiseConv2DAttrs
from toolchain.ops.fixed_point import softmax_params
from toolchain.ops.fully_connected import FullyConnectedAttrs
from toolchain.ops.pool2d import MAX_TAPS_S16, Pool2DAttrs
from toolchain.ops.registry import OpKind, opdef
from toolchain.ops.shape_ops import ReshapeAttrs
from toolchain.ops.softmax import SoftmaxAttrs

CONVERTERS: dict[str, Callable[..., None]] = {}

SAME, VALID = 0, 1  # schema.fbs enum Padding
# schema.fbs enum ActivationFunctionType -> the real clamp range of the IR's `act` (TANH, SIGN_BIT: no)
FUSED_ACT = {0: NO_ACT, 1: (0.0, math.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def converter(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a function as the converter of the TFLite builtin op `name`."""

    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        if name in CONVERTERS:  # one converter per op: a second would win or lose by import order
            raise ValueError(f"TFLite {name}: converters {CONVERTERS[name].__module__}.{CONVERTERS[name].__name__} "
                             f"and {fn.__module__}.{fn.__name__}")
        CONVERTERS[name] = fn
        return fn

    return deco


class Builder:
    """The state converters share: the parsed file, the IR tensors and nodes emitted so far, and the
    operator being converted (for error messages)."""

    def __init__(self, path: Path, model: TflModel) -> None:
        self.path, self.m = path, model
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.op: TflOp | None = None

    # -- errors and dispatch -----------------------------------------------------------------
    def label(self, op: TflOp | None = None) -> str:
        """An operator as errors name it: `operator INDEX 'first output tensor'`."""
        op = op or self.op
        out = self.m.tensors[op.outputs[0]] if op.outputs and self.m.tensors[op.outputs[0]] else None
        return f"operator {op.index} {out.name if out else '?'!r}"

    def unsupported(self, what: str) -> NodeUnsupported:
        """An error naming the file, the operator (index, output tensor, op); the caller raises it."""
        return NodeUnsupported(self.path, Problem(self.label(), self.op.name, what))

    def convert(self, op: TflOp, fn: Callable[..., None]) -> None:
        """Run one converter: inputs positionally, options by name; a non-default option the converter
        does not take is an error."""
        self.op = op
        params = inspect.signature(fn).parameters
        # options are the keyword-only parameters: an options table of another op's type (a damaged
        # file) may hold a field named like an input (`axis`), which must not reach that input
        taken = {k for k, p in params.items() if p.kind == p.KEYWORD_ONLY}
        extra = sorted(k for k, v in op.options.items() if k not in taken and not _same(v, op.defaults.get(k)))
        if extra:
            raise self.unsupported("option(s) " + ", ".join(f"{k}={op.options[k]!r}" for k in extra))
        positional = [p for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
        n_required = sum(p.default is p.empty for p in positional)  # fewer inputs: a damaged or foreign file
        variadic = any(p.kind == p.VAR_POSITIONAL for p in params.values())
        # a converter marked `multi_output` (e.g. SPLIT) emits one node per output itself
        if (len(op.inputs) > len(positional) and not variadic) or len(op.inputs) < n_required \
                or (len(op.outputs) != 1 and not getattr(fn, "multi_output", False)):
            raise self.unsupported(f"number of inputs/outputs ({len(op.inputs)}/{len(op.outputs)})")
        try:
            fn(self, *op.inputs, **{k: v for k, v in op.options.items() if k in taken})
        except (IndexError, ValueError) as e:  # shapes the op does not define (rank 0 where it indexes a channel)
            shapes = ", ".join(str(list(self.m.tensors[i].shape)) for i in op.inputs
                               if 0 <= i < len(self.m.tensors) and self.m.tensors[i] is not None)
            raise self.unsupported(f"input shapes {shapes} ({type(e).__name__})") from None

    # -- tensors -----------------------------------------------------------------------------
    def tensor(self, idx: int, role: str) -> Tensor:
        t = self.m.tensors[idx] if idx >= 0 else None
        if t is None:
            raise self.unsupported(f"{role} of type {self.m.type_names[idx] if idx >= 0 else 'absent'}")
        self.tensors.setdefault(t.name, t)
        return t

    def act(self, idx: int, role: str = "input", int16: bool = False) -> Tensor:
        """An int8 activation with per-tensor quantization (int16 with zero point 0 when `int16`: 16x8)."""
        t = self.tensor(idx, role)
        if t.is_const:
            raise self.unsupported(f"constant {role} {t.name!r} (an activation is expected)")
        _check_int8_per_tensor(t, role, self.unsupported, int16)
        return t

    def operand(self, idx: int, role: str = "input", int16: bool = False) -> Tensor:
        """An int8 (`int16`: int16, zero point 0) per-tensor input, activation or constant (element-wise ops)."""
        t = self.tensor(idx, role)
        _check_int8_per_tensor(t, role, self.unsupported, int16)
        return t

    def weights(self, idx: int, rank: int, axis: int, zero_point_ok: bool = False) -> Tensor:
        """Constant int8 weights, symmetric, per-tensor or per-channel along `axis`; `zero_point_ok`:
        a per-tensor zero point too (FULLY_CONNECTED: TFLM's filter_offset)."""
        t = self.tensor(idx, "weights")
        if not t.is_const or t.dtype != DType.INT8 or t.quant is None or len(t.shape) != rank:
            raise self.unsupported(f"weights {t.name!r}: need constant int8 of rank {rank} with quantization")
        if any(z != 0 for z in t.quant.zero_point) and (t.quant.is_per_channel or not zero_point_ok):
            # TFLM's conv kernels DCHECK a zero point of 0; its FULLY_CONNECTED takes a per-tensor one
            raise self.unsupported(f"weights {t.name!r} with zero point {t.quant.zero_point[0]} (TFLite int8 "
                                   "weights are symmetric; only FULLY_CONNECTED takes a per-tensor zero point)")
        if t.quant.is_per_channel and (t.quant.axis != axis or len(t.quant.scale) != t.shape[axis]):
            raise self.unsupported(f"weights {t.name!r} quantized along axis {t.quant.axis} (need {axis})")
        return t

    def zero_bias(self, cout: int, x: Tensor, w: Tensor, dtype: DType) -> Tensor:
        """A new all-zero bias [cout] of `dtype` with scale s_x * s_w[c] (for a layer without one)."""
        name = fresh_name(self.tensors.keys() | {t.name for t in self.m.tensors if t}, f"{self.out_name()}_bias")
        scale = tuple(x.quant.s * s for s in w.quant.scale)
        qp = QuantParams(scale, (0,) * len(scale), 0 if len(scale) > 1 else None)
        t = Tensor(name, (cout,), dtype, qp, np.zeros(cout, dtype.np))
        self.tensors[name] = t
        return t

    def bias(self, idx: int, cout: int, x: Tensor, w: Tensor) -> Tensor:
        """The int32 bias [cout]; an absent bias becomes zeros (TFLM adds nothing: same result)."""
        if idx < 0:
            return self.zero_bias(cout, x, w, DType.INT32)
        t = self.tensor(idx, "bias")
        if not t.is_const or t.dtype != DType.INT32 or t.shape != (cout,):
            raise self.unsupported(f"bias {t.name!r}: need constant int32 [{cout}]")
        return t

    def out_name(self) -> str:
        return self.m.tensors[self.op.outputs[0]].name if self.m.tensors[self.op.outputs[0]] else "out"

    def fresh(self, base: str, like: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A new intermediate activation with `like`'s dtype and quantization."""
        name = fresh_name(self.tensors.keys() | {t.name for t in self.m.tensors if t}, base)
        t = Tensor(name, shape, like.dtype, like.quant)
        self.tensors[name] = t
        return t

    # -- geometry and activations ------------------------------------------------------------
    def window(self, x: Tensor, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
               padding: int) -> Window:
        """TFLite padding -> explicit pads: SAME puts the odd pixel at the end (TFLM
        ComputePaddingHeightWidth), VALID pads nothing."""
        if min(*kernel, *stride, *dilation) < 1:
            raise self.unsupported(f"geometry kernel {kernel} stride {stride} dilation {dilation}")
        if padding == SAME:
            (pt, pb), (pl, pr) = (same_pads(x.shape[1 + i], kernel[i], stride[i], dilation[i]) for i in (0, 1))
            return Window(kernel, stride, dilation, (pt, pl, pb, pr))
        if padding == VALID:
            return Window(kernel, stride, dilation)
        raise self.unsupported(f"padding {padding}")

    def fused(self, code: int) -> tuple[float, float]:
        if code not in FUSED_ACT:
            raise self.unsupported(f"fused activation {code} (TANH/SIGN_BIT)")
        return FUSED_ACT[code]

    # -- emission ----------------------------------------------------------------------------
    def emit(self, kind: OpKind, args: list[Tensor], attrs: Any, out: Tensor | None = None) -> Tensor:
        """Append a node computing `out` (default: the operator's output as the file declares it,
        which must be an int8 per-tensor activation); its inferred shape must match."""
        if out is None:
            out = self.act(self.op.outputs[0], "output")
        names = [n.name for n in self.nodes]
        node = Node(fresh_name(names, out.name) if out.name in names else out.name, kind,
                    tuple(a.name for a in args), (out.name,), attrs, source=f"operator {self.op.index} ({self.op.name})")
        probe = Graph("probe", (node,), self.tensors, (), ())
        try:
            (shape,) = opdef(node).infer_shapes(node, probe)
        except ValueError as e:
            raise self.unsupported(f"shapes: {e}") from None
        if tuple(shape) != out.shape:
            raise self.unsupported(f"shapes: output {list(out.shape)} in the file, {list(shape)} inferred")
        self.nodes.append(node)
        return out

    def reshape(self, x: Tensor, shape: tuple[int, ...], out: Tensor | None = None) -> Tensor:
        """x viewed as `shape` (a Reshape node; a new tensor unless `out` is given)."""
        out = out or self.fresh(f"{x.name}_reshaped", x, shape)
        return self.emit(OpKind.RESHAPE, [x], ReshapeAttrs(tuple(shape)), out)


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _check_int8_per_tensor(t: Tensor, role: str, err: Callable[[str], Exception], int16: bool = False) -> None:
    """int8 per-tensor (`int16`: int16 per-tensor with zero point 0, a 16x8 activation) or err(what)."""
    want = DType.INT16 if int16 else DType.INT8
    if t.dtype != want:
        raise err(f"{role} {t.name!r} of type {t.dtype.value} "
                  f"({NOT_16X8 if DType.INT16 in (t.dtype, want) else 'int8 models only'})")
    if int16 and int16_reason(t, role):
        raise err(int16_reason(t, role))
    if t.quant is None or t.quant.is_per_channel or len(t.quant.scale) != 1:
        raise err(f"{role} {t.name!r} without per-tensor quantization")


# ---- converters: one per TFLite builtin op (keyword parameters = schema.fbs options) ---------
@converter("CONV_2D")
def conv_2d(b: Builder, input: int, filter: int, bias: int = -1, *, padding: int = SAME, stride_w: int = 0,
            stride_h: int = 0, fused_activation_function: int = 0, dilation_w_factor: int = 1,
            dilation_h_factor: int = 1) -> None:
    s16 = is_int16(b, input)  # 16x8: int16 in and out, int64 bias (tflite_16x8.py)
    x, w = b.act(input, int16=s16), b.weights(filter, 4, axis=0)
    cout, kh, kw, gin = w.shape
    cin = x.shape[-1] if x.shape else 0
    # grouped when the weights see fewer channels than the input (TFLM conv: groups = Cin / filter Cin)
    if len(x.shape) != 4 or min(gin, cout) < 1 or cin % gin or cout % (cin // gin):
        raise b.unsupported(f"input {list(x.shape)} with weights {list(w.shape)}")
    win = b.window(x, (kh, kw), (stride_h, stride_w), (dilation_h_factor, dilation_w_factor), padding)
    attrs = Conv2DAttrs(win, cin // gin, b.fused(fused_activation_function))
    if s16:
        b.emit(OpKind.CONV2D, [x, w, bias64(b, bias, cout, x, w)], attrs, b.act(b.op.outputs[0], "output", True))
        return check_weighted(b, 0, kh * kw * gin)
    b.emit(OpKind.CONV2D, [x, w, b.bias(bias, cout, x, w)], attrs)


@converter("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(b: Builder, input: int, filter: int, bias: int = -1, *, padding: int = SAME,
                      stride_w: int = 0, stride_h: int = 0, depth_multiplier: int = 0,
                      fused_activation_function: int = 0, dilation_w_factor: int = 1, dilation_h_factor: int = 1) -> None:
    s16 = is_int16(b, input)
    x, w = b.act(input, int16=s16), b.weights(filter, 4, axis=3)
    (one, kh, kw, cout), cin = w.shape, x.shape[-1]
    # TFLM passes depth_multiplier to the kernel as is; it must agree with the shapes.
    if len(x.shape) != 4 or one != 1 or cin * depth_multiplier != cout:
        raise b.unsupported(f"input {list(x.shape)}, weights {list(w.shape)}, depth_multiplier {depth_multiplier}")
    win = b.window(x, (kh, kw), (stride_h, stride_w), (dilation_h_factor, dilation_w_factor), padding)
    attrs = DepthwiseConv2DAttrs(win, depth_multiplier, b.fused(fused_activation_function))
    if s16:
        y = b.act(b.op.outputs[0], "output", True)
        b.emit(OpKind.DEPTHWISE_CONV2D, [x, w, bias64(b, bias, cout, x, w)], attrs, y)
        return check_weighted(b, 3, kh * kw)
    b.emit(OpKind.DEPTHWISE_CONV2D, [x, w, b.bias(bias, cout, x, w)], attrs)


@converter("FULLY_CONNECTED")
def fully_connected(b: Builder, input: int, weights: int, bias: int = -1, *,
                    fused_activation_function: int = 0, keep_num_dims: bool = False) -> None:
    s16 = is_int16(b, input)  # 16x8: symmetric weights (TFLM DCHECKs a zero point of 0)
    x, w = b.act(input, int16=s16), b.weights(weights, 2, axis=0, zero_point_ok=not s16)
    y = b.act(b.op.outputs[0], "output", s16)
    o, k = w.shape
    if x.size % k:
        raise b.unsupported(f"input {list(x.shape)} for weights {list(w.shape)}")
    # TFLM reads the input as [size / K, K] whatever its rank; keep_num_dims only shapes the output.
    if x.shape != (x.size // k, k):
        x = b.reshape(x, (x.size // k, k))
    attrs = FullyConnectedAttrs(b.fused(fused_activation_function))
    flat = y if y.shape == (x.shape[0], o) else b.fresh(f"{y.name}_2d", y, (x.shape[0], o))
    b.emit(OpKind.FULLY_CONNECTED, [x, w, bias64(b, bias, o, x, w) if s16 else b.bias(bias, o, x, w)], attrs, flat)
    if s16:
        check_weighted(b, 0, k)
    if flat is not y:
        b.reshape(flat, y.shape, y)


@converter("ADD")
def add(b: Builder, input1: int, input2: int, *, fused_activation_function: int = 0,
        pot_scale_int16: bool = True) -> None:  # pot_scale_int16 only matters for int16 ADD
    if is_int16(b, input1):  # 16x8: TFLM's int16 ADD takes the general path whatever pot_scale_int16 says
        return binary16(b, OpKind.ADD, input1, input2, fused_activation_function)
    x1, x2 = b.operand(input1, "input1"), b.operand(input2, "input2")
    b.emit(OpKind.ADD, [x1, x2], AddAttrs(b.fused(fused_activation_function)))


def _pool(b: Builder, kind: OpKind, input: int, padding: int, stride_w: int, stride_h: int,
          filter_width: int, filter_height: int, fused_activation_function: int) -> None:
    s16 = is_int16(b, input)  # 16x8: TFLM's int16 pooling has the int8 checks and arithmetic on int16
    x, y = b.act(input, int16=s16), b.act(b.op.outputs[0], "output", s16)
    # TFLM pooling_common.cc PoolingPrepare refuses int8 pooling whose output scale differs from the
    # input's by more than 1e-6 (a double compare of the float32 scales) or whose zero points differ:
    # TFLM computes nothing there, so there is no result to be bit-exact with (TFLite's own kernel
    # only DCHECKs and writes the raw int8 max / mean under the output's qparams). Within the 1e-6
    # TFLM pools the raw values and so does the IR op.
    if abs(x.quant.s - y.quant.s) > 1e-6 or x.quant.zp != y.quant.zp:
        raise b.unsupported(f"pooling from scale {x.quant.s}/zp {x.quant.zp} to {y.quant.s}/zp {y.quant.zp} "
                            "(TFLM refuses int8 pooling that requantizes)")
    if len(x.shape) != 4:
        raise b.unsupported(f"input {list(x.shape)} (needs NHWC)")
    win = b.window(x, (filter_height, filter_width), (stride_h, stride_w), (1, 1), padding)
    if s16 and kind == OpKind.AVG_POOL2D and filter_height * filter_width > MAX_TAPS_S16:
        raise b.unsupported(f"int16 average pool window {filter_height}x{filter_width} (TFLM's int32 sum may "
                            f"overflow beyond {MAX_TAPS_S16} cells)")
    b.emit(kind, [x], Pool2DAttrs(win, False, b.fused(fused_activation_function)), y)


@converter("AVERAGE_POOL_2D")
def average_pool_2d(b: Builder, input: int, *, padding: int = SAME, stride_w: int = 0, stride_h: int = 0,
                    filter_width: int = 0, filter_height: int = 0, fused_activation_function: int = 0) -> None:
    _pool(b, OpKind.AVG_POOL2D, input, padding, stride_w, stride_h, filter_width, filter_height,
          fused_activation_function)


@converter("MAX_POOL_2D")
def max_pool_2d(b: Builder, input: int, *, padding: int = SAME, stride_w: int = 0, stride_h: int = 0,
                filter_width: int = 0, filter_height: int = 0, fused_activation_function: int = 0) -> None:
    _pool(b, OpKind.MAX_POOL2D, input, padding, stride_w, stride_h, filter_width, filter_height,
          fused_activation_function)


@converter("RESHAPE")
def reshape(b: Builder, input: int, shape: int = -1, *, new_shape: Any = None) -> None:
    # The target is the output tensor's static shape in the file (shape input and new_shape agree
    # with it in a valid model). Bytes are copied as they are (TFLM memcpy): quantization unchanged.
    s16 = is_int16(b, input)  # a view: int16 bytes as they are
    x, y = b.act(input, int16=s16), b.act(b.op.outputs[0], "output", s16)
    b.reshape(x, y.shape, y)


@converter("SOFTMAX")
def softmax(b: Builder, input: int, *, beta: float = 0.0) -> None:
    if is_int16(b, input):  # 16x8: TFLM's int16 softmax
        return softmax16(b, input, float(beta))
    x, y = b.act(input), b.act(b.op.outputs[0], "output")
    # TFLM softmax_common.cc CalculateSoftmaxParams: int8 output must be zp -128, scale 1/256 (+-0.1%).
    if y.quant.zp != -128 or abs(y.quant.s - 1 / 256) > 0.001 / 256:
        raise b.unsupported(f"softmax output quantization {y.quant.s}/zp {y.quant.zp} (needs 1/256, -128)")
    try:
        softmax_params(x.quant.s, float(beta))
    except ValueError as e:
        raise b.unsupported(f"softmax parameters: {e}") from None
    b.emit(OpKind.SOFTMAX, [x], SoftmaxAttrs(float(beta)))


# ---- entry point -----------------------------------------------------------------------------
def load_tflite(path: str | Path) -> Graph:
    """Read a full-int8 .tflite model into an int8 Graph (NHWC, the file's own quantization).

    Raises InputError (missing or non-TFLite file, schema module not installed) and UnsupportedModel
    (listing every unsupported operator at once, by index, output tensor and op)."""
    path = Path(path)
    m, uint8_io = uint8_edges(read_tflite(path))
    b = Builder(path, m)
    errors = [Problem(b.label(op), op.name, UNKNOWN_OP) for op in m.ops if op.name not in CONVERTERS]
    for i in m.inputs:
        t = m.tensors[i]
        if t is None or t.is_const:
            errors.append(Problem(str(i), "graph input", f"of type {m.type_names[i]} (int8 activations only)"))
            continue
        b.tensors[t.name] = t
        if t.dtype == DType.FLOAT32 and all(op.name == "QUANTIZE" for op in m.ops if i in op.inputs):
            continue  # a float input quantized inside the model (QUANTIZE)
        try:
            _check_int8_per_tensor(t, "graph input", lambda what: UnsupportedModel(what), t.dtype == DType.INT16)
        except UnsupportedModel as e:
            errors.append(Problem(repr(t.name), "graph input", str(e).removeprefix(f"graph input {t.name!r} ")))
    failed: set[str] = set()  # outputs of operators that did not convert (already reported)
    for op in m.ops:
        try:
            if op.name in CONVERTERS:  # an unknown op is listed above; the ops after it still convert
                b.convert(op, CONVERTERS[op.name])
                continue
        except UnsupportedModel as e:  # the file declares every tensor, so later ops still convert
            errors.append(e.problem if isinstance(e, NodeUnsupported) else
                          Problem(b.label(op), op.name, str(e).removeprefix(f"{path}: ")))
        failed |= {m.tensors[o].name for o in op.outputs if o >= 0 and m.tensors[o]}
    defined = {m.tensors[i].name for i in m.inputs if m.tensors[i]} | {o for n in b.nodes for o in n.outputs} | failed
    for i in m.outputs:
        t = m.tensors[i]
        if t is None or t.name not in defined or t.dtype not in (DType.INT8, DType.INT16, DType.FLOAT32, DType.INT32):
            errors.append(Problem(repr(t.name) if t else str(i), "graph output",
                                  "not an int8 activation computed by the model"))
    if errors:
        raise summary_error(path, errors)
    return Graph(path.stem, tuple(b.nodes), b.tensors, tuple(m.tensors[i].name for i in m.inputs),
                 tuple(m.tensors[i].name for i in m.outputs), meta={"source": str(path), "format": "tflite",
                                                                    "input_layout": "NHWC",
                                                                    **({UINT8_IO: uint8_io} if uint8_io else {})})


from toolchain.frontend import converter_modules  # noqa: E402

converter_modules("tflite_ops")  # registers the converters of toolchain/frontend/tflite_ops*.py

__all__ = ["CONVERTERS", "load_tflite"]
