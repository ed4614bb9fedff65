"""Post-training INT8 quantization of a float Graph (TFLite int8 spec): calibrate activation
ranges on real data, then give every activation per-tensor asymmetric int8 parameters and let
each op convert its constants (per-channel symmetric int8 weights, int32 bias).

A model that is already quantized (ONNX QDQ / QLinear*) passes its own parameters as `given`
(activations) and `given_consts` (weights, biases): those are kept, not re-calibrated, and
calibration data is then only needed for tensors the model left unquantized (quantize.given).

Stages: calibrate.observe_ranges -> scheme.activation_qparams (or the given parameters) ->
op.output_qparams -> op.quantize_constants (-> given.apply_given_consts) -> bias_fit.fit_bias (an int32
bias made from a real one never saturates, nor wraps the accumulator). Not here: rounding of
the kernels (toolchain.ops.fixed_point).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from quantize.bias_fit import fit_bias
from quantize.calibrate import observe_ranges
from quantize.given import apply_given_consts, given_output, resolve_given, same_qparams, weights_with_int8_min
from quantize.scheme import activation_qparams
from toolchain.blas import one_blas_thread
from toolchain.errors import UnsupportedModel
from toolchain.ir import DType, Graph, QuantParams, Tensor
from toolchain.notes import GIVEN_TENSORS
from toolchain.ops.registry import opdef


def quantize(graph: Graph, calibration: Mapping[str, np.ndarray] | None, method: str = "mse", *,
             given: Mapping[str, QuantParams] | None = None,
             given_consts: Mapping[str, Tensor] | None = None) -> Graph:
    """float Graph + calibration inputs (name -> [S, *shape] float32, or None) -> int8 Graph;
    `method` is the range observer (quantize.observers.METHODS: minmax, percentile, kl, mse) or
    "auto" (quantize.auto: per-tensor methods, bias correction, cross-layer equalisation, chosen
    out of sample inside the calibration data).

    given: tensor name -> the model's own per-tensor QuantParams (used instead of calibration);
    given_consts: weight/bias constant name -> Tensor with the model's quantization (see
    quantize.given); when given, every int8 weight must come from it. Without calibration every
    activation needs given parameters or an op that forces its own.

    Raises UnsupportedModel when an op has no int8 kernel (e.g. a BatchNorm that could not be
    folded), a tensor has no quantization, or an op cannot produce the given output quantization;
    ValueError when the calibration data does not fit the inputs.
    """
    where = graph.meta.get("source", graph.name)
    for node in graph.nodes:
        if not opdef(node).variants and not opdef(node).is_view:
            raise UnsupportedModel(f"{where}: node {node.source or node.name} "
                                   f"({node.op.value}): no int8 kernel; it could not be folded into a neighbour")
    if calibration is None and given is None:
        raise ValueError("quantize needs calibration data or the model's own quantization (given)")
    with one_blas_thread():  # calibration's float products (toolchain.blas)
        return _quantize(graph, calibration, method, given, given_consts)


def _quantize(graph: Graph, calibration: Mapping[str, np.ndarray] | None, method: str,
              given: Mapping[str, QuantParams] | None, given_consts: Mapping[str, Tensor] | None) -> Graph:
    if method == "auto" and calibration is not None and given is None:
        from quantize.auto import auto_quantize  # the method search (it quantizes candidate graphs itself)
        return auto_quantize(graph, calibration)
    ranges = observe_ranges(graph, calibration, method) if calibration is not None else {}
    g = quantize_ranges(graph, ranges, given=given, given_consts=given_consts)
    samples = len(next(iter(calibration.values()))) if calibration else 0
    meta = {**g.meta, "calibration_method": method if calibration else None, "calibration_samples": samples}
    return replace(g, meta=meta)


def quantize_ranges(graph: Graph, ranges: Mapping[str, tuple[float, float]], *,
                    given: Mapping[str, QuantParams] | None = None,
                    given_consts: Mapping[str, Tensor] | None = None) -> Graph:
    """quantize() with the activation ranges already chosen (tensor name -> (lo, hi) real range);
    the same errors. Used by quantize() and by quantize.auto for its candidate graphs."""
    where = graph.meta.get("source", graph.name)
    fixed = resolve_given(graph, given or {})

    def chosen(name: str) -> QuantParams | None:
        return fixed.get(name) or (activation_qparams(*ranges[name]) if name in ranges else None)

    tensors = dict(graph.tensors)
    for name in graph.inputs:
        qp = chosen(name)
        if qp is None:
            raise UnsupportedModel(f"{where}: graph input {name!r} has no quantization in the model; pass calibration data")
        tensors[name] = replace(tensors[name], dtype=DType.INT8, quant=qp)
    g = graph.with_nodes(graph.nodes, tensors)
    for node in g.nodes:
        out = node.outputs[0]
        qp = opdef(node).output_qparams(node, g, chosen(out))
        if qp is None:
            raise UnsupportedModel(f"{where}: node {node.source or node.name} ({node.op.value}): output {out!r} has "
                                   "no quantization in the model (no QuantizeLinear after it); pass calibration data")
        if out in fixed and not same_qparams(fixed[out], qp):  # the model's grid wins (quantize.given)
            g, node = given_output(node, g, fixed[out], qp)
        else:
            g = g.with_tensor(replace(g.t(out), dtype=DType.INT8, quant=qp))
        g = opdef(node).quantize_constants(node, g)
        if given_consts is not None:
            g = apply_given_consts(node, graph, g, given_consts)
        if not _own_int32_bias(node, given_consts):  # a model's own int32 bias is kept (checked in the pipeline)
            g = fit_bias(node, g, graph)
    meta = dict(g.meta)
    if given is not None:
        meta["given_quantization"] = True
        meta[GIVEN_TENSORS] = tuple(sorted(fixed))  # the tensors the model itself quantizes (profiler.numerics)
        meta["weights_with_int8_min"] = weights_with_int8_min(g)
    return replace(g, meta=meta)


def _own_int32_bias(node, given_consts: Mapping[str, Tensor] | None) -> bool:
    """True when the node's bias operand is the model's own int32 bias (kept, not refitted)."""
    if given_consts is None or len(node.inputs) < 3 or not node.inputs[2]:
        return False
    own = given_consts.get(node.inputs[2])
    return own is not None and own.data is not None and own.dtype == DType.INT32
