"""Fuse the decomposed activations real exporters write into one IR node, on the float graph
before quantization (so the int8 graph holds one op and one rounding, not four):

    x * HardSigmoid(x; alpha 1/6, beta 0.5)      -> HardSwish(x)   (torch legacy nn.Hardswish)
    x * Clip(x + 3, 0, 6) / 6  (or * (1/6))      -> HardSwish(x)
    Clip(x + 3, 0, 6) / 6      (or * (1/6))      -> HardSigmoid(x; alpha 1/6, beta 0.5)
    x * Sigmoid(x)                               -> SiLU(x)

In the IR the chains are ADD / CLAMP / MUL with scalar constant operands (the frontend turns a
Div by a constant into a Mul by its reciprocal); Mul operands in either order. A chain fuses only
when every intermediate value has exactly one reader and is not a graph output, and the outer node
has no fused activation range. Runs before fuse_activation (which would fold the Clip into the
Add); an Add already carrying the (0, 6) range is accepted too. Not here: any other algebra.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT
from toolchain.ops.hard_sigmoid import HardSigmoidAttrs
from toolchain.ops.hard_swish import HardSwishAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.silu import SiLUAttrs

SIXTH = 1.0 / 6.0
HARD_SWISH_SIGMOID = HardSigmoidAttrs(float(np.float32(SIXTH)), 0.5)


@dataclass(frozen=True)
class _Match:
    x: str                       # the activation the fused node reads
    gone: tuple[Node, ...]       # the nodes it replaces besides the outer one


def _close(v: float | None, want: float) -> bool:
    return v is not None and math.isclose(v, want, rel_tol=1e-6, abs_tol=1e-9)


def _scalar(graph: Graph, name: str) -> float | None:
    """The value of a constant whose elements are all equal and which broadcasts as a scalar."""
    t = graph.t(name)
    if not t.is_const or t.size == 0:
        return None
    flat = np.asarray(t.data, np.float64).ravel()
    return float(flat[0]) if np.all(flat == flat[0]) else None


def _private(graph: Graph, name: str) -> bool:
    """`name` has one reader and is not a graph output."""
    return name not in graph.outputs and len(graph.consumers(name)) == 1


def _binary_with_scalar(graph: Graph, node: Node | None, kind: OpKind) -> tuple[str, float] | None:
    """(activation operand, scalar) of a `kind` node with one scalar constant operand whose output
    has the activation's shape (the constant does not broadcast it up)."""
    if node is None or node.op != kind or len(node.inputs) != 2:
        return None
    for act, c in (node.inputs, node.inputs[::-1]):
        v = _scalar(graph, c)
        if v is not None and not graph.t(act).is_const and graph.t(act).shape == graph.t(node.outputs[0]).shape:
            return act, v
    return None


def _relu6_of_x_plus_3(graph: Graph, t: str) -> _Match | None:
    """t = Clip(x + 3, 0, 6): CLAMP(0, 6) of ADD(x, 3), or ADD(x, 3) with act (0, 6)."""
    prod = graph.producer(t)
    if prod is not None and prod.op == OpKind.CLAMP and (prod.attrs.lo, prod.attrs.hi) == (0.0, 6.0):
        add = graph.producer(prod.inputs[0])
        xc = _binary_with_scalar(graph, add, OpKind.ADD)
        if xc and _close(xc[1], 3.0) and add.attrs.act == NO_ACT and _private(graph, prod.inputs[0]):
            return _Match(xc[0], (add, prod))
    xc = _binary_with_scalar(graph, prod, OpKind.ADD)
    if xc and _close(xc[1], 3.0) and tuple(prod.attrs.act) == (0.0, 6.0):
        return _Match(xc[0], (prod,))
    return None


def _hard_sigmoid(graph: Graph, node: Node) -> tuple[Node, tuple[Node, ...]] | None:
    """MUL(Clip(x + 3, 0, 6), 1/6) -> HardSigmoid(x; 1/6, 0.5)."""
    tc = _binary_with_scalar(graph, node, OpKind.MUL)
    if not tc or not _close(tc[1], SIXTH) or node.attrs.act != NO_ACT or not _private(graph, tc[0]):
        return None
    m = _relu6_of_x_plus_3(graph, tc[0])
    if m is None:
        return None
    return Node(node.name, OpKind.HARD_SIGMOID, (m.x,), node.outputs, HARD_SWISH_SIGMOID, node.source), m.gone


def _mul_of_x_and(graph: Graph, node: Node | None, inner) -> tuple[str, tuple[Node, ...]] | None:
    """(x, nodes) when node = MUL(x, t) or MUL(t, x) (no act) with t private and inner(t) == (x, nodes)."""
    if node is None or node.op != OpKind.MUL or node.attrs.act != NO_ACT:
        return None
    for x, t in (node.inputs, node.inputs[::-1]):
        if graph.t(t).is_const or not _private(graph, t):
            continue
        got = inner(t)
        if got is not None and got[0] == x:
            return got
    return None


def _hard_swish(graph: Graph, node: Node) -> tuple[Node, tuple[Node, ...]] | None:
    """MUL(x, HardSigmoid(x; 1/6, 0.5)) or MUL(MUL(x, Clip(x + 3, 0, 6)), 1/6) -> HardSwish(x)."""
    def hard_sigmoid_of(t: str):
        p = graph.producer(t)
        if p is not None and p.op == OpKind.HARD_SIGMOID and _close(p.attrs.alpha, SIXTH) \
                and _close(p.attrs.beta, 0.5):
            return p.inputs[0], (p,)
        return None

    def relu6_of(t: str):
        m = _relu6_of_x_plus_3(graph, t)
        return (m.x, m.gone) if m else None

    got = _mul_of_x_and(graph, node, hard_sigmoid_of)
    if got is None:
        mc = _binary_with_scalar(graph, node, OpKind.MUL)
        if mc and _close(mc[1], SIXTH) and node.attrs.act == NO_ACT and _private(graph, mc[0]):
            inner = graph.producer(mc[0])
            got = _mul_of_x_and(graph, inner, relu6_of)
            got = got and (got[0], (*got[1], inner))
    if got is None:
        return None
    return Node(node.name, OpKind.HARD_SWISH, (got[0],), node.outputs, HardSwishAttrs(), node.source), got[1]


def _silu(graph: Graph, node: Node) -> tuple[Node, tuple[Node, ...]] | None:
    """MUL(x, Logistic(x)) -> SiLU(x)."""
    def logistic_of(t: str):
        p = graph.producer(t)
        return (p.inputs[0], (p,)) if p is not None and p.op == OpKind.LOGISTIC else None

    got = _mul_of_x_and(graph, node, logistic_of)
    if got is None:
        return None
    return Node(node.name, OpKind.SILU, (got[0],), node.outputs, SiLUAttrs(), node.source), got[1]


MATCHERS = (_hard_sigmoid, _hard_swish, _silu)  # hard-sigmoid first: x * (Clip(x+3,0,6)/6) then fuses


def _rewrite_once(graph: Graph) -> Graph | None:
    for node in graph.nodes:
        for match in MATCHERS:
            got = match(graph, node)
            if got is not None:
                fused, gone = got
                drop = {id(n) for n in gone}
                nodes = [fused if n is node else n for n in graph.nodes if id(n) not in drop]
                return graph.with_nodes(nodes)
    return None


def fuse_decomposed_activations(graph: Graph) -> Graph:
    """Replace every decomposed hard-swish, hard-sigmoid and SiLU chain by its one IR node."""
    while (fused := _rewrite_once(graph)) is not None:
        graph = fused
    return graph
