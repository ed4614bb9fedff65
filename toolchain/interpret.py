"""The numpy reference interpreter: walks a Graph in order and calls each op's reference.

It is the oracle (architecture P8): calibration runs it on float graphs, pass tests compare
before/after with it, and every generated C output must equal it bit for bit on int8 graphs.
A node whose output tensor is int8 runs `reference_s8`, int16 (16x8) `reference_s16`, otherwise
`reference_f32`. The rounding
mode of the int8 references is the graph's own (graph.meta["rounding"], fixed_point.graph_rounding):
read here, once per run, not passed op by op.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

import toolchain.ops  # noqa: F401 - registers the ops
from toolchain.ir import DType, Graph
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import opdef


Transform = Callable[[str, np.ndarray], np.ndarray]


def interpret(graph: Graph, inputs: Mapping[str, np.ndarray], keep_all: bool = False,
              transform: Transform | None = None) -> dict[str, np.ndarray]:
    """Run the graph on one set of inputs.

    inputs: graph input name -> array of the input tensor's shape and dtype.
    transform(tensor name, value) -> value, when given, rewrites every graph input and node output
    before later nodes read it (e.g. a QDQ model's fake quantization, profiler.numerics).
    Returns the graph outputs by name (every activation too when keep_all).
    Raises ValueError when an input is missing or has the wrong shape.
    """
    with rounding_mode(graph_rounding(graph)):
        return _run(graph, inputs, keep_all, transform or (lambda name, value: value))


def _run(graph: Graph, inputs: Mapping[str, np.ndarray], keep_all: bool, transform: Transform) -> dict[str, np.ndarray]:
    env: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        t = graph.t(name)
        if name not in inputs:
            raise ValueError(f"missing graph input {name!r}")
        arr = np.asarray(inputs[name])
        if tuple(arr.shape) != t.shape:
            raise ValueError(f"input {name!r} has shape {list(arr.shape)}, expected {list(t.shape)}")
        env[name] = transform(name, arr.astype(t.dtype.np))
    for node in graph.nodes:
        ins = [(graph.t(i).data if graph.t(i).is_const else env[i]) if i else None for i in node.inputs]
        op = opdef(node)
        out_dtype = graph.t(node.outputs[0]).dtype
        ref = {DType.INT8: op.reference_s8, DType.INT16: op.reference_s16}.get(out_dtype, op.reference_f32)
        outs = ref(node, graph, ins)
        for name, val in zip(node.outputs, outs, strict=True):
            env[name] = transform(name, val)
    return env if keep_all else {o: env[o] for o in graph.outputs}


def interpret_batch(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the graph once per sample: inputs[name] has a leading sample axis [S, *input shape].
    Returns outputs stacked the same way."""
    n = len(next(iter(inputs.values())))
    runs = [interpret(graph, {k: v[i] for k, v in inputs.items()}) for i in range(n)]
    return {o: np.stack([r[o] for r in runs]) for o in graph.outputs}
