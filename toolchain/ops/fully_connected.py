"""FullyConnected: the int8 reference semantics of a dense layer; TFLite int8 spec, TFLM
reference_integer_ops::FullyConnected (per-tensor) and FullyConnectedPerChannel.

Owns `fully_connected_s8`. Weights [out_depth, in_depth], one row per output; a non-zero weight
zero point is honoured through filter_offset even though the TFLite spec makes it 0. The ISA
kernel plans are in toolchain/isa/.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import requantize_weighted_s8, wrap_int32
from toolchain.ops.quant16 import requantize_s16, weighted_requant_s16
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import (NO_ACT, apply_act_f32, filter_offset, quantize_bias, quantize_weights,
                                  weight_zero_point_reason, weighted_requant)
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, rounding_twins, register


def fully_connected_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, input_offset: int,
                       filter_offset: int = 0, output_offset: int, out_mult, out_shift,
                       act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 fully connected (TFLM reference_integer_ops::FullyConnected[PerChannel]).

    x: int8 [B, K]; w: int8 [O, K]; bias: int32 [O] or None; out_mult/out_shift: int32 of length
    O (per-channel) or 1 (per-tensor). acc = (x + input_offset) @ (w + filter_offset).T + bias
    (int32, wrapping), MultiplyByQuantizedMultiplier (double rounding) + output_offset, clamp.
    Returns int8 [B, O].
    """
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"fully connected needs x [B, K] and w [O, K], got {x.shape} and {w.shape}")
    o = w.shape[0]
    if bias is not None and np.shape(bias) != (o,):
        raise ValueError(f"bias shape {np.shape(bias)} != ({o},)")
    mult, shift = np.asarray(out_mult, np.int64).reshape(-1), np.asarray(out_shift, np.int64).reshape(-1)
    if mult.size not in (1, o) or shift.size != mult.size:
        raise ValueError(f"out_mult/out_shift need 1 or {o} entries, got {mult.size}/{shift.size}")
    acc = _acc(x, w, bias, input_offset, filter_offset)
    return requantize_weighted_s8(wrap_int32(acc), mult, shift, output_offset, act_min, act_max)


def _acc(x: np.ndarray, w: np.ndarray, bias, input_offset: int, filter_offset: int) -> np.ndarray:
    """Exact int64 accumulators [B, O]: (x + input_offset) @ (w + filter_offset).T + bias, not wrapped."""
    xa = x.astype(np.float64) + int(input_offset)
    wa = w.astype(np.float64) + int(filter_offset)
    # float64 matmul is exact here: integer operands, every partial sum far below 2^53.
    acc = (xa @ wa.T).astype(np.int64)
    return acc + np.asarray(bias, np.int64) if bias is not None else acc


def fully_connected_s16(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, out_mult, out_shift,
                        act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 fully connected (TFLite 16x8 spec, TFLM reference_integer_ops::FullyConnected[PerChannel]
    on int16 with an int64 bias): x int16 [B, K] (zero point 0), w int8 [O, K] (symmetric), bias
    int64 [O] or None; acc = x @ w.T + bias in int64, quant16.requantize_s16 with out_mult/out_shift
    of length O or 1 -> int16 [B, O]."""
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"fully connected needs x [B, K] and w [O, K], got {x.shape} and {w.shape}")
    mult, shift = np.asarray(out_mult, np.int64).reshape(-1), np.asarray(out_shift, np.int64).reshape(-1)
    return requantize_s16(_acc(x, w, bias, 0, 0), mult, shift, act_min, act_max)


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class FullyConnectedAttrs:
    """FullyConnected (ONNX Gemm/MatMul with constant B, TFLite FULLY_CONNECTED): weights [O, K]."""

    act: tuple[float, float] = NO_ACT


def s8_kwargs(node: Node, graph: Graph) -> dict:
    """fully_connected_s8's keyword arguments for a quantized FullyConnected node; the ISA plans
    (toolchain/isa/) start from the same numbers."""
    # Real multiplier double(s_in) * double(s_w) / double(s_out) for per-tensor weights too: TFLM's
    # source reads double(float(s_in * s_w)) there (kernel_util.cc GetQuantizedConvolutionMultipler,
    # tflite-micro issue #1492), but the oracle build (tflite-micro 0.dev20261023, x86) multiplies in
    # double (cvtss2sd both scales, then mulsd); tests/frontend/test_tflite.py pins it with
    # accumulators where the two rules round differently.
    return dict(filter_offset=filter_offset(node, graph), **weighted_requant(node, graph, out_axis=0))


def s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_fully_connected_s16 (portable/fully_connected_s16.c.j2): per-channel
    requantization arrays (a per-tensor weight scale broadcast), no offsets."""
    k = weighted_requant_s16(node, graph, out_axis=0)
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    return [CArg.lit(k["act_min"]), CArg.lit(k["act_max"]), CArg("array", k["out_mult"], "mult"),
            CArg("array", k["out_shift"], "shift"), *map(CArg.lit, x.shape), CArg("act", x.name),
            CArg("const", w.name), CArg("const", node.inputs[2]), CArg.lit(y.shape[1]), CArg("act", y.name)]


@register("FULLY_CONNECTED", "FullyConnected")
class FullyConnected(OpDef):
    weight_out_axis = 0  # bias_fit: weights [Cout, ...]
    weight_zero_point = True  # per-tensor, as filter_offset (onnxruntime uint8 weights, TFLite FC)
    # ISA variants: toolchain/isa/; 16x8 (int16 activations): portable only
    variants = (*rounding_twins(portable("fully_connected")),
                portable_s16("fully_connected", args=s16_args))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        b, k = graph.t(node.inputs[0]).shape
        o, kw = graph.t(node.inputs[1]).shape
        if k != kw:
            raise ValueError(f"input depth {k} != weight depth {kw}")
        return [(b, o)]

    stacks_samples = True
    stacks_samples_int8 = True  # fully_connected_s8: one integer row per sample, exact in float64

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if ins[0].shape[0] != graph.t(node.inputs[0]).shape[0]:  # stacked samples (interpret_each): one
            # product per sample, as run alone (one row times the matrix may take another BLAS path
            # than many rows, and sum in another order)
            return [np.concatenate([self.reference_f32(node, graph, [x, *ins[1:]])[0]
                                    for x in np.split(ins[0], ins[0].shape[0])])]
        y = ins[0].astype(np.float64) @ ins[1].astype(np.float64).T
        if len(ins) > 2:
            y = y + ins[2]
        return [apply_act_f32(y.astype(np.float32), node.attrs.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=0)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [fully_connected_s8(ins[0], ins[1], ins[2], **s8_kwargs(node, graph))]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        k = weighted_requant_s16(node, graph, out_axis=0)
        return [fully_connected_s16(ins[0], ins[1], ins[2], **k)]

    def isa_why_not(self, node: Node, graph: Graph) -> str | None:
        return weight_zero_point_reason(node, graph)

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [k["input_offset"], k["filter_offset"], k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                CArg.lit(1), *map(CArg.lit, x.shape), CArg("act", x.name), CArg("const", w.name),
                CArg("const", node.inputs[2]), CArg.lit(y.shape[1]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).shape[0] * graph.t(node.inputs[1]).size, c.weight_bytes,
                    c.act_read_bytes, c.act_write_bytes)
