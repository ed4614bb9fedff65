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

from toolchain.data import quantize_inputs
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ops.common import NO_ACT
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
                   xs_q: list[list[np.ndarray]]) -> np.ndarray:
    """Mean pre-activation error per output channel (last axis, NHWC / [N, C]) of `node` over the
    samples: xs_f[s] / xs_q[s] are the node's operand values (None for constants) in the float and the
    int8 graph. Returns float64 [Cout]."""
    pre = _pre_activation(node)
    op = opdef(node)
    total, count = None, 0
    for xf, xq in zip(xs_f, xs_q, strict=True):
        ins_f = [fgraph.t(i).data if fgraph.t(i).is_const else v for i, v in zip(node.inputs, xf, strict=True)]
        ins_q = [_deq(qgraph.t(i), qgraph.t(i).data if qgraph.t(i).is_const else v) if i else None
                 for i, v in zip(node.inputs, xq, strict=True)]
        ins_q[2] = ins_f[2]  # the float bias: the error measured is that of the weights and inputs
        d = op.reference_f32(pre, qgraph, ins_q)[0].astype(np.float64) - op.reference_f32(pre, fgraph, ins_f)[0]
        d = d.reshape(-1, d.shape[-1])
        total = d.sum(axis=0) if total is None else total + d.sum(axis=0)
        count += d.shape[0]
    return total / max(count, 1)


def correct_bias(fgraph: Graph, qgraph: Graph, calibration: Mapping[str, np.ndarray]) -> Graph:
    """The float graph `fgraph` with every correctable bias shifted by the mean channel error of
    `qgraph` (its quantized twin, quantize.quantize_ranges of fgraph, node for node: int8, or mixed
    with 16x8 nodes and int64 biases when fgraph has its REQUANTIZE nodes, precision.with_boundaries)
    on `calibration` (name -> [S, *shape] float32). Re-quantize the result with the same ranges to get
    the corrected graph. Raises ValueError when the calibration inputs do not fit the graph."""
    n = len(next(iter(calibration.values())))
    data_q = quantize_inputs(dict(calibration), qgraph)
    env_f = {k: [np.asarray(v[i], fgraph.t(k).dtype.np) for i in range(n)] for k, v in calibration.items()}
    env_q = {k: [v[i] for i in range(n)] for k, v in data_q.items()}
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
            xs_f = [[env_f[i][s] if i and not fgraph.t(i).is_const else None for i in node.inputs] for s in range(n)]
            xs_q = [[env_q[i][s] if i and not qgraph.t(i).is_const else None for i in node.inputs] for s in range(n)]
            qg = qgraph.with_nodes(qgraph.nodes, qtensors)
            if correctable(node, fgraph) and qg.t(node.inputs[2]).dtype in BIAS_TYPES:
                b = tensors[node.inputs[2]]
                err = channel_errors(node, fgraph, qg, xs_f, xs_q)
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
            for s in range(n):
                ins_f = [fgraph.t(i).data if i and fgraph.t(i).is_const else v for i, v in zip(node.inputs, xs_f[s])]
                ins_q = [qg.t(i).data if i and qg.t(i).is_const else v for i, v in zip(node.inputs, xs_q[s])]
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
