"""16x8 quantization: the int16 fixed-point arithmetic and the parameters the int16 references and
kernels share. TFLite's 16x8 quantization spec (activations int16, symmetric, zero point 0; weights
int8 symmetric; biases int64) as TFLM's reference kernels compute it:

- Conv2D / DepthwiseConv2D / FullyConnected (reference_integer_ops::ConvPerChannel,
  DepthwiseConvPerChannel, FullyConnected[PerChannel] on int16): an int64 accumulator
  sum(w * x) + bias (no input offset), requantized by the 64-bit MultiplyByQuantizedMultiplier of
  kernels/internal/common.cc: the Q31 multiplier reduced to Q15, round((m15 * acc) / 2^(15 - shift))
  with one rounding (half up), truncated to int32, then clamped to the activation range.
- Add: the int8 algorithm with left_shift 15 (micro/kernels/add_common.cc), see add.add_s16.
- Quantize / Requantize / Dequantize: quantize_ops.py.

Owns: multiply_by_quantized_multiplier_s64, requantize_s16, activation_range_s16, the weighted ops'
per-channel parameters (weighted_requant_s16) and the checks that keep TFLM's assumptions true
(shift <= 7, |accumulator| < 2^47). Not here: the int8 arithmetic (fixed_point.py), C (the
c_templates/kernels/portable/*_s16.c.j2 kernels call ecc_mbqm_s64 of ecc_fixed_point_s16.h).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import DType, Graph, Node

INT16_MIN, INT16_MAX = -32768, 32767
MAX_SHIFT = 7  # TFLM DCHECKs shift in [-31, 7] in the 64-bit MultiplyByQuantizedMultiplier
ACC_LIMIT = 1 << 47  # ... and |x| < 2^47: the product with the Q15 multiplier stays inside int64


def multiply_by_quantized_multiplier_s64(x, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier(int64_t x, int32_t mult, int shift) (common.cc; the same
    in both rounding builds): m15 = (mult + 2^15) >> 16 (0x7FFF from 0x7FFF0000 up), then
    (x * m15 + 2^(14 - shift)) >> (15 - shift), cast to int32 (wraps, as the C cast does).

    x: int64 values with |x| < 2^47; mult: Q31 in [0, 2^31); shift in [-31, 7] (broadcast).
    Returns int64 holding int32. ValueError for a shift outside [-31, 14] (C would shift by <= 0)."""
    x, mult, shift = (np.asarray(v, np.int64) for v in (x, mult, shift))
    if np.any(shift > 14) or np.any(shift < -31):
        raise ValueError(f"int16 requantization shift {int(np.max(shift))} outside [-31, {MAX_SHIFT}]")
    reduced = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - shift
    r = (x * reduced + (np.int64(1) << (total - 1))) >> total
    return ((r + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def requantize_s16(acc, mult, shift, act_min: int, act_max: int) -> np.ndarray:
    """The 16x8 output stage of Conv2D / DepthwiseConv2D / FullyConnected: the 64-bit MBQM of the
    int64 accumulator, clamped to [act_min, act_max] (zero point 0: no offset) -> int16.
    C: ecc_requantize_s16."""
    if not INT16_MIN <= act_min <= act_max <= INT16_MAX:
        raise ValueError(f"activation range [{act_min}, {act_max}] is not inside int16")
    y = multiply_by_quantized_multiplier_s64(acc, mult, shift)
    return np.clip(y, act_min, act_max).astype(np.int16)


def activation_range_s16(act: tuple[float, float], scale: float) -> tuple[int, int]:
    """int16 clamp bounds of a fused activation (TFLite CalculateActivationRangeQuantized on an
    int16 output, zero point 0)."""
    from toolchain.ops.fixed_point import activation_range

    return activation_range(act, scale, 0, INT16_MIN, INT16_MAX)


def is_s16(node: Node, graph: Graph) -> bool:
    """Whether a node reads or writes an int16 activation (a 16x8 node: its kernels are the _s16 ones)."""
    return any(graph.t(n).dtype == DType.INT16 and not graph.t(n).is_const
               for n in (*node.inputs, *node.outputs) if n)


def check_shifts(shift, what: str) -> None:
    """ValueError naming `what` when a requantization shift exceeds MAX_SHIFT (a real multiplier of
    2^7 or more, where TFLM's 64-bit MBQM is undefined)."""
    top = int(np.max(shift))
    if top > MAX_SHIFT:
        raise ValueError(f"{what}: real multiplier of 2^{top - 1} or more (TFLM's int16 requantization "
                         f"takes shifts up to {MAX_SHIFT})")


def weighted_requant_s16(node: Node, graph: Graph, out_axis: int) -> dict:
    """Requantization of a 16x8 Conv2D / DepthwiseConv2D / FullyConnected node: per-output-channel
    Q31 multiplier and shift of double(s_in) * double(s_w[c]) / double(s_out) (TFLM
    PopulateConvolutionQuantizationParams and the FC per-channel loop; per-tensor weight scales
    broadcast over the output channels as for int8, common.weighted_requant) and the int16 clamp of
    the fused activation. out_mult: int32 [Cout]; out_shift: int8 [Cout] in [-31, 7]."""
    from toolchain.ops.common import requant_arrays

    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    w_scale = w.quant.scale * (w.shape[out_axis] if len(w.quant.scale) == 1 else 1)
    mult, shift = requant_arrays(x.quant.s, w_scale, y.quant.s)
    check_shifts(shift, f"node {node.name!r}")
    lo, hi = activation_range_s16(node.attrs.act, y.quant.s)
    return dict(out_mult=mult, out_shift=shift.astype(np.int8), act_min=lo, act_max=hi)


def accumulator_bound(node: Node, graph: Graph, taps: int) -> int:
    """The largest |accumulator| a 16x8 weighted node can reach: taps * 127 * 32768 + max |bias|
    (taps = products per output). TFLM assumes it below 2^47 (ACC_LIMIT)."""
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    top = int(np.max(np.abs(np.asarray(bias, np.int64)))) if bias is not None and np.size(bias) else 0
    return taps * 127 * 32768 + top
