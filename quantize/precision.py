"""Mixed precision of a float graph's activations: which ops compute in 16x8 (int16 activations, int8
weights, int64 biases: TFLite's 16x8 quantization spec as TFLM's reference kernels compute it) and
which stay int8, and the graph rewrite that joins them.

- `s16_capable(node, graph)`: the op has a 16x8 kernel (a KernelVariant of dtype "s16", e.g.
  registry.portable_s16, accepting the node) and an int16 reference (OpDef.reference_s16). Views
  (Reshape) are not ops of either kind: their output takes their input's type.
- `with_boundaries(graph, int16_nodes, int16_inputs)`: the float graph with a REQUANTIZE node on every
  edge between an int8 and an int16 activation (toolchain/ops/quantize_ops.py Requantize: TFLM
  reference_ops::Requantize, int8 <-> int16 bit for bit), and the set of activations that are int16.
  The REQUANTIZE's float semantics are the identity, so the result is still the same float graph.
- `int16_qparams(lo, hi)`: per-tensor symmetric int16, zero point 0, scale max(|lo|, |hi|) / 32767 as
  float32 (TFLite 16x8 spec; the TFLite converter's rule).
- `make_bias64(node, graph, graph_f32)` / `check_s16(node, graph)`: the int64 bias
  round(b / (s_x * s_w[c])) (a channel's weight scale raised where the bias would pass 2^46) and TFLM's
  assumptions (quant16.py: |accumulator| < 2^47, shift <= 7); a node that breaks them raises
  Int16Unfit, and `quantize_int16` keeps it in int8.
- `int16_inputs(...)`: which graph inputs are int16 (see the function; the graph I/O rule).

Graph outputs are int16 when the op writing them computes in int16 (the host dequantizes them with
their scale, as int8 outputs: OUT/lib/model.h gives scale and zero point for both).
Not here: the ranges (quantize.calibrate), the automatic choice (quantize.precision_search).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

import numpy as np

from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.notes import NOTES_KEY, note_subject
from toolchain.ops.quant16 import ACC_LIMIT, accumulator_bound, weighted_requant_s16
from toolchain.ops.quantize_ops import QuantizeAttrs
from toolchain.ops.registry import OpDef, OpKind, opdef

PRECISIONS = ("int8", "int16", "auto")
META = "precision"  # graph.meta key of the quantized graph: {"mode", "int16_ops", ...} (report.json precision)


class Int16Unfit(ValueError):
    """A node chosen for 16x8 whose parameters break TFLM's int16 assumptions (`node`: the Node)."""

    def __init__(self, node: Node, reason: str) -> None:
        super().__init__(f"{note_subject(node)}: {reason}")
        self.node, self.reason = node, reason


def int16_qparams(lo: float, hi: float) -> QuantParams:
    """Symmetric per-tensor int16 parameters for the real range [lo, hi]: zero point 0, scale
    float32(max(|lo|, |hi|) / 32767); scale 1.0 for an all-zero range (0 is exact with any scale)."""
    top = max(abs(float(lo)), abs(float(hi)))
    return QuantParams.per_tensor(float(np.float32(top / 32767.0)) if top > 0 else 1.0, 0)


def _probe(node: Node, graph: Graph) -> Graph:
    """`graph` with the node's activations typed int16 (scale 1/32767, zero point 0): what its 16x8
    kernel variants would see."""
    qp = QuantParams.per_tensor(1.0 / 32767.0, 0)
    g = graph
    for name in (*node.inputs, *node.outputs):
        if name and not graph.t(name).is_const:
            g = g.with_tensor(replace(graph.t(name), dtype=DType.INT16, quant=qp))
    return g


def s16_capable(node: Node, graph: Graph) -> bool:
    """Whether `node` (of the float graph) can compute in 16x8: not a view, an int16 reference, only
    activation inputs besides the weights and bias of a weighted op (a constant operand of an Add
    would need an int16 constant), and a kernel variant of dtype "s16" that accepts the node."""
    op = opdef(node)
    if op.is_view or type(op).reference_s16 is OpDef.reference_s16:
        return False
    own = (1, 2) if op.weight_out_axis is not None else ()
    if any(name and graph.t(name).is_const for k, name in enumerate(node.inputs) if k not in own):
        return False
    probe = _probe(node, graph)
    try:
        return any(v.dtype == "s16" and v.applies(node, probe) for v in op.variants)
    except Exception:  # noqa: BLE001 - a predicate that needs what a float graph lacks: not known to fit
        return False


def capable_nodes(graph: Graph) -> list[str]:
    """Names of the nodes of `graph` that s16_capable accepts, in graph order."""
    return [n.name for n in graph.nodes if s16_capable(n, graph)]


