"""Quantized ONNX (QDQ: QuantizeLinear/DequantizeLinear around float ops; QLinearConv,
QLinearMatMul; ConvInteger/MatMulInteger requantized by a following QuantizeLinear) -> the float IR
of the model's core plus the model's own quantization, which `quantize.quantize(given=...)` keeps
(no re-calibration; int8 weights bit for bit, -128 included).

Stages: onnx_qdq_strip.strip (ONNX level: drop Q/DQ pairs, rewrite QLinear*/Integer ops into float
ops, record scales and zero points by ONNX name) -> the float converters of toolchain.frontend.onnx,
unchanged, on the float core -> map the recorded parameters onto IR tensor names.
QDQ-only rules: an AveragePool whose output grid differs from its input's (ORT averages in float
and requantizes; TFLite int8 pooling cannot) becomes a depthwise conv with weights 1 at scale 1/n;
an element-wise single-input op between two grids becomes onnxruntime's 256-entry table
(onnx_qdq_tables).
Opsets 10 to 21; int8 and uint8 (uint8 becomes int8: integers and zero point - 128); weights with a
zero point become symmetric where that is exact, else keep a per-tensor one (filter_offset).
Not here: the quantizer (quantize.given), onnxruntime comparisons (onnx_qdq_ort).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from quantize.given import resolve_given, same_qparams
from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx import CONVERTERS, input_shape
from toolchain.frontend.onnx_builder import Builder
from toolchain.frontend.onnx_canonical import canonical_onnx, opset_of, read_onnx
from toolchain.frontend.onnx_qdq_strip import QDQ_OPS, Stripped, elem_types, strip
from toolchain.frontend.onnx_qdq_tables import table_overrides
from toolchain.frontend.onnx_validate import DEFAULT_DOMAINS
from toolchain.frontend.unsupported import summary_error
from toolchain.io_dtypes import INPUT_QUANT_DTYPES, UINT8_IO
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.depthwise_conv2d import DepthwiseConv2DAttrs
from toolchain.ops.registry import OpKind

OPSETS = range(10, 22)
WEIGHT_AXIS: dict[str, Callable[[dict[str, Any]], int]] = {  # ONNX axis of a weight's output channels
    "Conv": lambda a: 0, "Gemm": lambda a: 0 if a.get("transB", 0) else 1, "MatMul": lambda a: 1}


@dataclass(frozen=True)
class QdqModel:
    """A quantized ONNX model as the compiler takes it: float core + the model's quantization."""

    graph: Graph                      # float IR, NHWC activations (as toolchain.frontend.onnx makes it)
    given: dict[str, QuantParams]     # IR activation -> its int8 grid in the model
    given_consts: dict[str, Tensor]   # IR weight / bias constant -> the model's grid (and int32 bias values)


class QdqBuilder(Builder):
    """The float Builder, plus the model's grids by ONNX name and the given constants by IR name."""

    def __init__(self, path: Path, opset: int, name: str, acts: dict[str, QuantParams], nhwc_io: bool = False) -> None:
        super().__init__(path, opset, name, nhwc_io)
        self.acts = acts
        self.ir_consts: dict[str, Tensor] = {}
        self.const_sources: dict[str, str] = {}  # IR constant -> the core constant it came from


OVERRIDES: dict[str, Callable[..., Any]] = {}


def _pool_override(op_type: str) -> None:
    float_fn = CONVERTERS[op_type]

    @functools.wraps(float_fn)  # same signature: the Builder reads the ONNX attributes from it
    def convert(b: QdqBuilder, *args: Any, **kwargs: Any) -> None:
        float_fn(b, *args, **kwargs)
        _requantizing_avg_pool(b)

    OVERRIDES[op_type] = convert


def _requantizing_avg_pool(b: QdqBuilder) -> None:
    """Replace the AveragePool just emitted by a depthwise conv (weights 1, scale 1/n, bias 0) when
    the model gives its output another grid than its input: one requantization of the window sum
    with multiplier s_in / (n s_out). Exact when every window divides by n: no padding, or padding
    counted (count_include_pad), and no ceil_mode window past the pads."""
    node: Node = b.nodes[-1]
    qx, qy = b.acts.get(b.node.input[0]), b.acts.get(b.node.output[0])
    if node.op != OpKind.AVG_POOL2D or qx is None or qy is None or same_qparams(qx, qy):
        return
    win = node.attrs.window
    _, h, w, c = b.shape(node.inputs[0])
    oh, ow = b.shape(node.outputs[0])[1:3]
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = win.kernel, win.stride, win.pads
    fits = (oh - 1) * sh + kh <= h + pt + pb and (ow - 1) * sw + kw <= w + pl + pr
    if not fits or (any(win.pads) and not node.attrs.count_include_pad):
        raise b.unsupported("AveragePool with another output grid than its input's and windows of different "
                            "sizes (padding not counted or ceil_mode)")
    b.nodes.pop()
    n = kh * kw
    wname = b.add_const("w", np.full((1, kh, kw, c), 1.0 / n, np.float32))
    bname = b.add_const("b", np.zeros(c, np.float32))
    b.emit(OpKind.DEPTHWISE_CONV2D, [node.inputs[0], wname, bname], DepthwiseConv2DAttrs(win, 1, node.attrs.act),
           nhwc=True)
    b.ir_consts[wname] = Tensor(wname, (1, kh, kw, c), DType.INT8, QuantParams.per_tensor(1.0 / n, 0))


