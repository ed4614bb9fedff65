"""Empirical bias correction: shift each output channel's bias by the mean quantization error of
that channel, observed on the calibration data (Nagel et al. 2019, "Data-Free Quantization Through
Weight Equalization and Bias Correction", ICCV, section 4.2, its empirical variant; Banner et al.
2019, "Post training 4-bit quantization of convolutional networks for rapid-deployment").

For every op with int8 weights and a float bias (Conv2D, DepthwiseConv2D, FullyConnected,
TransposeConv: OpDef.weight_out_axis), in graph order:

    err[c] = mean over samples and positions of (y_q[..., c] - y_f[..., c])
    y_q = the op without its fused activation on the int8 graph's dequantized input and weights
    y_f = the same on the float graph's input and weights

and bias[c] -= err[c]. The int8 graph is walked in order with each corrected bias already in
place, so a layer's correction sees its inputs as the corrected int8 graph makes them (upstream
errors included, not counted twice). Pre-activation, because the kernel's fused ReLU clips the
shifted value as it clips the float one. Deterministic: plain means, no sampling.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from toolchain.blas import one_blas_thread
from toolchain.data import quantize_inputs
from toolchain.interpret import stack_size
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ops.common import NO_ACT, apply_act_f32
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import opdef


BIAS_TYPES = (DType.INT32, DType.INT64)  # int8 ops' biases; 16x8 ops' (quantize.precision)


def correctable(node: Node, graph: Graph) -> bool:
    """True for an op with a weight operand and a constant float bias (inputs[2])."""
    return (opdef(node).weight_out_axis is not None and len(node.inputs) > 2 and bool(node.inputs[2])
            and graph.t(node.inputs[2]).is_const and graph.t(node.inputs[2]).dtype == DType.FLOAT32)


def _pre_activation(node: Node) -> Node:
    return replace(node, attrs=replace(node.attrs, act=NO_ACT)) if hasattr(node.attrs, "act") else node


def _deq(t: Tensor, v: np.ndarray) -> np.ndarray:
    return t.quant.dequantize(v).astype(np.float32) if t.quant is not None and t.dtype != DType.FLOAT32 else v


def channel_errors(node: Node, fgraph: Graph, qgraph: Graph, xs_f: list[list[np.ndarray]],
                   xs_q: list[list[np.ndarray]], stacked: bool = False,
                   pre_f: list[np.ndarray] | None = None) -> np.ndarray:
    """Mean pre-activation error per output channel (last axis, NHWC / [N, C]) of `node` over the
    samples: xs_f[s] / xs_q[s] are the node's operand values (None for constants) in the float and the
    int8 graph, one sample each; with `stacked`, each holds several samples on axis 0 (interpret_chunks'
    form), whose sums are taken sample by sample, in order, as for single samples. pre_f[s]: the float
    graph's pre-activation output for xs_f[s] when the caller has it (pre_float). Returns float64 [Cout]."""
    pre = _pre_activation(node)
    op = opdef(node)
    total, count = None, 0
    for u, (xf, xq) in enumerate(zip(xs_f, xs_q, strict=True)):
        ins_f = [fgraph.t(i).data if fgraph.t(i).is_const else v for i, v in zip(node.inputs, xf, strict=True)]
        ins_q = [_deq(qgraph.t(i), qgraph.t(i).data if qgraph.t(i).is_const else v) if i else None
                 for i, v in zip(node.inputs, xq, strict=True)]
        ins_q[2] = ins_f[2]  # the float bias: the error measured is that of the weights and inputs
        y_f = pre_f[u] if pre_f is not None else pre_float(node, fgraph, ins_f)
        d = op.reference_f32(pre, qgraph, ins_q)[0].astype(np.float64) - y_f
        for one in (d if stacked else [d]):
            one = one.reshape(-1, one.shape[-1])
            total = one.sum(axis=0) if total is None else total + one.sum(axis=0)
            count += one.shape[0]
    return total / max(count, 1)


def pre_float(node: Node, graph: Graph, ins: list[np.ndarray]) -> np.ndarray:
    """The float output of a correctable node before its fused activation; the node's own output is
    apply_act_f32 of it (how the weighted ops' reference_f32 end: tests/unit/test_calibration_methods.py)."""
    return opdef(node).reference_f32(_pre_activation(node), graph, ins)[0]


