"""Concatenation: the int8 reference semantics of joining tensors along one axis, each input
requantized to the output's qparams; an input that shares the output's qparams is a plain copy.

The rescale (BL-25, ../shared/design/int8-fault-cases.md) under "tflm": out = round((q - zp_in) * r) +
zp_out with r = float32(s_in) / float32(s_out) divided in float32 (TFLite's float concat path), the
product rounded exactly, in integers, ties away from zero (TFLite's round()). A float32 r is m * 2^-k
exactly (m < 2^24), so the C kernel computes (q - zp_in) * m in int64 and divides by 2^k: no float, no
1-LSB drift from a double-derived Q31 multiplier (s_in 0.5, s_out 0.2f: double 2.49999996, float32
exactly 2.5). Under "onnx" each input goes through a 256-entry table of ORT's own float32
DequantizeLinear -> QuantizeLinear (onnx_rescale_table): its float32 product and division move
near-ties of the exact ratio either way (0.27f / 0.02f is 13.499999), 15 of 256 values on some scales.

TFLM is not the oracle here: its int8 CONCATENATION refuses inputs whose scale differs from the
output's (Prepare check in the tflite-micro build we test against; older releases copied the bytes
unscaled). With all inputs sharing the output's qparams, which is what the TFLite converter produces,
every runtime agrees with this module. 16x8 (int16, zero point 0): TFLM copies int16 values whatever
the scales, so only equal scales are taken (check_s16_scales) and the kernel copies (concat_s16.c.j2).
Owns `concat_s8`; `requantize_s8` (TFLite's integer Requantize,
MBQM with a Q31 multiplier) serves quantize_ops.Requantize under "tflm".
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node, QuantParams
from toolchain.ops.binary import operand
from toolchain.ops.fixed_point import current_rounding, quantize_multiplier, rescale, rounding_divide
from toolchain.ops.lut import lut_s8
from toolchain.ops.registry import CArg, OpDef, opdef, portable, portable_s16, rounding_twins, register

COPY = (1, 0)  # float32_ratio of equal scales: ratio 1 * 2^-0, an exact copy
MAX_SHIFT = 40  # |q - zp| * m < 2^32 <= 2^(k-1) beyond: the product rounds to 0 in both modes


def requant_params(src: QuantParams, dst: QuantParams) -> tuple[int, int, int, int]:
    """(input_offset, mult, shift, output_offset) taking int8 of `src` to int8 of `dst`
    (TFLM PrepareQuantizeReference: QuantizeMultiplier(double(s_in) / double(s_out)))."""
    mult, shift = quantize_multiplier(float(src.s) / float(dst.s))
    return -src.zp, mult, shift, dst.zp


def float32_ratio(s_in: float, s_out: float) -> tuple[int, int]:
    """(m, k) with float32(s_in) / float32(s_out), one float32 division, equal to m * 2^-k exactly
    (0 <= m <= 2^24, 0 <= k <= MAX_SHIFT, m odd unless k == 0). A ratio of 2^24 or more becomes
    2^24 (every non-zero int8 difference saturates either way); one below 2^-(MAX_SHIFT-8), 0."""
    r = float(np.float32(s_in) / np.float32(s_out))
    if not (r > 0 and np.isfinite(r)):
        raise ValueError(f"scales {s_in} / {s_out} do not give a positive finite ratio")
    mant, exp = math.frexp(r)                  # r = mant * 2^exp, mant in [0.5, 1), 24 significant bits
    m, k = int(mant * (1 << 24)), 24 - exp
    while k > 0 and m % 2 == 0:
        m, k = m // 2, k - 1
    if k < 0:
        return min(m << -k, 1 << 24), 0
    return (0, 0) if k > MAX_SHIFT else (m, k)


def concat_params(src: QuantParams, dst: QuantParams) -> tuple[int, int, int, int]:
    """(input_offset, m, k, output_offset) taking int8 of `src` to int8 of `dst` (float32_ratio)."""
    m, k = float32_ratio(src.s, dst.s)
    return -src.zp, m, k, dst.zp


def rescale_exact_s8(x: np.ndarray, input_offset: int, m: int, k: int, output_offset: int,
                     rounding: str | None = None) -> np.ndarray:
    """int8 -> int8: round((x + input_offset) * m / 2^k) + output_offset, saturated; ties away from zero
    ("tflm") or to even ("onnx"; None = the mode in effect). Exact in int64. C: concat_s8.c.j2."""
    v = (np.asarray(x, np.int64) + input_offset) * m
    y = rounding_divide(v, 1 << k, rounding) + output_offset
    return np.clip(y, -128, 127).astype(np.int8)


def onnx_rescale_table(src: QuantParams, dst: QuantParams) -> np.ndarray:
    """The 256 int8 values (index q + 128) of int8 q on `src` moved onto `dst` as onnxruntime does it
    between DequantizeLinear and QuantizeLinear: float32((q - zp_in) * s_in) / float32 s_out, one
    float32 division (MLAS QuantizeLinear divides by the scale), rounded to nearest, ties to even,
    + zp_out, saturated. Not the exact ratio of float32_ratio: float32(0.27f / 0.02f) is 13.499999,
    not the tie 13.5. Computed here offline, so the C kernels only index a table (no float)."""
    q = np.arange(-128, 128, dtype=np.int32)
    f = (q - int(src.zp)).astype(np.float32) * np.float32(src.s)
    v = np.rint(f / np.float32(dst.s)).astype(np.float64) + int(dst.zp)
    return np.clip(v, -128, 127).astype(np.int8)


def requantize_s8(x: np.ndarray, input_offset: int, mult: int, shift: int, output_offset: int) -> np.ndarray:
    """int8 -> int8 requantization (TFLM reference_ops::Requantize): MBQM(x + input_offset, mult,
    shift) + output_offset, saturated to int8; under rounding "onnx" the rescale rounds once, ties to
    even (ONNX DequantizeLinear -> QuantizeLinear; fixed_point.rescale)."""
    y = rescale(np.asarray(x, np.int64) + input_offset, mult, shift) + output_offset
    return np.clip(y, -128, 127).astype(np.int8)


def concat_s8(xs: Sequence[np.ndarray], axis: int, params: Sequence[tuple[int, int, int, int]],
              rounding: str | None = None) -> np.ndarray:
    """int8 concatenation along `axis`; params[i] = concat_params(input i, output) (COPY with
    offsets summing to 0 = plain copy); ties round as `rounding` (None = the mode in effect)."""
    parts = [x if (p[1], p[2]) == COPY and p[0] + p[3] == 0 else rescale_exact_s8(x, *p, rounding)
             for x, p in zip(xs, params, strict=True)]
    return np.concatenate([np.asarray(p, np.int8) for p in parts], axis=axis)


def _onnx_tables(node: Node, graph: Graph) -> list[np.ndarray]:
    """onnx_rescale_table of every input onto the output's grid (rounding "onnx")."""
    y = graph.t(node.outputs[0]).quant
    return [onnx_rescale_table(graph.t(n).quant, y) for n in node.inputs]


