"""`calibration_method: auto`: choose the calibration recipe out of sample, inside the calibration
data, never looking at the verification data.

The calibration samples are split in two interleaved halves (even / odd indices). A candidate
recipe is fitted on one half (ranges, bias correction) and scored on the other: the squared error of
the int8 graph's dequantized outputs against the float graph's outputs, relative to the float
outputs' energy, summed over both directions (2-fold cross-validation; Hastie et al., "The Elements
of Statistical Learning", 7.10). Candidates, chosen greedily in three stages (a full product would
cost 8 int8 passes instead of 4):

1. the range rule: mse (uniform) or per-tensor (observers.auto_range: per tensor the best of minmax,
   percentile, kl and mse on held-out values);
2. cross-layer equalisation of the float graph (quantize.equalize), when the graph has pairs for it;
3. bias correction (quantize.bias_correct).

A stage's candidate is kept only when it lowers the held-out error. The chosen recipe is then fitted
on all calibration samples. Deterministic: fixed halves, fixed candidate order, ties to the earlier.
Cost: 8 int8 passes over half the calibration data plus up to 2 bias corrections (measured on VWW
with 150 samples: see docs/calibration.md).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from quantize.bias_correct import correct_bias
from quantize.calibrate import collect_observers, select_ranges
from quantize.observers import METHODS
from quantize.precision import int16_ops, with_boundaries
from quantize.equalize import equalizable_pairs, equalize
from toolchain.data import quantize_inputs
from toolchain.interpret import interpret_each
from toolchain.ir import DType, Graph
from toolchain.ops.fixed_point import graph_rounding
from toolchain.progress import step

# Stage 1's range rules. minmax, percentile and kl are not searched: fitted on half the calibration data
# (50 ResNet-8 images) they win the held-out score by noise and lose out of sample (ResNet-8 fold A:
# percentile chosen, 95% agreement against mse's 98%; docs/calibration.md); each stays selectable alone.
RULES = ("mse", "per-tensor")


@dataclass(frozen=True)
class Recipe:
    """One candidate: the range rule, equalisation on/off, bias correction on/off."""

    rule: str = "mse"
    equalize: bool = False
    bias_correction: bool = False

    def label(self) -> str:
        return "+".join([self.rule] + ["cle"] * self.equalize + ["bias"] * self.bias_correction)


def _subset(calibration: Mapping[str, np.ndarray], idx: Sequence[int]) -> dict[str, np.ndarray]:
    return {k: v[list(idx)] for k, v in calibration.items()}


@dataclass(frozen=True)
class Fit:
    """A recipe fitted on some calibration samples: `graph` is the float graph the quantized graph
    approximates at these ranges (equalised when the recipe says so, biases shifted by bias
    correction), `ranges` the int8 ranges of the recipe's rule and `ranges16` the int16 ranges
    (RANGE16; quantize.precision) of every activation, tensor name -> (lo, hi)."""

    graph: Graph
    ranges: dict[str, tuple[float, float]]
    ranges16: dict[str, tuple[float, float]]


# The int16 ranges: min/max. The clipping searches (mse, kl, percentile) trade clipping for rounding
# on 255 steps; with 65535 steps the rounding error is 2^-16 of the range and any clipping costs more
# (the TFLite converter's 16x8 mode calibrates min/max too).
RANGE16 = "minmax"


def fit(graph: Graph, observers, calibration: Mapping[str, np.ndarray], recipe: Recipe,
        samples: Sequence[int] | None = None, int16_nodes: Collection[str] = (),
        inputs8: Collection[str] = ()) -> Fit:
    """`recipe` fitted on `samples` (all by default); `graph` and `observers` are the float graph the
    recipe quantizes (equalised already when recipe.equalize) and its observers. Bias correction is
    fitted for the graph with `int16_nodes` in 16x8 (and the 8-bit inputs `inputs8` int8: the
    arguments of quantize.quantize_int16), whose mean errors it corrects: int8 by default."""
    from quantize import quantize_int16, quantize_ranges

    ranges = select_ranges(graph, observers, recipe.rule, samples=samples)
    ranges16 = select_ranges(graph, observers, RANGE16, samples=samples)
    if recipe.bias_correction:
        data = calibration if samples is None else _subset(calibration, samples)
        if not int16_nodes:
            graph = correct_bias(graph, quantize_ranges(graph, ranges), data)
        else:  # corrected node for node on the mixed graph, then the new biases put back by name
            q = quantize_int16(Fit(graph, ranges, ranges16), int16_nodes, inputs8)
            wide_in = [n for n in graph.inputs if q.t(n).dtype == DType.INT16]
            mixed = correct_bias(with_boundaries(graph, int16_ops(q), wide_in)[0], q, data)
            graph = graph.with_nodes(graph.nodes, {k: mixed.tensors.get(k, t) if t.is_const else t
                                                   for k, t in graph.tensors.items()})
    return Fit(graph, ranges, ranges16)


def build(graph: Graph, observers, calibration: Mapping[str, np.ndarray], recipe: Recipe,
          samples: Sequence[int] | None = None) -> Graph:
    """The int8 graph of `recipe` fitted on `samples` (all by default); `graph` and `observers` are the
    float graph the recipe quantizes (equalised already when recipe.equalize) and its observers."""
    from quantize import quantize_ranges

    f = fit(graph, observers, calibration, recipe, samples)
    return quantize_ranges(f.graph, f.ranges)


def heldout_error(qgraph: Graph, calibration: Mapping[str, np.ndarray], floats: list[dict[str, np.ndarray]],
                  held: Sequence[int], inputs_cache: dict | None = None) -> float:
    """Mean over the `held` samples of sum over outputs of ||deq(int8 output) - float output||^2 /
    ||float output||^2: per sample, so that one sample with a large output cannot outweigh the rest.
    inputs_cache: the quantized inputs by (samples, input quantization, rounding), kept across calls
    (candidates fitted on the same samples give the inputs the same quantization)."""
    key = (tuple(held), tuple((k, qgraph.t(k).dtype, qgraph.t(k).quant) for k in qgraph.inputs), graph_rounding(qgraph))
    if inputs_cache is not None and key in inputs_cache:
        data_q = inputs_cache[key]
    else:
        data_q = quantize_inputs(_subset(calibration, held), qgraph)
        if inputs_cache is not None:
            inputs_cache[key] = data_q
    total = 0.0
    for j, outs in interpret_each(qgraph, data_q):  # samples stacked where the int8 graph allows
        s = held[j]
        for o in qgraph.outputs:
            t, f = qgraph.t(o), floats[s][o].astype(np.float64)
            y = t.quant.dequantize(outs[o]) if t.quant is not None else outs[o]
            total += float(np.sum((np.asarray(y, np.float64) - f) ** 2)) / max(float(np.sum(f ** 2)), 1e-30)
    return total / max(len(held), 1)


@dataclass(frozen=True)
class Calibrated:
    """A float graph ready to be quantized on any subset of its calibration samples, at any precision:
    `graph` (equalised when recipe.equalize), its `observers` over every calibration sample, the
    `recipe` (chosen by the search for `auto`), the `calibration` data (name -> [S, *shape] float32)
    and `meta`, the graph.meta entries of the quantized graph (calibration_method,
    calibration_samples; for auto also equalized and calibration_auto)."""

    graph: Graph
    observers: Mapping
    calibration: Mapping[str, np.ndarray]
    recipe: Recipe
    meta: dict

    def fit(self, samples: Sequence[int] | None = None, int16_nodes: Collection[str] = (),
            inputs8: Collection[str] = ()) -> Fit:
        """The recipe fitted on `samples` (indices into the calibration data; all by default), its bias
        correction for `int16_nodes` in 16x8 (see fit())."""
        return fit(self.graph, self.observers, self.calibration, self.recipe, samples, int16_nodes, inputs8)


def calibrated(graph: Graph, calibration: Mapping[str, np.ndarray], method: str) -> Calibrated:
    """Run the float graph over the calibration data and, for method "auto", choose the recipe
    (module docstring); any other method (observers.METHODS) is the recipe of that range rule alone.
    Raises ValueError for an unknown method or inconsistent sample counts."""
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; choose from {METHODS}")
    n = len(next(iter(calibration.values()))) if calibration else 0
    if method != "auto":
        return Calibrated(graph, collect_observers(graph, calibration), calibration, Recipe(method),
                          {"calibration_method": method, "calibration_samples": n})
    return _search(graph, calibration, n)


def auto_quantize(graph: Graph, calibration: Mapping[str, np.ndarray]) -> Graph:
    """float Graph + calibration inputs (name -> [S, *shape] float32) -> int8 Graph by the recipe with
    the least held-out output error (module docstring). graph.meta of the result: calibration_method
    "auto", calibration_auto {recipe, scores (label -> held-out error)}, equalized (bool: the pipeline
    then takes quantize.equalize(graph) as the float reference, whose activations the int8 graph
    approximates). Fewer than 4 samples: mse without search. Errors: those of quantize()."""
    from quantize import quantize_ranges

    cal = calibrated(graph, calibration, "auto")
    f = cal.fit()
    q = quantize_ranges(f.graph, f.ranges)
    return replace(q, meta={**q.meta, **cal.meta})


def _search(graph: Graph, calibration: Mapping[str, np.ndarray], n: int) -> Calibrated:
    """calibrated() for method auto: the stages of the module docstring on held-out halves."""
    graphs = {False: graph}
    observers = {False: collect_observers(graph, calibration)}
    scores: dict[str, float] = {}
    best = Recipe()
    if n >= 4:
        halves = (list(range(0, n, 2)), list(range(1, n, 2)))
        floats = [outs for _, outs in interpret_each(graph, calibration)]
        inputs_cache: dict = {}

        def score(r: Recipe) -> float:
            if r.equalize not in graphs:
                graphs[True] = equalize(graph)
                observers[True] = collect_observers(graphs[True], calibration)
            g, obs = graphs[r.equalize], observers[r.equalize]
            scores[r.label()] = sum(heldout_error(build(g, obs, calibration, r, fit), calibration, floats, held,
                                                  inputs_cache) for fit, held in (halves, halves[::-1]))
            return scores[r.label()]

        stages = [[Recipe(rule) for rule in RULES]]
        if equalizable_pairs(graph):
            stages.append(["equalize"])
        stages.append(["bias_correction"])
        with step("auto calibration (held-out search)", len(RULES) + len(stages) - 1) as advance:
            best_err = np.inf
            for stage in stages:
                for cand in stage:
                    r = cand if isinstance(cand, Recipe) else replace(best, **{cand: True})
                    e = score(r)
                    if e < best_err * (1 - 1e-9):
                        best, best_err = r, e
                    advance(1)
    g = graphs[best.equalize] if best.equalize in graphs else equalize(graph)
    if best.equalize not in observers:
        observers[best.equalize] = collect_observers(g, calibration)
    meta = {"calibration_method": "auto", "calibration_samples": n, "equalized": best.equalize,
            "calibration_auto": {"recipe": best.label(), "scores": {k: round(v, 9) for k, v in scores.items()}}}
    return Calibrated(g, observers[best.equalize], calibration, best, meta)
