"""`edgecc tune`: measure every candidate kernel of every layer on the board, keep the fastest.

One firmware per candidate SET, not per layer: in round k every layer runs its k-th candidate
(toolchain.tuning.candidates: the static choice is candidate 0, so round 0 is the static build) or
its static choice when it has fewer; each round is built, run under the board's emulator and
verified like `edgecc run`, and the per-op est_cycles / instructions of its report.json are the
measurements. Rounds = the most candidates any layer has. A round that does not pass verification
measures nothing (its candidates are dropped; round 0 must pass). Layers keep their layouts.

Layers that share a signature (toolchain.tuning.layer_signature) share one cache entry: their
measurements are summed per candidate.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from targets import Target
from toolchain.config import Config
from toolchain.errors import InputError
from toolchain.lower import lowering_target
from toolchain.ops.registry import KernelVariant
from toolchain.pipeline import Imported, compile_model, plan_graph
from toolchain.progress import step
from toolchain.out_folder import finalize
from toolchain.tuning import (Measured, candidates, dump_cache, entry_key, layer_signature, load_cache,
                              make_entry)


@dataclass(frozen=True)
class Layer:
    """One tuned layer: node name, op type, signature, candidate ids (static first) and what each
    measured (missing: its round failed)."""

    name: str
    op_type: str
    signature: str
    candidates: tuple[str, ...]
    measured: Mapping[str, Measured]


@dataclass(frozen=True)
class TuneResult:
    """What `edgecc tune` found: the cache entries, the layers in execution order, the status of
    every round ("pass", "mismatch", "fault", ...) and the reports' est_cycles_total /
    total_instructions of round 0 (the static build)."""

    entries: dict[str, dict[str, Any]]
    layers: list[Layer]
    rounds: list[str]
    static_total: tuple[float | None, int]


def _round_pick(k: int):
    """The kernel choice of round k: each layer's k-th candidate, where it has one."""
    def pick(cands: Mapping[str, list[KernelVariant]]) -> dict[str, KernelVariant]:
        return {n: c[k] for n, c in cands.items() if k < len(c)}
    return pick


def tune_model(cfg: Config, target: Target, work: Path, imported: Imported, data: Any) -> TuneResult:
    """Run the tuning rounds of `cfg`'s model on `target` in `work` (each round's report kept as
    work/rounds/round_<k>.json, its build removed) and return the cache entries. `data`: the
    verification data (toolchain.runner.verification_data). Raises InputError when the static build
    (round 0) does not pass: there is nothing to compare against."""
    from toolchain.runner import run_and_verify

    cfg = replace(cfg, tuning=None)  # measure the candidates, not an older cache's winners
    lowered = lowering_target(target, cfg.kernels)
    prefs = [isa.value for isa in lowered.kernel_preference]
    graph, static, _ = plan_graph(imported.int8_graph(lowered), cfg, target, lowered)
    cands = candidates(graph, static, prefs, target.isa_features)
    n_rounds = max((len(c) for c in cands.values()), default=1)
    measured: dict[str, dict[str, Measured]] = {n: {} for n in cands}
    statuses: list[str] = []
    static_total: tuple[float | None, int] = (None, 0)
    (work / "rounds").mkdir(parents=True, exist_ok=True)
    with step(f"{target.name}: tune: {n_rounds} rounds (one firmware per candidate set)", n_rounds) as advance:
        for k in range(n_rounds):
            sub = work / f"round_{k}"
            build = compile_model(cfg, target, sub, profile=True, imported=imported, pick=_round_pick(k))
            outcome = run_and_verify(build, data)
            report = outcome.report
            (work / "rounds" / f"round_{k}.json").write_text(json.dumps(report, sort_keys=True, indent=1) + "\n")
            shutil.rmtree(sub, ignore_errors=True)
            statuses.append(report["status"])
            advance(1)
            if outcome.exit_code != 0:
                if k == 0:
                    raise InputError(f"{cfg.source or cfg.model}: edgecc tune: the static build does not pass "
                                     f"({report['status']}); run `edgecc run` to see why")
                continue
            if k == 0:
                static_total = (report.get("est_cycles_total"), int(report["total_instructions"]))
            for op in report["ops"]:
                v = build.variants.get(op["name"])
                # a layer with fewer candidates reruns its static kernel: measured in round 0 already (the
                # neighbours' buffers move between rounds, and a count can move by a few instructions)
                if v is not None and op["name"] in measured and k < len(cands[op["name"]]):
                    measured[op["name"]][v.candidate_id] = Measured(
                        op.get("est_cycles"), int(op.get("instructions", op["cost"])))
    by_name = {n.name: n for n in graph.nodes}
    layers = [Layer(n, by_name[n].op.value, layer_signature(by_name[n], graph),
                    tuple(v.candidate_id for v in cands[n]), measured[n]) for n in cands]
    return TuneResult(_entries(layers, target.name), layers, statuses, static_total)


