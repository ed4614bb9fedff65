"""`io_layout: NHWC` on the Python side: which graph inputs / outputs the generated API holds NHWC
where the ONNX file has NCHW (graph.meta NHWC_IO, set by toolchain.frontend.onnx_builder), and the
moves between the two for the outside references (onnxruntime is fed and answers in the file's
layout). Values here are stacked samples, [S, *tensor shape].

Not here: building the graph (the frontend), the DATA layout rule (toolchain.data).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph

NHWC_IO = "nhwc_io"  # graph.meta key: graph inputs / outputs that are NHWC where the ONNX file has NCHW


def is_nhwc_io(graph: Graph, name: str) -> bool:
    """Whether graph input / output `name` is NHWC in our API and NCHW in the model file."""
    return name in graph.meta.get(NHWC_IO, ())


def to_file_layout(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """Samples [S, N, H, W, C] of an NHWC_IO tensor -> [S, N, C, H, W] (the file's order); others as they are."""
    return np.ascontiguousarray(np.asarray(values).transpose(0, 1, 4, 2, 3)) if is_nhwc_io(graph, name) else values


def from_file_layout(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """Samples [S, N, C, H, W] in the file's order -> [S, N, H, W, C] for an NHWC_IO tensor; others as they are."""
    return np.ascontiguousarray(np.asarray(values).transpose(0, 1, 3, 4, 2)) if is_nhwc_io(graph, name) else values

