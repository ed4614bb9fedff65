"""The model's own element type at the edges of the int8 graph: a uint8 model input or output (a
.tflite converted with inference_input_type / inference_output_type = tf.uint8, whose QUANTIZE
uint8 -> int8 / int8 -> uint8 sit at the edges; a quantized ONNX model with uint8 graph I/O) is an
int8 tensor inside the compiler, integers and zero point shifted by -128 (the real values and the
scale are the same: real = s (u - z) = s ((u - 128) - (z - 128))), and uint8 for everything that
faces the user: the generated API (OUT/lib/model.h, model.c converts at the copy in and out), the
harness' inputs.bin / outputs.bin, the DATA dtype rule and the reference runtimes' feeds.

Also the quantized dtype of a float32 model input that the model quantizes itself (a QDQ ONNX
model's input QuantizeLinear to uint8 or int8, graph.meta["input_quant_dtypes"]): int8 inside like
any other, but uint8 data for it are the model's own quantized values (the DATA dtype rule,
`data_dtype_rule`, applied by toolchain.data).

Owns the list of such edges (graph.meta["uint8_io"], set by the frontends), the conversions and the
DATA dtype rule. Not here: the frontends that recognise them (tflite.py, onnx_qdq.py), the templates.
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, QuantParams

UINT8_IO = "uint8_io"  # graph.meta key: names of graph inputs / outputs the model declares uint8
INPUT_QUANT_DTYPES = "input_quant_dtypes"  # graph.meta key: float32 model input -> its QuantizeLinear's dtype
QUANTIZED_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))  # int16: 16x8 inputs


def is_uint8_edge(graph: Graph, name: str) -> bool:
    """Whether graph input / output `name` is uint8 in the model (int8 in the graph)."""
    return name in graph.meta.get(UINT8_IO, ())


def io_dtype(graph: Graph, name: str) -> np.dtype:
    """The numpy dtype of graph input / output `name` as the model declares it (uint8, int8,
    float32, int32)."""
    return np.dtype(np.uint8) if is_uint8_edge(graph, name) else graph.t(name).dtype.np


def io_ctype(graph: Graph, name: str) -> str:
    """The C element type of `name` in the generated API (uint8_t for a uint8 edge)."""
    return "uint8_t" if is_uint8_edge(graph, name) else graph.t(name).dtype.c


def io_qparams(graph: Graph, name: str) -> QuantParams | None:
    """`name`'s quantization as the model declares it: a uint8 edge's zero point is the int8 one + 128."""
    q = graph.t(name).quant
    if q is None or not is_uint8_edge(graph, name):
        return q
    return QuantParams(q.scale, tuple(z + 128 for z in q.zero_point), q.axis)


def to_model_dtype(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """int8 values of `name` (as the graph holds them) -> the model's dtype (uint8 edge: + 128)."""
    if is_uint8_edge(graph, name):
        return (np.asarray(values, np.int16) + 128).astype(np.uint8)
    return np.asarray(values, graph.t(name).dtype.np)


def from_model_dtype(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """Values of `name` in the model's dtype -> as the graph holds them (uint8 edge: - 128, int8)."""
    if is_uint8_edge(graph, name):
        return (np.asarray(values, np.int16) - 128).astype(np.int8)
    return np.asarray(values)


def quantized_dtype(graph: Graph, name: str) -> np.dtype | None:
    """The dtype of the model's own quantized values of graph input `name` of the int8 graph: uint8
    for a uint8 edge or a float32 input the model quantizes to uint8 (INPUT_QUANT_DTYPES), int8 for
    an int8 input (the model's, or ours for a float model); None for an input that stays float32."""
    declared = graph.meta.get(INPUT_QUANT_DTYPES, {}).get(name)
    dtype = np.dtype(declared) if declared else io_dtype(graph, name)
    return dtype if dtype in QUANTIZED_DTYPES else None


def quantized_qparams(graph: Graph, name: str) -> QuantParams | None:
    """`name`'s quantization on its quantized_dtype's grid (uint8: the int8 zero point + 128)."""
    q = graph.t(name).quant
    if q is None or quantized_dtype(graph, name) != np.uint8:
        return q
    return QuantParams(q.scale, tuple(z + 128 for z in q.zero_point), q.axis)


def data_dtype_rule(graph: Graph, name: str, dtype: np.dtype, images: bool = False) -> str:
    """What DATA of `dtype` for graph input `name` of the int8 graph are (README, DATA): "quantized"
    when `dtype` is the input's quantized_dtype (the model's own values); "refused" for any other
    integer dtype when the model's input is float32 and the model quantizes it itself
    (INPUT_QUANT_DTYPES): neither its quantized values nor real values it would read; else "real"
    (floats; other dtypes for other inputs, e.g. uint8 images for an int8 .tflite). Decoded `images`
    (uint8 pixels) for a float32 input the model quantizes are real values, through the preprocess block."""
    dtype, float_input = np.dtype(dtype), name in graph.meta.get(INPUT_QUANT_DTYPES, {})
    if images and float_input:  # pixels for a float input: real values (through the preprocess block)
        return "real"
    if dtype == quantized_dtype(graph, name) and graph.t(name).quant is not None:
        return "quantized"
    return "refused" if float_input and dtype.kind in "iu" else "real"
