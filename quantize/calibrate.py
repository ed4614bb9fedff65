"""Calibration: run the float reference interpreter over calibration samples and let an
observer per activation tensor decide its real range (quantize.observers)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from quantize.observers import METHODS, Observer, auto_range
from toolchain.clip import clip_text
from toolchain.errors import InputError
from toolchain.interpret import interpret_chunks
from toolchain.ir import Graph
from toolchain.ops.registry import opdef
from toolchain.progress import step


def _extremes(env: Mapping[str, np.ndarray], graph: Graph) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per activation of `env` (samples on axis 0): each sample's minimum and maximum."""
    out = {}
    for name, val in env.items():
        if not graph.t(name).is_const:
            flat = val.reshape(len(val), -1)
            out[name] = flat.min(axis=1), flat.max(axis=1)
    return out


def _finite_activations(graph: Graph, env: Mapping[str, np.ndarray], start: int,
                        extremes: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """InputError when a calibration activation is NaN / inf: finite data and weights can still
    overflow float32 in the model (a range of inf would make every scale after it meaningless).
    env: tensor -> values of the samples start, start + 1, ... on axis 0, `extremes` their per-sample
    minima and maxima (finite both exactly when every value is: min / max propagate NaN); the error
    names the first such sample, and at that sample the first tensor in env order (a
    one-sample-at-a-time run's)."""
    bad = {}  # tensor -> its first non-finite sample in the chunk
    for name, (lo, hi) in extremes.items():
        if np.issubdtype(env[name].dtype, np.floating):
            finite = np.isfinite(lo) & np.isfinite(hi)
            if not finite.all():
                bad[name] = int(np.argmin(finite))
    if bad:
        name = min(bad, key=bad.get)  # the first sample; ties: the first tensor (dicts keep env order)
        model = clip_text(str(graph.meta.get("source", graph.name)), 200)
        raise InputError(f"{model}: tensor {clip_text(name, 60)!r}: NaN or inf values on calibration sample "
                         f"{start + bad[name]} (float32 overflow); check the data's preprocess scale, or the "
                         "model's weights")


def observe_ranges(graph: Graph, calibration: Mapping[str, np.ndarray], method: str = "mse",
                   chosen: dict[str, str] | None = None) -> dict[str, tuple[float, float]]:
    """Tensor name -> (lo, hi) real range; calibration[name] is [S, *input shape] float32;
    `method` one of quantize.observers.METHODS (auto: per tensor, see observers.auto_range).

    Graph inputs always keep their full min/max range (clipping the input helps nothing).
    `chosen`, when given, receives tensor name -> the range method used for it.
    Raises ValueError on an unknown method or inconsistent sample counts.
    """
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; choose from {METHODS}")
    return select_ranges(graph, collect_observers(graph, calibration), method, chosen)


def collect_observers(graph: Graph, calibration: Mapping[str, np.ndarray]) -> dict[str, Observer]:
    """Run the float graph over every calibration sample: activation tensor name -> its Observer
    (one update per sample, in sample order). Raises ValueError on inconsistent sample counts,
    InputError on a non-finite activation."""
    counts = {len(v) for v in calibration.values()}
    if len(counts) != 1 or not counts.pop():
        raise ValueError("calibration inputs must have the same, non-zero number of samples")
    observers: dict[str, Observer] = {}
    n = len(next(iter(calibration.values())))
    extremes_only = _extremes_only(graph)
    with step(f"calibrate ({n} samples)", n) as advance:
        for start, env in interpret_chunks(graph, calibration, keep_all=True):  # many samples per numpy call
            extremes = _extremes(env, graph)
            _finite_activations(graph, env, start, extremes)
            for name, ext in extremes.items():
                if name not in observers:  # seeds in env order, as a one-sample-at-a-time run makes them;
                    # min/max only (select_ranges) for what keeps no observed range: no values kept
                    observers[name] = Observer(seed=len(observers), capacity=n, keep_values=name not in extremes_only)
                observers[name].update_many(env[name], ext)  # one update per sample, in sample order
            advance(len(next(iter(env.values()))))
    return observers


def _extremes_only(graph: Graph) -> set[str]:
    """The tensors whose range is their min/max: the graph inputs (clipping an input helps nothing) and
    the outputs of ops whose quantization ignores the observed range (OpDef.ignores_observed_range:
    any range gives the same int8 graph, min/max costs nothing)."""
    return {*graph.inputs, *(o for n in graph.nodes if opdef(n).ignores_observed_range for o in n.outputs if o)}


def select_ranges(graph: Graph, observers: Mapping[str, Observer], method: str,
                  chosen: dict[str, str] | None = None,
                  samples: Sequence[int] | None = None) -> dict[str, tuple[float, float]]:
    """Each observed tensor's range by `method` over `samples` (indices; all by default); graph inputs
    and the outputs of ops that ignore it (_extremes_only) keep minmax; "auto" and "per-tensor" choose
    per tensor (observers.auto_range); `chosen` gets the method used per tensor."""
    out, picks = {}, {}
    extremes_only = _extremes_only(graph)
    for k, o in observers.items():
        if k in extremes_only or method == "minmax":
            picks[k], out[k] = "minmax", o.range("minmax", samples)
        elif method in ("auto", "per-tensor"):
            picks[k], out[k] = auto_range(o, samples=samples)
        else:
            picks[k], out[k] = method, o.range(method, samples)
    if chosen is not None:
        chosen.update(picks)
    return out
