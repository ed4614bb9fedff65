"""DepthwiseConv2D: the int8 reference semantics of a depthwise convolution with a depth
multiplier; TFLite int8 spec, TFLM reference_integer_ops::DepthwiseConvPerChannel.

Owns `depthwise_conv2d_s8`. Weights are TFLite's [1, KH, KW, Cin*mult] with output channel
oc = ic*mult + m reading input channel ic (BL-10). Padding and skipped taps as in conv2d. The ISA
kernel plans are in toolchain/isa/.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.conv2d import as_per_channel, padded_offset
from toolchain.ops.fixed_point import requantize_weighted_s8, wrap_int32
from toolchain.ops.quant16 import requantize_s16, weighted_requant_s16
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import (NO_ACT, Window, apply_act_f32, conv_f32, filter_offset, quantize_bias, quantize_weights,
                                  weight_zero_point_reason, weighted_requant)
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, rounding_twins, register


def depthwise_conv2d_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1),
                        pad=(0, 0), dilation=(1, 1), out_hw, depth_multiplier: int, input_offset: int,
                        output_offset: int, out_mult, out_shift, act_min: int = -128,
                        act_max: int = 127, filter_offset: int = 0) -> np.ndarray:
    """int8 depthwise convolution (TFLM reference_integer_ops::DepthwiseConvPerChannel).

    x: int8 [N, H, W, Cin]; w: int8 [1, KH, KW, Cin*depth_multiplier]; bias: int32 [Cout] or None;
    out_mult/out_shift: int32 [Cout] (or length 1). acc[oc] = sum (w[.., oc] + filter_offset) *
    (x[.., oc // mult] + input_offset) + bias[oc]; requantized with double rounding, + output_offset,
    clamped. filter_offset: -(per-tensor weight zero point), 0 for symmetric weights (conv2d_s8).
    Returns int8 [N, OH, OW, Cin*depth_multiplier].
    """
    if w.ndim != 4 or w.shape[0] != 1:
        raise ValueError(f"depthwise weights must be [1, KH, KW, C*mult], got shape {w.shape}")
    if x.ndim != 4:
        raise ValueError(f"input must be NHWC (4-D), got shape {x.shape}")
    _, kh, kw, cout = w.shape
    cin, mult = x.shape[3], int(depth_multiplier)
    if mult < 1 or cin * mult != cout:
        raise ValueError(f"weight channels {cout} != input channels {cin} x multiplier {mult}")
    if bias is not None and np.shape(bias) != (cout,):
        raise ValueError(f"bias shape {np.shape(bias)} != ({cout},)")
    m, s = as_per_channel(out_mult, cout, "out_mult"), as_per_channel(out_shift, cout, "out_shift")
    acc = _acc(x, w, bias, stride, pad, dilation, out_hw, mult, input_offset, filter_offset)
    return requantize_weighted_s8(wrap_int32(acc), m, s, output_offset, act_min, act_max)


def _acc(x, w, bias, stride, pad, dilation, out_hw, mult: int, input_offset: int, filter_offset: int) -> np.ndarray:
    """Exact int64 accumulators [N, OH, OW, Cout] of a depthwise convolution (+ bias), not wrapped."""
    _, kh, kw, cout = w.shape
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out_hw
    # x + input_offset in a zero border (taps outside add nothing), channel ic repeated for its
    # outputs ic*mult + m; then one product per tap, in float64: exact, as the sums are integers far
    # below 2^53 (int8 / int16 operands plus offsets)
    xp = padded_offset(x, (kh, kw), stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                       input_offset=input_offset, dtype=np.float64)
    if mult > 1:
        xp = np.repeat(xp, mult, axis=3)
    wk = w[0].astype(np.float64) + int(filter_offset)                   # [KH, KW, Cout]
    acc, prod = np.zeros((x.shape[0], oh, ow, cout)), np.empty((x.shape[0], oh, ow, cout))
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
            acc += np.multiply(tap, wk[ky, kx], out=prod)
    acc = acc.astype(np.int64)
    return acc + np.asarray(bias, np.int64) if bias is not None else acc


def depthwise_conv2d_s16(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1), pad=(0, 0),
                         dilation=(1, 1), out_hw, depth_multiplier: int, out_mult, out_shift,
                         act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 depthwise convolution (TFLite 16x8 spec, TFLM reference_integer_ops::DepthwiseConvPerChannel
    on int16, int64 bias): x int16 [N, H, W, Cin] (zero point 0), w int8 [1, KH, KW, Cin*mult], bias
    int64 [Cout] or None; acc = sum w * x + bias in int64, quant16.requantize_s16 -> int16."""
    if w.ndim != 4 or w.shape[0] != 1 or x.ndim != 4 or x.shape[3] * int(depth_multiplier) != w.shape[3]:
        raise ValueError(f"depthwise input {x.shape} and weights {w.shape} (multiplier {depth_multiplier})")
    cout = w.shape[3]
    m, s = as_per_channel(out_mult, cout, "out_mult"), as_per_channel(out_shift, cout, "out_shift")
    acc = _acc(x, w, bias, stride, pad, dilation, out_hw, int(depth_multiplier), 0, 0)
    return requantize_s16(acc, m, s, act_min, act_max)


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class DepthwiseConv2DAttrs:
    """DepthwiseConv2D (ONNX Conv with group == Cin, TFLite DEPTHWISE_CONV_2D); weights
    [1, KH, KW, Cin * depth_multiplier], output channel oc = ic * depth_multiplier + m."""

    window: Window
    depth_multiplier: int = 1
    act: tuple[float, float] = NO_ACT


def s8_kwargs(node: Node, graph: Graph) -> dict:
    """depthwise_conv2d_s8's keyword arguments for a quantized DepthwiseConv2D node; the ISA plans
    (toolchain/isa/) start from the same numbers."""
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation,
                out_hw=graph.t(node.outputs[0]).shape[1:3], depth_multiplier=node.attrs.depth_multiplier,
                filter_offset=filter_offset(node, graph), **weighted_requant(node, graph, out_axis=3))


def s16_kwargs(node: Node, graph: Graph) -> dict:
    """depthwise_conv2d_s16's keyword arguments for a 16x8 DepthwiseConv2D node."""
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation,
                out_hw=graph.t(node.outputs[0]).shape[1:3], depth_multiplier=node.attrs.depth_multiplier,
                **weighted_requant_s16(node, graph, out_axis=3))


