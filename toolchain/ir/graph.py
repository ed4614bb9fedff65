"""Graph, Node and Tensor: the single, immutable IR every stage reads and returns.

Owns: the data classes, topological helpers and small rewrite helpers (`replace`). Passes,
planning and code emission live elsewhere; a Graph never prints C or parses files.
Activations are NHWC inside the IR; constants (weights) carry their data as numpy arrays.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from toolchain.ir.types import DType, QuantParams


@dataclass(frozen=True, eq=False)
class Tensor:
    """A value in the graph: static shape, element type, optional quantization and constant data."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    quant: QuantParams | None = None
    data: np.ndarray | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self.size * self.dtype.itemsize


@dataclass(frozen=True)
class Node:
    """One operation. `attrs` is the op's own frozen dataclass (see toolchain.ops); inputs and
    outputs are tensor names, "" marks an absent optional input (e.g. no bias)."""

    name: str
    op: Any  # toolchain.ops.registry.OpKind (kept as Any to keep ir free of ops imports)
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Any = None
    source: str = ""  # the frontend node this came from, for error messages


@dataclass(frozen=True)
class Graph:
    """A whole model: nodes in execution order, every tensor by name, graph inputs and outputs."""

    name: str
    nodes: tuple[Node, ...]
    tensors: Mapping[str, Tensor]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensors", MappingProxyType(dict(self.tensors)))
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    def t(self, name: str) -> Tensor:
        """The tensor called `name`; KeyError names it."""
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r} in graph {self.name!r}") from None

    def producer(self, name: str) -> Node | None:
        for n in self.nodes:
            if name in n.outputs:
                return n
        return None

    def consumers(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.inputs]

    def node_index(self, node: Node) -> int:
        return next(i for i, n in enumerate(self.nodes) if n is node)

    def with_nodes(self, nodes: Iterable[Node], tensors: Mapping[str, Tensor] | None = None, **kw: Any) -> Graph:
        """A copy with new nodes (and tensors); unreferenced tensors are dropped."""
        nodes = tuple(nodes)
        all_t = dict(self.tensors if tensors is None else tensors)
        used = set(kw.get("inputs", self.inputs)) | set(kw.get("outputs", self.outputs))
        for n in nodes:
            used.update(i for i in n.inputs if i)
            used.update(n.outputs)
        kept = {k: v for k, v in all_t.items() if k in used}
        return replace(self, nodes=nodes, tensors=kept, **kw)

    def with_tensor(self, tensor: Tensor) -> Graph:
        """A copy where `tensor` replaces (or adds) the tensor of the same name."""
        ts = dict(self.tensors)
        ts[tensor.name] = tensor
        return replace(self, tensors=ts)

    def rename_uses(self, old: str, new: str) -> Graph:
        """Every consumer of `old` (and the graph outputs) reads `new` instead."""
        nodes = [replace(n, inputs=tuple(new if i == old else i for i in n.inputs)) for n in self.nodes]
        outs = tuple(new if o == old else o for o in self.outputs)
        return self.with_nodes(nodes, outputs=outs)

    def activations(self) -> list[Tensor]:
        """Non-constant tensors in first-definition order (graph inputs first)."""
        seen: dict[str, Tensor] = {n: self.t(n) for n in self.inputs}
        for n in self.nodes:
            for o in n.outputs:
                seen.setdefault(o, self.t(o))
        return list(seen.values())


def fresh_name(graph_or_names: Graph | Iterable[str], base: str) -> str:
    """A tensor name starting with `base` that the graph does not use yet."""
    names = set(graph_or_names.tensors) if isinstance(graph_or_names, Graph) else set(graph_or_names)
    if base not in names:
        return base
    i = 1
    while f"{base}_{i}" in names:
        i += 1
    return f"{base}_{i}"
