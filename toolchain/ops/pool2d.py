"""Pool2D: the int8 reference semantics of average and max pooling; TFLite int8 spec, TFLM
reference_integer_ops::AveragePool / MaxPool (integer_ops/pooling.h).

Owns `avg_pool2d_s8` and `max_pool2d_s8`. In/out quantization is identical (TFLite requires it),
so no requantization happens here. Average: window sum of in-bounds cells divided with rounding
half away from zero (BL-03) or, under `rounding: onnx`, the mean of (x - zp) rounded once, ties to even
(ONNX averages real values), plus zp; divisor = in-bounds count, or with count_include_pad (an ONNX
extension; TFLite never includes padding) the cells inside the padded input, each padding cell
counting as the zero point (real 0); cells past the declared end pads (ceil_mode) never count.
16x8 (int16, zero point 0): avg_pool2d_s16 / max_pool2d_s16, TFLM's int16 pooling (always its
rounding), kernels portable/{avg,max}_pool2d_s16.c.j2.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import check_act_range, current_rounding, rounding_divide
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, Window, act_range_s8, apply_act_f32
from toolchain.ops.quant16 import activation_range_s16
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, register, rounding_twins


def _windows(x: np.ndarray, kernel, stride, pad, out_hw, fill: int) -> tuple[np.ndarray, np.ndarray]:
    """(values [N, OH, OW, KH, KW, C] int64 with padded taps = fill, in-bounds mask [OH, OW, KH, KW])."""
    if x.ndim != 4:
        raise ValueError(f"input must be NHWC (4-D), got shape {x.shape}")
    (kh, kw), (sh, sw), (pt, pl), (oh, ow) = kernel, stride, pad, out_hw
    if min(kh, kw, sh, sw, oh, ow) < 1 or min(pt, pl) < 0:
        raise ValueError(f"bad pooling geometry: kernel {kernel} stride {stride} pad {pad} out {out_hw}")
    n, h, w, c = x.shape
    rows = (np.arange(oh) * sh - pt)[:, None] + np.arange(kh)[None, :]   # [OH, KH] input coords
    cols = (np.arange(ow) * sw - pl)[:, None] + np.arange(kw)[None, :]   # [OW, KW]
    rin, cin = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
    inside = rin[:, None, :, None] & cin[None, :, None, :]               # [OH, OW, KH, KW]
    v = x.astype(np.int64)[:, np.clip(rows, 0, h - 1)[:, None, :, None], np.clip(cols, 0, w - 1)[None, :, None, :], :]
    return np.where(inside[None, ..., None], v, fill), inside


def avg_pool2d_s8(x: np.ndarray, *, kernel, stride, pad=(0, 0), out_hw, act_min: int = -128,
                  act_max: int = 127, count_include_pad: bool = False, pad_value: int = 0,
                  pad_end=None, zero_point: int = 0) -> np.ndarray:
    """int8 average pooling (TFLM reference_integer_ops::AveragePool).

    x: int8 [N, H, W, C] -> int8 [N, OH, OW, C]. kernel/stride/pad(top, left)/out_hw are (h, w).
    out = round_half_away(sum / n), clamped; under rounding "onnx" round_half_even((sum - n zp) / n) + zp
    with zp = `zero_point` (the input's; TFLM divides the raw sum). n = in-bounds cells, or if count_include_pad the cells
    inside [-pad_top, H + pad_bottom) x [-pad_left, W + pad_right) with pad_end = (bottom, right)
    (None: unbounded, n = KH*KW), each padding cell adding pad_value (the zero point: a real 0).
    A window with no in-bounds cell is an error (TFLM returns kTfLiteError).
    """
    check_act_range(act_min, act_max)
    v, inside = _windows(x, kernel, stride, pad, out_hw, 0)
    s = v.sum(axis=(3, 4))                                               # [N, OH, OW, C]
    if count_include_pad:
        cnt = _padded_counts(x.shape[1:3], kernel, stride, pad, pad_end, out_hw)
        s = s + int(pad_value) * (cnt - inside.sum(axis=(2, 3)))[None, :, :, None]  # padding cells
    else:
        cnt = inside.sum(axis=(2, 3)).astype(np.int64)
        if np.any(cnt == 0):
            raise ValueError("an average-pool window lies entirely in the padding")
    cnt = cnt[None, :, :, None]
    if current_rounding() == "onnx":  # ties to even are not shift invariant: round the real mean
        avg = rounding_divide(s - int(zero_point) * cnt, cnt, "onnx") + int(zero_point)
    else:                             # TFLite: the raw sum, half away from zero
        avg = rounding_divide(s, cnt, "tflm")
    return np.clip(avg, act_min, act_max).astype(np.int8)


def _padded_counts(hw, kernel, stride, pad, pad_end, out_hw) -> np.ndarray:
    """[OH, OW] number of window cells inside the padded input (ONNX count_include_pad)."""
    per_axis = []
    for a in range(2):
        start = np.arange(out_hw[a]) * stride[a] - pad[a]
        end = start + kernel[a]
        if pad_end is not None:
            end = np.minimum(end, hw[a] + pad_end[a])
        per_axis.append(end - np.maximum(start, -pad[a]))
    return per_axis[0][:, None] * per_axis[1][None, :]


def max_pool2d_s8(x: np.ndarray, *, kernel, stride, pad=(0, 0), out_hw, act_min: int = -128,
                  act_max: int = 127) -> np.ndarray:
    """int8 max pooling (TFLM reference_integer_ops::MaxPool): max over in-bounds cells, clamped.
    x: int8 [N, H, W, C] -> int8 [N, OH, OW, C]. A window entirely in padding gives act_min
    (TFLM starts from the type's lowest value, then clamps)."""
    check_act_range(act_min, act_max)
    v, _ = _windows(x, kernel, stride, pad, out_hw, -128)
    return np.clip(v.max(axis=(3, 4)), act_min, act_max).astype(np.int8)


MAX_TAPS_S16 = 1 << 16  # window cells of a 16x8 average pool whose int32 sum cannot overflow (TFLM's int32 acc)


def avg_pool2d_s16(x: np.ndarray, *, kernel, stride, pad=(0, 0), out_hw, act_min: int = -32768,
                   act_max: int = 32767) -> np.ndarray:
    """16x8 average pooling (TFLM reference_integer_ops::AveragePool on int16): the int32 sum of the
    in-bounds cells divided by their count, rounded half away from zero (C's truncating division of
    sum +- count / 2), clamped. x: int16 [N, H, W, C] -> int16 [N, OH, OW, C]; the rounding mode of
    the graph does not apply (TFLite files only). ValueError for a window with no in-bounds cell or
    of more than MAX_TAPS_S16 cells."""
    if kernel[0] * kernel[1] > MAX_TAPS_S16:
        raise ValueError(f"int16 average pool window {kernel} holds more than {MAX_TAPS_S16} cells (int32 sum)")
    v, inside = _windows(x, kernel, stride, pad, out_hw, 0)
    cnt = inside.sum(axis=(2, 3)).astype(np.int64)
    if np.any(cnt == 0):
        raise ValueError("an average-pool window lies entirely in the padding")
    avg = rounding_divide(v.sum(axis=(3, 4)), cnt[None, :, :, None], "tflm")
    return np.clip(avg, act_min, act_max).astype(np.int16)


def max_pool2d_s16(x: np.ndarray, *, kernel, stride, pad=(0, 0), out_hw, act_min: int = -32768,
                   act_max: int = 32767) -> np.ndarray:
    """16x8 max pooling (TFLM reference_integer_ops::MaxPool on int16): max over in-bounds cells
    (-32768 for a window holding none), clamped. x: int16 [N, H, W, C] -> int16 [N, OH, OW, C]."""
    v, _ = _windows(x, kernel, stride, pad, out_hw, -32768)
    return np.clip(v.max(axis=(3, 4)), act_min, act_max).astype(np.int16)


# ---- IR glue: attrs, shapes, float semantics, kernel call -----------------------------------
@dataclass(frozen=True)
class Pool2DAttrs:
    """AveragePool2D / MaxPool2D (ONNX AveragePool-11, MaxPool-12, GlobalAveragePool; TFLite
    AVERAGE_POOL_2D / MAX_POOL_2D). int8 output keeps the input's quantization (TFLite rule)."""

    window: Window
    count_include_pad: bool = False
    act: tuple[float, float] = NO_ACT


def _pool_f32(x: np.ndarray, win: Window, fill: float, reduce, oh: int, ow: int) -> np.ndarray:
    pt, pl, pb, pr = win.pads
    # pad generously on the end side: ceil_mode windows may run past the declared pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb + win.kernel[0]), (pl, pr + win.kernel[1]), (0, 0)),
                constant_values=fill)
    sh, sw = win.stride
    taps = [xp[:, ky: ky + (oh - 1) * sh + 1: sh, kx: kx + (ow - 1) * sw + 1: sw, :]
            for ky in range(win.kernel[0]) for kx in range(win.kernel[1])]
    return reduce(np.stack(taps), axis=0)


class _Pool(OpDef):
    stacks_samples = True  # per tap along H, W; the sum over taps runs in tap order for every element
    stacks_samples_int8 = True  # integer window sums / maxima per sample
    ignores_observed_range = True  # output_qparams: the input's
    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, c = graph.t(node.inputs[0]).shape
        return [(n, *node.attrs.window.out_hw(h, w), c)]

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant

    def _common(self, node: Node, graph: Graph) -> tuple[dict, tuple[int, int]]:
        y = graph.t(node.outputs[0])
        win = node.attrs.window
        lo, hi = act_range_s8(node.attrs.act, y.quant)
        return dict(kernel=win.kernel, stride=win.stride, pad=win.pads[:2], out_hw=y.shape[1:3],
                    act_min=lo, act_max=hi), (lo, hi)

    def _args(self, node: Node, graph: Graph, extra: list[int], s16: bool = False) -> list[CArg]:
        k, (lo, hi) = (self._common_s16 if s16 else self._common)(node, graph)
        x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], *k["kernel"], *extra, lo, hi, *x.shape]
        return [*map(CArg.lit, ints), CArg("act", x.name), *map(CArg.lit, y.shape[1:3]), CArg("act", y.name)]

    def _common_s16(self, node: Node, graph: Graph) -> tuple[dict, tuple[int, int]]:
        """_common with the int16 activation range of a 16x8 node (zero point 0)."""
        win, y = node.attrs.window, graph.t(node.outputs[0])
        lo, hi = activation_range_s16(node.attrs.act, y.quant.s)
        return dict(kernel=win.kernel, stride=win.stride, pad=win.pads[:2], out_hw=y.shape[1:3],
                    act_min=lo, act_max=hi), (lo, hi)

    def s16_args(self, node: Node, graph: Graph) -> list[CArg]:
        """Arguments of ecc_{avg,max}_pool2d_s16: the int8 kernels' list without the ONNX padding extras."""
        return self._args(node, graph, [], s16=True)


