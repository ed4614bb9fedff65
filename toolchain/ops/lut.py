"""The 256-entry lookup table of an int8 -> int8 unary op with per-tensor quantization: any such
function is a table, so an op whose int8 semantics are defined element by element (HardSigmoid,
SiLU, ...) can run as one load per element, exact by construction.

Owns: `lut_table` (the table of a float function under the rule quantize(f(dequantize(x))), the
rule HardSigmoid and SiLU define as their int8 semantics), `table_of` (the table of any int8
reference function), `lut_s8` (applying a table), the portable `lut` kernel variant with its
argument list, and `onnx_table_twins` (an op whose rounding "onnx" kernel is a table). Not here: the
ops' own semantics (their modules call these).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import quantize_real
from toolchain.ops.registry import CArg, KernelVariant, portable, rounding_twins

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def lut_table(fn: Callable[[np.ndarray], np.ndarray], s_in: float, z_in: int, s_out: float, z_out: int,
              rounding: str) -> np.ndarray:
    """int8 table t[x + 128] = saturate(round(fn((x - z_in) * s_in) / s_out) + z_out): the real value
    of each int8 input in float64, fn in float64, then fixed_point.quantize_real in `rounding`
    ("tflm": ties away from zero; "onnx": float32 division, ties to even, as QuantizeLinear)."""
    real = (ALL_INT8.astype(np.float64) - int(z_in)) * float(s_in)
    return quantize_real(np.asarray(fn(real), np.float64), s_out, z_out, rounding)


def table_of(reference: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The table of an int8 reference function (elementwise on an int8 array)."""
    return np.asarray(reference(ALL_INT8), np.int8)


def lut_s8(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """y = table[x + 128] element by element."""
    return table[np.asarray(x, np.int64) + 128].astype(np.int8)


def lut_variant(table: Callable[[Node, Graph], np.ndarray], **kw) -> KernelVariant:
    """The portable `lut` kernel (c_templates/kernels/portable/lut_s8.c.j2) for a unary op whose
    table is `table(node, graph)`; output may alias input."""

    def args(node: Node, graph: Graph) -> list[CArg]:
        return [CArg("array", np.asarray(table(node, graph), np.int8), "lut"),
                CArg.lit(graph.t(node.inputs[0]).size), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]

    return portable("lut", args=args, inplace_inputs=(0,), **kw)


def onnx_table_twins(variant: KernelVariant, table: Callable[[Node, Graph], np.ndarray]) -> tuple[KernelVariant, ...]:
    """registry.rounding_twins(variant) whose rounding "onnx" twin is the table look-up of
    `table(node, graph)` (onnxruntime's float32 DequantizeLinear -> op -> QuantizeLinear, computed
    offline): an int8 -> int8 per-tensor op is exact against ORT that way, near-ties included."""
    from dataclasses import replace

    lut = lut_variant(table)
    return tuple(replace(v, template=lut.template, function=lut.function, args=lut.args,
                         inplace_inputs=lut.inplace_inputs) if v.name.endswith("_onnx") else v
                 for v in rounding_twins(variant))