def s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_depthwise_conv2d_s16: depthwise_conv2d_s8's without the offsets."""
    k = s16_kwargs(node, graph)
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    ints = [*k["stride"], *k["pad"], *k["dilation"], k["depth_multiplier"], k["act_min"], k["act_max"]]
    return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
            *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:3]), CArg("const", w.name),
            CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]


@register("DEPTHWISE_CONV2D", "DepthwiseConv2D")
class DepthwiseConv2D(OpDef):
    weight_out_axis = 3  # bias_fit: weights [1, KH, KW, Cout]
    weight_zero_point = True  # per-tensor, as filter_offset (onnxruntime uint8 weights, TFLite FC)
    stacks_samples = True  # conv_f32's depthwise path: elementwise products, per tap in order
    stacks_samples_int8 = True  # integer sums per output element
    # ISA variants: toolchain/isa/; 16x8 (int16 activations): portable only
    variants = (*rounding_twins(portable("depthwise_conv2d")),
                portable_s16("depthwise_conv2d", args=s16_args))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, cin = graph.t(node.inputs[0]).shape
        cout = graph.t(node.inputs[1]).shape[3]
        if cout != cin * node.attrs.depth_multiplier:
            raise ValueError(f"{cout} output channels != {cin} x multiplier {node.attrs.depth_multiplier}")
        return [(n, *node.attrs.window.out_hw(h, w), cout)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        x, w = ins[0], ins[1]
        m = node.attrs.depth_multiplier
        # as a grouped conv: group = Cin, OHWI weights [Cout, KH, KW, 1]
        ohwi = np.transpose(w, (3, 1, 2, 0))
        xr = np.repeat(x, m, axis=3) if m > 1 else x
        y = conv_f32(xr, ohwi, ins[2] if len(ins) > 2 else None, node.attrs.window, xr.shape[3])
        return [apply_act_f32(y, node.attrs.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=3)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [depthwise_conv2d_s8(ins[0], ins[1], ins[2], **s8_kwargs(node, graph))]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [depthwise_conv2d_s16(ins[0], ins[1], ins[2], **s16_kwargs(node, graph))]

    def isa_why_not(self, node: Node, graph: Graph) -> str | None:
        return weight_zero_point_reason(node, graph)

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], *k["dilation"], k["depth_multiplier"], k["input_offset"],
                k["filter_offset"], k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:3]), CArg("const", w.name),
                CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        w, y = graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return Cost(y.size * w.shape[1] * w.shape[2], c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