@register("AVG_POOL2D", "AveragePool2D")
class AvgPool2D(_Pool):
    # ISA variants: toolchain/isa/
    variants = (*rounding_twins(portable("avg_pool2d"), args=lambda n, g: AvgPool2D()._onnx_args(n, g)),
                portable_s16("avg_pool2d", args=lambda n, g: AvgPool2D().s16_args(n, g)))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        win = node.attrs.window
        oh, ow = graph.t(node.outputs[0]).shape[1:3]
        total = _pool_f32(ins[0], win, 0.0, np.sum, oh, ow)
        ones = np.ones(ins[0].shape[:3] + (1,))
        if node.attrs.count_include_pad:  # padding cells count, cells past the pads do not
            h, w = ins[0].shape[1:3]
            ones = np.pad(ones, ((0, 0), (win.pads[0], win.pads[2]), (win.pads[1], win.pads[3]), (0, 0)), constant_values=1)
            win = Window(win.kernel, win.stride, win.dilation, (0, 0, 0, 0), win.ceil_mode)
        count = _pool_f32(ones, win, 0.0, np.sum, oh, ow)
        return [apply_act_f32((total / count).astype(np.float32), node.attrs.act)]

    def _padding(self, node: Node, graph: Graph) -> dict:
        """count_include_pad, the end pads and the pad value (the input zero point: a real 0)."""
        pads = node.attrs.window.pads
        zp = graph.t(node.inputs[0]).quant.zp if node.attrs.count_include_pad else 0
        return dict(count_include_pad=node.attrs.count_include_pad, pad_end=pads[2:], pad_value=zp)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        k, _ = self._common(node, graph)
        zp = graph.t(node.inputs[0]).quant.zp
        return [avg_pool2d_s8(ins[0], **self._padding(node, graph), **k, zero_point=zp)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        if node.attrs.count_include_pad:  # an ONNX extension; 16x8 nodes come from TFLite files
            raise ValueError("int16 average pooling with count_include_pad")
        return [avg_pool2d_s16(ins[0], **self._common_s16(node, graph)[0])]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p = self._padding(node, graph)
        return self._args(node, graph, [int(p["count_include_pad"]), *p["pad_end"], p["pad_value"]])

    def _onnx_args(self, node: Node, graph: Graph) -> list[CArg]:
        """ecc_avg_pool2d_s8_onnx: the same list with pad_value = the input zero point in every case."""
        p = self._padding(node, graph)
        zp = graph.t(node.inputs[0]).quant.zp
        return self._args(node, graph, [int(p["count_include_pad"]), *p["pad_end"], zp])

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        kh, kw = node.attrs.window.kernel
        return Cost(graph.t(node.outputs[0]).size * kh * kw, 0, c.act_read_bytes, c.act_write_bytes)


@register("MAX_POOL2D", "MaxPool2D")
class MaxPool2D(_Pool):
    variants = (portable("max_pool2d"),  # ISA variants: toolchain/isa/
                portable_s16("max_pool2d", args=lambda n, g: MaxPool2D().s16_args(n, g)))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        oh, ow = graph.t(node.outputs[0]).shape[1:3]
        y = _pool_f32(ins[0], node.attrs.window, -np.inf, np.max, oh, ow)
        return [apply_act_f32(y.astype(np.float32), node.attrs.act)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        k, _ = self._common(node, graph)
        return [max_pool2d_s8(ins[0], **k)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [max_pool2d_s16(ins[0], **self._common_s16(node, graph)[0])]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        return self._args(node, graph, [])
