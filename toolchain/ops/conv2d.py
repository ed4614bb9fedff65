"""Conv2D: the int8 reference semantics of a (grouped, dilated) 2-D convolution; TFLite int8 spec,
TFLM reference_integer_ops::ConvPerChannel.

Owns: `conv2d_s8` (the numpy oracle) and `im2col_s8_offset`, the patch gatherer shared with the
depthwise reference. Layout NHWC activations, OHWI weights (I = Cin / groups). Taps outside the
input are skipped, i.e. read as the input zero point (BL-07). Not here: float conv (common.py),
parameter preparation (fixed_point.py), the ISA kernel plans and weight re-packing (toolchain/isa/),
C code (c_templates/).
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import requantize_weighted_s8, wrap_int32
from toolchain.ops.quant16 import requantize_s16, weighted_requant_s16
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import (NO_ACT, Window, apply_act_f32, conv_f32, filter_offset, quantize_bias, quantize_weights,
                                  weight_zero_point_reason, weighted_requant)
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, rounding_twins, register


def _check_geometry(x: np.ndarray, kernel: tuple[int, int], stride, pad, dilation, out_hw) -> None:
    if x.ndim != 4:
        raise ValueError(f"input must be NHWC (4-D), got shape {x.shape}")
    if min(stride) < 1 or min(dilation) < 1 or min(pad) < 0 or min(out_hw) < 1 or min(kernel) < 1:
        raise ValueError(f"bad geometry: kernel {kernel} stride {stride} pad {pad} dilation {dilation} out {out_hw}")


def im2col_s8_offset(x: np.ndarray, kernel: tuple[int, int], *, stride, pad, dilation, out_hw,
                     input_offset: int, dtype=np.int64) -> np.ndarray:
    """Patches of (x + input_offset) as `dtype` (int64, or float64: the same integers) [N, OH, OW, KH,
    KW, C]; taps outside the input are 0 (so they add nothing to the accumulator, exactly like TFLM's
    skipped taps).

    The bottom/right padding is whatever out_hw needs; windows are anchored at
    oh*stride - pad_top (TFLM in_y_origin)."""
    xp = padded_offset(x, kernel, stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                       input_offset=input_offset, dtype=dtype)
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_hw
    out = np.empty((x.shape[0], oh, ow, kh, kw, x.shape[3]), dtype)     # C-contiguous: reshapes are views
    for ky in range(kh):  # window (oy, ox) tap (ky, kx) reads padded row oy*sh + ky*dh, column ox*sw + kx*dw
        for kx in range(kw):
            out[:, :, :, ky, kx, :] = xp[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh,
                                         kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
    return out


def padded_offset(x: np.ndarray, kernel: tuple[int, int], *, stride, pad, dilation, out_hw, input_offset: int,
                  dtype=np.int64) -> np.ndarray:
    """x + input_offset as `dtype` in a zero border: [N, max(need_h, pad_top + H), max(need_w, pad_left
    + W), C], need = the rows / columns the out_hw windows reach (window (oy, ox) tap (ky, kx) reads
    [oy*stride + ky*dilation, ...]). ValueError for a bad geometry."""
    _check_geometry(x, kernel, stride, pad, dilation, out_hw)
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), (pt, pl), (dh, dw), (oh, ow) = kernel, stride, pad, dilation, out_hw
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.zeros((n, max(need_h, pt + h), max(need_w, pl + w), c), dtype)
    xp[:, pt:pt + h, pl:pl + w, :] = x.astype(dtype) + int(input_offset)
    return xp


def as_per_channel(v, cout: int, name: str) -> np.ndarray:
    """A per-tensor (1 entry) or per-channel (cout entries) int parameter as int64 [cout]; ValueError
    naming `name` otherwise."""
    v = np.asarray(v, np.int64).reshape(-1)
    if v.size not in (1, cout):
        raise ValueError(f"{name} has {v.size} entries, expected 1 or {cout}")
    return np.broadcast_to(v, (cout,))


def conv2d_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1), pad=(0, 0),
              dilation=(1, 1), out_hw, input_offset: int, output_offset: int, out_mult, out_shift,
              act_min: int = -128, act_max: int = 127, filter_offset: int = 0) -> np.ndarray:
    """int8 grouped 2-D convolution (TFLite int8 spec, TFLM reference_integer_ops::ConvPerChannel).

    x: int8 [N, H, W, Cin]; w: int8 [Cout, KH, KW, Cin/groups] (groups = Cin // w.shape[3]);
    bias: int32 [Cout] or None; out_mult/out_shift: int32 [Cout] (or length 1, per-tensor).
    stride/pad(top, left)/dilation/out_hw are (h, w) pairs. Output channel o reads input
    channels g*Cg..(g+1)*Cg-1 with g = o // (Cout/groups).
    acc = sum (w + filter_offset) * (x + input_offset) + bias (int32, wrapping as in C), then
    MultiplyByQuantizedMultiplier (double rounding) + output_offset, clamp -> int8 [N, OH, OW, Cout].
    filter_offset = -(weight zero point): 0 for TFLite's symmetric weights; per-tensor uint8 weights
    with a zero point (onnxruntime U8U8, as ONNX QLinearConv computes) otherwise. Taps outside the
    input add nothing whatever the offsets (x + input_offset is 0 there).
    """
    conv2d_s8_checks(x, w, bias)
    cout = w.shape[0]
    mult, shift = as_per_channel(out_mult, cout, "out_mult"), as_per_channel(out_shift, cout, "out_shift")
    acc = conv2d_acc(x, w, bias, stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                     input_offset=input_offset, filter_offset=filter_offset)
    return requantize_weighted_s8(wrap_int32(acc), mult, shift, output_offset, act_min, act_max)


def conv2d_acc(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride, pad, dilation, out_hw,
               input_offset: int = 0, filter_offset: int = 0) -> np.ndarray:
    """The exact accumulators of conv2d_s8 / conv2d_s16 as int64 [N, OH, OW, Cout] (not wrapped):
    sum (w + filter_offset) * (x + input_offset) over the taps inside the input, + bias."""
    cout, kh, kw, cg = w.shape
    groups = x.shape[3] // cg
    n, (oh, ow) = x.shape[0], out_hw
    # float64 matmul is exact: every product and partial sum is an integer far below 2^53 (int8 or
    # int16 operands plus offsets), so the patches are made in float64 directly.
    if (kh, kw, *stride, *pad) == (1, 1, 1, 1, 0, 0) and tuple(x.shape[1:3]) == (oh, ow):
        _check_geometry(x, (kh, kw), stride, pad, dilation, out_hw)
        p = (x.astype(np.float64) + int(input_offset)).reshape(n * oh * ow, groups, cg)  # 1x1: the pixels
    else:
        p = im2col_s8_offset(x, (kh, kw), stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                             input_offset=input_offset, dtype=np.float64)
        # [M, G, K] patches and [G, K, Cout/G] weights, K ordered (KH, KW, Cg) on both sides.
        p = p.reshape(n * oh * ow, kh, kw, groups, cg).transpose(0, 3, 1, 2, 4).reshape(-1, groups, kh * kw * cg)
    wg = (w.astype(np.float64) + int(filter_offset)).reshape(groups, cout // groups, kh * kw * cg).transpose(0, 2, 1)
    acc = np.matmul(p.transpose(1, 0, 2), wg)  # [G, M, Cout/G]
    acc = acc.transpose(1, 0, 2).reshape(n, oh, ow, cout).astype(np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return acc


def conv2d_s16(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1), pad=(0, 0),
               dilation=(1, 1), out_hw, out_mult, out_shift, act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 grouped 2-D convolution (TFLite 16x8 spec, TFLM reference_integer_ops::ConvPerChannel on
    int16 with an int64 bias): x int16 [N, H, W, Cin] (zero point 0: no offset), w int8 OHWI, bias
    int64 [Cout] or None; acc = sum w * x + bias in int64, then quant16.requantize_s16 (the 64-bit
    MultiplyByQuantizedMultiplier, clamp) -> int16 [N, OH, OW, Cout]. Geometry as conv2d_s8."""
    conv2d_s8_checks(x, w, bias)
    cout = w.shape[0]
    mult, shift = as_per_channel(out_mult, cout, "out_mult"), as_per_channel(out_shift, cout, "out_shift")
    acc = conv2d_acc(x, w, bias, stride=stride, pad=pad, dilation=dilation, out_hw=out_hw)
    return requantize_s16(acc, mult, shift, act_min, act_max)


def conv2d_s8_checks(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> None:
    """The shape checks of conv2d_s8 / conv2d_s16 (ValueError naming the mismatch)."""
    if w.ndim != 4:
        raise ValueError(f"weights must be OHWI (4-D), got shape {w.shape}")
    cout, _, _, cg = w.shape
    if x.ndim != 4 or cg < 1 or x.shape[3] % cg:
        raise ValueError(f"input channels {x.shape[-1] if x.ndim else '?'} not a multiple of weight channels {cg}")
    if cout % (x.shape[3] // cg):
        raise ValueError(f"output channels {cout} not divisible by groups {x.shape[3] // cg}")
    if bias is not None and np.shape(bias) != (cout,):
        raise ValueError(f"bias shape {np.shape(bias)} != ({cout},)")


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class Conv2DAttrs:
    """Conv2D (ONNX Conv-11 with group, TFLite CONV_2D): window, groups, fused activation."""

    window: Window
    groups: int = 1
    act: tuple[float, float] = NO_ACT


def s8_kwargs(node: Node, graph: Graph) -> dict:
    """conv2d_s8's keyword arguments for a quantized Conv2D node (geometry, offsets, per-channel
    requantization); the ISA plans (toolchain/isa/) start from the same numbers."""
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation, out_hw=graph.t(node.outputs[0]).shape[1:3],
                filter_offset=filter_offset(node, graph), **weighted_requant(node, graph, out_axis=0))


def s16_kwargs(node: Node, graph: Graph) -> dict:
    """conv2d_s16's keyword arguments for a 16x8 Conv2D node (geometry, quant16.weighted_requant_s16)."""
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation, out_hw=graph.t(node.outputs[0]).shape[1:3],
                **weighted_requant_s16(node, graph, out_axis=0))


def s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_conv2d_s16 (portable/conv2d_s16.c.j2): conv2d_s8's without the offsets."""
    k = s16_kwargs(node, graph)
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    ints = [*k["stride"], *k["pad"], *k["dilation"], k["act_min"], k["act_max"]]
    return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
            *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:]), CArg("const", w.name),
            CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]




