"""`precision: auto`: move the layers whose int8 quantization hurts most to 16x8, one at a time, until
a target is met on held-out calibration samples or a budget would be exceeded.

1. Start: the int8 graph of the calibration method (quantize.auto.Calibrated: its recipe, fitted on all
   calibration samples).
2. Rank: the ops with a 16x8 kernel (quantize.precision.s16_capable) by their isolated error in that
   int8 graph (report.json ops[].sqnr_db_isolated: the op alone, fed the float reference's inputs;
   measured by the caller's `isolated`, profiler.numerics.op_numerics, on calibration samples), worst
   first.
3. Move: a move puts the tensors of one op in int16, the ones its isolated error measures: the op, the
   ops writing its activation inputs and the ops reading its output (through views) compute in 16x8
   where they can (an op whose neighbours all stay int8 would gain nothing, as every int16 tensor would
   be requantized to int8 at once: skipped).
   Each candidate is judged out of sample as quantize.auto judges recipes: the calibration samples in
   two interleaved halves (even / odd indices), the recipe fitted on one half and run on the other,
   both ways; top-1 agreement of output 0 with the float graph over every held-out sample, and the
   SQNR of output 0 over all of them (10 log10 of summed signal over summed noise). A move is kept
   when it raises the SQNR of the judged tensor (output 0, or the logits: the input of a Softmax /
   Logistic writing it, see NORMALIZERS) by at least MIN_GAIN_DB and keeps the graph within the budgets:
   `max_arena_bytes` (the memory planner's arena of the candidate, all samples' ranges) and
   `max_cost_ratio` (the candidate's estimated instructions over the int8 graph's), both from the
   caller's `measure`. A move over a budget is skipped and the next tried (a smaller layer may fit).
4. Stop: when the target is met (every set figure of `Target` reached; with neither set, every move
   that pays is taken) or no candidate is left.
5. Under calibration_method auto: bias correction fitted on the chosen mixed graph replaces the recipe's
   (fitted on the int8 graph) when it raises the judged SQNR by MIN_GAIN_DB (_bias_stage).

The caller passes what quantize may not import (the planner, the profiler): Search.measure and
.isolated (toolchain.pipeline builds them for the board). Deterministic: fixed halves, fixed rank
(ties in graph order). The record of every step goes to graph.meta["precision"]["auto"]
(report.json `precision`). Cost: one pass over the calibration samples per candidate (two held-out
halves), plus the ranking's.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from quantize.auto import Calibrated, Fit
from quantize.precision import capable_nodes, neighbours, precision_meta
from toolchain.data import quantize_inputs
from toolchain.interpret import interpret
from toolchain.ir import Graph
from toolchain.progress import step

# Defaults of `precision_target`: every held-out calibration sample's top-1 equal to the float model's and
# an output SQNR of 40 dB (noise at 1% of the output's amplitude). Measured (bench/quant_holdout.py,
# docs/precision.md): the held-out top-1 of 50-100 samples per half is met by int8 graphs that lose 3-4% of
# the verification images (ResNet-8 fold A), and with every layer in 16x8 ResNet-8 and VWW reach 37-39 dB
# (their int8 weights bound them), so on these models the default takes every move that pays; a model whose
# int8 graph already reaches both stays int8. A lower sqnr_db (e.g. 30) stops earlier, at lower cost.
DEFAULT_AGREEMENT = 1.0
DEFAULT_SQNR_DB = 40.0
MIN_GAIN_DB = 0.05  # a move must raise the held-out output SQNR by this much (below: noise for its cost)
RANK_SAMPLES = 32  # calibration samples (spread evenly) the isolated errors are measured on


@dataclass(frozen=True)
class Target:
    """Held-out figures at which the search stops: top-1 agreement (fraction) and output SQNR (dB);
    None: not a target."""

    agreement: float | None = DEFAULT_AGREEMENT
    sqnr_db: float | None = DEFAULT_SQNR_DB

    def met(self, score: "Score") -> bool:
        if self.agreement is None and self.sqnr_db is None:
            return False  # no target: every move that pays, within the budgets
        return ((self.agreement is None or (score.agreement is not None and score.agreement >= self.agreement))
                and (self.sqnr_db is None or score.sqnr_db >= self.sqnr_db))


@dataclass(frozen=True)
class Search:
    """What precision auto needs from its caller: the target, the budgets (None: none) and two
    measures: `measure` (quantized graph -> (bytes of the memory planner's arena, estimated cost per
    inference in `cost_unit`)) and `isolated` (float graph, quantized graph, float inputs [S, ...],
    quantized inputs [S, ...] -> node name -> isolated SQNR in dB or None)."""

    measure: Callable[[Graph], tuple[int, float]]
    isolated: Callable[[Graph, Graph, Mapping, Mapping], Mapping[str, float | None]]
    target: Target = field(default_factory=Target)
    max_arena_bytes: int | None = None
    max_cost_ratio: float | None = None
    cost_unit: str = "estimated instructions"


@dataclass(frozen=True)
class Score:
    """Held-out figures of one candidate: top-1 agreement of output 0 (None when it has one value per
    sample), its SQNR in dB, and the SQNR of the judged tensor (judged_tensor) that decides moves."""

    agreement: float | None
    sqnr_db: float
    judged_db: float

    def as_dict(self) -> dict:
        return {"agreement": None if self.agreement is None else round(self.agreement, 6),
                "sqnr_db": round(self.sqnr_db, 3), "judged_sqnr_db": round(self.judged_db, 3)}


# Ops whose output is a saturating normalisation of their input (probabilities): when one writes output 0,
# moves are judged on its input. Their outputs' squared error is dominated by the few samples whose
# probabilities swing (exp amplifies the logits' error), so it moves by up to 1 dB either way for a
# change of 0.2 dB in the logits (measured on ResNet-8, 200 samples); top-1 is the logits' argmax.
NORMALIZERS = ("SOFTMAX", "LOG_SOFTMAX", "LOGISTIC")


def judged_tensor(graph: Graph) -> str:
    """The tensor moves are judged on: output 0, or the input of the normaliser writing it (NORMALIZERS,
    through views)."""
    from toolchain.ops.registry import opdef

    name = graph.outputs[0]
    while (p := graph.producer(name)) is not None and opdef(p).is_view:
        name = p.inputs[0]
    return p.inputs[0] if p is not None and p.op.name in NORMALIZERS else graph.outputs[0]


def _subset(calibration: Mapping[str, np.ndarray], idx: Sequence[int]) -> dict[str, np.ndarray]:
    return {k: v[list(idx)] for k, v in calibration.items()}


def held_out(qgraph: Graph, calibration: Mapping[str, np.ndarray], held: Sequence[int],
             names: Sequence[str]) -> list[np.ndarray]:
    """Per tensor of `names` (of qgraph), its dequantized values on the `held` samples, [len(held),
    values] float64."""
    data_q = quantize_inputs(_subset(calibration, held), qgraph)
    g = replace(qgraph, outputs=tuple(dict.fromkeys((*qgraph.outputs, *names))))
    got: list[list[np.ndarray]] = [[] for _ in names]
    for j in range(len(held)):
        env = interpret(g, {k: v[j] for k, v in data_q.items()})
        for k, name in enumerate(names):
            t = g.t(name)
            y = t.quant.dequantize(env[name]) if t.quant is not None else env[name]
            got[k].append(np.asarray(y, np.float64).reshape(-1))
    return [np.stack(v) for v in got]


def sqnr(got: np.ndarray, ref: np.ndarray) -> float:
    """10 log10(sum ref^2 / sum (got - ref)^2) in dB; 200 for an exact result (a finite stand-in)."""
    noise, signal = float(np.sum((got - ref) ** 2)), float(np.sum(ref ** 2))
    return float(10 * np.log10(signal / noise)) if noise > 0 and signal > 0 else 200.0


class _Judge:
    """Builds and scores candidates: the folds' fitted recipes (fitted once) and the float values of
    output 0 and of the judged tensor on every calibration sample."""

    def __init__(self, cal: Calibrated, inputs8: frozenset[str]) -> None:
        from quantize import quantize_int16

        self.cal, self.inputs8, self.build_with = cal, inputs8, quantize_int16
        n = len(next(iter(cal.calibration.values())))
        halves = (list(range(0, n, 2)), list(range(1, n, 2)))
        self.halves = halves  # fold k is fitted on halves[k] and judged on the other half
        self.folds: list[tuple[Fit, list[int]]] = [(cal.fit(fit), held) for fit, held in (halves, halves[::-1])]
        self.names = (cal.graph.outputs[0], judged_tensor(cal.graph))
        g = replace(cal.graph, outputs=tuple(dict.fromkeys((*cal.graph.outputs, *self.names))))
        runs = [interpret(g, {k: v[i] for k, v in cal.calibration.items()}) for i in range(n)]
        self.floats = [np.stack([np.asarray(r[name], np.float64).reshape(-1) for r in runs]) for name in self.names]

    def build(self, f: Fit, nodes: frozenset[str]) -> Graph:
        return self.build_with(f, nodes, self.inputs8)

    def refit(self, nodes: frozenset[str]) -> tuple[Calibrated, list[Fit]]:
        """The recipe with bias correction fitted for `nodes` in 16x8 (quantize.auto.fit), and its fit
        on each fold's half."""
        alt = replace(self.cal, recipe=replace(self.cal.recipe, bias_correction=True))
        return alt, [alt.fit(half, nodes, self.inputs8) for half in self.halves]

    def score(self, nodes: frozenset[str], fits: Sequence[Fit] | None = None) -> Score:
        """Held-out Score of `nodes` in 16x8, each fold fitted as `fits` (default: the recipe as chosen)."""
        fits = fits or [f for f, _ in self.folds]
        parts = [held_out(self.build(f, nodes), self.cal.calibration, held, self.names)
                 for f, (_, held) in zip(fits, self.folds, strict=True)]
        held = [i for _, h in self.folds for i in h]
        (out, judged), (ref_out, ref_judged) = ([np.concatenate([p[k] for p in parts]) for k in range(2)],
                                                [f[held] for f in self.floats])
        agree = float(np.mean(out.argmax(1) == ref_out.argmax(1))) if ref_out.shape[1] > 1 else None
        return Score(agree, sqnr(out, ref_out), sqnr(judged, ref_judged))


