"""set_io_dtype: the element type of the int8 graph's inputs and outputs in the generated API (YAML
`io_dtype`), so that firmware gets the I/O it wants and the library does no float work it does not need.

- int8 / uint8: a float32 input that the model quantizes first (TFLite QUANTIZE: a float-I/O .tflite)
  becomes an int8 input with that Quantize's scale and zero point, and the Quantize is dropped; a
  float32 output written by a final Dequantize becomes that Dequantize's int8 input (the Dequantize is
  dropped). The library then has no floating point at all; the host quantizes the verification data
  with the dropped Quantize's own arithmetic (toolchain.data.quantize_inputs: TFLM's float32 division,
  so TFLM on the original file stays the oracle). uint8 then moves every quantized edge to uint8
  (toolchain.io_dtypes: the -128 shift at the copy in and out), int8 back from uint8.
- float32: an int8 input / output of a model whose file declares it float32 (a float ONNX model,
  quantized by edgecc) gets a Quantize / Dequantize inside the library (single precision,
  ops/quantize_ops.py); float edges stay float.

Inputs keep their names (DATA keys are input names); outputs keep their positions. graph.meta
DEFAULT_IO_DTYPES records, per changed edge, the dtype it has without io_dtype (for a .tflite: the
file's own, in which TFLM is fed: toolchain.io_dtypes.to_default). Not here: what a dtype means for
DATA (toolchain.io_dtypes, toolchain.data), the kernels.
"""
from __future__ import annotations

from dataclasses import replace

from toolchain.errors import InputError
from toolchain.io_dtypes import DEFAULT_IO_DTYPES, UINT8_IO, default_dtype, io_dtype
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.quantize_ops import QuantizeAttrs
from toolchain.ops.registry import OpKind

CHOICES = ("int8", "uint8", "float32")


def set_io_dtype(graph: Graph, dtype: str | None, where: str = "configuration") -> Graph:
    """`graph` (int8) with its quantized inputs and outputs in `dtype` (None: unchanged).

    Raises InputError naming `where` (the YAML) and the tensor when an edge cannot take `dtype`: an
    int16 (16x8) edge, a float edge not quantized by one Quantize / Dequantize, float32 asked of a
    quantized ONNX model or of an edge the model file itself declares int8 / uint8."""
    if dtype is None:
        return graph
    if dtype not in CHOICES:
        raise ValueError(f"io_dtype {dtype!r}")
    default = {n: str(default_dtype(graph, n)) for n in (*graph.inputs, *graph.outputs)}  # kept if set twice
    for name in graph.inputs:
        graph = _input(graph, name, dtype, where)
    outs = []
    for name in graph.outputs:
        graph, new = _output(graph, name, dtype, where)
        outs.append(new)
        default[new] = default[name]
    graph = graph.with_nodes(graph.nodes, outputs=tuple(outs))
    edges = (*graph.inputs, *graph.outputs)
    uint8 = tuple(n for n in edges if dtype == "uint8" and graph.t(n).dtype == DType.INT8 and graph.t(n).quant)
    changed = {n: default[n] for n in edges if default[n] != _api_dtype(graph, n, uint8)}
    meta = {k: v for k, v in graph.meta.items() if k not in (UINT8_IO, DEFAULT_IO_DTYPES)}
    return replace(graph, meta={**meta, **({UINT8_IO: uint8} if uint8 else {}),
                                **({DEFAULT_IO_DTYPES: changed} if changed else {})})


def _api_dtype(graph: Graph, name: str, uint8: tuple[str, ...]) -> str:
    return "uint8" if name in uint8 else graph.t(name).dtype.value


def _refuse(where: str, what: str, name: str, why: str, todo: str) -> InputError:
    return InputError(f"{where}: io_dtype: {what}: {name!r} {why}; {todo}")