def int16_inputs(graph: Graph, int16_nodes: Collection[str], exact8: Callable[[str], bool]) -> frozenset[str]:
    """The graph inputs to quantize as int16: those whose every reader (through views) computes in
    16x8, unless `exact8(name)` says the input's data are exact on its int8 grid (8-bit data such as
    raw or once-scaled pixels: int16 would add 2 bytes per value and nothing else; its readers then take
    it through a REQUANTIZE to int16)."""
    out = set()
    for name in graph.inputs:
        readers = _readers(graph, name)
        if readers and all(r in int16_nodes for r in readers) and not exact8(name):
            out.add(name)
    return frozenset(out)


def _readers(graph: Graph, name: str) -> list[str]:
    """The non-view nodes that read tensor `name`, looking through views (Reshape)."""
    out = []
    for n in graph.consumers(name):
        out.extend(_readers(graph, n.outputs[0]) if opdef(n).is_view else [n.name])
    return out


def neighbours(graph: Graph, node_name: str) -> tuple[list[str], list[str]]:
    """(producers, readers) of node `node_name`: the non-view nodes writing its activation inputs and
    those reading its output, looking through views (Reshape). A move of the node to 16x8 takes them
    along where they can follow (quantize.precision_search)."""
    node = next(n for n in graph.nodes if n.name == node_name)
    producers = []
    for name in node.inputs:
        while name and not graph.t(name).is_const and (p := graph.producer(name)) is not None and opdef(p).is_view:
            name = p.inputs[0]
        p = graph.producer(name) if name else None
        if p is not None and p.name not in producers:
            producers.append(p.name)
    return producers, _readers(graph, node.outputs[0])


def with_boundaries(graph: Graph, int16_nodes: Collection[str],
                    int16_in: Collection[str] = ()) -> tuple[Graph, frozenset[str], dict[str, str]]:
    """(float graph with REQUANTIZE nodes at every int8 <-> int16 edge, the int16 activations, new
    tensor -> the tensor it requantizes). `int16_nodes`: node names computing in 16x8 (views follow
    their input); `int16_in`: graph inputs that are int16. One REQUANTIZE per tensor and direction,
    placed just before its first reader; its tensor is named `<tensor>__s16` / `<tensor>__s8`."""
    wide = {n for n in graph.inputs if n in int16_in}
    conv: dict[tuple[str, bool], str] = {}
    source: dict[str, str] = {}
    tensors = dict(graph.tensors)
    nodes: list[Node] = []
    for node in graph.nodes:
        if opdef(node).is_view:
            if node.inputs[0] in wide:
                wide.update(node.outputs)
            nodes.append(node)
            continue
        want16 = node.name in int16_nodes
        inputs = []
        for name in node.inputs:
            if not name or tensors[name].is_const or (name in wide) == want16:
                inputs.append(name)
                continue
            key = (name, want16)
            if key not in conv:
                new = fresh_name(tensors, f"{name}__{'s16' if want16 else 's8'}")
                tensors[new] = replace(tensors[name], name=new)
                conv[key], source[new] = new, name
                nodes.append(Node(fresh_name({n.name for n in graph.nodes} | {n.name for n in nodes},
                                             f"{node.name}__requantize"),
                                  OpKind.REQUANTIZE, (name,), (new,), QuantizeAttrs(), node.source))
                if want16:
                    wide.add(new)
            inputs.append(conv[key])
        nodes.append(replace(node, inputs=tuple(inputs)))
        if want16:
            wide.update(node.outputs)
    return graph.with_nodes(nodes, tensors), frozenset(wide), source


BIAS64_LIMIT = 2.0**46  # |int64 bias| allowed: half of TFLM's 2^47 accumulator bound leaves the products room


