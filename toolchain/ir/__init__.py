"""The project's one graph IR: typed tensors, nodes and graphs (no passes, no printing of C)."""
from toolchain.ir.graph import Graph, Node, Tensor
from toolchain.ir.types import DType, QuantParams

__all__ = ["DType", "Graph", "Node", "QuantParams", "Tensor"]
