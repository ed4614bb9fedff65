"""FullyConnected: the int8 reference semantics of a dense layer; TFLite int8 spec, TFLM
reference_integer_ops::FullyConnected (per-tensor) and FullyConnectedPerChannel.

Owns `fully_connected_s8`. Weights [out_depth, in_depth], one row per output; a non-zero weight
zero point is honoured through filter_offset even though the TFLite spec makes it 0.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import quantize_multiplier, requantize_s8, wrap_int32
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, act_range_s8, apply_act_f32, quantize_bias, quantize_weights, requant_arrays
from toolchain.ops.registry import CArg, Cost, OpDef, OpKind, portable, register


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
    xa = x.astype(np.float64) + int(input_offset)
    wa = w.astype(np.float64) + int(filter_offset)
    # float64 matmul is exact here: integer operands, every partial sum far below 2^53.
    acc = (xa @ wa.T).astype(np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return requantize_s8(wrap_int32(acc), mult, shift, output_offset, act_min, act_max)


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class FullyConnectedAttrs:
    """FullyConnected (ONNX Gemm/MatMul with constant B, TFLite FULLY_CONNECTED): weights [O, K].

    multiplier_rule: how the requantization multiplier is derived from the scales. "edgecc" (our
    quantizer): double(s_in) * double(s_w[o]) / double(s_out) for every output. "tflm" (set by the
    TFLite frontend): TFLM's own rule, which differs for per-tensor weights (see _s8_kwargs)."""

    act: tuple[float, float] = NO_ACT
    multiplier_rule: str = "edgecc"


def _multipliers(node: Node, x_scale: float, w_scale: tuple[float, ...], y_scale: float):
    if node.attrs.multiplier_rule == "tflm" and len(w_scale) == 1:
        # TFLM micro/kernels/fully_connected_common.cc CalculateOpDataFullyConnected: per-tensor
        # weights go through kernel_util.cc GetQuantizedConvolutionMultipler, which multiplies the
        # two scales in float32 and only then widens: double(float(s_in * s_w)) / double(s_out).
        # Conv, depthwise and per-channel FC use double(s_in) * double(s_w) / double(s_out); the
        # float32 rounding of the product moves the Q31 multiplier by 1 in some models.
        real = float(np.float32(x_scale) * np.float32(w_scale[0])) / float(y_scale)
        m, s = quantize_multiplier(real)
        return np.array([m], np.int32), np.array([s], np.int32)
    if node.attrs.multiplier_rule not in ("edgecc", "tflm"):
        raise ValueError(f"unknown multiplier_rule {node.attrs.multiplier_rule!r}")
    return requant_arrays(x_scale, w_scale, y_scale)


def _s8_kwargs(node: Node, graph: Graph) -> dict:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    mult, shift = _multipliers(node, x.quant.s, w.quant.scale, y.quant.s)
    lo, hi = act_range_s8(node.attrs.act, y.quant)
    return dict(input_offset=-x.quant.zp, filter_offset=0, output_offset=y.quant.zp, out_mult=mult,
                out_shift=shift, act_min=lo, act_max=hi)


@register(OpKind.FULLY_CONNECTED)
class FullyConnected(OpDef):
    variants = (portable("fully_connected"),)

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        b, k = graph.t(node.inputs[0]).shape
        o, kw = graph.t(node.inputs[1]).shape
        if k != kw:
            raise ValueError(f"input depth {k} != weight depth {kw}")
        return [(b, o)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        y = ins[0].astype(np.float64) @ ins[1].astype(np.float64).T
        if len(ins) > 2:
            y = y + ins[2]
        return [apply_act_f32(y.astype(np.float32), node.attrs.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=0)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [fully_connected_s8(ins[0], ins[1], ins[2], **_s8_kwargs(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = _s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [k["input_offset"], k["filter_offset"], k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                CArg.lit(int(len(k["out_mult"]) == y.shape[1])),  # per_channel: 0 = one multiplier for all
                *map(CArg.lit, x.shape), CArg("act", x.name), CArg("const", w.name),
                CArg("const", node.inputs[2]), CArg.lit(y.shape[1]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).shape[0] * graph.t(node.inputs[1]).size, c.weight_bytes,
                    c.act_read_bytes, c.act_write_bytes)
