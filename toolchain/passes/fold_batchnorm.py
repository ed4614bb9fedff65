"""Fold an inference BatchNormalization into the Conv2D / DepthwiseConv2D / FullyConnected that
feeds it: w' = w * a (per output channel), b' = b * a + shift, with a = gamma / sqrt(var + eps)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import Graph, Tensor
from toolchain.ops.batch_norm import bn_scale_shift
from toolchain.ops.common import NO_ACT
from toolchain.ops.registry import OpKind

# where the output channel sits in each op's weight tensor
_CHANNEL_AXIS = {OpKind.CONV2D: 0, OpKind.DEPTHWISE_CONV2D: 3, OpKind.FULLY_CONNECTED: 0}


def fold_batchnorm(graph: Graph) -> Graph:
    """Remove every BatchNorm whose producer is a conv/FC read by nothing else."""
    for bn in [n for n in graph.nodes if n.op == OpKind.BATCH_NORM]:
        prod = graph.producer(bn.inputs[0])
        if prod is None or prod.op not in _CHANNEL_AXIS or len(graph.consumers(bn.inputs[0])) != 1 \
                or bn.inputs[0] in graph.outputs or prod.attrs.act != NO_ACT:  # BN(act(x)) != act(BN(x))
            continue
        a, shift = bn_scale_shift(graph, bn)
        w_t, b_t = graph.t(prod.inputs[1]), graph.t(prod.inputs[2])
        axis = _CHANNEL_AXIS[prod.op]
        shape = [1] * w_t.data.ndim
        shape[axis] = -1
        w = (w_t.data.astype(np.float64) * a.reshape(shape)).astype(np.float32)
        b = (b_t.data.astype(np.float64) * a + shift).astype(np.float32)
        graph = graph.with_tensor(replace(w_t, data=w)).with_tensor(replace(b_t, data=b))
        out = bn.outputs[0]
        nodes = [replace(prod, outputs=(out,)) if n is prod else n for n in graph.nodes if n is not bn]
        y = graph.t(prod.outputs[0])
        tensors = dict(graph.tensors)
        tensors[out] = Tensor(out, y.shape, y.dtype)
        graph = graph.with_nodes(nodes, tensors)
    return graph