# ---- IR glue ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConcatAttrs:
    """Concatenation along `axis` of the IR (NHWC) shapes (ONNX Concat-13, TFLite CONCATENATION)."""

    axis: int


def _axis(node: Node, graph: Graph) -> int:
    rank = len(graph.t(node.inputs[0]).shape)
    if not -rank <= node.attrs.axis < rank:
        raise ValueError(f"axis {node.attrs.axis} out of range for rank {rank}")
    return node.attrs.axis % rank


def check_s16_scales(node: Node, graph: Graph) -> None:
    """ValueError unless every input of a 16x8 Concat has the output's scale: TFLM's int16
    CONCATENATION copies the raw values (concatenation.cc checks only the zero points), so only
    equal scales keep the real values (what the TFLite converter writes)."""
    y = graph.t(node.outputs[0]).quant
    for n in node.inputs:
        if float(graph.t(n).quant.s) != float(y.s):
            raise ValueError(f"int16 input {n!r} of scale {graph.t(n).quant.s:.6g} != output scale {y.s:.6g} "
                             "(TFLM copies int16 values: requantize the input first)")


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_concat_s16 (portable/concat_s16.c.j2): inputs, outer, output row, the row
    length of every input (int32 array), the input pointers (int16 arena or constant), the output."""
    ax = _axis(node, graph)
    outer = int(np.prod(graph.t(node.outputs[0]).shape[:ax], dtype=np.int64))
    inner = np.array([int(np.prod(graph.t(n).shape[ax:], dtype=np.int64)) for n in node.inputs], np.int32)
    return [CArg.lit(len(node.inputs)), CArg.lit(outer), CArg.lit(int(inner.sum())), CArg("array", inner, "inner"),
            CArg("ptrs", tuple(operand(graph, n) for n in node.inputs)), CArg("act", node.outputs[0])]


@register("CONCAT", "Concatenation")
class Concat(OpDef):
    variants = (*rounding_twins(portable("concat"), args=lambda node, graph: Concat.onnx_kernel_args(node, graph)),
                portable_s16("concat", args=_s16_args))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shapes = [graph.t(n).shape for n in node.inputs]
        ax = _axis(node, graph)
        first = shapes[0]
        for s in shapes[1:]:
            if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != ax):
                raise ValueError(f"inputs {[list(s) for s in shapes]} differ outside axis {ax}")
        return [tuple(sum(s[ax] for s in shapes) if i == ax else d for i, d in enumerate(first))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.concatenate([np.asarray(x, np.float32) for x in ins], axis=_axis(node, graph))]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        from toolchain.ops.common import quantize_operand

        for name in node.inputs:  # a constant input is stored with the output's qparams: a copy
            if graph.t(name).is_const and graph.t(name).quant is None:
                graph = quantize_operand(graph, name, graph.t(node.outputs[0]).quant)
        return graph

    def _params(self, node: Node, graph: Graph) -> list[tuple[int, int, int, int]]:
        y = graph.t(node.outputs[0]).quant
        return [concat_params(graph.t(n).quant, y) for n in node.inputs]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        params = self._params(node, graph)
        if current_rounding() == "onnx":  # ORT's float32 DequantizeLinear -> QuantizeLinear per input: tables
            tables = _onnx_tables(node, graph)
            parts = [x if (p[1], p[2]) == COPY and p[0] + p[3] == 0 else lut_s8(x, t)
                     for x, p, t in zip(ins, params, tables, strict=True)]
            return [np.concatenate([np.asarray(p, np.int8) for p in parts], axis=_axis(node, graph))]
        return [concat_s8(ins, _axis(node, graph), params)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        """16x8: the int16 values copied (TFLM EvalUnquantized<int16_t>), all scales equal."""
        check_s16_scales(node, graph)
        return [np.concatenate([np.asarray(x, np.int16) for x in ins], axis=_axis(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        ax = _axis(node, graph)
        shape = graph.t(node.outputs[0]).shape
        outer = int(np.prod(shape[:ax], dtype=np.int64))
        inner = [int(np.prod(graph.t(n).shape[ax:], dtype=np.int64)) for n in node.inputs]
        p = np.array(self._params(node, graph), np.int64)
        arr = np.stack([inner, p[:, 0], p[:, 1], p[:, 2], p[:, 3]], axis=1).astype(np.int32).reshape(-1)
        return [CArg.lit(len(node.inputs)), CArg.lit(outer), CArg.lit(sum(inner)), CArg("array", arr, "params"),
                CArg("ptrs", tuple(operand(graph, n) for n in node.inputs)), CArg("act", node.outputs[0])]

    @staticmethod
    def onnx_kernel_args(node: Node, graph: Graph) -> list[CArg]:
        """Arguments of the `_onnx` twin: kernel_args plus the 256-entry table of every input after params."""
        args = opdef(node).kernel_args(node, graph)
        tables = np.concatenate(_onnx_tables(node, graph)).astype(np.int8)
        return [*args[:4], CArg("array", tables, "tables"), *args[4:]]
