"""DSP (Cortex-M4/M7/M33, ACLE SMLAD) plan of TRANSPOSE_CONV (c_templates/kernels/dsp/transpose_conv_s8.c.j2):
each stride phase of the output is a stride-1 convolution over the input with that phase's taps,
flipped; the kernel runs the conv2d GEMM of ecc_dsp.h on it, one weight blob per phase.

Phase (py, px) (output pixels with (oy + pad_top) mod stride_h = py, (ox + pad_left) mod stride_w = px)
uses the taps ky = py + j stride_h, kx = px + i stride_w; output (oy, ox) reads input row
(oy + pad_top) // stride_h - j (the same for columns). Flipping j and i makes the window a plain
nky x nkx window, rows and columns ascending, so the im2col is a regular one. Missing taps (outside
the input) read the zero point and the folded bias cancels them: the same int32 sums as the
reference (wrapping addition does not depend on the order). Not here: C (c_templates/).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa.packing import MODES, dsp_variant, fold_layer, gemm_groups, pack_gemm_blob
from toolchain.ops import transpose_conv
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants


def phase_taps(w: np.ndarray, stride: tuple[int, int]) -> list[np.ndarray]:
    """OHWI weights -> per stride phase (py, px) in row-major order, the [O, nky * nkx * I] rows of its
    taps flipped (ky = py + (nky - 1 - j) stride_h at row-window index j, the same for columns);
    a phase without taps (kernel smaller than the stride) is one zero column."""
    sh, sw = stride
    out = []
    for py in range(sh):
        for px in range(sw):
            t = w[:, py::sh, px::sw, :][:, ::-1, ::-1, :]
            w2d = t.reshape(w.shape[0], -1)
            out.append(w2d if w2d.shape[1] else np.zeros((w.shape[0], 1), np.int8))
    return out


def transpose_conv_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                        y_shape: tuple[int, ...], *, mode: str, x: str = "input",
                        y: str = "output") -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of dsp/transpose_conv for requantization `mode` (packing.MODES),
    given the transpose_conv_s8 keyword arguments `k` and OHWI weights; None when it does not apply:
    -128 weights, a requantization it cannot do exactly (packing.fold_layer, per phase: a positive
    shift, an accumulator that could overflow int32 once doubled), an input zero point outside int8."""
    zp = -int(k["input_offset"])
    if not -128 <= zp <= 127 or w.shape[3] != x_shape[3]:
        return None
    blobs, groups = [], 2
    for w2d in phase_taps(np.ascontiguousarray(w), k["stride"]):
        f = fold_layer(np.ascontiguousarray(w2d), bias, k["input_offset"], k["out_mult"], k["out_shift"],
                       k["output_offset"], (k["act_min"], k["act_max"]))
        if f is None or mode not in f.modes:
            return None
        blobs.append(pack_gemm_blob(f.w, f, mode))
        groups = max(groups, gemm_groups(w2d.shape[1]))
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], zp, k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            *map(CArg.lit, w.shape[1:3]), CArg("array", np.concatenate(blobs), "wpack", (0, 0)),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # two q15 columns (16 bytes per 4-k group of the largest phase), plus int8 staging when in_c % 4 != 0
    return args, (16 + 4 * (x_shape[3] % 4 != 0)) * groups


def _node_plan(node: Node, graph: Graph, mode: str) -> tuple[list[CArg], int] | None:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return transpose_conv_plan(transpose_conv.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode,
                               x=x.name, y=y.name)


def _variant(mode: str) -> KernelVariant:
    return dsp_variant("transpose_conv", mode=mode, applies=lambda n, g: _node_plan(n, g, mode) is not None,
                       scratch_bytes=lambda n, g: _node_plan(n, g, mode)[1],
                       args=lambda n, g: _node_plan(n, g, mode)[0])


TRANSPOSE_CONV = tuple(_variant(mode) for mode in MODES)

add_variants(OpKind.TRANSPOSE_CONV, *TRANSPOSE_CONV)
