"""Relu with requantization: TFLite RELU / RELU6 whose output qparams differ from the input's
(the TFLite calibrator writes such RELUs); with equal qparams the frontend emits a Clamp instead.

The int8 semantics are TFLM's (micro/kernels/activations_common.cc), which differ per op:
- RELU (ReluPrepare / CalculateReluOpData, ReluQuantized): out = clamp(zp_out + MBQM(x - zp_in,
  QuantizeMultiplier(double(s_in) / double(s_out))), max(-128, zp_out + roundf(0 / s_out)), 127);
  the ratio is a double division of the float32 scales (not float32(s_in / s_out), which misses
  TFLM by one on values near a rounding tie: tests/ops/test_requantizing_activations.py).
- RELU6 (Relu6Prepare / Relu6Quantized): no requantization at all: the raw input clamped to
  [zp_in, FloatToQuantizedType(6, s_in, zp_in)] (round half away of the float32 quotient), the
  output's qparams are not read.
Both are one kernel: out = clamp(output_offset + rescale(x + input_offset, mult, shift), lo, hi);
RELU6 passes offsets 0 and the identity multiplier (2^30, shift 1: exact in both roundings).
The rescale rounds as the rounding mode in effect (fixed_point.rescale; `_onnx` C twin).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.fixed_point import quantize_multiplier, rescale
from toolchain.ops.registry import CArg, OpDef, portable, register, rounding_twins

IDENTITY = (1 << 30, 1)  # QuantizeMultiplier(1.0): MBQM(x, 2^30, 1) == x


@dataclass(frozen=True)
class ReluAttrs:
    """TFLite RELU (hi = inf, requantizes) or RELU6 (hi = 6, TFLM clamps in the input's quantization)."""

    hi: float = math.inf


def relu_params(s_in: float, z_in: int, s_out: float, z_out: int, hi: float) -> tuple[int, int, int, int, int, int]:
    """(input_offset, output_offset, mult, shift, act_min, act_max) of TFLM RELU / RELU6 int8."""
    f = np.float32
    if math.isinf(hi):
        mult, shift = quantize_multiplier(float(f(s_in)) / float(f(s_out)))
        return -int(z_in), int(z_out), mult, shift, max(-128, int(z_out)), 127
    if hi != 6.0:
        raise ValueError(f"relu upper bound {hi} (RELU or RELU6 only)")
    q = f(6.0) / f(s_in)
    six = int(np.sign(q) * np.floor(np.abs(np.float64(q)) + 0.5)) + int(z_in)  # C round(): half away
    six = min(127, max(-128, six))
    return 0, 0, *IDENTITY, int(z_in), six


def relu_s8(x: np.ndarray, p: tuple[int, int, int, int, int, int]) -> np.ndarray:
    """clamp(output_offset + rescale(x + input_offset, mult, shift), act_min, act_max) -> int8."""
    in_off, out_off, mult, shift, lo, hi = p
    y = rescale(np.asarray(x, np.int64) + in_off, mult, shift) + out_off
    return np.clip(y, lo, hi).astype(np.int8)


@register("RELU", "Relu")
class Relu(OpDef):
    variants = rounding_twins(portable("relu", inplace_inputs=(0,)))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    stacks_samples = True  # elementwise, exact
    stacks_samples_int8 = True

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(np.asarray(ins[0], np.float32), 0.0, node.attrs.hi).astype(np.float32)]

    def _params(self, node: Node, graph: Graph):
        a, y = graph.t(node.inputs[0]).quant, graph.t(node.outputs[0]).quant
        return relu_params(a.s, a.zp, y.s, y.zp, node.attrs.hi)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [relu_s8(ins[0], self._params(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        ints = [*self._params(node, graph), graph.t(node.inputs[0]).size]
        return [*map(CArg.lit, ints), CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
