"""HardSwish: x * relu6(x + 3) / 6, the int8 reference semantics; TFLite int8 spec, TFLM
reference_ops::HardSwish<int8_t> with the Prepare of micro/kernels/hard_swish_common.cc.

Everything runs in int16 as TFLite does: (x - zp) * 128 on a "hires" input scale, a rounding
doubling high multiply by the int16 output multiplier, a "reluish" factor in [0, 1] from the input
rescaled so that 3.0 is 32768 (saturating), a non-rounding doubling high multiply of the two, and a
rounding right shift. Multipliers come from float32 ratios as in TFLite. Owns `hard_swish_s8`.

Kernels: the 256-entry table of hard_swish_s8 (ops/lut.py, one load per element, bit-exact by
construction; 6 instructions per element on Cortex-M4 against 71 for the arithmetic) comes first; the
arithmetic kernel `hard_swish_s8` stays the second portable variant (tests call it directly).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import quantize_multiplier, rounding_divide_by_pot
from toolchain.ops.lut import lut_variant, table_of
from toolchain.ops.registry import CArg, OpDef, portable, register

I16_MIN, I16_MAX = -(1 << 15), (1 << 15) - 1


@dataclass(frozen=True)
class HardSwishParams:
    """TFLite HardSwishParams for int8: zero points, int16 multipliers and their exponents."""

    input_zero_point: int
    output_zero_point: int
    reluish_multiplier: int
    reluish_exponent: int
    output_multiplier: int
    output_exponent: int


def _to_int16_multiplier(m32: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier: round a Q31 multiplier to Q15."""
    return I16_MAX if m32 >= (1 << 31) - 1 - (1 << 15) else (m32 + (1 << 15)) >> 16


def hard_swish_params(s_in: float, z_in: int, s_out: float, z_out: int) -> HardSwishParams:
    """TFLM HardSwishPrepare (float32 ratios, then QuantizeMultiplier and int16 downscaling).
    ValueError when the output exponent is positive (TFLM refuses the model)."""
    f = np.float32
    hires = f(1.0 / 128.0) * f(s_in)
    om, oe = quantize_multiplier(float(hires / f(s_out)))
    rm, re = quantize_multiplier(float(hires / (f(3.0) / f(32768.0))))
    if oe > 0:
        raise ValueError(f"hard-swish output multiplier exponent {oe} > 0 (output scale too small)")
    return HardSwishParams(int(z_in), int(z_out), _to_int16_multiplier(rm), re, _to_int16_multiplier(om), oe)


def _srdhm16(a: np.ndarray, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul for int16."""
    ab = a * b
    q = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    r = np.where(q >= 0, q >> 15, -((-q) >> 15))  # C '/' truncates toward zero
    return np.where((a == I16_MIN) & (b == I16_MIN), I16_MAX, r)


def _sat_shl16(a: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(a << amount, I16_MIN, I16_MAX)


def hard_swish_s8(x: np.ndarray, p: HardSwishParams) -> np.ndarray:
    """int8 hard-swish (TFLite reference_ops::HardSwish<int8_t>)."""
    hires = (np.asarray(x, np.int64) - p.input_zero_point) * 128
    preshift = _srdhm16(hires, p.output_multiplier)
    reluish = hires
    if p.reluish_exponent > 0:
        reluish = _sat_shl16(reluish, p.reluish_exponent - 1)
    reluish = _srdhm16(reluish, p.reluish_multiplier)
    if p.reluish_exponent > 0:
        reluish = _sat_shl16(reluish, 1)
    if p.reluish_exponent < 0:
        reluish = rounding_divide_by_pot(reluish, -p.reluish_exponent)
    reluish = (reluish + (1 << 15)) >> 1
    prod = reluish * preshift                      # SaturatingDoublingHighMul: no rounding
    pre_out = np.where(prod >= 0, prod >> 15, -((-prod) >> 15))
    pre_out = np.where((reluish == I16_MIN) & (preshift == I16_MIN), I16_MAX, pre_out)
    y = rounding_divide_by_pot(pre_out, -p.output_exponent) + p.output_zero_point
    return np.clip(y, -128, 127).astype(np.int8)


@dataclass(frozen=True)
class HardSwishAttrs:
    """HardSwish has no attributes (ONNX HardSwish-14, TFLite HARD_SWISH)."""


def hard_swish_table(node: Node, graph: Graph) -> np.ndarray:
    """The 256-entry table of the node's hard_swish_s8 (t[x + 128])."""
    a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
    p = hard_swish_params(a.s, a.zp, y.s, y.zp)
    return table_of(lambda x: hard_swish_s8(x, p))


@register("HARD_SWISH", "HardSwish")
class HardSwish(OpDef):
    variants = (lut_variant(hard_swish_table), portable("hard_swish"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(ins[0], np.float32)
        return [(x * np.clip(x + np.float32(3), 0, 6) / np.float32(6)).astype(np.float32)]

    def _params(self, node: Node, graph: Graph) -> HardSwishParams:
        a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        return hard_swish_params(a.s, a.zp, y.s, y.zp)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [hard_swish_s8(ins[0], self._params(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p = self._params(node, graph)
        ints = [p.input_zero_point, p.output_zero_point, p.reluish_multiplier, p.reluish_exponent,
                p.output_multiplier, p.output_exponent, graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
