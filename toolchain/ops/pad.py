"""Pad: constant padding of an int8 tensor whose output keeps the input's quantization; TFLite
PAD/PADV2, TFLM reference_ops::Pad. The pad value is the quantized constant, i.e. the zero point
for the usual real 0 (BL-07, BL-14): never a raw 0. The numpy form is elementwise.pad_s8.

The IR node carries (before, after) per axis of its (NHWC) input; rank <= 4 in C. 16x8 (int16,
zero point 0): the same copy with an int16 pad value (pad_value_s16), kernel portable/pad_s16.c.j2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import DType, Graph, Node
from toolchain.ops.elementwise import pad_s8
from toolchain.ops.registry import CArg, OpDef, portable, portable_s16, register


@dataclass(frozen=True)
class PadAttrs:
    """pads[i] = (before, after) >= 0 for axis i; `value` is the real pad constant (ONNX Pad-13
    mode=constant, TFLite PAD (0) / PADV2 (constant_values))."""

    pads: tuple[tuple[int, int], ...]
    value: float = 0.0


def pad_value_s8(node: Node, graph: Graph) -> int:
    """The int8 pad constant: the output's quantization of attrs.value, saturated (TFLite
    quantizes constant_values with the output's qparams; value 0 gives the zero point)."""
    return int(graph.t(node.outputs[0]).quant.quantize(np.float32(node.attrs.value)))


def pad_value_s16(node: Node, graph: Graph) -> int:
    """The int16 pad constant of a 16x8 Pad (zero point 0): attrs.value on the output's scale, rounded
    half away from zero and saturated; 0 for PAD. TFLM's int16 PAD writes 0 or PADV2's raw int16
    constant_values, which the frontend takes only on the output's scale, so this is that raw value."""
    return int(graph.t(node.outputs[0]).quant.quantize(np.float64(node.attrs.value), DType.INT16))


def _s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_pad_s16 (portable/pad_s16.c.j2): Pad's list with the int16 pad value."""
    return [*Pad().kernel_args(node, graph)[:12], CArg.lit(pad_value_s16(node, graph)), CArg("act", node.inputs[0]),
            CArg("act", node.outputs[0])]


@register("PAD", "Pad")
class Pad(OpDef):
    variants = (portable("pad"), portable_s16("pad", args=_s16_args))
    ignores_observed_range = True  # output_qparams: the input's

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        shape = graph.t(node.inputs[0]).shape
        pads = node.attrs.pads
        if len(pads) != len(shape) or any(min(p) < 0 for p in pads):
            raise ValueError(f"pads {[list(p) for p in pads]} do not fit rank {len(shape)} (need >= 0)")
        if len(shape) > 4:
            raise ValueError(f"pad of rank {len(shape)} (at most 4)")
        return [tuple(d + a + b for d, (a, b) in zip(shape, pads, strict=True))]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [np.pad(np.asarray(ins[0], np.float32), node.attrs.pads, constant_values=np.float32(node.attrs.value))]

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant  # pad copies bytes: the quantization cannot change

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [pad_s8(ins[0], node.attrs.pads, pad_value=pad_value_s8(node, graph))]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        """16x8 (TFLM reference_ops::Pad on int16): the input copied, the border the int16 pad value."""
        value = np.int16(pad_value_s16(node, graph))
        return [np.pad(np.asarray(ins[0], np.int16), node.attrs.pads, constant_values=value)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        """ecc_pad_s8: 4 dims, 4 pads before, 4 after (leading axes of size 1), the pad value, in, out."""
        shape = graph.t(node.inputs[0]).shape
        lead = 4 - len(shape)
        dims = (1,) * lead + shape
        before = (0,) * lead + tuple(p[0] for p in node.attrs.pads)
        after = (0,) * lead + tuple(p[1] for p in node.attrs.pads)
        return [*map(CArg.lit, (*dims, *before, *after, pad_value_s8(node, graph))),
                CArg("act", node.inputs[0]), CArg("act", node.outputs[0])]
