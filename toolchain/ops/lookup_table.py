"""LookupTable: an int8 -> int8 element-wise function given as its 256 output values, for a quantized
model whose single-input op (Sigmoid, Tanh, LeakyRelu, Clip, ...) reads one per-tensor grid and
writes another: the model's own int8 semantics are then one output per input value, whatever
arithmetic produced them. The QDQ frontend fills the table with onnxruntime's own result of
DequantizeLinear -> op -> QuantizeLinear (toolchain/frontend/onnx_qdq_tables.py), so the op is
exact against onnxruntime by construction, in either rounding mode (there is no rounding left to
choose: the table is the model's function).

The node keeps the float op it stands for (`function`, `function_attrs`) for the float reference,
and the grids the table was made for (`grid_in`, `grid_out`): quantization keeps the output grid,
and a table read with another input grid is refused (a pass moved it). The kernel is the generic
table look-up (ops/lut.py and its NEON / Helium variants). Owns `lookup_table_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.lut import lut_s8, lut_variant
from toolchain.ops.registry import OpDef, OpKind, opdef, register


@dataclass(frozen=True)
class LookupTableAttrs:
    """table[q + 128] = the int8 output of int8 input q (256 values); the float op it computes
    (an IR op kind, its attributes and its operands: the activation and constant scalars, e.g.
    Sub(2.5, x), for the float reference); the int8 grids of its input and output the table was
    made for."""

    table: tuple[int, ...]
    function: OpKind
    function_attrs: Any
    grid_in: QuantParams
    grid_out: QuantParams
    operands: tuple[float | None, ...] = (None,)  # the float op's inputs: None = the activation, else a scalar


def lookup_table_s8(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """int8 y = table[x + 128] element by element (x int8 of any shape)."""
    return lut_s8(x, table)


def _table(node: Node, graph: Graph) -> np.ndarray:
    qx = graph.t(node.inputs[0]).quant
    if qx != node.attrs.grid_in:
        raise ValueError(f"{node.name}: table made for input grid {node.attrs.grid_in}, read with {qx}")
    return np.asarray(node.attrs.table, np.int8)


def _function(node: Node) -> Node:
    ins = node.inputs * len(node.attrs.operands)  # the float references read values, not these names
    return Node(node.name, node.attrs.function, ins, node.outputs, node.attrs.function_attrs, node.source)


@register("LOOKUP_TABLE", "LookupTable")
class LookupTable(OpDef):
    variants = (lut_variant(_table),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        if len(node.attrs.table) != 256:
            raise ValueError(f"a lookup table has 256 entries, not {len(node.attrs.table)}")
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        inner = _function(node)
        values = [ins[0] if v is None else np.float32(v) for v in node.attrs.operands]
        return opdef(inner).reference_f32(inner, graph, values)

    def output_qparams(self, node: Node, graph: Graph, observed: QuantParams | None) -> QuantParams:
        return node.attrs.grid_out

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [lookup_table_s8(ins[0], _table(node, graph))]

    def kernel_args(self, node: Node, graph: Graph):
        return self.variants[0].args(node, graph)
