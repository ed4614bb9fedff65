"""Sum: TFLite SUM int8, TFLM reduce.cc EvalSum -> reference_ops::QuantizedMeanOrSum with
compute_sum: out = MBQM(sum - zp_in * n, QuantizeMultiplier(s_in / s_out)) + zp_out, saturated.
The same computation and kernel as MEAN without the 1/n (mean.py owns both: mean_s8(mean=False),
sum_multiplier); ONNX ReduceSum maps here.
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.mean import Mean
from toolchain.ops.registry import register


@register("SUM", "Sum")
class Sum(Mean):
    is_mean = False

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        y = np.sum(np.asarray(ins[0], np.float64), axis=node.attrs.axes, keepdims=node.attrs.keep_dims)
        return [np.asarray(y, np.float32)]
