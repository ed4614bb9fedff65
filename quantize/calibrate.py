"""Calibration: run the float reference interpreter over calibration samples and let an
observer per activation tensor decide its real range (quantize.observers)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from quantize.observers import METHODS, Observer, auto_range
from toolchain.clip import clip_text
from toolchain.errors import InputError
from toolchain.interpret import interpret_each
from toolchain.ir import Graph
from toolchain.progress import step


def _finite_activation(graph: Graph, name: str, val: np.ndarray, sample: int) -> None:
    """InputError when a calibration activation is NaN / inf: finite data and weights can still
    overflow float32 in the model (a range of inf would make every scale after it meaningless)."""
    if np.issubdtype(np.asarray(val).dtype, np.floating) and not np.isfinite(val).all():
        model = clip_text(str(graph.meta.get("source", graph.name)), 200)
        raise InputError(f"{model}: tensor {clip_text(name, 60)!r}: NaN or inf values on calibration sample {sample} "
                         "(float32 overflow); check the data's preprocess scale, or the model's weights")


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
    with step(f"calibrate ({n} samples)", n) as advance:
        for i, env in interpret_each(graph, calibration, keep_all=True):  # many samples per numpy call
            for name, val in env.items():
                if not graph.t(name).is_const:
                    _finite_activation(graph, name, val, i)
                    if name not in observers:  # (setdefault would build, and drop, an Observer per call)
                        observers[name] = Observer(seed=len(observers))
                    observers[name].update(val)
            advance(1)
    return observers


def select_ranges(graph: Graph, observers: Mapping[str, Observer], method: str,
                  chosen: dict[str, str] | None = None,
                  samples: Sequence[int] | None = None) -> dict[str, tuple[float, float]]:
    """Each observed tensor's range by `method` over `samples` (indices; all by default); graph inputs
    keep minmax; "auto" and "per-tensor" choose per tensor (observers.auto_range); `chosen` gets the
    method used per tensor."""
    out, picks = {}, {}
    for k, o in observers.items():
        if k in graph.inputs or method == "minmax":
            picks[k], out[k] = "minmax", o.range("minmax", samples)
        elif method in ("auto", "per-tensor"):
            picks[k], out[k] = auto_range(o, samples=samples)
        else:
            picks[k], out[k] = method, o.range(method, samples)
    if chosen is not None:
        chosen.update(picks)
    return out