def _entries(layers: list[Layer], board: str) -> dict[str, dict[str, Any]]:
    """One cache entry per signature with more than one candidate: per candidate measured at every
    layer of the signature, the sum over those layers."""
    groups: dict[str, list[Layer]] = {}
    for layer in layers:
        if len(layer.candidates) > 1:
            groups.setdefault(layer.signature, []).append(layer)
    out = {}
    for sig, group in groups.items():
        order = group[0].candidates
        ids = [c for c in order if all(c in g.measured for g in group)]
        if not ids:
            continue
        cyc = {c: [g.measured[c].est_cycles for g in group] for c in ids}
        total = {c: Measured(None if None in cyc[c] else round(sum(cyc[c]), 3),  # type: ignore[arg-type]
                             sum(g.measured[c].instructions for g in group)) for c in ids}
        out[entry_key(sig, board)] = make_entry(sig, board, total, order, len(group))
    return out


def table(result: TuneResult, entries: Mapping[str, Mapping[str, Any]], board: str) -> list[str]:
    """The per-layer table `edgecc tune` prints (and writes to OUT/tune.md): layer, candidates with
    their est. cycles (instructions where the board has no cycle estimate), winner."""
    lines = ["| # | layer | op | candidates (est. cycles) | winner |", "|---|---|---|---|---|"]
    for i, layer in enumerate(result.layers):
        if len(layer.candidates) < 2:
            continue
        e = entries.get(entry_key(layer.signature, board))
        cells = []
        for c in layer.candidates:
            m = layer.measured.get(c)
            cells.append(f"{c} {'failed' if m is None else _fmt(m)}")
        name = layer.name if len(layer.name) <= 40 else "..." + layer.name[-37:]
        lines.append(f"| {i} | {name} | {layer.op_type} | {'; '.join(cells)} | {e['winner'] if e else '-'} |")
    cyc, ins = result.static_total
    lines.append("")
    lines.append(f"static build: est. cycles {cyc if cyc is not None else '-'}, instructions {ins}; "
                 f"rounds: {', '.join(result.rounds)}")
    return lines


def _fmt(m: Measured) -> str:
    return f"{m.est_cycles:,.0f}" if m.est_cycles is not None else f"{m.instructions:,} insns"


def tune_command(cfg: Config, target: Target, tmp: Path, out: Path, output: Path | None,
                 quiet: bool) -> tuple[int, Callable[[], None]]:
    """`edgecc tune` for the CLI: the rounds (tune_model) in the job's temp folder `tmp` (kept as
    OUT/rounds/round_<k>.json, the table as OUT/tune.md), OUT finalized, and the cache written to
    `output` (an existing cache there keeps its other entries), default OUT/tuning.json. Returns
    (exit status, what to print). Raises InputError for a bad existing cache or a static build that
    does not pass; targets.TargetError from the board."""
    from toolchain.pipeline import import_model
    from toolchain.runner import verification_data

    from targets import TimeSource

    if target.run.time_source is not TimeSource.PLUGIN:  # a wall-clock timer is noise at the kernels' scale
        raise InputError(f"edgecc tune: board '{target.name}' times with a {target.run.time_source.value} timer; "
                         "tuning needs exact counts (a board run under QEMU with the counting plugin)")
    output = output.resolve() if output is not None else None
    entries = load_cache(output) if output is not None and output.exists() else {}
    imported = import_model(cfg, target)
    data = verification_data(cfg, imported.graph_f32, imported.graph_s8)
    result = tune_model(cfg, target, tmp, imported, data)
    entries.update(result.entries)
    lines = table(result, entries, target.name)
    (tmp / "tune.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = dump_cache(entries)
    if output is None:
        (tmp / "tuning.json").write_text(text, encoding="utf-8")
    finalize(tmp, out)
    if output is not None:  # beside OUT: written whole, then renamed (never half a cache)
        part = output.with_name(output.name + ".part")
        part.write_text(text, encoding="utf-8")
        part.replace(output)
    where = output or out / "tuning.json"

    def show() -> None:
        if not quiet:
            print("\n".join(lines))
        print(f"edgecc: tuned {len(result.entries)} layer signature(s) on {target.name}: cache in {where}")

    return 0, show
