"""Pieces shared by several op modules: window geometry, fused activations, the weight and
bias quantization rules of the TFLite int8 spec, and a float NHWC convolution.

Op-specific semantics stay in the op modules; this file holds only what two or more share.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from toolchain.ir import DType, Graph, Node, QuantParams, Tensor

NO_ACT = (-math.inf, math.inf)


@dataclass(frozen=True)
class Window:
    """A 2-D sliding window: kernel (kh, kw), stride, dilation, pads (top, left, bottom, right)."""

    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    ceil_mode: bool = False

    def out_hw(self, in_h: int, in_w: int) -> tuple[int, int]:
        """Output height and width (ONNX Conv/Pool rule; with ceil_mode a window starting in the
        end padding is dropped, ONNX PR 5741)."""
        res = []
        for i, size in enumerate((in_h, in_w)):
            eff = (self.kernel[i] - 1) * self.dilation[i] + 1
            span = size + self.pads[i] + self.pads[i + 2] - eff
            if self.ceil_mode:
                out = -(-span // self.stride[i]) + 1
                if (out - 1) * self.stride[i] >= size + self.pads[i]:
                    out -= 1
            else:
                out = span // self.stride[i] + 1
            if out <= 0:
                raise ValueError(f"window {self.kernel} does not fit input {in_h}x{in_w}")
            res.append(out)
        return res[0], res[1]


def same_pads(in_size: int, kernel: int, stride: int, dilation: int, upper: bool = True) -> tuple[int, int]:
    """(before, after) padding of TF SAME / ONNX SAME_UPPER (extra at the end) or SAME_LOWER."""
    eff = (kernel - 1) * dilation + 1
    total = max((-(-in_size // stride) - 1) * stride + eff - in_size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def apply_act_f32(y: np.ndarray, act: tuple[float, float]) -> np.ndarray:
    """Clamp a float tensor to a fused activation's range."""
    return np.clip(y, act[0], act[1]) if act != NO_ACT else y


def act_range_s8(act: tuple[float, float], q: QuantParams) -> tuple[int, int]:
    """int8 clamp bounds of a fused activation (TFLite CalculateActivationRangeQuantized)."""
    from toolchain.ops.fixed_point import activation_range

    return activation_range(act, q.s, q.zp)


def conv_f32(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, win: Window, groups: int) -> np.ndarray:
    """Float convolution, NHWC input, OHWI weights (I = Cin / groups) -> NHWC output (ONNX Conv-11
    semantics after layout change)."""
    n, h, wd, cin = x.shape
    cout, kh, kw, gin = w.shape
    oh, ow = win.out_hw(h, wd)
    if (kh, kw, *win.stride) == (1, 1, 1, 1) and win.pads == (0, 0, 0, 0) and not gin == cout // groups == 1:
        return _pointwise_f32(x, w, b, groups)
    pt, pl, pb, pr = win.pads
    xp = np.zeros((n, pt + h + pb, pl + wd + pr, cin), np.float64)  # (np.pad is slower: calibration calls this a lot)
    xp[:, pt:pt + h, pl:pl + wd, :] = x
    gout = cout // groups
    y = np.zeros((n, oh, ow, cout), np.float64)
    sh, sw = win.stride
    dh, dw = win.dilation
    depthwise = gin == 1 and gout == 1
    if depthwise:
        w64, prod = w[:, :, :, 0].astype(np.float64), np.empty_like(y)
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
            if depthwise:  # one channel per group, no matmul needed; products exact in float64
                y += np.multiply(tap, w64[:, ky, kx], out=prod)
                continue
            for g in range(groups):
                xs = tap[..., g * gin:(g + 1) * gin]
                ws = w[g * gout:(g + 1) * gout, ky, kx, :].astype(np.float64)
                y[..., g * gout:(g + 1) * gout] += xs @ ws.T
    if b is not None:
        y += b
    return y.astype(np.float32)


