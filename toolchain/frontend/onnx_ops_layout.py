"""ONNX converters of the layout group: DepthToSpace-13 (DCR, CRD), SpaceToDepth-13, Upsample-7/9
(nearest, linear), Softmax-13 over any axis and LogSoftmax-13, registered into
toolchain.frontend.onnx.CONVERTERS. Modules named onnx_ops_* load after onnx.py, so the Softmax
converter here replaces onnx.py's (which takes the last axis only).

Layout: ONNX is NCHW, the IR keeps 4-D activations NHWC. The NCHW channel index is the NHWC
channel index, so DepthToSpace / SpaceToDepth run on the NHWC tensor as they are; Softmax over
ONNX axis 1 of a 4-D value is the NHWC last axis (no transpose).
"""
from __future__ import annotations

import math

import numpy as np

from toolchain.frontend.onnx import converter
from toolchain.frontend.onnx_builder import Builder
from toolchain.ops.depth_space import DepthToSpaceAttrs, SpaceToDepthAttrs
from toolchain.ops.registry import OpKind


@converter("DepthToSpace")
def depth_to_space(b: Builder, input, *, blocksize=None, mode="DCR"):  # noqa: A002
    if mode not in ("DCR", "CRD"):
        raise b.unsupported(f"DepthToSpace mode {mode!r} (DCR or CRD)")
    if blocksize is None or len(b.onnx_shape(input)) != 4:
        raise b.unsupported("DepthToSpace without blocksize or on a non-4-D input")
    return b.emit(OpKind.DEPTH_TO_SPACE, [b.nhwc(input)], DepthToSpaceAttrs(int(blocksize), mode), nhwc=True)


@converter("SpaceToDepth")
def space_to_depth(b: Builder, input, *, blocksize=None):  # noqa: A002
    if blocksize is None or len(b.onnx_shape(input)) != 4:
        raise b.unsupported("SpaceToDepth without blocksize or on a non-4-D input")
    return b.emit(OpKind.SPACE_TO_DEPTH, [b.nhwc(input)], SpaceToDepthAttrs(int(blocksize)), nhwc=True)
