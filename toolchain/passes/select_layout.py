"""select_layout: choose the memory layout of every activation per op and per target (NHWC, or CHWN
with the batch innermost where NEON vectorises across it), inserting the relayouts that pay.

Runs on the int8 graph for one board (it depends on the board's kernels), before kernel selection
(pipeline.compile_model). The IR keeps every activation in its logical shape; the choice goes into
graph.meta["layouts"] (tensor -> layout, read by lower.select_kernels through
KernelVariant.layouts and by the report), and layout changes become Relayout nodes
(ops/relayout.py), logically the identity.

Which layouts a node can take: the board's preferred_layout (boards.yaml), plus every layout for
which a kernel variant of the board's kernel_preference (with its `requires` met) lists the layout
and accepts the node. Views (Reshape) and graph inputs/outputs stay in the preferred layout; a
model-input Transpose (NCHW data -> NHWC) may write the other layout directly (one relayout
instead of two).

How it chooses: every node has a cost per layout (estimated instructions, COST_MODEL, fitted to
the kernels' measured instruction counts), every tensor whose producer and consumer differ costs a
relayout (bytes x RELAYOUT_COST). With two layouts this is a binary labelling with pairwise costs
that are zero on equal labels, which an s-t minimum cut solves exactly (each node: an edge from
the source weighted by its cost in the other layout, one to the sink weighted by its cost in the
preferred layout; each producer-consumer pair: both directions weighted by the tensor's relayout
cost; a tensor read by several consumers gets two auxiliary nodes so that it costs one relayout
however many consumers read it in the other layout, as the rewrite inserts it). A chain of ops that
share a layout never gets a relayout inside it. Boards whose kernels know one layout only (all Cortex-M boards) keep
every tensor in it and the graph unchanged.
"""
from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np

import toolchain.isa  # noqa: F401 - the layouts each op's ISA kernel variants take
from toolchain.ir import Graph, Node
from toolchain.ops.registry import KernelVariant, OpKind, opdef
from toolchain.ops.relayout import RelayoutAttrs, fast_plan, relayout_plan, storage_dims, storage_perm

INF = 1e18
RELAYOUT_COST = {"neon": 1.2, "portable": 9.4}  # instructions per byte (neon/relayout, portable/transpose)


def _conv_features(node: Node, graph: Graph) -> dict[str, float]:
    y = graph.t(node.outputs[0])
    w = graph.t(node.inputs[1]).shape
    pix = float(np.prod(y.shape[:3]))
    k = float(np.prod(w[1:])) if node.op is OpKind.CONV2D else float(w[1] * w[2])
    return {"macs": opdef(node).cost(node, graph).macs, "out": float(y.size), "pix": pix, "pixk": pix * k}


# (op, variant name) -> instructions as a linear function of the features of _conv_features, fitted
# to the instruction counts of the neon kernels on MLPerf Tiny layer shapes (batch 8, qemu-aarch64
# TCG plugin; within about 12 %). Anything else: PORTABLE_COST.
COST_MODEL = {
    ("Conv2D", "neon_dot"): {"macs": 0.071, "out": 2.92, "pixk": 1.20, "pix": 80.4},
    ("Conv2D", "neon"): {"macs": 0.209, "out": 6.48, "pixk": 1.16, "pix": 82.5},
    ("Conv2D", "neon_nopair"): {"macs": 0.28, "out": 6.48, "pixk": 1.16, "pix": 82.5},
    ("Conv2D", "neon_1x1_dot"): {"macs": 0.082, "out": 2.76, "pix": 24.6},
    ("Conv2D", "neon_1x1"): {"macs": 0.223, "out": 5.41, "pix": 44.0},
    ("Conv2D", "neon_1x1_nopair"): {"macs": 0.30, "out": 5.41, "pix": 44.0},
    ("Conv2D", "neon_chwn"): {"macs": 0.296, "out": 6.93, "pixk": 0.93},
    ("DepthwiseConv2D", "neon_3x3"): {"out": 6.44, "pix": 36.6},
    ("DepthwiseConv2D", "neon_3x3_nopair"): {"out": 7.2, "pix": 36.6},
    ("DepthwiseConv2D", "neon"): {"out": 8.0, "pix": 207.0},
    ("DepthwiseConv2D", "neon_nopair"): {"out": 8.0, "pix": 207.0},
    ("DepthwiseConv2D", "neon_chwn"): {"macs": 1.45, "out": 0.16},
}
PORTABLE_COST = {"macs": 7.0, "out": 10.0}
ELEMENTWISE_COST = 5.0  # per output byte, any layout (add, pooling: the same work in NHWC and CHWN)


