"""Post-training quantization of a float Graph: calibrate activation ranges on real data, then give
every activation per-tensor asymmetric int8 parameters (TFLite int8 spec) and let each op convert its
constants (per-channel symmetric int8 weights, int32 bias); with `precision` int16 / auto the ops
chosen for 16x8 get symmetric int16 activations and int64 biases instead (TFLite's 16x8 spec:
quantize.precision; auto's choice: quantize.precision_search), joined to the int8 ones by REQUANTIZE.

A model that is already quantized (ONNX QDQ / QLinear*) passes its own parameters as `given`
(activations) and `given_consts` (weights, biases): those are kept, not re-calibrated, and
calibration data is then only needed for tensors the model left unquantized (quantize.given).

Stages: auto.calibrated (the observers and the recipe) -> scheme.activation_qparams /
precision.int16_qparams (or the given parameters) -> op.output_qparams -> op.quantize_constants (->
given.apply_given_consts) -> bias_fit.fit_bias (an int32 bias made from a real one never saturates,
nor wraps the accumulator) or precision.make_bias64 (16x8). Not here: rounding of the kernels
(toolchain.ops.fixed_point).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from quantize.auto import calibrated
from quantize.bias_fit import fit_bias
from quantize.calibrate import observe_ranges
from quantize.given import apply_given_consts, given_output, resolve_given, same_qparams, weights_with_int8_min
from quantize.precision import (META as PRECISION_META, PRECISIONS, Int16Unfit, check_s16,
                                exact_on_grid, int16_inputs, int16_qparams, make_bias64, precision_meta, ranges_for,
                                with_boundaries)
from quantize.scheme import activation_qparams
from toolchain.blas import one_blas_thread
from toolchain.errors import UnsupportedModel
from toolchain.ir import DType, Graph, QuantParams, Tensor
from toolchain.notes import GIVEN_TENSORS, KEPT_INT8, NOTES_KEY
from toolchain.ops.registry import opdef


def quantize(graph: Graph, calibration: Mapping[str, np.ndarray] | None, method: str = "mse", *,
             given: Mapping[str, QuantParams] | None = None,
             given_consts: Mapping[str, Tensor] | None = None, precision: str = "int8",
             search: Any = None) -> Graph:
    """float Graph + calibration inputs (name -> [S, *shape] float32, or None) -> quantized Graph;
    `method` is the range observer (quantize.observers.METHODS: minmax, percentile, kl, mse) or
    "auto" (quantize.auto: per-tensor methods, bias correction, cross-layer equalisation, chosen
    out of sample inside the calibration data).

    precision: "int8" (every activation int8), "int16" (every op with a 16x8 kernel in 16x8, the
    others int8: quantize.precision) or "auto" (quantize.precision_search, with `search`, a
    precision_search.Search holding the target, the budgets and the measuring functions).
    graph.meta["precision"] of the result records the choice (precision.precision_meta).

    given: tensor name -> the model's own per-tensor QuantParams (used instead of calibration);
    given_consts: weight/bias constant name -> Tensor with the model's quantization (see
    quantize.given); when given, every int8 weight must come from it. Without calibration every
    activation needs given parameters or an op that forces its own. int16 / auto need calibration
    data and no given quantization.

    Raises UnsupportedModel when an op has no int8 kernel (e.g. a BatchNorm that could not be
    folded), a tensor has no quantization, or an op cannot produce the given output quantization;
    ValueError when the calibration data does not fit the inputs, or for an unknown precision.
    """
    where = graph.meta.get("source", graph.name)
    for node in graph.nodes:
        if not opdef(node).variants and not opdef(node).is_view:
            raise UnsupportedModel(f"{where}: node {node.source or node.name} "
                                   f"({node.op.value}): no int8 kernel; it could not be folded into a neighbour")
    if calibration is None and given is None:
        raise ValueError("quantize needs calibration data or the model's own quantization (given)")
    with one_blas_thread():  # calibration's float products (toolchain.blas)
        return _quantize(graph, calibration, method, given, given_consts, precision, search)


def _quantize(graph: Graph, calibration: Mapping[str, np.ndarray] | None, method: str,
              given: Mapping[str, QuantParams] | None, given_consts: Mapping[str, Tensor] | None,
              precision: str, search: Any) -> Graph:
    where = graph.meta.get("source", graph.name)
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {PRECISIONS}")
    if precision != "int8" and (calibration is None or given is not None):
        raise UnsupportedModel(f"{where}: precision {precision} applies to float models with calibration data "
                               "(a quantized model keeps its own quantization)")
    if calibration is None:  # the model's own quantization for every tensor
        g = quantize_ranges(graph, {}, given=given, given_consts=given_consts)
        return replace(g, meta={**g.meta, "calibration_method": None, "calibration_samples": 0,
                                PRECISION_META: precision_meta(g, "model")})
    cal = calibrated(graph, calibration, method) if given is None else None
    if cal is None:  # a quantized model with calibration data for the tensors it left unquantized
        ranges = observe_ranges(graph, calibration, method)
        g = quantize_ranges(graph, ranges, given=given, given_consts=given_consts)
        meta = {"calibration_method": method, "calibration_samples": len(next(iter(calibration.values())))}
    elif precision == "int8":
        f = cal.fit()
        g, meta = quantize_ranges(f.graph, f.ranges), cal.meta
    elif precision == "int16":
        from quantize.precision_search import choose_int16  # (its bias correction judged held-out under auto)

        g, meta = choose_int16(cal), cal.meta
    else:
        from quantize.precision_search import choose_precision  # the held-out search over int16 moves

        if search is None:
            raise ValueError("precision auto needs a precision_search.Search (target, budgets, measures)")
        g, meta = choose_precision(cal, search), cal.meta
    meta = {**g.meta, **meta}
    meta.setdefault(PRECISION_META, precision_meta(g, "model" if given is not None else precision))
    return replace(g, meta=meta)


def quantize_int16(f: Any, int16_nodes: Collection[str], inputs8: Collection[str] = ()) -> Graph:
    """The quantized graph of a fitted recipe (quantize.auto.Fit) with `int16_nodes` in 16x8 and their
    graph inputs in int16 (precision.int16_inputs; `inputs8`: inputs whose data are 8-bit, kept int8).
    A node whose 16x8 parameters break TFLM's int16 assumptions (precision.Int16Unfit) stays int8,
    with a note in graph.meta[NOTES_KEY]. Errors: those of quantize_ranges."""
    nodes, notes = set(int16_nodes), []
    while True:
        wide_in = int16_inputs(f.graph, nodes, lambda name: name in inputs8)
        try:
            g = quantize_ranges(f.graph, f.ranges, int16_nodes=nodes, int16_in=wide_in, ranges16=f.ranges16)
        except Int16Unfit as e:  # that node only: it stays int8 and the rest is quantized again
            nodes.discard(e.node.name)
            notes.append(f"{f.graph.meta.get('source', f.graph.name)}: {e}; {KEPT_INT8}")
            continue
        return replace(g, meta={**g.meta, NOTES_KEY: (*g.meta.get(NOTES_KEY, ()), *notes)}) if notes else g


def inputs_8bit(graph: Graph, calibration: Mapping[str, np.ndarray], ranges: Mapping[str, tuple]) -> frozenset[str]:
    """Graph inputs whose calibration values all lie on their int8 grid (8-bit data: raw pixels, or
    pixels times one scale), which precision.int16_inputs keeps int8."""
    return frozenset(n for n in graph.inputs if n in calibration and n in ranges
                     and exact_on_grid(calibration[n], activation_qparams(*ranges[n])))


def quantize_ranges(graph: Graph, ranges: Mapping[str, tuple[float, float]], *,
                    given: Mapping[str, QuantParams] | None = None,
                    given_consts: Mapping[str, Tensor] | None = None,
                    int16_nodes: Collection[str] = (), int16_in: Collection[str] = (),
                    ranges16: Mapping[str, tuple[float, float]] | None = None) -> Graph:
    """quantize() with the activation ranges already chosen (tensor name -> (lo, hi) real range);
    the same errors. Used by quantize() and by quantize.auto for its candidate graphs.

    int16_nodes / int16_in: the nodes computing in 16x8 and the graph inputs that are int16
    (precision.with_boundaries inserts the REQUANTIZE nodes between int8 and int16); their int16
    activations take precision.int16_qparams of `ranges16` (default `ranges`), their biases int64
    (precision.make_bias64). Raises precision.Int16Unfit for a 16x8 node TFLM's int16 kernels cannot
    take (precision.check_s16)."""
    where = graph.meta.get("source", graph.name)
    fixed = resolve_given(graph, given or {})
    wide: frozenset[str] = frozenset()
    if int16_nodes or int16_in:
        graph, wide, source = with_boundaries(graph, int16_nodes, int16_in)
        ranges, ranges16 = ranges_for(ranges, source), ranges_for(ranges16 or ranges, source)

    def chosen(name: str) -> QuantParams | None:
        if name in wide:
            return int16_qparams(*ranges16[name]) if name in ranges16 else None
        return fixed.get(name) or (activation_qparams(*ranges[name]) if name in ranges else None)

    tensors = dict(graph.tensors)
    for name in graph.inputs:
        qp = chosen(name)
        if qp is None:
            raise UnsupportedModel(f"{where}: graph input {name!r} has no quantization in the model; pass calibration data")
        tensors[name] = replace(tensors[name], dtype=DType.INT16 if name in wide else DType.INT8, quant=qp)
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
            g = g.with_tensor(replace(g.t(out), dtype=DType.INT16 if out in wide else DType.INT8, quant=qp))
        g = opdef(node).quantize_constants(node, g)
        if given_consts is not None:
            g = apply_given_consts(node, graph, g, given_consts)
        if out in wide:  # 16x8: an int64 bias from the real one, within TFLM's int16 assumptions
            g = make_bias64(node, g, graph)
            check_s16(node, g)
        elif not _own_int32_bias(node, given_consts):  # a model's own int32 bias is kept (checked in the pipeline)
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
