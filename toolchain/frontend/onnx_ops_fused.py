"""ONNX converters of the fused activations: HardSigmoid (IR HARD_SIGMOID; HardSwish is in
onnx_ops.py). SiLU has no ONNX op of its own before opset 24's Swish: exporters write Mul(x,
Sigmoid(x)), which passes/fuse_decomposed_activations.py turns into the IR SILU op. Same contract as
onnx.py: keyword parameters are the ONNX attribute names with the spec defaults."""
from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import Builder
from toolchain.ops.hard_sigmoid import HardSigmoidAttrs
from toolchain.ops.registry import OpKind


@converter("HardSigmoid")
def hard_sigmoid(b: Builder, X, *, alpha=0.2, beta=0.5):
    attrs = HardSigmoidAttrs(float(np.float32(alpha)), float(np.float32(beta)))
    b.emit(OpKind.HARD_SIGMOID, [b.any_layout(X)], attrs, nhwc=b.is_nhwc(X))