def rank(cal: Calibrated, q0: Graph, search: Search) -> list[tuple[str, float]]:
    """(node name, isolated SQNR dB) of the 16x8-capable ops of the int8 graph q0, worst first (ties in
    graph order); ops without a figure (exact, or no float counterpart) are left out."""
    n = len(next(iter(cal.calibration.values())))
    idx = sorted({int(i) for i in np.linspace(0, n - 1, min(n, RANK_SAMPLES))})
    data = _subset(cal.calibration, idx)
    iso = search.isolated(cal.graph, q0, data, quantize_inputs(data, q0))
    order = {name: k for k, name in enumerate(capable_nodes(cal.graph))}
    rated = [(name, iso[name]) for name in order if iso.get(name) is not None]
    return sorted(rated, key=lambda r: (r[1], order[r[0]]))


def choose_precision(cal: Calibrated, search: Search) -> Graph:
    """The quantized graph precision auto chooses (module docstring), with graph.meta["precision"] =
    precision.precision_meta(..., "auto", auto={target, budgets, start, steps, bias_correction, final,
    stopped}). Fewer than 4 calibration samples: the int8 graph (no halves to judge on). Errors:
    quantize()'s."""
    from quantize import inputs_8bit, quantize_int16

    full = cal.fit()
    inputs8 = inputs_8bit(cal.graph, cal.calibration, full.ranges)
    q0 = quantize_int16(full, frozenset(), inputs8)
    n = len(next(iter(cal.calibration.values())))
    budgets = {"max_arena_bytes": search.max_arena_bytes, "max_cost_ratio": search.max_cost_ratio}
    record = {"target": {"agreement": search.target.agreement, "sqnr_db": search.target.sqnr_db},
              "budgets": budgets, "cost_unit": search.cost_unit, "held_out_samples": n,
              "criterion": "2-fold held-out halves of the calibration data (even / odd samples)"}
    if n < 4:
        return _finish(q0, {**record, "candidates": None, "steps": [], "final": None,
                            "stopped": "fewer than 4 calibration samples: int8"})
    judge = _Judge(cal, inputs8)
    arena0, cost0 = search.measure(q0)
    capable = set(capable_nodes(cal.graph))
    ranked = rank(cal, q0, search)
    chosen: frozenset[str] = frozenset()
    with step(f"precision auto ({len(ranked)} candidate layers, held-out search)", len(ranked) + 2) as advance:
        score = judge.score(chosen)
        advance(1)
        record.update(judged_tensor=judge.names[1], candidates=len(ranked),
                      start={**score.as_dict(), "arena_bytes": arena0, "cost": round(cost0)})
        arena, cost, steps, stopped = arena0, cost0, [], "no candidate left"
        for name, iso_db in ranked:
            if search.target.met(score):
                stopped = "target met"
                break
            producers, readers = ([n for n in side if n in capable] for side in neighbours(cal.graph, name))
            entry = {"op": name, "isolated_sqnr_db": iso_db, "moved": [*producers, name, *readers]}
            move = chosen | {name, *producers, *readers}
            if not producers and not readers and not _writes_output(cal.graph, name):
                steps.append({**entry, "taken": False,
                              "why": "no neighbour computes in 16x8: no tensor would be int16"})
            elif move == chosen:
                steps.append({**entry, "taken": False, "why": "already in 16x8"})
            else:
                steps.append(_try(judge, full, move, search, entry, score, arena, cost, cost0))
                if steps[-1]["taken"]:
                    chosen, score = move, steps[-1].pop("_score")
                    arena, cost = steps[-1]["arena_bytes"], steps[-1]["cost"]
            advance(1)
        else:
            stopped = "target met" if search.target.met(score) else stopped
        final, score, record["bias_correction"] = _bias_stage(judge, full, chosen, score)
        advance(1)
    end = {**score.as_dict(), "arena_bytes": arena, "cost": round(cost),
           "cost_ratio": round(cost / cost0, 4) if cost0 else None}
    return _finish(final, {**record, "steps": steps, "final": end, "stopped": stopped})


