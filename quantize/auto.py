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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from quantize.bias_correct import correct_bias
from quantize.calibrate import collect_observers, select_ranges
from quantize.equalize import equalizable_pairs, equalize
from toolchain.data import quantize_inputs
from toolchain.interpret import interpret_each
from toolchain.ir import Graph
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


def build(graph: Graph, observers, calibration: Mapping[str, np.ndarray], recipe: Recipe,
          samples: Sequence[int] | None = None) -> Graph:
    """The int8 graph of `recipe` fitted on `samples` (all by default); `graph` and `observers` are the
    float graph the recipe quantizes (equalised already when recipe.equalize) and its observers."""
    from quantize import quantize_ranges

    ranges = select_ranges(graph, observers, recipe.rule, samples=samples)
    q = quantize_ranges(graph, ranges)
    if recipe.bias_correction:
        data = calibration if samples is None else _subset(calibration, samples)
        q = quantize_ranges(correct_bias(graph, q, data), ranges)
    return q


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


def auto_quantize(graph: Graph, calibration: Mapping[str, np.ndarray]) -> Graph:
    """float Graph + calibration inputs (name -> [S, *shape] float32) -> int8 Graph by the recipe with
    the least held-out output error (module docstring). graph.meta of the result: calibration_method
    "auto", calibration_auto {recipe, scores (label -> held-out error)}, equalized (bool: the pipeline
    then takes quantize.equalize(graph) as the float reference, whose activations the int8 graph
    approximates). Fewer than 4 samples: mse without search. Errors: those of quantize()."""
    n = len(next(iter(calibration.values())))
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
    g = graphs.setdefault(best.equalize, equalize(graph))
    if best.equalize not in observers:
        observers[best.equalize] = collect_observers(g, calibration)
    q = build(g, observers[best.equalize], calibration, best)
    meta = {**q.meta, "calibration_method": "auto", "calibration_samples": n, "equalized": best.equalize,
            "calibration_auto": {"recipe": best.label(), "scores": {k: round(v, 9) for k, v in scores.items()}}}
    return replace(q, meta=meta)
