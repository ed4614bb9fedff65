"""The numpy reference interpreter: walks a Graph in order and calls each op's reference.

It is the oracle (architecture P8): calibration runs it on float graphs, pass tests compare
before/after with it, and every generated C output must equal it bit for bit on int8 graphs.
interpret_each runs many samples: stacked on axis 0 where every op allows it (OpDef.stacks_samples),
one at a time otherwise, each sample's values the same bit for bit either way.
A node whose output tensor is int8 runs `reference_s8`, int16 (16x8) `reference_s16`, otherwise
`reference_f32`. The rounding
mode of the int8 references is the graph's own (graph.meta["rounding"], fixed_point.graph_rounding):
read here, once per run, not passed op by op.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

import toolchain.ops  # noqa: F401 - registers the ops
from toolchain.blas import one_blas_thread
from toolchain.ir import DType, Graph
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import opdef


Transform = Callable[[str, np.ndarray], np.ndarray]
# Bytes one stacked run of interpret_each may hold: every float32 activation of the graph (the
# environment keeps them all) plus float64 temporaries of the largest one (conv_f32 pads the input
# and accumulates in float64), times the samples stacked. 16 MiB: 8 VWW (96x96) images, as many as run fastest (caches).
STACK_BYTES = 16 << 20


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


def _run(graph: Graph, inputs: Mapping[str, np.ndarray], keep_all: bool, transform: Transform,
         stacked: int = 0) -> dict[str, np.ndarray]:
    """stacked > 0: inputs hold that many samples on axis 0 (shape [stacked, *shape[1:]])."""
    env: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        t = graph.t(name)
        if name not in inputs:
            raise ValueError(f"missing graph input {name!r}")
        arr = np.asarray(inputs[name])
        if tuple(arr.shape) != ((stacked, *t.shape[1:]) if stacked else t.shape):
            raise ValueError(f"input {name!r} has shape {list(arr.shape)}, expected {list(t.shape)}")
        env[name] = transform(name, arr.astype(t.dtype.np))
    with one_blas_thread():  # (toolchain.blas: numpy's products on one thread, as the CLI sets it)
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
    runs = [env for _, env in interpret_each(graph, inputs)]
    return {o: np.stack([r[o] for r in runs]) for o in graph.outputs}


def _activations(graph: Graph) -> list[str]:
    return [*graph.inputs, *(o for node in graph.nodes for o in node.outputs if o)]


def _stacks(node, graph: Graph) -> bool:
    """Whether the reference interpret() picks for `node` takes stacked samples (OpDef.stacks_samples):
    reference_s8 for an int8 output, reference_f32 for a float one; int16 (16x8) nodes never do."""
    dtype = graph.t(node.outputs[0]).dtype
    if dtype == DType.INT8:
        return opdef(node).stacks_samples_s8(node, graph)
    return dtype != DType.INT16 and opdef(node).stacks_samples_f32(node, graph)


def stack_size(graph: Graph, samples: int, max_bytes: int = STACK_BYTES) -> int:
    """How many samples interpret_each runs at once: 1 unless every activation has rank >= 2 and a
    leading dimension of 1 (the batch axis samples stack on) and every node's reference stacks samples
    (OpDef.stacks_samples_f32 for float outputs, stacks_samples_s8 for int8 ones); else as many as fit
    max_bytes (see STACK_BYTES; int8 activations counted as float32 ones, as the int8 references
    widen them to int64 / float64 temporaries)."""
    sizes = [graph.t(a).size for a in _activations(graph)]
    if samples <= 1 or any(len(graph.t(a).shape) < 2 or graph.t(a).shape[0] != 1 for a in _activations(graph)):
        return 1
    if not all(_stacks(n, graph) for n in graph.nodes):
        return 1
    per_sample = 4 * sum(sizes) + 3 * 8 * max(sizes)
    return max(1, min(samples, max_bytes // max(per_sample, 1)))


def _chunk_size(graph: Graph, inputs: Mapping[str, np.ndarray], max_bytes: int) -> int:
    """stack_size, or 1 when an input does not have the graph's shape (interpret then raises, naming it)."""
    shapes_fit = all(name in inputs and tuple(np.shape(inputs[name])[1:]) == graph.t(name).shape for name in graph.inputs)
    return stack_size(graph, len(next(iter(inputs.values()))), max_bytes) if shapes_fit else 1


def interpret_chunks(graph: Graph, inputs: Mapping[str, np.ndarray], keep_all: bool = False,
                     max_bytes: int = STACK_BYTES) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Run the graph on every sample (inputs[name] is [S, *input shape]), several at a time: yields
    (index of the first sample, environment) in sample order, every value of the environment with the
    chunk's samples on a new leading axis: value[j] is exactly what interpret(graph, sample start + j,
    keep_all) gives for that tensor except for the graph's own leading 1 when samples stack (shape
    [count, *shape[1:]]: stack_size), value[j] == interpret's value with its shape otherwise
    ([1, *shape], one sample per chunk). Raises ValueError as interpret does."""
    n = len(next(iter(inputs.values())))
    size = _chunk_size(graph, inputs, max_bytes)
    if size <= 1:  # one at a time; a wrong shape raises there, naming the input
        for i in range(n):
            env = interpret(graph, {k: v[i] for k, v in inputs.items()}, keep_all)
            yield i, {name: val[None] for name, val in env.items()}
        return
    for start in range(0, n, size):
        b = min(size, n - start)
        chunk = {name: np.asarray(inputs[name][start:start + b]).reshape(b, *graph.t(name).shape[1:])
                 for name in graph.inputs}
        with rounding_mode(graph_rounding(graph)):
            env = _run(graph, chunk, keep_all, lambda name, value: value, stacked=b)
        yield start, env


def interpret_each(graph: Graph, inputs: Mapping[str, np.ndarray], keep_all: bool = False,
                   max_bytes: int = STACK_BYTES) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Run the graph on every sample: inputs[name] is [S, *input shape]. Yields (sample index,
    environment) in sample order, the environment exactly what interpret(graph, that sample,
    keep_all) returns (same shapes, dtypes and values bit for bit: stacked runs make the same numpy
    calls per sample, only on more rows; integer references are exact whatever the rows). Samples run
    stack_size(graph, S, max_bytes) at a time (interpret_chunks); the arrays of a stacked run are views
    into it. Raises ValueError as interpret does."""
    stacked = _chunk_size(graph, inputs, max_bytes) > 1
    for start, env in interpret_chunks(graph, inputs, keep_all, max_bytes):
        for j in range(len(next(iter(env.values())))):
            yield start + j, {name: (val[j:j + 1] if stacked else val[j]) for name, val in env.items()}
