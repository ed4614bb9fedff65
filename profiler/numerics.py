"""Per-op numeric error of the quantized graph (int8, and int16 for 16x8 ops) against its float
reference, two ways:

* cumulative: the op's output as the quantized graph computes it (errors of every op before it
  included), dequantized, against the float graph's value of the same tensor;
* isolated: the op alone, fed its float-reference inputs quantized with the quantized graph's input
  parameters (int8 or int16); ranks the ops by how much quantizing each one hurts by itself (and
  `precision: auto` ranks its moves to 16x8 by it, quantize.precision_search).

Both as SQNR (dB) and max abs error in LSB of the op's output scale, over the verification
samples (the first `max_samples`). Tensors are matched by name and shape between the graphs
(passes run before quantization, so they agree). Ops the quantized graph made of one model layer,
joined by tensors without a float counterpart (quantize.zero_point_split's Gather / ScatterChannels
helpers; a REQUANTIZE between int8 and int16, quantize.precision), are isolated as one group from the
group's inputs; a helper whose own output has no counterpart reports the figures of the op writing the
group's output and names that op (`error_at`). An op without a float counterpart otherwise gets None.

The float reference of a quantized ONNX model (QDQ / QLinear, graph_f32.meta["format"] "onnx-qdq")
is the model's own float semantics, as onnxruntime computes them (profiler.qdq_reference): every
tensor onnxruntime's value where it has one, every tensor the model quantizes through QuantizeLinear
(ties to even) and DequantizeLinear on the model's grid, so the clamps its grids imply (ReLU6-like
ranges) apply where the model applies them and an op computed exactly shows exact. Any other
model's reference is its float graph as is (a float ONNX model; a .tflite model's float twin with
dequantized weights).
Not here: the float graphs themselves (the caller passes them), or the board's outputs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from profiler.qdq_reference import is_qdq, qdq_transform
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import opdef

QUANTIZED = (DType.INT8, DType.INT16)  # activation types an isolated run quantizes the float reference to
MAX_SAMPLES = 32  # enough for a stable per-layer SQNR, cheap enough for ResNet-8 (about 3 s)
REFERENCE_FLOAT = ("float graph (the IR before quantization; for an int8 model its float twin with dequantized "
                   "weights), edgecc float interpreter")
REFERENCE_QDQ = ("the quantized ONNX model's own float semantics: onnxruntime's value of every float tensor "
                 "(ORT_DISABLE_ALL; the edgecc float interpreter's where onnxruntime has none), each tensor the "
                 "model quantizes put through QuantizeLinear (ties to even) and DequantizeLinear on its grid")


def reference_name(graph_f32: Graph) -> str:
    """report.numerics.reference: the float reference op_numerics uses for this graph, in words."""
    return REFERENCE_QDQ if is_qdq(graph_f32) else REFERENCE_FLOAT


def reference_env(graph_f32: Graph, graph_s8: Graph, inputs: Mapping[str, np.ndarray],
                  anchor: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Every tensor's float reference value for one sample (inputs: graph input -> float array):
    interpret(graph_f32); for a quantized ONNX model (is_qdq) each tensor is first replaced by
    onnxruntime's value of it (`anchor`, name -> ORT's array, profiler.qdq_reference.ort_tensors)
    and then fake-quantized on the model's grids (qdq_reference.qdq_transform)."""
    transform = qdq_transform(graph_s8, anchor or {}) if is_qdq(graph_f32) else None
    env = interpret(graph_f32, inputs, keep_all=True, transform=transform)
    # channels the int8 graph does not compute (passes.fold_constant_channels): gone from the reference too
    for name, gone in graph_s8.meta.get("channels_dropped", {}).items():
        if name in env and name in graph_s8.tensors and env[name].shape[-1:] != graph_s8.t(name).shape[-1:]:
            env[name] = np.delete(env[name], gone, axis=-1)
    return env


@dataclass
class _Acc:
    """Running sums of one op over samples."""

    signal: float = 0.0
    noise: dict[str, float] = field(default_factory=lambda: {"cumulative": 0.0, "isolated": 0.0})
    max_lsb: dict[str, float] = field(default_factory=lambda: {"cumulative": 0.0, "isolated": 0.0})
    seen: set[str] = field(default_factory=set)

    def add(self, way: str, ref: np.ndarray, approx: np.ndarray, scale: float) -> None:
        err = approx.astype(np.float64) - ref
        self.noise[way] += float(np.sum(err * err))
        self.max_lsb[way] = max(self.max_lsb[way], float(np.max(np.abs(err))) / scale if err.size else 0.0)
        self.seen.add(way)


