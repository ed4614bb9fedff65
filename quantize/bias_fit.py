"""The int32 accumulator of every op with int8 weights and an int32 bias (Conv2D, DepthwiseConv2D,
FullyConnected, TransposeConv: the ops whose OpDef declares `weight_out_axis`) must hold the bias plus
the worst-case sum of products, else it wraps in C (and in our interpreter, which then agrees with the
board on a wrong answer).

Bound per output channel c (TFLite int8 spec arithmetic, weights symmetric):
    |bias_q[c]| + sum |w_q[c, ...]| * max |x_q - x_zp|  <=  2^31 - 1
For TransposeConv the sum over the whole filter is an upper bound of the taps one output reads.

- `fit_bias` (quantizing a float bias, the only place that makes int32 biases from real values):
  a channel whose bound fails gets a larger weight scale, its weights re-quantized with it, as the
  TFLite converter does (tensorflow/lite/tools/optimize/quantization_utils.cc AdjustWeightsForBiasScale,
  which aims at half the int32 range); per-tensor weights raise their single scale.
- `accumulator_risks` (a model's own int32 bias, .tflite or QDQ): the bound is only checked; the model
  is kept and each failing op is reported.
Not here: the weight and bias rules themselves (toolchain.ops.common quantize_weights / quantize_bias).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.errors import UnsupportedModel
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.notes import NOTES_KEY, OVERFLOW_RISK, note_subject
from toolchain.ops.registry import opdef

INT32_MAX = 2**31 - 1
# A raised scale aims the bound at half the int32 range (the TFLite converter's headroom): the rounding of
# each weight (up to 1/2 LSB per weight) and of the bias then cannot push it past 2^31 - 1.
TARGET = 2.0**30


def _where(graph: Graph, node: Node) -> str:
    return f"{graph.meta.get('source', graph.name)}: {note_subject(node)}"


def max_input_step(x: Tensor) -> int:
    """max |x_q - zp| over the input's integer range (int8: max(127 - zp, zp + 128))."""
    info = np.iinfo(x.dtype.np)
    return max(int(info.max) - x.quant.zp, x.quant.zp - int(info.min))


def _channel_sums(w: np.ndarray, axis: int) -> np.ndarray:
    """sum |w| per output channel [C]: int64 for integer weights (|-128| needs more than int8), else float64."""
    a = np.asarray(w)
    a = a.astype(np.int64 if a.dtype.kind in "iu" else np.float64)
    return np.abs(np.moveaxis(a, axis, 0)).reshape(a.shape[axis], -1).sum(axis=1)


def accumulator_bound(w_q: np.ndarray, bias_q: np.ndarray, axis: int, step: int) -> np.ndarray:
    """|bias_q[c]| + sum |w_q[c]| * step per output channel, exact (Python ints in an object array
    would be slower; float64 is exact here: every term is below 2^53 for any int32 bias and a filter
    of fewer than 2^37 weights)."""
    b = np.abs(np.asarray(bias_q, np.float64).reshape(-1))
    return b + _channel_sums(w_q, axis).astype(np.float64) * step


def _weighted(node: Node, graph: Graph) -> tuple[int, Tensor, Tensor, Tensor] | None:
    """(out axis, input, int8 weights, int32 bias) of a weighted op, else None."""
    axis = opdef(node).weight_out_axis
    if axis is None or len(node.inputs) < 3 or not node.inputs[2]:
        return None
    x, w, b = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.inputs[2])
    if not (w.is_const and b.is_const and w.dtype == DType.INT8 and b.dtype == DType.INT32 and x.quant is not None):
        return None
    return axis, x, w, b


def _f32_scale_at_least(s: np.ndarray) -> np.ndarray:
    """float32 scales (as a .tflite file stores them) no smaller than `s`."""
    f = s.astype(np.float32)
    return np.where(f.astype(np.float64) < s, np.nextafter(f, np.float32(np.inf)), f).astype(np.float64)


def _quantize_channels(w_f: np.ndarray, scale: np.ndarray, axis: int) -> np.ndarray:
    shape = [1] * w_f.ndim
    shape[axis] = -1
    return np.clip(np.round(w_f / scale.reshape(shape)), -127, 127).astype(np.int8)


