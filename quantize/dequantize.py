"""The float twin of an int8 graph: constants dequantized, activations float32, same ops.

Used as the float reference of an imported int8 model (.tflite), which has no float original:
its top-1 agreement and SQNR are measured against this graph (weights dequantized, float math).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import DType, Graph


def dequantize_graph(graph: Graph) -> Graph:
    """int8/int32 constants -> float32 by their QuantParams; every tensor float32, no quantization."""
    tensors = {}
    for name, t in graph.tensors.items():
        data = t.data
        if data is not None and t.quant is not None and t.dtype != DType.FLOAT32:
            data = t.quant.dequantize(data.astype(np.int64))
        tensors[name] = replace(t, dtype=DType.FLOAT32, quant=None, data=data)
    return graph.with_nodes(graph.nodes, tensors, meta={**graph.meta, "dequantized": True})