@register("CONV2D", "Conv2D")
class Conv2D(OpDef):
    weight_out_axis = 0  # bias_fit: weights [Cout, ...]
    weight_zero_point = True  # per-tensor, as filter_offset (onnxruntime uint8 weights, TFLite FC)
    stacks_samples = True  # conv_f32: the same matmul per sample (1x1) or per (sample, output row) whatever N
    stacks_samples_int8 = True  # conv2d_acc: integer sums, exact in float64 whatever the rows
    # ISA variants: toolchain/isa/; 16x8 (int16 activations): portable only
    variants = (*rounding_twins(portable("conv2d")),
                portable_s16("conv2d", args=s16_args))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, cin = graph.t(node.inputs[0]).shape
        cout, _, _, gin = graph.t(node.inputs[1]).shape
        if gin * node.attrs.groups != cin:
            raise ValueError(f"weights expect {gin * node.attrs.groups} input channels, got {cin}")
        return [(n, *node.attrs.window.out_hw(h, w), cout)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        b = ins[2] if len(ins) > 2 else None
        return [apply_act_f32(conv_f32(ins[0], ins[1], b, node.attrs.window, node.attrs.groups), node.attrs.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=0)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [conv2d_s8(ins[0], ins[1], ins[2], **s8_kwargs(node, graph))]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [conv2d_s16(ins[0], ins[1], ins[2], **s16_kwargs(node, graph))]

    def isa_why_not(self, node: Node, graph: Graph) -> str | None:
        return weight_zero_point_reason(node, graph)

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], *k["dilation"], k["input_offset"], k["filter_offset"], k["output_offset"],
                k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:]), CArg("const", w.name),
                CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        w, y = graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return Cost(y.size * w.size // w.shape[0], c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
