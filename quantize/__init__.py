"""Post-training INT8 quantization of a float Graph (TFLite int8 spec): calibrate activation
ranges on real data, then give every activation per-tensor asymmetric int8 parameters and let
each op convert its constants (per-channel symmetric int8 weights, int32 bias).

Stages: calibrate.observe_ranges -> scheme.activation_qparams -> op.output_qparams ->
op.quantize_constants. Not here: rounding of the kernels (toolchain.ops.fixed_point).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from quantize.calibrate import observe_ranges
from quantize.scheme import activation_qparams
from toolchain.errors import UnsupportedModel
from toolchain.ir import DType, Graph
from toolchain.ops.registry import opdef


def quantize(graph: Graph, calibration: Mapping[str, np.ndarray], method: str = "mse") -> Graph:
    """float Graph + calibration inputs (name -> [S, *shape] float32) -> int8 Graph; `method` is
    the range observer ("mse" or "minmax", see quantize.observers).

    Raises UnsupportedModel when an op has no int8 kernel (e.g. a BatchNorm that could not be
    folded) and ValueError when the calibration data does not fit the inputs.
    """
    for node in graph.nodes:
        if not opdef(node).variants and not opdef(node).is_view:
            raise UnsupportedModel(f"{graph.meta.get('source', graph.name)}: node {node.source or node.name} "
                                   f"({node.op.value}): no int8 kernel; it could not be folded into a neighbour")
    ranges = observe_ranges(graph, calibration, method)
    tensors = dict(graph.tensors)
    for name in graph.inputs:
        tensors[name] = replace(tensors[name], dtype=DType.INT8, quant=activation_qparams(*ranges[name]))
    g = graph.with_nodes(graph.nodes, tensors)
    for node in g.nodes:
        out = node.outputs[0]
        qp = opdef(node).output_qparams(node, g, activation_qparams(*ranges[out]))
        g = g.with_tensor(replace(g.t(out), dtype=DType.INT8, quant=qp))
        g = opdef(node).quantize_constants(node, g)
    return replace(g, meta={**g.meta, "calibration_method": method,
                            "calibration_samples": len(next(iter(calibration.values())))})