def _pointwise_f32(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, groups: int) -> np.ndarray:
    """conv_f32 of a 1x1, stride 1, unpadded convolution, the same float32 values: one product per
    sample and group over all its pixels ([H*W, Cin/G] x [Cin/G, Cout/G], whatever N: stacked samples
    run the same products) instead of one per output row (4x fewer seconds on VWW's 6x6x128 layers)."""
    n, h, wd, cin = x.shape
    cout, gin = w.shape[0], w.shape[3]
    gout = cout // groups
    xs = x.reshape(n, h * wd, cin).astype(np.float64)
    if groups == 1:
        y = np.matmul(xs, w[:, 0, 0, :].astype(np.float64).T)
    else:  # (each group's product into a fresh array, as BLAS writes it; then copied into its channels)
        y = np.empty((n, h * wd, cout), np.float64)
        for g in range(groups):
            ws = w[g * gout:(g + 1) * gout, 0, 0, :].astype(np.float64)
            y[..., g * gout:(g + 1) * gout] = xs[..., g * gin:(g + 1) * gin] @ ws.T
    y += 0.0  # as conv_f32's zero accumulator: a -0.0 sum would become 0.0 (BLAS starts from +0.0 anyway)
    if b is not None:
        y += b
    return y.reshape(n, h, wd, cout).astype(np.float32)


def quantize_weights(graph: Graph, name: str, axis: int) -> Graph:
    """Symmetric per-channel int8 weights in [-127, 127] along `axis` (TFLite int8 spec).
    A channel that is all zero gets scale 1.0 so no multiplier or bias scale is 0 or inf (BL-18)."""
    t = graph.t(name)
    w = t.data.astype(np.float64)
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.max(np.abs(w), axis=red)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32).astype(np.float64)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    qp = QuantParams(tuple(float(s) for s in scale), (0,) * len(scale), axis)
    return graph.with_tensor(Tensor(name, t.shape, DType.INT8, qp, q))


def quantize_bias(graph: Graph, name: str, in_scale: float, w_scale: tuple[float, ...]) -> Graph:
    """int32 bias with scale in_scale * w_scale[c], zero point 0 (TFLite int8 spec). The clip is a
    last resort never reached through quantize(): quantize.bias_fit raises the weight scale of a channel
    whose bias (plus worst-case accumulator) would not fit int32, then re-makes this bias."""
    t = graph.t(name)
    scale = np.asarray(w_scale, np.float64) * in_scale
    q = np.clip(np.round(t.data.astype(np.float64) / scale), -(2**31), 2**31 - 1).astype(np.int32)
    qp = QuantParams(tuple(float(s) for s in scale), (0,) * len(scale), 0)
    return graph.with_tensor(Tensor(name, t.shape, DType.INT32, qp, q))


def requant_arrays(in_scale: float, w_scale: tuple[float, ...], out_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multiplier, shift) int32 arrays for real = in_scale * w_scale[c] / out_scale.
    Python floats (as QuantParams holds them) hit a cache, whose arrays are read-only: the
    interpreter asks for a node's arrays on every run."""
    if type(in_scale) is float and type(out_scale) is float and type(w_scale) is tuple \
            and all(type(v) is float for v in w_scale):  # (numpy scalars would compute in their own type)
        return _cached_requant_arrays(in_scale, w_scale, out_scale)
    return _requant_arrays(in_scale, w_scale, out_scale)


def _requant_arrays(in_scale, w_scale, out_scale) -> tuple[np.ndarray, np.ndarray]:
    from toolchain.ops.fixed_point import quantize_multiplier

    pairs = [quantize_multiplier(in_scale * ws / out_scale) for ws in w_scale]
    return np.array([p[0] for p in pairs], np.int32), np.array([p[1] for p in pairs], np.int32)


@lru_cache(maxsize=4096)
def _cached_requant_arrays(in_scale: float, w_scale: tuple[float, ...],
                           out_scale: float) -> tuple[np.ndarray, np.ndarray]:
    mult, shift = _requant_arrays(in_scale, w_scale, out_scale)
    mult.flags.writeable = shift.flags.writeable = False
    return mult, shift


def const_qparams(data: np.ndarray) -> QuantParams:
    """Per-tensor asymmetric int8 qparams of a constant operand (not a weight): its range widened
    to include 0, scale = range / 255 as float32 (the activation rule of the TFLite int8 spec)."""
    lo, hi = min(float(np.min(data)), 0.0), max(float(np.max(data)), 0.0)
    if hi - lo < 1e-12:
        return QuantParams.per_tensor(1.0, 0)
    scale = float(np.float32((hi - lo) / 255.0))
    return QuantParams.per_tensor(scale, int(np.clip(np.round(-128 - lo / scale), -128, 127)))


