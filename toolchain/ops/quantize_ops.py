"""Quantize, Dequantize and Requantize: the type changes at the edges of an int8 graph (a float
input quantized inside the model, a float output, or an int8 tensor moved to other qparams); TFLite
QUANTIZE / DEQUANTIZE, TFLM quantize_common.cc and dequantize_common.cc.

- Quantize (float32 -> int8, reference_ops::AffineQuantize): round_half_away(float32(x) / float32(scale))
  + zp, saturated: the division in float32 as TFLM's source writes it; the C kernel stays in single
  precision throughout (no soft-float double on a Cortex-M4 / M33).
- Dequantize (int8 -> float32, reference_ops::Dequantize): float32(scale) * float32(q - zp), one float32
  product; TFLM writes float(double(scale) * (q - zp)), the same value for a float32 scale (the exact
  product rounded once; every .tflite and ONNX scale is a float32).
- Requantize (int8 -> int8, TFLite QUANTIZE with an int8 input, reference_ops::Requantize):
  MBQM(q - zp_in, QuantizeMultiplier(s_in / s_out)) + zp_out, saturated (concat.requantize_s8).
16x8 (TFLite 16x8 spec, int16 zero point 0): Quantize float32 -> int16 is AffineQuantize<int16>, whose
source divides in float32 (x / (float)scale, then TfLiteRound; TFLM agrees bit for bit, measured on
200 000 near-tie values where the double division differs on a third); Requantize int8 <-> int16 and
int16 -> int16 is reference_ops::Requantize as above, saturated to the output type; Dequantize from
int16 is the same product as from int8.
Under `rounding: onnx` Quantize is ONNX QuantizeLinear (float32 division, ties to even) and Requantize
is ORT's DequantizeLinear -> QuantizeLinear in float32: float32((q - zp_in) * s_in) / s_out rounded,
ties to even, + zp_out, as a 256-entry table (concat.onnx_rescale_table; the float32 product and
division move near-ties of the exact ratio either way: 0.27f / 0.02f is 13.499999, so neither the Q31
multiplier nor the exact float32 ratio reproduces ORT on every value) (the `_onnx` C twins). In the
float twin of a model (all tensors real) the three are identities.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import DType, Graph, Node
from toolchain.ops.concat import onnx_rescale_table, requant_params, requantize_s8
from toolchain.ops.fixed_point import current_rounding, multiply_by_quantized_multiplier, quantize_real
from toolchain.ops.lut import lut_s8, onnx_table_twins
from toolchain.ops.registry import CArg, KernelVariant, OpDef, portable, portable_s16, rounding_twins, register

FLOAT_EDGE_HEADER = "portable/ecc_float_edge_kernels.h"  # the only kernels using float: shipped when used


@dataclass(frozen=True)
class QuantizeAttrs:
    """Quantize / Dequantize / Requantize take their parameters from the tensors' qparams."""