def _input(graph: Graph, name: str, dtype: str, where: str) -> Graph:
    t = graph.t(name)
    if t.dtype == DType.FLOAT32 and dtype != "float32":  # fold the model's Quantize to the host
        users = graph.consumers(name)
        q = users[0] if len(users) == 1 and users[0].op == OpKind.QUANTIZE else None
        out = graph.t(q.outputs[0]) if q else None
        if out is None or out.dtype != DType.INT8 or out.quant is None or out.quant.is_per_channel:
            why = "is an int16 (16x8) input" if out is not None and out.dtype == DType.INT16 else \
                "is a float32 input not quantized to int8 by one Quantize"
            raise _refuse(where, dtype, name, why, "remove `io_dtype` to keep it float32")
        graph = graph.with_nodes([n for n in graph.nodes if n is not q]).rename_uses(q.outputs[0], name)
        return graph.with_tensor(Tensor(name, t.shape, DType.INT8, out.quant))
    if t.dtype == DType.INT8 and dtype == "float32":  # the library quantizes (single precision)
        _float_allowed(graph, name, where)
        q_name = fresh_name(graph, f"{name}_quantized")
        graph = graph.rename_uses(name, q_name)
        node = Node(q_name, OpKind.QUANTIZE, (name,), (q_name,), QuantizeAttrs(), source="io_dtype: float32")
        tensors = {**graph.tensors, q_name: replace(t, name=q_name), name: Tensor(name, t.shape, DType.FLOAT32)}
        return graph.with_nodes([node, *graph.nodes], tensors)
    if t.dtype == DType.INT16:  # 16x8 (a .tflite): int8 / uint8 cannot hold it, float32 is refused above
        if dtype == "float32":
            _float_allowed(graph, name, where)
        raise _refuse(where, dtype, name, "is an int16 (16x8) input", "remove `io_dtype`")
    return graph  # already dtype, or not quantized (int32 indices)


def _output(graph: Graph, name: str, dtype: str, where: str) -> tuple[Graph, str]:
    """(graph, the output's new name) for output `name`."""
    t = graph.t(name)
    if t.dtype == DType.FLOAT32 and dtype != "float32":  # fold the model's Dequantize to the host
        d = graph.producer(name)
        src = graph.t(d.inputs[0]) if d is not None and d.op == OpKind.DEQUANTIZE else None
        if src is None or src.dtype != DType.INT8 or src.quant is None or src.quant.is_per_channel \
                or src.name in graph.outputs or graph.consumers(name):
            why = "is an int16 (16x8) output" if src is not None and src.dtype == DType.INT16 else \
                "is a float32 output not made by one Dequantize of an int8 tensor"
            raise _refuse(where, dtype, name, why, "remove `io_dtype` to keep it float32")
        return graph.with_nodes([n for n in graph.nodes if n is not d]), src.name
    if t.dtype == DType.INT8 and dtype == "float32":  # the library dequantizes (single precision)
        _float_allowed(graph, name, where)
        f_name = fresh_name(graph, f"{name}_float")
        node = Node(f_name, OpKind.DEQUANTIZE, (name,), (f_name,), QuantizeAttrs(), source="io_dtype: float32")
        tensors = {**graph.tensors, f_name: Tensor(f_name, t.shape, DType.FLOAT32)}
        return graph.with_nodes([*graph.nodes, node], tensors), f_name
    if t.dtype == DType.INT16:
        if dtype == "float32":
            _float_allowed(graph, name, where)
        raise _refuse(where, dtype, name, "is an int16 (16x8) output", "remove `io_dtype`")
    return graph, name


def _float_allowed(graph: Graph, name: str, where: str) -> None:
    """float32 for a quantized edge: only where the model file has float32 there and edgecc chose the
    grid (a float ONNX model); a quantized model's own edges stay quantized."""
    if graph.meta.get("format") == "onnx-qdq":
        raise InputError(f"{where}: io_dtype: float32 is not available for a quantized ONNX model ({name!r} is "
                         "quantized on the host on the model's own QuantizeLinear grid); use int8 or uint8, or "
                         "remove `io_dtype`")
    if graph.meta.get("format") != "onnx":
        raise _refuse(where, "float32", name, f"is {io_dtype(graph, name)} in the model file (the library adds "
                      "no float Quantize / Dequantize to it)", "quantize on the host with the model.h scale and "
                      "zero point, or remove `io_dtype`")