def quantize_operand(graph: Graph, name: str, qp: QuantParams | None = None) -> Graph:
    """A float constant operand of an element-wise op -> int8 with `qp` (default const_qparams)."""
    t = graph.t(name)
    qp = qp or const_qparams(t.data)
    return graph.with_tensor(Tensor(name, t.shape, DType.INT8, qp, qp.quantize(t.data)))


def quantize_constant_operands(node: Node, graph: Graph, qp: QuantParams | None = None) -> Graph:
    """quantize_operand on each still-float constant among the first two inputs of an element-wise
    node (Add, Sub, Mul, Maximum, ...): int8 with its own qparams (TFLite), or `qp` when given."""
    for name in node.inputs[:2]:
        if graph.t(name).is_const and graph.t(name).quant is None:
            graph = quantize_operand(graph, name, qp)
    return graph


def filter_offset(node: Node, graph: Graph) -> int:
    """-(weight zero point) of a node's int8 weights (input 1): non-zero only for weights with one
    zero point for all channels (TFLite FULLY_CONNECTED allows one; onnxruntime's uint8 weights), which
    the portable Conv2D / DepthwiseConv2D / FullyConnected kernels take as TFLM's `filter_offset`:
    acc = sum (x + input_offset) * (w + filter_offset) + bias. ValueError for per-channel zero points
    that differ (quantize.given refuses them)."""
    q = graph.t(node.inputs[1]).quant
    if q is None:
        return 0
    if len(set(q.zero_point)) != 1:
        raise ValueError(f"weights {node.inputs[1]!r} with different zero points per channel")
    return -int(q.zero_point[0])


def weight_zero_point_reason(node: Node, graph: Graph) -> str | None:
    """OpDef.isa_why_not of the weighted ops: the ISA kernels fold only the input zero point, so
    weights with a zero point run the portable kernels (which take filter_offset)."""
    off = filter_offset(node, graph)
    return f"weights have a zero point ({-off})" if off else None


def weighted_requant(node: Node, graph: Graph, out_axis: int) -> dict:
    """The requantization kwargs shared by Conv2D, DepthwiseConv2D and FullyConnected: offsets,
    per-output-channel (multiplier, shift) and the fused activation's int8 clamp. A per-tensor
    weight scale (TFLite files may have one) is broadcast over the output channels (weight axis
    `out_axis`) as TFLM PopulateConvolutionQuantizationParams does; the kernels read out_mult[oc].
    The real multiplier is double(s_in) * double(s_w) / double(s_out), also for FC: see
    fully_connected.py for why that matches the TFLM oracle build. Under rounding "onnx" it is
    onnxruntime's float32 fl32(fl32(s_in * s_w) / s_out) (fixed_point.requantize_s8_f32).

    out_mult: int32 [Cout] (Q31); out_shift: int8 [Cout] in [-31, 31] (the kernels read it as
    int8_t, a quarter of the flash of int32). quantize_multiplier gives shifts >= -31; a shift
    above 31 (a real multiplier >= 2^31) is stored as 31, which changes no int8 output in either
    rounding mode: with shift >= 31 and mult >= 2^30 any non-zero accumulator requantizes to at
    least 2^30 in magnitude (or saturates), far outside [-128, 127], so it clamps to the same bound."""
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    w_scale = w.quant.scale * (w.shape[out_axis] if len(w.quant.scale) == 1 else 1)
    from toolchain.ops.fixed_point import graph_rounding

    if graph_rounding(graph) == "onnx":
        # onnxruntime's QLinearConv / QLinearMatMul / QGemm scale, float32 at each step; its
        # quantize_multiplier is exact, so f32_scale gives it back to the kernels bit for bit.
        f = np.float32
        w_scale = tuple(float(f(f(x.quant.s) * f(ws)) / f(y.quant.s)) for ws in w_scale)
        mult, shift = requant_arrays(1.0, w_scale, 1.0)
    else:
        mult, shift = requant_arrays(x.quant.s, w_scale, y.quant.s)
    lo, hi = act_range_s8(node.attrs.act, y.quant)
    return dict(input_offset=-x.quant.zp, output_offset=y.quant.zp, out_mult=mult,
                out_shift=np.minimum(shift, 31).astype(np.int8), act_min=lo, act_max=hi)