def fit_bias(node: Node, graph: Graph, graph_f32: Graph) -> Graph:
    """`graph` (being quantized) with node's int32 bias (scale in_scale * w_scale[c], TFLite int8 spec)
    re-made from the real bias (graph_f32's, [C] float) and, where the accumulator bound fails, the weight
    scale raised and the weights re-quantized from the real weights (graph_f32's, the same shape as the
    int8 ones). Per-channel weights raise only the failing channels; per-tensor weights their one scale.
    A note per refitted op goes to graph.meta[NOTES_KEY]. Raises UnsupportedModel naming the node when
    no float32 scale can fit (a bias beyond ~1e38 * input scale). No-op for other ops."""
    found = _weighted(node, graph)
    if found is None:
        return graph
    axis, x, w, b = found
    w_f, b_f = graph_f32.t(w.name).data, graph_f32.t(b.name).data
    in_scale, step, c = x.quant.s, max_input_step(x), w.shape[axis]
    per_channel = w.quant.is_per_channel
    w_f = np.asarray(w_f, np.float64)
    real_b = np.broadcast_to(np.asarray(b_f, np.float64).reshape(-1), (c,))
    scale = np.broadcast_to(np.asarray(w.quant.scale, np.float64), (c,)).copy()
    w_q = w.data
    with np.errstate(over="ignore"):
        bias_q = np.round(real_b / (in_scale * scale))
        bad = accumulator_bound(w_q, bias_q, axis, step) > INT32_MAX
        if not bad.any():
            return graph
        need = (np.abs(real_b) / in_scale + _channel_sums(w_f, axis) * step) / TARGET
    need = np.maximum(need, scale)
    new = np.where(bad, need, scale) if per_channel else np.full(c, max(need[bad].max(), scale[0]))
    for _ in range(64):  # the first try fits but for pathological rounding; each retry doubles the scale
        with np.errstate(over="ignore"):
            new = _f32_scale_at_least(new)
        if not np.isfinite(new).all():
            raise UnsupportedModel(f"{_where(graph, node)}: the bias cannot be held in int32 with any float32 weight "
                                   f"scale (|bias| up to {np.abs(real_b).max():.3g}, input scale {in_scale:.3g})")
        # only the raised channels are re-quantized: the others keep their integers (a model's -128 included)
        raised = np.broadcast_to((new != scale).reshape([-1 if i == axis else 1 for i in range(w.data.ndim)]),
                                 w.data.shape)
        w_q = np.where(raised, _quantize_channels(w_f, new, axis), w.data).astype(np.int8)
        bias_q = np.round(real_b / (in_scale * new))
        over = accumulator_bound(w_q, bias_q, axis, step) > INT32_MAX
        if not over.any():
            break
        new = np.where(over, new * 2, new) if per_channel else new * 2
    else:
        raise UnsupportedModel(f"{_where(graph, node)}: no weight scale makes the int32 bias and accumulator fit")
    qp = QuantParams(tuple(float(s) for s in new), (0,) * c, axis) if per_channel else \
        QuantParams.per_tensor(float(new[0]), 0)
    graph = graph.with_tensor(Tensor(w.name, w.shape, DType.INT8, qp, w_q))
    bias_scale = in_scale * new
    graph = graph.with_tensor(Tensor(b.name, b.shape, DType.INT32, QuantParams(tuple(float(s) for s in bias_scale),
                                                                               (0,) * c, 0),
                                     bias_q.astype(np.int32).reshape(b.shape)))
    raised = int(np.count_nonzero(new > scale))
    what = f"{raised} of {c} channel(s)" if per_channel else "its per-tensor"
    line = (f"{_where(graph, node)}: weight scale of {what} raised so the int32 bias and accumulator fit "
            f"(|bias| + sum|w|*{step} < 2^31; TFLite converter rule)")
    return replace(graph, meta={**graph.meta, NOTES_KEY: (*graph.meta.get(NOTES_KEY, ()), line)})


def accumulator_risks(graph: Graph) -> list[str]:
    """One line per weighted op of an int8 graph whose worst-case int32 accumulator (bound above) can
    overflow: kept as the model has it (its own int32 bias: a .tflite or QDQ model), only reported."""
    lines = []
    for node in graph.nodes:
        found = _weighted(node, graph)
        if found is None:
            continue
        axis, x, w, b = found
        zp = w.quant.zero_point[0]  # weights may have one zero point for all channels (filter_offset)
        bound = accumulator_bound(w.data.astype(np.int64) - zp, b.data, axis, max_input_step(x))
        bad = np.flatnonzero(bound > INT32_MAX)
        if bad.size:
            lines.append(f"{_where(graph, node)}: {OVERFLOW_RISK} in {bad.size} of {bound.size} "
                         f"channel(s) (bias + worst-case sum up to {bound.max():.3g} > 2^31 - 1); the model's own "
                         "bias is kept: outputs may wrap")
    return lines
