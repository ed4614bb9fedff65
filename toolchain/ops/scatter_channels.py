"""ScatterChannels: a copy of `base` whose channels (last axis) listed in `channels` are taken from
`update` instead, in that order: y[..., channels[j]] = update[..., j]. Pure data movement (both
inputs and the output share qparams). Made by quantize.zero_point_split to put back the few output
channels of a layer with a weight zero point that a portable kernel computed exactly beside the
ISA kernel's run of the layer; no model file has it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.registry import CArg, OpDef, portable, register


@dataclass(frozen=True)
class ScatterChannelsAttrs:
    channels: tuple[int, ...]  # distinct, each in [0, base channels)


def scatter_channels(base: np.ndarray, update: np.ndarray, channels: tuple[int, ...]) -> np.ndarray:
    """base [..., C] with base[..., channels[j]] = update[..., j] (update [..., len(channels)])."""
    out = np.array(base, copy=True)
    out[..., list(channels)] = update
    return out


@register("SCATTER_CHANNELS", "ScatterChannels")
class ScatterChannels(OpDef):
    variants = (portable("scatter_channels", inplace_inputs=(0,)),)  # the kernel allows output == base

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        base, upd = graph.t(node.inputs[0]).shape, graph.t(node.inputs[1]).shape
        ch = node.attrs.channels
        if base[:-1] != upd[:-1] or upd[-1] != len(ch) or len(set(ch)) != len(ch) or \
                any(not 0 <= c < base[-1] for c in ch):
            raise ValueError(f"scatter of {list(upd)} into {list(base)} at channels {list(ch)}")
        return [base]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [scatter_channels(ins[0], ins[1], node.attrs.channels)]

    reference_s8 = reference_f32

    def output_qparams(self, node, graph, observed):
        return graph.t(node.inputs[0]).quant

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        base = graph.t(node.inputs[0])
        return scatter_args(base.size // base.shape[-1], base.shape[-1], node.attrs.channels, *node.inputs[:2],
                            node.outputs[0])


def scatter_args(outer: int, c: int, channels, base: str, update: str, y: str) -> list[CArg]:
    """The scatter_channels_s8 argument list (every ISA's): base [outer][c] and update
    [outer][len(channels)] activations, output y."""
    ch = np.array(channels, np.int32)
    return [CArg.lit(outer), CArg.lit(c), CArg.lit(len(ch)), CArg("array", ch, "channels"), CArg("act", base),
            CArg("act", update), CArg("act", y)]