def choose_int16(cal: Calibrated) -> Graph:
    """precision int16: every op with a 16x8 kernel in 16x8 (quantize.quantize_int16); under
    calibration_method auto with 4 samples or more, bias correction fitted for this graph is kept when
    it lowers the held-out error (_bias_stage). graph.meta["precision"]: mode int16 (+ bias_correction)."""
    from quantize import inputs_8bit, quantize_int16

    full = cal.fit()
    inputs8 = inputs_8bit(cal.graph, cal.calibration, full.ranges)
    nodes = frozenset(capable_nodes(cal.graph))
    n = len(next(iter(cal.calibration.values())))
    if cal.meta.get("calibration_method") != "auto" or n < 4 or not nodes:
        g = quantize_int16(full, nodes, inputs8)
        return replace(g, meta={**g.meta, "precision": precision_meta(g, "int16")})
    judge = _Judge(cal, inputs8)
    with step("precision int16: bias correction for the 16x8 graph (held-out)", 1):
        g, _, bias = _bias_stage(judge, full, nodes, judge.score(nodes))
    return replace(g, meta={**g.meta, "precision": precision_meta(g, "int16", bias_correction=bias)})


def _bias_stage(judge: _Judge, full: Fit, chosen: frozenset[str], score: Score) -> tuple[Graph, Score, dict | None]:
    """(graph, its held-out Score, record) for the chosen 16x8 nodes: when the calibration method is auto
    and some node is in 16x8, bias correction fitted on the mixed graph (the recipe's own was fitted on
    the int8 graph, whose activation errors the 16x8 nodes no longer have; a recipe without it gets it
    as a candidate) replaces the recipe's when it raises the judged SQNR by MIN_GAIN_DB."""
    if judge.cal.meta.get("calibration_method") != "auto" or not chosen:
        return judge.build(full, chosen), score, None
    alt, fits = judge.refit(chosen)
    new = judge.score(chosen, fits)
    taken = new.judged_db - score.judged_db >= MIN_GAIN_DB
    record = {"refitted_for_16x8": taken, "recipe": judge.cal.recipe.label(), **new.as_dict()}
    if not taken:
        return judge.build(full, chosen), score, record
    return judge.build(alt.fit(None, chosen, judge.inputs8), chosen), new, record


