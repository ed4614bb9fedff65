"""LeakyRelu: x for x >= 0, alpha * x otherwise; the int8 reference semantics of TFLM
reference_ops::QuantizeLeakyRelu with the Prepare of micro/kernels/leaky_relu_common.cc.

Two requantizations of (x - zp_in): identity s_in / s_out for x >= zp_in, s_in * alpha / s_out
below, both ratios computed in double from the float32 scales and alpha, as the TFLM build we test
against does (older sources, e.g. leaky_relu_common.cc of 2021, divide in float32; the Python
interpreter's results settle it, tests/ops/test_requantizing_activations.py); a negative alpha gets a
negative multiplier (TFLite's QuantizeMultiplier handles the sign through frexp). TFLM's QuantizeLeakyRelu
(micro/kernels/internal/reference/leaky_relu.h) never feeds that negative multiplier to
MultiplyByQuantizedMultiplier: it rescales by its magnitude and negates the result
(`rescale_sign_magnitude`). That is not the same number: the high multiply rounds ties toward +inf,
so -MBQM(d, m) and MBQM(d, -m) differ by one on exact ties (d odd with m = 2^30: alpha -0.5 and
equal scales). Owns `leaky_relu_s8`. Under rounding "onnx" the op is onnxruntime's float32
DequantizeLinear -> LeakyRelu -> QuantizeLinear as a 256-entry table (`onnx_leaky_relu_table`: the
two rescales of the Q31 multipliers were 1 LSB off ORT on near-ties).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import current_rounding, quantize_multiplier, rescale
from toolchain.ops.lut import lut_s8, onnx_table_twins
from toolchain.ops.registry import CArg, OpDef, portable, register


def signed_quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier for any finite real: the sign rides on the Q31 multiplier. The
    magnitude is never 2^31 (quantize_multiplier normalises it), so negating it stays in int32."""
    m, s = quantize_multiplier(abs(real))
    return int(math.copysign(m, real)) if m else 0, s


def rescale_sign_magnitude(x, mult, shift) -> np.ndarray:
    """-rescale(x, -mult, shift) for mult < 0, rescale(x, mult, shift) otherwise (int64 holding int32;
    x, mult, shift broadcast). TFLM QuantizeLeakyRelu's handling of a negative alpha multiplier. Under
    rounding "onnx" (one symmetric rounding) both orders agree, so one definition serves both modes.
    C: ecc_leaky_relu_s8 (c_templates/kernels/portable/leaky_relu_s8.c.j2)."""
    mult = np.asarray(mult, np.int64)
    return np.where(mult < 0, -rescale(x, -mult, shift), rescale(x, mult, shift))


def leaky_relu_params(s_in: float, s_out: float, alpha: float) -> tuple[int, int, int, int]:
    """(mult_identity, shift_identity, mult_alpha, shift_alpha) of the double ratios s_in / s_out and
    s_in * alpha / s_out of the float32 scales and alpha (the TFLM we test against; float32 ratios
    miss it by one near ties: tests/ops/test_requantizing_activations.py)."""
    s_in, s_out, alpha = (float(np.float32(v)) for v in (s_in, s_out, alpha))
    mi, si = quantize_multiplier(s_in / s_out)
    ma, sa = signed_quantize_multiplier(s_in * alpha / s_out)
    return mi, si, ma, sa


def leaky_relu_s8(x: np.ndarray, z_in: int, z_out: int, params: tuple[int, int, int, int]) -> np.ndarray:
    """int8 leaky ReLU (TFLM reference_ops::QuantizeLeakyRelu); the output rescale rounds as the
    rounding mode in effect (fixed_point.rescale)."""
    mi, si, ma, sa = params
    d = np.asarray(x, np.int64) - z_in
    y = np.where(d >= 0, rescale(d, mi, si), rescale_sign_magnitude(d, ma, sa))
    return np.clip(y + z_out, -128, 127).astype(np.int8)


@dataclass(frozen=True)
class LeakyReluAttrs:
    """ONNX LeakyRelu-16 / TFLite LEAKY_RELU slope for x < 0."""

    alpha: float = 0.01


def onnx_leaky_relu_table(s_in: float, z_in: int, s_out: float, z_out: int, alpha: float) -> np.ndarray:
    """The 256 int8 outputs (index q + 128) of onnxruntime's DequantizeLinear -> LeakyRelu ->
    QuantizeLinear in float32: x = float32(q - z_in) * s_in; y = x if x >= 0 else alpha * x;
    rint(y / s_out) ties to even + z_out, saturated. The float32 products and division move
    near-ties of the exact ratios either way, so no Q31 multiplier pair reproduces it on every value."""
    f = np.float32
    x = (np.arange(-128, 128) - int(z_in)).astype(f) * f(s_in)
    y = np.where(x >= 0, x, f(alpha) * x).astype(f)
    return np.clip(np.rint(y / f(s_out)).astype(np.float64) + int(z_out), -128, 127).astype(np.int8)


def _onnx_table(node: Node, graph: Graph) -> np.ndarray:
    a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
    return onnx_leaky_relu_table(a.s, a.zp, y.s, y.zp, node.attrs.alpha)


@register("LEAKY_RELU", "LeakyRelu")
class LeakyRelu(OpDef):
    variants = onnx_table_twins(portable("leaky_relu"), _onnx_table)  # rounding onnx: ORT's float32 table

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float32)
        return [np.where(x >= 0, x, x * np.float32(node.attrs.alpha)).astype(np.float32)]

    def _q(self, node: Node, graph: Graph):
        a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        return a.zp, y.zp, leaky_relu_params(a.s, y.s, node.attrs.alpha)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if current_rounding() == "onnx":
            return [lut_s8(ins[0], _onnx_table(node, graph))]
        return [leaky_relu_s8(ins[0], *self._q(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        zi, zo, (mi, si, ma, sa) = self._q(node, graph)
        ints = [zi, zo, mi, si, ma, sa, graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