def node_cost(node: Node, graph: Graph, variant: KernelVariant) -> float:
    """Estimated instructions of `node` with `variant`."""
    if node.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
        f = _conv_features(node, graph)
        model = COST_MODEL.get((node.op.value, variant.name), PORTABLE_COST)
        return sum(model.get(k, 0.0) * v for k, v in f.items())
    out = float(sum(graph.t(o).size for o in node.outputs))
    if node.op in (OpKind.TRANSPOSE, OpKind.RELAYOUT):
        return out * RELAYOUT_COST.get(variant.isa, RELAYOUT_COST["portable"])
    if variant.isa == "portable":
        return opdef(node).cost(node, graph).macs * PORTABLE_COST["macs"] + out * PORTABLE_COST["out"]
    return out * ELEMENTWISE_COST


def _eligible(node: Node, graph: Graph, layout: str, prefs: list[str], features: frozenset[str]) -> KernelVariant | None:
    """The variant lower.select_kernels would choose for `node` in `layout` (None: none applies)."""
    op = opdef(node)
    for isa in prefs:
        for v in op.variants:
            if v.isa == isa and v.requires <= features and layout in v.layouts and v.applies(node, graph):
                return v
    return None


def _as_relayout(node: Node, graph: Graph, dst: str) -> Node | None:
    """A model-input Transpose rewritten to write `dst` directly (None if it cannot)."""
    if node.op is not OpKind.TRANSPOSE or len(graph.t(node.inputs[0]).shape) != 4:
        return None
    attrs = RelayoutAttrs(tuple(node.attrs.perm), "NHWC", dst)
    return replace(node, op=OpKind.RELAYOUT, attrs=attrs)


def _relayout_variant_cost(node: Node, graph: Graph) -> float:
    shape = graph.t(node.inputs[0]).shape
    a = node.attrs
    fast = fast_plan(relayout_plan(storage_dims(shape, a.src), storage_perm(a.perm, a.src, a.dst)))
    return graph.t(node.outputs[0]).size * RELAYOUT_COST["neon" if fast else "portable"]


def tensor_relayout_cost(graph: Graph, name: str, a: str, b: str) -> float:
    """Instructions to move a 4-D activation between layouts a and b (the slower direction)."""
    t = graph.t(name)
    if len(t.shape) != 4:
        return INF
    fast = all(fast_plan(relayout_plan(storage_dims(t.shape, s), storage_perm((0, 1, 2, 3), s, d)))
               for s, d in ((a, b), (b, a)))
    return t.size * RELAYOUT_COST["neon" if fast else "portable"]


def _min_cut_labels(unary: list[tuple[float, float]], tensors: list[tuple[int | None, list[int | None], float]]) -> list[int]:
    """Binary labels (0: preferred layout, 1: the other) of len(unary) nodes minimising
    sum unary[i][label_i] + sum over tensors (producer, consumers, r) of r when some consumer's label
    differs from the producer's (None: a graph input or output, fixed at label 0). An s-t minimum
    cut; each tensor gets two auxiliary nodes so that it costs r once however many consumers differ
    (z: producer -> z (r), z -> consumers (inf); y: consumers -> y (inf), y -> producer (r))."""
    n = len(unary)
    s, t = n, n + 1
    cap: dict[int, dict[int, float]] = {}

    def add(a: int, b: int, c: float) -> None:
        cap.setdefault(a, {})[b] = cap.get(a, {}).get(b, 0.0) + c
        cap.setdefault(b, {}).setdefault(a, 0.0)

    for i, (c0, c1) in enumerate(unary):
        add(s, i, c1)  # cut when i lands on the sink side (label 1): pays its label-1 cost
        add(i, t, c0)  # cut when i stays on the source side (label 0)
    aux = t + 1
    for prod, cons, r in tensors:
        p = s if prod is None else prod
        cs = sorted({s if c is None else c for c in cons} - {p})
        if not cs or r <= 0:
            continue
        z, y = aux, aux + 1
        aux += 2
        add(p, z, r)
        add(y, p, r)
        for c in cs:
            add(z, c, INF)
            add(c, y, INF)
    while True:  # Edmonds-Karp
        parent = {s: s}
        q = deque([s])
        while q and t not in parent:
            u = q.popleft()
            for v, c in cap.get(u, {}).items():
                if c > 1e-9 and v not in parent:
                    parent[v] = u
                    q.append(v)
        if t not in parent:
            break
        flow, v = INF, t
        while v != s:
            flow = min(flow, cap[parent[v]][v])
            v = parent[v]
        v = t
        while v != s:
            cap[parent[v]][v] -= flow
            cap[v][parent[v]] += flow
            v = parent[v]
    return [0 if i in parent else 1 for i in range(n)]