def _try(judge: _Judge, full: Fit, move: frozenset[str], search: Search, entry: dict, score: Score,
         arena: int, cost: float, cost0: float) -> dict:
    """One move judged: over a budget (skipped), not paying (not taken) or taken, with its figures."""
    g = judge.build(full, move)
    a, c = search.measure(g)
    entry = {**entry, "arena_bytes": a, "arena_bytes_delta": a - arena, "cost": round(c),
             "cost_delta": round(c - cost)}
    if search.max_arena_bytes is not None and a > search.max_arena_bytes:
        return {**entry, "taken": False, "why": f"arena {a} B over max_arena_bytes {search.max_arena_bytes}"}
    if search.max_cost_ratio is not None and cost0 and c / cost0 > search.max_cost_ratio:
        return {**entry, "taken": False, "why": f"cost {c / cost0:.3f}x the int8 graph's, over max_cost_ratio "
                                               f"{search.max_cost_ratio:g}"}
    new = judge.score(move)
    gain = new.judged_db - score.judged_db
    entry = {**entry, **new.as_dict(), "sqnr_gain_db": round(gain, 3),
             "agreement_delta": None if new.agreement is None else round(new.agreement - score.agreement, 6)}
    if gain < MIN_GAIN_DB:
        return {**entry, "taken": False,
                "why": f"held-out SQNR gain {gain:.3f} dB (judged tensor) below {MIN_GAIN_DB} dB"}
    return {**entry, "taken": True, "why": None, "_score": new}


def _writes_output(graph: Graph, name: str) -> bool:
    """Whether node `name`'s output is a graph output, itself or through views."""
    from toolchain.ops.registry import opdef

    todo = list(next(n for n in graph.nodes if n.name == name).outputs)
    while todo:
        t = todo.pop()
        if t in graph.outputs:
            return True
        todo.extend(c.outputs[0] for c in graph.consumers(t) if opdef(c).is_view)
    return False


def _finish(g: Graph, auto: dict) -> Graph:
    return replace(g, meta={**g.meta, "precision": precision_meta(g, "auto", auto=auto)})