def correct_bias(fgraph: Graph, qgraph: Graph, calibration: Mapping[str, np.ndarray]) -> Graph:
    """The float graph `fgraph` with every correctable bias shifted by the mean channel error of
    `qgraph` (its quantized twin, quantize.quantize_ranges of fgraph, node for node: int8, or mixed
    with 16x8 nodes and int64 biases when fgraph has its REQUANTIZE nodes, precision.with_boundaries)
    on `calibration` (name -> [S, *shape] float32). Re-quantize the result with the same ranges to get
    the corrected graph. Raises ValueError when the calibration inputs do not fit the graph.

    The references run on several samples at a time where both graphs stack them (interpret.stack_size:
    never through a 16x8 node), one at a time otherwise; every sample's values, and so the result, are
    the same either way."""
    with one_blas_thread():
        return _correct_bias(fgraph, qgraph, calibration)


def _correct_bias(fgraph: Graph, qgraph: Graph, calibration: Mapping[str, np.ndarray]) -> Graph:
    n = len(next(iter(calibration.values())))
    data_q = quantize_inputs(dict(calibration), qgraph)
    size = min(stack_size(fgraph, n), stack_size(qgraph, n))
    stacked = size > 1
    # the unit a reference call takes: one sample (the graph's shapes), or `size` samples on axis 0
    units = [(s, min(size, n - s)) for s in range(0, n, size)]

    def split(v: np.ndarray, name: str, graph: Graph) -> list[np.ndarray]:
        shape = graph.t(name).shape
        return [np.asarray(v[s:s + b], graph.t(name).dtype.np).reshape(b, *shape[1:]) if stacked
                else np.asarray(v[s], graph.t(name).dtype.np) for s, b in units]

    env_f = {k: split(v, k, fgraph) for k, v in calibration.items()}
    env_q = {k: split(v, k, qgraph) for k, v in data_q.items()}
    last = {}
    for pos, node in enumerate(fgraph.nodes):
        for i in node.inputs:
            if i:
                last[i] = pos
    tensors = dict(fgraph.tensors)
    qtensors = dict(qgraph.tensors)
    with rounding_mode(graph_rounding(qgraph)):
        for pos, node in enumerate(fgraph.nodes):
            op = opdef(node)
            xs_f = [[env_f[i][u] if i and not fgraph.t(i).is_const else None for i in node.inputs]
                    for u in range(len(units))]
            xs_q = [[env_q[i][u] if i and not qgraph.t(i).is_const else None for i in node.inputs]
                    for u in range(len(units))]
            qg = qgraph.with_nodes(qgraph.nodes, qtensors)
            pre_f = None
            if correctable(node, fgraph) and qg.t(node.inputs[2]).dtype in BIAS_TYPES:
                b = tensors[node.inputs[2]]
                pre_f = [pre_float(node, fgraph, [fgraph.t(i).data if i and fgraph.t(i).is_const else v
                                                  for i, v in zip(node.inputs, xs_f[u])]) for u in range(len(units))]
                err = channel_errors(node, fgraph, qg, xs_f, xs_q, stacked, pre_f)
                new = (b.data.astype(np.float64) - err).astype(np.float32)
                tensors[b.name] = replace(b, data=new)
                qb = qtensors[b.name]
                scale = np.asarray(qb.quant.scale, np.float64)
                info = np.iinfo(qb.dtype.np)
                q = np.clip(np.round(new / scale), info.min, info.max)
                qtensors[b.name] = replace(qb, data=q.astype(qb.dtype.np))
                qg = qgraph.with_nodes(qgraph.nodes, qtensors)
            out_type = qg.t(node.outputs[0]).dtype
            for name in node.outputs:
                env_f[name], env_q[name] = [], []
            for u in range(len(units)):
                ins_f = [fgraph.t(i).data if i and fgraph.t(i).is_const else v for i, v in zip(node.inputs, xs_f[u])]
                ins_q = [qg.t(i).data if i and qg.t(i).is_const else v for i, v in zip(node.inputs, xs_q[u])]
                if pre_f is not None:  # a corrected node's float output: its pre-activation output, activated
                    outs_f = [apply_act_f32(pre_f[u], getattr(node.attrs, "act", NO_ACT))]
                else:
                    outs_f = op.reference_f32(node, fgraph, ins_f)
                ref = {DType.INT8: op.reference_s8, DType.INT16: op.reference_s16}.get(out_type, op.reference_f32)
                outs_q = ref(node, qg, ins_q)  # as toolchain.interpret chooses
                for name, vf, vq in zip(node.outputs, outs_f, outs_q, strict=True):
                    env_f[name].append(vf)
                    env_q[name].append(vq)
            for i in node.inputs:  # free what no later node reads
                if i and last.get(i) == pos and i not in fgraph.outputs:
                    env_f.pop(i, None)
                    env_q.pop(i, None)
    return fgraph.with_nodes(fgraph.nodes, tensors)
