"""BatchNormalization (ONNX BatchNormalization-15, inference form) on NHWC activations.

Exists only in float graphs: fold_batchnorm folds it into the preceding Conv/FC. A BatchNorm
that cannot be folded is rejected at quantization time (there is no int8 kernel for it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import OpDef, register


@dataclass(frozen=True)
class BatchNormAttrs:
    epsilon: float = 1e-5


def bn_scale_shift(graph: Graph, node: Node) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (a, b) with BN(x) = a * x + b, float64."""
    g, beta, mean, var = (graph.t(n).data.astype(np.float64) for n in node.inputs[1:5])
    a = g / np.sqrt(var + node.attrs.epsilon)
    return a, beta - a * mean


@register("BATCH_NORM", "BatchNorm")
class BatchNorm(OpDef):
    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [graph.t(node.inputs[0]).shape]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        a, b = bn_scale_shift(graph, node)
        return [(ins[0] * a + b).astype(np.float32)]  # the channel is the last axis in NHWC and [N, C]