_pool_override("AveragePool")
_pool_override("GlobalAveragePool")
OVERRIDES.update(table_overrides(CONVERTERS))  # Sigmoid, Tanh, LeakyRelu, ... between two grids: ORT's table


def is_quantized_onnx(path: str | Path) -> bool:
    """True for a readable, valid ONNX file with QuantizeLinear/DequantizeLinear/QLinear*/*Integer nodes
    of the default domain (an invalid file is False: load_onnx then reports it)."""
    try:
        model = read_onnx(path)  # cached: the frontend reads the same file next
    except InputError:  # not ONNX: load_onnx reports it
        return False
    return any(n.op_type in QDQ_OPS and n.domain in DEFAULT_DOMAINS for n in model.graph.node)


def _map_consts(b: QdqBuilder, node: Any, s: Stripped, first: int) -> None:
    """Attach the model's quantization to the IR constants the converter made from `node`'s inputs
    (position i of the ONNX node = position i of the IR node: Conv, Gemm, MatMul, binary ops)."""
    given = [(i, n) for i, n in enumerate(node.input) if n in s.weights]
    if not given:
        return
    out = b.vals.get(node.output[0])
    ir = next((n for n in b.nodes[first:] if out is not None and n.outputs[0] == out.name), None)
    if ir is not None and ir.op == OpKind.LOOKUP_TABLE:  # its constant operands are inside the table
        return
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    for i, name in given:
        if ir is None or i >= len(ir.inputs) or not b.tensors[ir.inputs[i]].is_const:
            raise b.unsupported(f"quantized constant {name!r} as input {i} (the model's quantization is kept for "
                                "weights, biases and constant operands only)")
        t, ir_t = s.weights[name], b.tensors[ir.inputs[i]]
        axis_of = WEIGHT_AXIS.get(node.op_type)
        if i == 1 and axis_of and t.quant.is_per_channel and t.quant.axis != axis_of(attrs) % len(t.shape):
            raise b.unsupported(f"weights {name!r} quantized per axis {t.quant.axis} (not their output channels)")
        data = None
        if t.dtype == DType.INT32:
            try:
                data = np.broadcast_to(t.data.reshape(-1), ir_t.shape).copy()
            except ValueError:
                raise b.unsupported(f"bias {name!r} of shape {list(t.shape)}") from None
        b.ir_consts[ir.inputs[i]] = Tensor(ir.inputs[i], ir_t.shape, t.dtype, t.quant, data)
        b.const_sources[ir.inputs[i]] = name


def _weight_names(s: Stripped) -> list[str]:
    """The constants that are weights (input 1 of Conv / Gemm / MatMul) of the float core."""
    return list(dict.fromkeys(n.input[1] for n in s.nodes if n.op_type in WEIGHT_AXIS and len(n.input) > 1))


def _as_written(s: Stripped, name: str) -> str:
    """Weights as the file names them, with their zero point(s) as written (uint8 not shifted)."""
    source, zp = s.weight_source.get(name, (name, np.asarray(s.weights[name].quant.zero_point, np.int8)))
    zps = np.asarray(zp).reshape(-1)
    shown = ", ".join(str(int(z)) for z in zps[:3]) + (", …" if zps.size > 3 else "")
    zp_text = f"zero point {shown}" if zps.size == 1 else f"zero points {shown} (per channel)"
    return f"{source!r} ({zp_text}, {zps.dtype})"


def _symmetric_weights(path: Path, s: Stripped) -> None:
    """Weights with zero points, as onnxruntime's uint8 weights have them: where every w - zw lies in
    [-128, 127] they become int8 weights with zero point 0, exactly (same real values, no run-time
    cost); the others keep their zero point (the kernels' filter_offset: one for every channel).
    Per-channel zero points that differ and whose w - zw leave int8 are refused, in one line naming
    the file's tensor as written."""
    bad = []
    for name in _weight_names(s):
        t = s.weights.get(name)
        if t is None or t.dtype != DType.INT8 or not any(z != 0 for z in t.quant.zero_point):
            continue
        zp = np.asarray(t.quant.zero_point, np.int64)
        if t.quant.is_per_channel:
            zp = zp.reshape([-1 if i == t.quant.axis else 1 for i in range(t.data.ndim)])
        d = t.data.astype(np.int64) - zp
        if d.min(initial=0) >= -128 and d.max(initial=0) <= 127:
            qp = QuantParams(t.quant.scale, (0,) * len(t.quant.scale), t.quant.axis)
            s.weights[name] = Tensor(t.name, t.shape, DType.INT8, qp, d.astype(np.int8))
        elif len(set(t.quant.zero_point)) > 1:
            bad.append(name)
    if bad:
        n = len(bad)
        raise UnsupportedModel(
            f"{path}: {n} weight tensor{'s' if n != 1 else ''} with different zero points per channel and values beyond "
            f"int8 of them (e.g. {_as_written(s, bad[0])}): not supported; quantize weights symmetric "
            "(onnxruntime: weight_type=QInt8) or per tensor")