def select_layout(graph: Graph, target) -> Graph:
    """The graph with a layout per activation (graph.meta["layouts"]) and Relayout nodes where it
    changes; unchanged when the board's kernels offer no layout beside its preferred one."""
    pref = target.preferred_layout
    prefs = [isa.value for isa in target.kernel_preference]
    prefs += [] if "portable" in prefs else ["portable"]
    features = frozenset(target.isa_features)
    others = sorted({lay for n in graph.nodes for v in opdef(n).variants
                     if v.isa in prefs and v.requires <= features for lay in v.layouts} - {pref})
    alt = next((lay for lay in others if lay == "CHWN"), None)
    if alt is None:
        return graph
    nodes = list(graph.nodes)
    unary: list[tuple[float, float]] = []
    for n in nodes:
        if opdef(n).is_view:
            unary.append((0.0, INF))
            continue
        v0 = _eligible(n, graph, pref, prefs, features)
        c0 = node_cost(n, graph, v0) if v0 else INF
        r = _as_relayout(n, graph, alt)
        if r is not None:
            c1 = _relayout_variant_cost(r, graph)
        elif all(len(graph.t(o).shape) == 4 for o in n.outputs):
            v1 = _eligible(n, graph, alt, prefs, features)
            c1 = node_cost(n, graph, v1) if v1 else INF
        else:
            c1 = INF
        unary.append((c0, c1))
    index = {n.name: i for i, n in enumerate(nodes)}
    producer = {o: index[n.name] for n in nodes for o in n.outputs}
    readers: dict[str, list[int | None]] = {}
    for n in nodes:
        for i in n.inputs:
            if i and not graph.t(i).is_const:
                # a model-input Transpose reads its input as stored whatever layout it writes
                readers.setdefault(i, []).append(None if n.op is OpKind.TRANSPOSE and i not in producer
                                                 else index[n.name])
    for o in graph.outputs:  # graph outputs are delivered in the preferred layout
        readers.setdefault(o, []).append(None)
    tensors = [(producer.get(name), cons, tensor_relayout_cost(graph, name, pref, alt))
               for name, cons in readers.items()]
    labels = _min_cut_labels(unary, tensors)
    if not any(labels):
        return graph
    return _rewrite(graph, labels, pref, alt)


def _rewrite(graph: Graph, labels: list[int], pref: str, alt: str) -> Graph:
    """Apply the labels: alt nodes write `alt`, Relayout nodes where a consumer needs the other layout
    (one per tensor and layout); graph inputs and outputs keep their names and the preferred layout."""
    lay = {n.name: (alt if b else pref) for n, b in zip(graph.nodes, labels)}
    tensors = dict(graph.tensors)
    names = set(tensors)
    layout = {t: pref for t in graph.inputs}
    copies: dict[tuple[str, str], str] = {}  # (tensor, layout) -> the tensor holding it in that layout

    def relayout(src: str, dst: str, frm: str, to: str) -> Node:
        return Node(_fresh(names, f"relayout:{src}:{to.lower()}"), OpKind.RELAYOUT, (src,), (dst,),
                    RelayoutAttrs((0, 1, 2, 3), frm, to))

    def copy_of(t: str, want: str, out: list[Node]) -> str:
        if layout[t] == want:
            return t
        if (t, want) not in copies:
            name = _fresh(names, f"{t}:{want.lower()}")
            tensors[name] = replace(graph.t(t), name=name)
            layout[name] = want
            out.append(relayout(t, name, layout[t], want))
            copies[(t, want)] = name
        return copies[(t, want)]

    new_nodes: list[Node] = []
    for n in graph.nodes:
        l = lay[n.name]
        node, want = n, l
        if l != pref and n.op is OpKind.TRANSPOSE:  # a model-input transpose writing alt directly
            node, want = _as_relayout(n, graph, l), pref
        if opdef(n).is_view:
            want = pref
        ins = tuple(i if not i or graph.t(i).is_const or len(graph.t(i).shape) != 4 else copy_of(i, want, new_nodes)
                    for i in n.inputs)
        outs, after = list(n.outputs), []
        for k, o in enumerate(n.outputs):
            if o in graph.outputs and l != pref:  # the graph output keeps its name and the preferred layout
                inner = _fresh(names, f"{o}:{l.lower()}")
                tensors[inner] = replace(graph.t(o), name=inner)
                outs[k] = inner
                layout[inner], layout[o] = l, pref
                copies[(inner, pref)] = o
                after.append(relayout(inner, o, l, pref))
            else:
                layout[o] = l
        new_nodes.append(replace(node, inputs=ins, outputs=tuple(outs)))
        new_nodes += after
    meta = dict(graph.meta)
    meta["layouts"] = {t: layout.get(t, pref) for t in tensors
                       if not tensors[t].is_const and len(tensors[t].shape) == 4}
    return graph.with_nodes(new_nodes, tensors, meta=meta)


def _fresh(names: set[str], base: str) -> str:
    name, i = base, 1
    while name in names:
        name, i = f"{base}_{i}", i + 1
    names.add(name)
    return name