def quantize_f32_s8(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """TFLM AffineQuantize float32 -> int8: (int)TfLiteRound(x / (float)scale) + zp, saturated; the
    division is float32 (reference_ops::AffineQuantize): a double division rounds differently near
    ties (44,483 of 200,000 built near-tie inputs). Under rounding "onnx": ONNX QuantizeLinear
    (float32 division, ties to even; fixed_point.quantize_real)."""
    if current_rounding() == "onnx":
        return quantize_real(x, scale, zero_point, "onnx")
    v = (np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64)
    r = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.clip(r + zero_point, -128, 127).astype(np.int8)


def quantize_f32_s16(x: np.ndarray, scale: float) -> np.ndarray:
    """TFLM AffineQuantize float32 -> int16 (zero point 0): round_half_away(float32(x) / float32(scale)),
    saturated to int16 (a NaN gives 0, as the C kernel writes; TFLM's cast of NaN is undefined)."""
    v = (np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64)
    r = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.nan_to_num(np.clip(r, -32768, 32767), nan=0.0).astype(np.int16)


def requantize_int(x: np.ndarray, input_offset: int, mult: int, shift: int, output_offset: int,
                   dtype: np.dtype) -> np.ndarray:
    """int8 / int16 -> int8 / int16 (TFLM reference_ops::Requantize, rounding "tflm"): MBQM(x +
    input_offset, mult, shift) + output_offset (32-bit double rounding), saturated to `dtype`."""
    y = multiply_by_quantized_multiplier(np.asarray(x, np.int64) + input_offset, mult, shift) + output_offset
    info = np.iinfo(dtype)
    return np.clip(y, info.min, info.max).astype(dtype)


def dequantize_s8_f32(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """TFLM Dequantize int8 / int16 -> float32 in single precision: float32(scale) * float32(q - zp),
    rounded once. TFLM's float(double(scale) * (q - zp)) is the same value when scale is a float32
    (the exact product, at most 24 + 17 significant bits, is exact in double and rounded once either
    way); the C kernels compute this form (no soft-float double on a single-precision FPU)."""
    d = (np.asarray(q, np.int64) - zero_point).astype(np.float32)  # |q - zp| < 2^17: exact
    return (np.float32(scale) * d).astype(np.float32)


class _Edge(OpDef):
    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def _size(self, node: Node, graph: Graph) -> int:
        return graph.t(node.inputs[0]).size


def _quantize_s16_args(node: Node, graph: Graph) -> list[CArg]:
    return [CArg("real", float(graph.t(node.outputs[0]).quant.s)), CArg.lit(graph.t(node.inputs[0]).size),
            CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


@register("QUANTIZE", "Quantize")
class Quantize(_Edge):
    variants = (*rounding_twins(portable("quantize", headers=(FLOAT_EDGE_HEADER,))),
                portable_s16("quantize", args=_quantize_s16_args, headers=(FLOAT_EDGE_HEADER,)))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(ins[0], np.float32)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        q = graph.t(node.outputs[0]).quant
        return [quantize_f32_s8(ins[0], q.s, q.zp)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [quantize_f32_s16(ins[0], graph.t(node.outputs[0]).quant.s)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        q = graph.t(node.outputs[0]).quant
        return [CArg("real", float(q.s)), CArg.lit(q.zp), CArg.lit(self._size(node, graph)),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


@register("DEQUANTIZE", "Dequantize")
class Dequantize(_Edge):
    variants = (portable("dequantize", headers=(FLOAT_EDGE_HEADER,)),
                portable_s16("dequantize", headers=(FLOAT_EDGE_HEADER,)))  # int16 in: same arguments

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0])
        if x.dtype.kind == "f":  # the float twin: values are already real
            return [x.astype(np.float32)]
        q = graph.t(node.inputs[0]).quant
        return [dequantize_s8_f32(x, q.s, q.zp)]

    reference_s8 = reference_f32

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        q = graph.t(node.inputs[0]).quant
        return [CArg("real", float(q.s)), CArg.lit(q.zp), CArg.lit(self._size(node, graph)),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]


def onnx_requant_table(node: Node, graph: Graph) -> np.ndarray:
    """The 256-entry table of a Requantize under rounding "onnx": onnxruntime's float32
    DequantizeLinear -> QuantizeLinear (concat.onnx_rescale_table)."""
    return onnx_rescale_table(graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant)


def _s16_requant(src: str, dst: str) -> KernelVariant:
    """The 16x8 Requantize kernel from `src` to `dst` ("s8" / "s16"): ecc_requant_<src>_<dst> of
    portable/requant_s16.c.j2 (ecc_requant_s16 for int16 -> int16), for nodes with those types."""
    def applies(node: Node, graph: Graph) -> bool:
        return (_code(graph, node.inputs[0]), _code(graph, node.outputs[0])) == (src, dst)

    return portable_s16("requant", function="ecc_requant_s16" if src == dst else f"ecc_requant_{src}_{dst}",
                        applies=applies)


def _code(graph: Graph, name: str) -> str:
    return "s16" if graph.t(name).dtype == DType.INT16 else "s8"


@register("REQUANTIZE", "Requantize")
class Requantize(_Edge):
    # under "onnx" the portable_onnx twin is the table look-up (NEON / Helium lut variants follow it)
    variants = (*onnx_table_twins(portable("requant"), onnx_requant_table),
                *(_s16_requant(a, b) for a, b in (("s8", "s16"), ("s16", "s8"), ("s16", "s16"))))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(ins[0], np.float32)]

    def _params(self, node: Node, graph: Graph) -> tuple[int, int, int, int]:
        """(input_offset, Q31 mult, shift, output_offset) of TFLite's Requantize (rounding "tflm")."""
        return requant_params(graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if graph.t(node.inputs[0]).dtype == DType.INT16:  # 16x8: int16 -> int8 (TFLite files, rounding "tflm")
            return [requantize_int(ins[0], *self._params(node, graph), np.int8)]
        if current_rounding() == "onnx":
            return [lut_s8(ins[0], onnx_requant_table(node, graph))]
        return [requantize_s8(ins[0], *self._params(node, graph))]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [requantize_int(ins[0], *self._params(node, graph), np.int16)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        return [*map(CArg.lit, self._params(node, graph)), CArg.lit(self._size(node, graph)),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
