"""Per-layer kernel tuning (issue 16 item 6): layer signatures, the candidate kernels of a layer, the
tuning cache file and the choice it drives.

`edgecc tune` (toolchain.tune) measures every candidate of every layer on the board and writes a
cache; `build` / `run` with `tuning: FILE` (or --tuning FILE) take the cached winner of a layer
where the cache has an entry for the layer's signature, the board and this edgecc version and the
winner still applies to the node, else today's static choice (toolchain.lower.select_kernels).

The cache is JSON with sorted keys and no timestamps: the same measurements give the same bytes.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolchain import __version__
from toolchain.errors import InputError
from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import graph_rounding
from toolchain.ops.registry import KernelVariant, opdef

FORMAT = "edgecc-tuning/1"
TUNED, STATIC = "tuned", "static"


def _qclass(graph: Graph, name: str) -> str:
    """The quantization class of one tensor as kernel applicability sees it: dtype, per-tensor or
    per-channel, zero point zero or not, and for int8 constants whether they hold -128 (DSP kernels
    refuse such weights). Not the scales themselves: they do not change which kernel applies."""
    t = graph.t(name)
    q = t.quant
    parts = [t.dtype.name.lower()]
    if q is not None:
        parts.append("pc" if q.is_per_channel else "pt")
        parts.append("zp0" if not any(q.zero_point) else "zp")
    if t.is_const and t.data is not None and t.data.dtype == np.int8 and t.data.size and int(t.data.min()) == -128:
        parts.append("m128")
    return ".".join(parts)


def layer_signature(node: Node, graph: Graph) -> str:
    """What a layer's kernel choice depends on, as one string: op kind, the shapes and quantization
    classes (_qclass) of its inputs and outputs, its attributes (strides, pads, dilation, fused
    activation...), the layout of its output and the graph's rounding. Not the node's name: the same
    layer in another model has the same signature."""
    layouts = graph.meta.get("layouts") or {}
    ins = ",".join(f"{'x'.join(map(str, graph.t(i).shape))}:{_qclass(graph, i)}" for i in node.inputs if i)
    outs = ",".join(f"{'x'.join(map(str, graph.t(o).shape))}:{_qclass(graph, o)}" for o in node.outputs)
    attrs = repr(node.attrs) if node.attrs is not None else "-"
    layout = layouts.get(node.outputs[0], "NHWC")
    return f"{node.op.name}|in={ins}|out={outs}|attrs={attrs}|layout={layout}|rounding={graph_rounding(graph)}"


def candidates(graph: Graph, static: Mapping[str, KernelVariant], preference: Sequence[str],
               features: Collection[str] = ()) -> dict[str, list[KernelVariant]]:
    """node name -> every kernel variant that applies to it on the board, for the layout of its
    output (layouts stay fixed: a variant of another layout would change its neighbours' inputs):
    the static choice `static[node]` first, then the others in the board's preference order
    (`preference`: ISA folders; portable last). Views have none."""
    order = [*preference, *(["portable"] if "portable" not in preference else [])]
    have = frozenset(features)
    layouts = graph.meta.get("layouts") or {}
    out: dict[str, list[KernelVariant]] = {}
    for node in graph.nodes:
        if node.name not in static:
            continue
        layout = layouts.get(node.outputs[0], "NHWC")
        fits = [v for isa in order for v in opdef(node).variants if v.isa == isa and v.requires <= have
                and layout in v.layouts and v.applies(node, graph)]
        first = static[node.name]
        out[node.name] = [first, *(v for v in fits if v.candidate_id != first.candidate_id)]
    return out


@dataclass(frozen=True)
class Measured:
    """One candidate's cost on the board: estimated cycles (None on a board without cycle_costs)
    and retired instructions, summed over the layers of the model that share its signature."""

    est_cycles: float | None
    instructions: int


def choose(measured: Mapping[str, Measured], order: Sequence[str]) -> str:
    """The winning candidate id: fewest estimated cycles, then fewest instructions, then the earlier
    in `order` (the static order: static choice first). Candidates without est_cycles rank by
    instructions alone. Raises ValueError when nothing was measured."""
    ids = [c for c in order if c in measured]
    if not ids:
        raise ValueError("no candidate was measured")
    def key(c: str) -> tuple[float, int, int]:
        m = measured[c]
        return (m.est_cycles if m.est_cycles is not None else float(m.instructions), m.instructions, ids.index(c))
    return min(ids, key=key)


def entry_key(signature: str, board: str, version: str = __version__) -> str:
    """The cache key of one layer signature on one board for one edgecc version."""
    return f"{board}|{version}|{signature}"


def make_entry(signature: str, board: str, measured: Mapping[str, Measured], order: Sequence[str],
               layers: int, version: str = __version__) -> dict[str, Any]:
    """One cache entry: the winner (choose) and what every candidate measured, for the report."""
    return {"board": board, "version": version, "signature": signature, "layers": layers,
            "winner": choose(measured, order),
            "candidates": {c: {"est_cycles": m.est_cycles, "instructions": m.instructions}
                           for c, m in measured.items()}}


def dump_cache(entries: Mapping[str, Mapping[str, Any]]) -> str:
    """The cache file's text: JSON, sorted keys, two-space indent, a final newline, no timestamps."""
    return json.dumps({"format": FORMAT, "entries": dict(entries)}, sort_keys=True, indent=2) + "\n"


def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a tuning cache file (key -> entry). Raises InputError, one line naming the file
    and the key, for a missing or unreadable file, bad JSON or a malformed entry."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"{path}: cannot read the tuning cache ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a tuning cache: {str(e)[:120]}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("entries"), dict):
        raise InputError(f"{path}: not a tuning cache (expected `format: {FORMAT}` and `entries`); "
                         "write one with `edgecc tune`")
    for key, e in doc["entries"].items():
        if not isinstance(e, dict):
            raise InputError(f"{path}: entries[{key[:80]!r}]: expected a mapping")
        for field, kind in (("board", str), ("version", str), ("signature", str), ("winner", str),
                            ("candidates", dict)):
            if not isinstance(e.get(field), kind):
                raise InputError(f"{path}: entries[{key[:80]!r}]: `{field}` missing or not a {kind.__name__}")
        if key != entry_key(e["signature"], e["board"], e["version"]):
            raise InputError(f"{path}: entries[{key[:80]!r}]: key does not match its board, version and signature")
    return doc["entries"]