def load_qdq(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
             nhwc_io: bool = False) -> QdqModel:
    """Read a quantized ONNX model (QDQ or QLinear*, opset 10-21) into its float IR and the model's
    own quantization. Graph inputs are float32 in the IR whatever their ONNX type (an int8 input
    gets the grid of its first reader); graph outputs are the float twins of the model's outputs.
    A float32 input quantized by the model records its QuantizeLinear's dtype ("uint8" / "int8") in
    graph.meta[io_dtypes.INPUT_QUANT_DTYPES] (the DATA dtype rule). nhwc_io (YAML `io_layout: NHWC`):
    4-D inputs and outputs NHWC (onnx_builder.Builder).

    Raises InputError (missing / unreadable file, dynamic shapes without input_shapes, input types
    other than float32 / int8 / uint8) and UnsupportedModel (every unsupported node at once)."""
    path = Path(path)
    model = canonical_onnx(path, input_shapes).model  # Q/DQ nodes kept; Constants, Identity, shapes folded
    opset = opset_of(model)
    if opset not in OPSETS:
        raise InputError(f"{path}: opset {opset} (quantized ONNX models need opset 10 to 21)")
    s = strip(model)
    _symmetric_weights(path, s)
    converters = {**CONVERTERS, **OVERRIDES}
    b = QdqBuilder(path, opset, model.graph.name or path.stem, s.acts, nhwc_io)
    b.model, b.errors, b.index = model, list(s.errors), dict(s.index)
    b.check_statically(s.nodes, converters)                           # every node with an unknown op or attribute
    types = elem_types(model)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    unknown = sorted(set(input_shapes or {}) - set(names))
    if unknown:
        raise InputError(f"{path}: input_shapes names {unknown}, but the model's inputs are {names}")
    b.consts.update(s.consts)
    for inp in model.graph.input:
        if inp.name in names:
            if types[inp.name] not in ("float32", "int8", "uint8"):
                raise InputError(f"{path}: input {inp.name!r} of type {types[inp.name]} (float32, int8 or uint8)")
            b.add_input(inp.name, input_shape(path, inp, (input_shapes or {}).get(inp.name)), DType.FLOAT32)
    for node in s.nodes:  # unsupported values, dtypes and shapes too: all of them, then one error
        b.convert(node, converters.get(node.op_type), functools.partial(_map_consts, b, node, s))
    if b.errors:
        raise summary_error(path, b.errors)
    outs = [s.int_of[o.name][0] if o.name in s.int_of else s.alias.get(o.name, o.name) for o in model.graph.output]
    graph = b.finish(outs)
    given = {b.vals[k].name: qp for k, qp in s.acts.items() if k in b.vals}
    given = resolve_given(graph, given)  # an input whose QuantizeLinear sits behind Transpose / Reshape: that grid
    missing = [i for i in graph.inputs if i not in given]
    if missing:
        raise UnsupportedModel(f"{path}: graph input {missing[0]!r} reaches no QuantizeLinear through data movement "
                               "(Transpose / Reshape / Flatten / Squeeze): its int8 grid is not in the model, and a "
                               "quantized model is not recalibrated; quantize that input in the model")
    sources = {ir: _as_written(s, name) for ir, name in b.const_sources.items() if name in s.weight_source}
    onnx_io = [*zip(graph.inputs, names, strict=True), *zip(graph.outputs, (o.name for o in model.graph.output),
                                                                strict=True)]
    uint8_io = tuple(ir for ir, name in onnx_io if types[name] == "uint8")  # the API keeps them uint8
    q_dtypes = resolve_given(graph, {b.vals[k].name: d for k, d in s.act_dtypes.items() if k in b.vals})
    input_q = {ir: q_dtypes[ir] for ir, name in zip(graph.inputs, names, strict=True)
               if types[name] == "float32" and q_dtypes.get(ir) in ("int8", "uint8")}  # float inputs: their Q's dtype
    meta = {**graph.meta, "format": "onnx-qdq", "onnx_io_types": types,
            "onnx_outputs": tuple(o.name for o in model.graph.output), "weight_sources": sources,
            **({UINT8_IO: uint8_io} if uint8_io else {}), **({INPUT_QUANT_DTYPES: input_q} if input_q else {})}
    return QdqModel(replace(graph, meta=meta), given, b.ir_consts)


__all__ = ["OVERRIDES", "QdqModel", "is_quantized_onnx", "load_qdq"]