def _sqnr(signal: float, noise: float) -> float | None:
    """10 log10(signal/noise) in dB; None when either is zero (exact, or a silent reference)."""
    return round(10.0 * float(np.log10(signal / noise)), 3) if signal > 0 and noise > 0 else None


def _quantizable(name: str, g8: Graph, fenv: Mapping[str, np.ndarray]) -> bool:
    """Whether activation `name` has a float reference an isolated run can be fed (quantized to its
    int8 or int16 grid)."""
    t = g8.t(name)
    return name in fenv and fenv[name].shape == t.shape and t.quant is not None and t.dtype in QUANTIZED


def reference_q(node: Any, g8: Graph) -> Any:
    """The op's integer reference for `node` of the quantized graph: reference_s16 for a node with an
    int16 output (16x8), reference_s8 otherwise (as toolchain.interpret chooses)."""
    op = opdef(node)
    return op.reference_s16 if g8.t(node.outputs[0]).dtype == DType.INT16 else op.reference_s8


def _isolated_inputs(node: Any, g8: Graph, fenv: Mapping[str, np.ndarray],
                     env: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray | None] | None:
    """The op's inputs for the isolated run: constants as in the int8 graph, values of its group's run
    (`env`), activations = float reference values quantized with the int8 tensor's parameters; None
    if one has no counterpart."""
    ins: list[np.ndarray | None] = []
    for name in node.inputs:
        if not name:
            ins.append(None)
            continue
        t = g8.t(name)
        if t.is_const:
            ins.append(t.data)
        elif env is not None and name in env:
            ins.append(env[name])
        elif _quantizable(name, g8, fenv):
            ins.append(t.quant.quantize(fenv[name], t.dtype))
        else:
            return None
    return ins


def isolated_groups(g8: Graph, fenv: Mapping[str, np.ndarray]) -> dict[str, tuple[Any, ...]]:
    """node name -> the nodes (graph order) measured together in the isolated run, for every node
    joined to others by a tensor without a float reference: the ops one model layer became in the
    int8 graph (quantize.zero_point_split's Gather / ScatterChannels helpers and the layer on
    widened inputs or split channels; a layer and its REQUANTIZE onto the model's grid). They run
    as one from the reference values of the group's outside inputs, so each gets an isolated figure
    on its own output where that has a reference, else on the group's output (group_output)."""
    parent = {n.name: n.name for n in g8.nodes}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    producer = {o: n for n in g8.nodes for o in n.outputs}
    for n in g8.nodes:
        for name in n.inputs:
            if name in producer and not g8.t(name).is_const and not _quantizable(name, g8, fenv):
                parent[root(n.name)] = root(producer[name].name)
    members: dict[str, list[Any]] = {}
    for n in g8.nodes:
        members.setdefault(root(n.name), []).append(n)
    return {n.name: tuple(group) for group in members.values() if len(group) > 1 for n in group}


def group_output(group: Sequence[Any], g8: Graph, fenv: Mapping[str, np.ndarray]) -> str | None:
    """The last tensor a group writes that has a float reference (its figures stand for the group)."""
    outs = [o for n in group for o in n.outputs if o in fenv and fenv[o].shape == g8.t(o).shape]
    return outs[-1] if outs else None