def make_bias64(node: Node, graph: Graph, graph_f32: Graph) -> Graph:
    """`graph` with the node's bias (inputs[2], scale s_x * s_w[c]) made int64 from the real bias of
    graph_f32: round(b / (s_x * s_w[c])) (the 16x8 spec; TFLM's int16 conv, depthwise and FC kernels add
    an int64 bias to an int64 accumulator). A channel whose bias would pass BIAS64_LIMIT (a channel that
    BatchNorm folding left with tiny weights and a large bias) gets the weight scale that brings it to the
    limit and its weights re-quantized from graph_f32's, as quantize.bias_fit does for int32 biases; a
    note per such op goes to graph.meta[NOTES_KEY]. No-op for ops without weights."""
    axis = opdef(node).weight_out_axis
    if axis is None or len(node.inputs) < 3 or not node.inputs[2]:
        return graph
    b, x, w = graph.t(node.inputs[2]), graph.t(node.inputs[0]), graph.t(node.inputs[1])
    real = np.asarray(graph_f32.t(b.name).data, np.float64).reshape(-1)
    w_scale = np.broadcast_to(np.asarray(w.quant.scale, np.float64), real.shape).copy()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        need = np.abs(real) / (x.quant.s * BIAS64_LIMIT)
    over = need > w_scale
    if over.any():  # raise those channels' scales (float32, not below `need`) and re-quantize their weights
        f32 = need.astype(np.float32)
        f32 = np.where(f32.astype(np.float64) < need, np.nextafter(f32, np.float32(np.inf)), f32).astype(np.float64)
        if not np.all(np.isfinite(f32[over])):
            raise Int16Unfit(node, "bias too large for any float32 weight scale")
        w_scale = np.where(over, f32, w_scale)
        shape = [-1 if i == axis else 1 for i in range(w.data.ndim)]
        w_f = np.asarray(graph_f32.t(w.name).data, np.float64)
        w_q = np.where(over.reshape(shape), np.clip(np.round(w_f / w_scale.reshape(shape)), -127, 127), w.data)
        qp = QuantParams(tuple(float(v) for v in w_scale), (0,) * len(w_scale), axis)
        graph = graph.with_tensor(Tensor(w.name, w.shape, DType.INT8, qp, w_q.astype(np.int8)))
        line = (f"{graph.meta.get('source', graph.name)}: {note_subject(node)}: weight scale of {int(over.sum())} of "
                f"{len(over)} channel(s) raised so the int64 bias fits TFLM's 16x8 accumulator (|bias| < 2^46)")
        graph = replace(graph, meta={**graph.meta, NOTES_KEY: (*graph.meta.get(NOTES_KEY, ()), line)})
    scale = w_scale * x.quant.s
    q = np.round(real / scale)
    qp = QuantParams(tuple(float(v) for v in scale), (0,) * len(scale), 0)
    return graph.with_tensor(Tensor(b.name, b.shape, DType.INT64, qp, q.astype(np.int64).reshape(b.shape)))


def check_s16(node: Node, graph: Graph) -> None:
    """Int16Unfit when a quantized 16x8 weighted node breaks TFLM's assumptions: its worst-case
    accumulator (taps * 127 * 32768 + |bias|) reaches 2^47, or a requantization shift exceeds 7
    (a real multiplier s_x * s_w / s_y of 2^7 or more). Other ops: nothing to check."""
    axis = opdef(node).weight_out_axis
    if axis is None or graph.t(node.outputs[0]).dtype != DType.INT16:
        return
    w = graph.t(node.inputs[1])
    if accumulator_bound(node, graph, w.size // w.shape[axis]) >= ACC_LIMIT:
        raise Int16Unfit(node, "int16 accumulators may reach 2^47 (TFLM's int16 kernels assume less)")
    try:
        weighted_requant_s16(node, graph, axis)
    except ValueError as e:
        raise Int16Unfit(node, str(e)) from None


def int16_ops(graph: Graph) -> list[str]:
    """Names of the layers of a quantized graph computing in 16x8: non-view ops with an int16 output,
    REQUANTIZE nodes left out."""
    return [n.name for n in graph.nodes if not opdef(n).is_view and n.op != OpKind.REQUANTIZE
            and graph.t(n.outputs[0]).dtype == DType.INT16]


def precision_meta(graph: Graph, mode: str, **extra) -> dict:
    """graph.meta[META] of a quantized graph: mode (int8 / int16 / auto), int16_ops (int16_ops()),
    requantize_ops (REQUANTIZE nodes between int8 and int16), io_dtypes (graph input and output name ->
    dtype) and `extra` (the automatic choice's record, quantize.precision_search)."""
    rq = sum(1 for n in graph.nodes if n.op == OpKind.REQUANTIZE
             and DType.INT16 in (graph.t(n.inputs[0]).dtype, graph.t(n.outputs[0]).dtype))
    io = {name: graph.t(name).dtype.value for name in (*graph.inputs, *graph.outputs)}
    return {"mode": mode, "int16_ops": int16_ops(graph), "requantize_ops": rq, "io_dtypes": io, **extra}


def exact_on_grid(values: np.ndarray, qp: QuantParams) -> bool:
    """Whether every value is (to float32 rounding) a point of the int8 grid `qp`."""
    v = np.asarray(values, np.float64)
    back = qp.dequantize(qp.quantize(v)).astype(np.float64)
    return bool(np.all(np.abs(back - v) <= 1e-5 * qp.s + 1e-6 * np.abs(v)))


def ranges_for(ranges: Mapping[str, tuple[float, float]], source: Mapping[str, str]) -> dict:
    """`ranges` with an entry for every REQUANTIZE tensor of with_boundaries: its source's range."""
    return {**ranges, **{new: ranges[src] for new, src in source.items() if src in ranges}}
