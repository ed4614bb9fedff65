"""TransposeConv: the int8 reference semantics of a 2-D transposed convolution; TFLite TRANSPOSE_CONV,
TFLM transpose_conv.cc + reference_integer_ops::TransposeConv.

Input pixel (iy, ix) adds (x + input_offset) * w[oc, ky, kx, ic] to output pixel
(iy * stride_h - pad_top + ky, ix * stride_w - pad_left + kx) when that pixel is inside the output;
then, per output channel, acc + bias -> MultiplyByQuantizedMultiplier (double rounding) + output
offset, clamp. The int32 accumulator wraps as in C: the sum is independent of the order of its terms
(mod 2^32), so the kernel gathers (per output pixel, the taps with oy + pad_top - ky a multiple of
the stride) instead of TFLM's scatter into an output-sized int32 scratch buffer: same bits, no scratch.
Layout NHWC activations, OHWI weights (TFLite's [Cout, KH, KW, Cin]), symmetric per-channel int8
weights, int32 bias. The output size is an attribute (TFLite: the output tensor's shape, ONNX:
the ConvTranspose output size); only pads top/left position the window (the end is cropped).
Owns `transpose_conv_s8`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, apply_act_f32, quantize_bias, quantize_weights, weighted_requant
from toolchain.ops.conv2d import as_per_channel
from toolchain.ops.fixed_point import requantize_s8, wrap_int32
from toolchain.ops.registry import CArg, Cost, OpDef, portable, register, rounding_twins


def _scatter(x: np.ndarray, w: np.ndarray, stride, pad, out_hw) -> np.ndarray:
    """sum over taps of x[n, iy, ix, :] @ w[:, ky, kx, :].T placed at (iy*s - p + ky, ix*s - p + kx),
    cropped to out_hw; float64 (exact for integer inputs: every partial sum is far below 2^53)."""
    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    (sh, sw), (pt, pl), (oh, ow) = stride, pad, out_hw
    full_h, full_w = max((h - 1) * sh + kh, pt + oh), max((wd - 1) * sw + kw, pl + ow)
    acc = np.zeros((n, full_h, full_w, cout), np.float64)
    xf, wf = x.astype(np.float64), w.astype(np.float64)
    for ky in range(kh):
        for kx in range(kw):
            acc[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (wd - 1) * sw + 1:sw, :] += xf @ wf[:, ky, kx, :].T
    return acc[:, pt:pt + oh, pl:pl + ow, :]


def _check(x: np.ndarray, w: np.ndarray, stride, pad, out_hw) -> None:
    if x.ndim != 4 or w.ndim != 4 or x.shape[3] != w.shape[3]:
        raise ValueError(f"input {list(x.shape)} and OHWI weights {list(w.shape)} do not match")
    if min(stride) < 1 or min(pad) < 0 or min(out_hw) < 1:
        raise ValueError(f"bad geometry: stride {stride} pad {pad} out {out_hw}")


def transpose_conv_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride, pad, out_hw,
                      input_offset: int, output_offset: int, out_mult, out_shift,
                      act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 transposed convolution (TFLM reference_integer_ops::TransposeConv, see the module
    docstring). x int8 [N, H, W, Cin]; w int8 [Cout, KH, KW, Cin]; bias int32 [Cout] or None;
    out_mult/out_shift [Cout] or length 1; stride, pad (top, left), out_hw are (h, w) pairs."""
    _check(x, w, stride, pad, out_hw)
    cout = w.shape[0]
    mult, shift = as_per_channel(out_mult, cout, "out_mult"), as_per_channel(out_shift, cout, "out_shift")
    acc = _scatter(x.astype(np.int64) + int(input_offset), w, stride, pad, out_hw).astype(np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return requantize_s8(wrap_int32(acc), mult, shift, output_offset, act_min, act_max)


# ---- IR glue -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TransposeConvAttrs:
    """stride (h, w), pad (top, left) >= 0, output (height, width), fused activation."""

    stride: tuple[int, int]
    pad: tuple[int, int]
    out_hw: tuple[int, int]
    act: tuple[float, float] = NO_ACT


def _s8_kwargs(node: Node, graph: Graph) -> dict:
    a = node.attrs
    return dict(stride=a.stride, pad=a.pad, out_hw=a.out_hw, **weighted_requant(node, graph, out_axis=0))


s8_kwargs = _s8_kwargs  # the transpose_conv_s8 keyword arguments of a node, for the ISA plans (toolchain/isa/)


@register("TRANSPOSE_CONV", "TransposeConv")
class TransposeConv(OpDef):
    weight_out_axis = 0  # bias_fit: weights [Cout, ...]
    variants = rounding_twins(portable("transpose_conv"))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        x, w = graph.t(node.inputs[0]), graph.t(node.inputs[1])
        a = node.attrs
        if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[3] != w.shape[3]:
            raise ValueError(f"input {list(x.shape)} and OHWI weights {list(w.shape)} do not match")
        if min(a.stride) < 1 or min(a.pad) < 0 or min(a.out_hw) < 1:
            raise ValueError(f"bad geometry: stride {a.stride} pad {a.pad} out {a.out_hw}")
        return [(x.shape[0], *a.out_hw, w.shape[0])]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        a = node.attrs
        y = _scatter(np.asarray(ins[0]), np.asarray(ins[1]), a.stride, a.pad, a.out_hw)
        if len(ins) > 2 and ins[2] is not None:
            y = y + np.asarray(ins[2], np.float64)
        return [apply_act_f32(y.astype(np.float32), a.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=0)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [transpose_conv_s8(ins[0], ins[1], ins[2], **_s8_kwargs(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = _s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], k["input_offset"], k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:3]), CArg("const", w.name),
                CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        x, w = graph.t(node.inputs[0]), graph.t(node.inputs[1])
        return Cost(x.size * w.size // w.shape[3], c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