def apply_cache(graph: Graph, static: Mapping[str, KernelVariant], cands: Mapping[str, Sequence[KernelVariant]],
                entries: Mapping[str, Mapping[str, Any]], board: str,
                version: str = __version__) -> tuple[dict[str, KernelVariant], dict[str, str]]:
    """(node name -> variant, node name -> "tuned" | "static"): the cached winner of each node whose
    signature has an entry for `board` and `version` and whose winner is still among the node's
    candidates (`cands`: candidates()); else the static choice."""
    chosen, source = dict(static), {}
    by_name = {n.name: n for n in graph.nodes}
    for name, first in static.items():
        e = entries.get(entry_key(layer_signature(by_name[name], graph), board, version))
        hit = next((v for v in cands.get(name, ()) if e is not None and v.candidate_id == e["winner"]), None)
        chosen[name] = hit or first
        source[name] = TUNED if hit is not None else STATIC
    return chosen, source


def kernel_choice(graph: Graph, static: Mapping[str, KernelVariant], preference: Sequence[str],
                  features: Collection[str], board: str, cache: Path | None,
                  pick: Any = None) -> tuple[dict[str, KernelVariant], dict[str, str]]:
    """The kernel per node and where it came from, for toolchain.pipeline.plan_graph: `pick` (a
    tuning round of toolchain.tune: candidates -> node name -> variant) when given, else the cached
    winners of the tuning file `cache` (apply_cache), else the static choice. A node whose kernel
    is not its static choice is "tuned"."""
    if pick is None and cache is None:
        return dict(static), {n: STATIC for n in static}
    cands = candidates(graph, static, preference, features)
    if pick is not None:
        chosen = {**static, **pick(cands)}
        return chosen, {n: STATIC if v.candidate_id == static[n].candidate_id else TUNED for n, v in chosen.items()}
    return apply_cache(graph, static, cands, load_cache(cache), board)