def _group_run(group: Sequence[Any], g8: Graph, fenv: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor the group writes, run alone in int8 from its outside inputs' quantized float
    reference (empty when one has none)."""
    env: dict[str, np.ndarray] = {}
    for n in group:
        ins = _isolated_inputs(n, g8, fenv, env)
        if ins is None:
            return {}
        env.update(zip(n.outputs, reference_q(n, g8)(n, g8, ins), strict=False))
    return env


def op_numerics(graph_f32: Graph, graph_s8: Graph, float_inputs: Mapping[str, np.ndarray],
                int8_inputs: Mapping[str, np.ndarray], max_samples: int = MAX_SAMPLES,
                int8_envs: Sequence[Mapping[str, np.ndarray]] = (),
                anchors: Sequence[Mapping[str, np.ndarray]] = ()) -> dict[str, Any]:
    """{"samples": S, "ops": {node name: {sqnr_db_isolated, sqnr_db_cumulative, max_abs_err_lsb,
    max_abs_err_lsb_isolated, error_at}}} for every executed (non-view) op of graph_s8.

    Ops joined by tensors without a float reference (isolated_groups: one model layer rewritten into
    several ops) run isolated as one group; an op whose own output has no reference takes the
    figures of the op writing the group's output, named by `error_at` (None for an op measured on
    its own output).

    float_inputs / int8_inputs: graph input name -> [samples, *shape]; `int8_envs` may hold the
    interpret(graph_s8, ..., keep_all=True) environments already computed for the first samples;
    `anchors` onnxruntime's tensor values per sample for a quantized ONNX model (reference_env).
    """
    n = min(max_samples, len(next(iter(int8_inputs.values()))))
    nodes = [nd for nd in graph_s8.nodes if not opdef(nd).is_view]
    acc = {nd.name: _Acc() for nd in nodes}
    groups: dict[str, tuple[Any, ...]] | None = None
    at: dict[str, str] = {}  # node whose output has no reference -> the op writing its group's output
    for i in range(n):
        fenv = reference_env(graph_f32, graph_s8, {k: v[i] for k, v in float_inputs.items()},
                             anchors[i] if i < len(anchors) else None)
        qenv = int8_envs[i] if i < len(int8_envs) else \
            interpret(graph_s8, {k: v[i] for k, v in int8_inputs.items()}, keep_all=True)
        if groups is None:  # the same tensors have references in every sample
            groups = isolated_groups(graph_s8, fenv)
            producer = {o: nd.name for nd in nodes for o in nd.outputs}
            at = {nd.name: producer[o] for nd in nodes if nd.name in groups and nd.outputs[0] not in fenv
                  and (o := group_output(groups[nd.name], graph_s8, fenv)) in producer}
        runs: dict[int, dict[str, np.ndarray]] = {}  # id(group) -> its isolated run in this sample
        with rounding_mode(graph_rounding(graph_s8)):  # the model's rounding, as interpret() uses it
            for nd in nodes:
                out, t = nd.outputs[0], graph_s8.t(nd.outputs[0])
                ref = fenv.get(out)
                if ref is None or ref.shape != t.shape or t.quant is None or t.quant.is_per_channel:
                    continue
                ref = ref.astype(np.float64)
                a = acc[nd.name]
                a.signal += float(np.sum(ref * ref))
                a.add("cumulative", ref, t.quant.dequantize(qenv[out]), t.quant.s)
                group = groups.get(nd.name)
                if group is not None:
                    iso = runs.setdefault(id(group), _group_run(group, graph_s8, fenv)).get(out)
                else:
                    ins = _isolated_inputs(nd, graph_s8, fenv)
                    iso = None if ins is None else reference_q(nd, graph_s8)(nd, graph_s8, ins)[0]
                if iso is not None:
                    a.add("isolated", ref, t.quant.dequantize(iso), t.quant.s)
    ops = {}
    for name, a in acc.items():
        if name in at:  # a helper op of a group: the figures of the op writing the group's output
            a = acc[at[name]]

        def way(w: str, a: _Acc = a) -> tuple[float | None, float | None]:
            return (_sqnr(a.signal, a.noise[w]), round(a.max_lsb[w], 3)) if w in a.seen else (None, None)
        (iso_db, iso_lsb), (cum_db, cum_lsb) = way("isolated"), way("cumulative")
        ops[name] = {"sqnr_db_isolated": iso_db, "sqnr_db_cumulative": cum_db, "max_abs_err_lsb": cum_lsb,
                     "max_abs_err_lsb_isolated": iso_lsb, "error_at": at.get(name)}
    return {"samples": n, "ops": ops, "reference": reference_name(graph_f32)}


def worst_isolated(ops: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The report op with the largest isolated error (lowest isolated SQNR), or None; an op whose
    figures are its group's (error_at) stands aside for the op writing the group's output."""
    rated = [o for o in ops if o.get("sqnr_db_isolated") is not None and not o.get("error_at")]
    if not rated:
        return None
    o = min(rated, key=lambda o: o["sqnr_db_isolated"])
    return {"index": o["index"], "name": o["name"], "op_type": o["op_type"], "sqnr_db_isolated": o["sqnr_db_isolated"],
            "sqnr_db_cumulative": o.get("sqnr_db_cumulative")}
