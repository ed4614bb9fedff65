"""DepthwiseConv2D: the int8 reference semantics of a depthwise convolution with a depth
multiplier; TFLite int8 spec, TFLM reference_integer_ops::DepthwiseConvPerChannel.

Owns `depthwise_conv2d_s8`. Weights are TFLite's [1, KH, KW, Cin*mult] with output channel
oc = ic*mult + m reading input channel ic (BL-10). Padding and skipped taps as in conv2d. Also the
plans of the dsp kernel variants (`dsp_plan`: predicate, argument list, scratch).
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.conv2d import _as_per_channel, im2col_s8_offset
from toolchain.ops.fixed_point import requantize_s8, wrap_int32
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, Window, apply_act_f32, conv_f32, quantize_bias, quantize_weights, weighted_requant
from toolchain.ops.packing import MODES, dsp_variant, fold_layer
from toolchain.ops import neon_variants
from toolchain.ops import helium_variants
from toolchain.ops.registry import CArg, Cost, KernelVariant, OpDef, OpKind, portable, rounding_twins, register


def depthwise_conv2d_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1),
                        pad=(0, 0), dilation=(1, 1), out_hw, depth_multiplier: int, input_offset: int,
                        output_offset: int, out_mult, out_shift, act_min: int = -128,
                        act_max: int = 127) -> np.ndarray:
    """int8 depthwise convolution (TFLM reference_integer_ops::DepthwiseConvPerChannel).

    x: int8 [N, H, W, Cin]; w: int8 [1, KH, KW, Cin*depth_multiplier]; bias: int32 [Cout] or None;
    out_mult/out_shift: int32 [Cout] (or length 1). acc[oc] = sum w[.., oc] * (x[.., oc // mult]
    + input_offset) + bias[oc]; requantized with double rounding, + output_offset, clamped.
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
    m, s = _as_per_channel(out_mult, cout, "out_mult"), _as_per_channel(out_shift, cout, "out_shift")

    p = im2col_s8_offset(x, (kh, kw), stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                         input_offset=input_offset)                      # [N, OH, OW, KH, KW, Cin]
    wk = w.reshape(kh, kw, cin, mult).astype(np.int64)
    acc = np.einsum("nhwijc,ijcm->nhwcm", p, wk).reshape(p.shape[:3] + (cout,))
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return requantize_s8(wrap_int32(acc), m, s, output_offset, act_min, act_max)


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class DepthwiseConv2DAttrs:
    """DepthwiseConv2D (ONNX Conv with group == Cin, TFLite DEPTHWISE_CONV_2D); weights
    [1, KH, KW, Cin * depth_multiplier], output channel oc = ic * depth_multiplier + m."""

    window: Window
    depth_multiplier: int = 1
    act: tuple[float, float] = NO_ACT


def _s8_kwargs(node: Node, graph: Graph) -> dict:
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation,
                out_hw=graph.t(node.outputs[0]).shape[1:3], depth_multiplier=node.attrs.depth_multiplier,
                **weighted_requant(node, graph, out_axis=3))


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
def dsp_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
             mode: str, three: bool, x: str = "input", y: str = "output",
             w_arg: CArg | None = None) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of the dsp depthwise entry point for requantization `mode`,
    3x3 (dsp/depthwise_conv2d_3x3) or general, given the depthwise_conv2d_s8 keyword arguments `k`
    and [1, KH, KW, C*mult] weights (w_arg: how the kernel call names them; default a new array);
    None when it does not apply: -128 weights, a requantization it cannot do exactly, or for the
    3x3 kernel another kernel size, dilation, depth multiplier or in_c % 4 != 0."""
    _, kh, kw, cout = w.shape
    if three and ((kh, kw) != (3, 3) or tuple(k["dilation"]) != (1, 1) or k["depth_multiplier"] != 1
                  or x_shape[3] % 4):
        return None
    # [out_c, taps]: output channel oc sums x[oc // mult] * w[tap, oc]; the kernels accumulate 2 acc
    f = fold_layer(w.reshape(-1, cout).T, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                   (k["act_min"], k["act_max"]), doubled=True)
    if f is None or mode not in f.modes:
        return None
    geometry = [*k["stride"], *k["pad"]] + ([] if three else [*k["dilation"], k["depth_multiplier"]])
    args = [*map(CArg.lit, [*geometry, -k["input_offset"], f.k, k["act_min"], k["act_max"]]),
            CArg("array", f.mult, "mult"), CArg("array", f.shift(mode), "shift"), *map(CArg.lit, x_shape),
            CArg("act", x), *map(CArg.lit, [] if three else (kh, kw)), w_arg or CArg("array", w.reshape(-1), "w"),
            CArg("array", f.bias, "bias"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # general: the weights of every full channel quad widened to q15 (8 bytes per quad and tap);
    # 3x3: a 120-byte record per quad (bias, requantization, widened weights) and a ring of three
    # padded input rows widened to q15 (2 bytes per value)
    quads = cout // 4 if k["depth_multiplier"] == 1 else 0
    if three:
        return args, 120 * quads + 3 * 2 * ((y_shape[2] - 1) * k["stride"][1] + 3) * cout
    return args, 8 * quads * kh * kw


def _node_plan(node: Node, graph: Graph, mode: str, three: bool) -> tuple[list[CArg], int] | None:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return dsp_plan(_s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode, three=three, x=x.name,
                    y=y.name, w_arg=CArg("const", w.name))


def _dsp(mode: str, three: bool) -> KernelVariant:
    return dsp_variant("depthwise_conv2d", "3x3" if three else "", mode=mode,
                       applies=lambda n, g: _node_plan(n, g, mode, three) is not None,
                       scratch_bytes=lambda n, g: _node_plan(n, g, mode, three)[1],
                       args=lambda n, g: _node_plan(n, g, mode, three)[0], headers=("dsp/ecc_dsp_depthwise.h",))


DSP_VARIANTS = tuple(_dsp(mode, three) for three in (True, False) for mode in MODES)


@register(OpKind.DEPTHWISE_CONV2D)
class DepthwiseConv2D(OpDef):
    variants = (*DSP_VARIANTS, *neon_variants.DEPTHWISE_CONV2D, *helium_variants.DEPTHWISE_CONV2D, *rounding_twins(portable("depthwise_conv2d")))

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
        return [depthwise_conv2d_s8(ins[0], ins[1], ins[2], **_s8_kwargs(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = _s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], *k["dilation"], k["depth_multiplier"], k["input_offset"],
                k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:3]), CArg("const", w.name),
                CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        w, y = graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return Cost(y.size * w.shape[1] * w.shape[2], c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
