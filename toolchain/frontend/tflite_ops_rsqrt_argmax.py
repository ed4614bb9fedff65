"""TFLite converters of the "rsqrt_argmax" group: RSQRT (ops/rsqrt.py). Same contract as
toolchain/frontend/tflite.py: keyword parameters are the schema.fbs options.
"""
from __future__ import annotations

from toolchain.frontend.tflite import Builder, converter
from toolchain.ops.registry import OpKind
from toolchain.ops.rsqrt import RsqrtAttrs


@converter("RSQRT")
def rsqrt(b: Builder, x: int) -> None:
    b.emit(OpKind.RSQRT, [b.act(x)], RsqrtAttrs())
