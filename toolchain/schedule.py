"""Execution order: the topological order of the kernel calls whose peak of live bytes (the
live-set bound the arena planner then reaches) is smallest, for graphs with branches.

Stages: kernel nodes and the bytes they define, with the rules of toolchain.memory (views share
their source's bytes; graph inputs live from the start, graph outputs to the end; scratch during
its op; an in-place output costs nothing when its input dies at that op) -> a dynamic program
over the sets of executed nodes (the downsets of the graph): go[S] = the smallest peak that
finishes the graph from S -> the lexicographically smallest optimal order by original position,
so a graph whose own order is optimal keeps it -> each view placed right after the value it views.
A graph with more than MAX_STATES downsets keeps its own order (none of our models comes close).
Not here: lifetimes and placement (toolchain.memory, toolchain.planners).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from toolchain.ir import Graph, Node
from toolchain.ops.registry import opdef
from toolchain.planners import align

MAX_STATES = 20_000


@dataclass
class _Problem:
    """The graph reduced to kernel nodes (bit i = the i-th kernel node in graph order)."""

    nodes: list[Node]
    preds: list[int]                  # bitmask of the nodes each node waits for
    succs: list[list[int]]
    reads: list[list[str]]            # view roots each node reads (unique)
    writes: list[list[str]]           # tensors each node defines
    size: dict[str, int]              # aligned bytes of every root
    readers: dict[str, int]           # bitmask of the nodes reading each root
    kept: set[str]                    # roots of graph outputs: live to the end
    inplace: list[list[str]]          # roots each node's first output may overwrite, in preference order
    scratch: list[int]                # aligned scratch bytes per node
    start_live: int                   # bytes live before the first op
    unread_inputs: int                # graph inputs nobody reads: live during the first op only


def _problem(graph: Graph, scratch: Mapping[str, int], alignment: int,
             inplace: Mapping[str, tuple[int, ...]]) -> _Problem:
    vroot = {name: name for name in graph.inputs}
    producer: dict[str, int] = {}
    kernels: list[Node] = []
    for node in graph.nodes:
        if opdef(node).is_view:
            for o in node.outputs:
                vroot[o] = vroot[node.inputs[0]]
            continue
        for o in node.outputs:
            vroot[o] = o
            producer[o] = len(kernels)
        kernels.append(node)
    n = len(kernels)
    size = {r: align(graph.t(r).nbytes, alignment) for r in set(vroot.values())}
    reads = [sorted({vroot[t] for t in node.inputs if t in vroot}) for node in kernels]
    readers: dict[str, int] = {r: 0 for r in size}
    preds, succs = [0] * n, [[] for _ in range(n)]
    for i, rs in enumerate(reads):
        for r in rs:
            readers[r] |= 1 << i
            if r in producer and not preds[i] >> producer[r] & 1:
                preds[i] |= 1 << producer[r]
                succs[producer[r]].append(i)
    kept = {vroot[o] for o in graph.outputs}
    ins = set(graph.inputs)
    nbytes = {r: graph.t(r).nbytes for r in size}
    return _Problem(
        kernels, preds, succs, reads, [list(node.outputs) for node in kernels], size, readers, kept,
        [[vroot[node.inputs[k]] for k in inplace.get(node.name, ()) if k < len(node.inputs)
          and node.inputs[k] in vroot and nbytes[vroot[node.inputs[k]]] == graph.t(node.outputs[0]).nbytes]
         for node in kernels],
        [align(scratch.get(node.name, 0), alignment) for node in kernels],
        sum(size[r] for r in ins if readers[r] or r in kept),
        sum(size[r] for r in ins if not readers[r] and r not in kept))


def _dead_after(p: _Problem, done: int) -> Callable[[str], bool]:
    """Whether a root is free once the nodes in `done` have run."""
    return lambda r: r not in p.kept and not p.readers[r] & ~done


def _step_bytes(p: _Problem, s: int, i: int, live: int) -> int:
    """Bytes live while node i runs after the set s: what is live, its outputs and its scratch,
    minus the output that overwrites a dying input."""
    dead = _dead_after(p, s | 1 << i)
    shared = any(dead(r) for r in p.inplace[i])
    return live + sum(p.size[o] for o in p.writes[i]) - (p.size[p.writes[i][0]] if shared else 0) \
        + p.scratch[i] + (p.unread_inputs if s == 0 else 0)


def _live_after(p: _Problem, s: int, i: int, live: int) -> int:
    dead = _dead_after(p, s | 1 << i)
    born = sum(p.size[o] for o in p.writes[i] if p.readers.get(o) or o in p.kept)
    return live + born - sum(p.size[r] for r in p.reads[i] if dead(r))


def _ready_after(p: _Problem, s: int, i: int, ready: int) -> int:
    t = s | 1 << i
    ready &= ~(1 << i)
    for j in p.succs[i]:
        if not p.preds[j] & ~t:
            ready |= 1 << j
    return ready


def _bits(x: int) -> list[int]:
    out = []
    while x:
        out.append((x & -x).bit_length() - 1)
        x &= x - 1
    return out


def best_order(p: _Problem) -> tuple[list[int], int] | None:
    """(kernel-node order, its peak bytes) with the smallest peak; None past MAX_STATES downsets."""
    n = len(p.nodes)
    ready0 = sum(1 << i for i in range(n) if not p.preds[i])
    layers: list[dict[int, tuple[int, int]]] = [{0: (p.start_live, ready0)}]  # downset -> (live bytes, ready set)
    total = 1
    for _ in range(n):
        nxt: dict[int, tuple[int, int]] = {}
        for s, (live, ready) in layers[-1].items():
            for i in _bits(ready):
                t = s | 1 << i
                if t not in nxt:
                    nxt[t] = (_live_after(p, s, i, live), _ready_after(p, s, i, ready))
        total += len(nxt)
        if total > MAX_STATES:
            return None
        layers.append(nxt)
    go: dict[int, int] = {(1 << n) - 1: 0}
    for layer in reversed(layers[:-1]):
        for s, (live, ready) in layer.items():
            go[s] = min(max(_step_bytes(p, s, i, live), go[s | 1 << i]) for i in _bits(ready))
    order, s, peak = [], 0, go[0]
    for depth in range(n):
        live, ready = layers[depth][s]
        i = next(i for i in _bits(ready) if max(_step_bytes(p, s, i, live), go[s | 1 << i]) <= peak)
        order.append(i)
        s |= 1 << i
    return order, peak


def order_for_memory(graph: Graph, scratch: Mapping[str, int], alignment: int,
                     inplace: Mapping[str, tuple[int, ...]] | None = None) -> Graph:
    """The graph with its nodes in the order of the smallest peak of live bytes (the same graph
    when its own order is already optimal or the search is too large)."""
    p = _problem(graph, scratch, alignment, inplace or {})
    found = best_order(p)
    if found is None or found[0] == list(range(len(p.nodes))):
        return graph
    views: dict[str, list[Node]] = {}
    for node in graph.nodes:
        if opdef(node).is_view:
            views.setdefault(node.inputs[0], []).append(node)
    out: list[Node] = []

    def place_views(tensor: str) -> None:
        for v in views.pop(tensor, []):
            out.append(v)
            for o in v.outputs:
                place_views(o)

    produced = {o for node in graph.nodes for o in node.outputs}
    for node in graph.nodes:  # views of graph inputs and constants come first
        if opdef(node).is_view and node.inputs[0] not in produced:
            place_views(node.inputs[0])
    for i in found[0]:
        out.append(p.nodes[i])
        for o in p.nodes[i].outputs:
            place_views(o)
    return graph.with_nodes(out)
