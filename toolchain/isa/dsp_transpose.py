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
from toolchain.isa.dsp import mode_why_not, plan_or_none, planned_variant
from toolchain.isa.packing import ALL_MODES, fold_layer_why, gemm_groups, mode_rounding, pack_gemm_blob
from toolchain.ops import transpose_conv
from toolchain.ops.registry import CArg, OpKind, add_variants


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
    """transpose_conv_plan_why, None instead of the reason."""
    return plan_or_none(transpose_conv_plan_why(k, x_shape, w, bias, y_shape, mode=mode, x=x, y=y))


def transpose_conv_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                            y_shape: tuple[int, ...], *, mode: str, x: str = "input",
                            y: str = "output") -> tuple[list[CArg], int] | str:
    """(argument list, scratch bytes) of dsp/transpose_conv for requantization `mode` (packing.C_MODES),
    given the transpose_conv_s8 keyword arguments `k` and OHWI weights; when it does not apply, the
    first reason (a string): an input zero point outside int8, grouped, a requantization it cannot do
    exactly (packing.fold_layer_why, per phase: a positive shift, an accumulator that could overflow
    int32 once doubled), or the mode. Weights of -128 are exact (the GEMM of ecc_dsp.h)."""
    zp = -int(k["input_offset"])
    if not -128 <= zp <= 127:
        return "input zero point outside int8"
    if w.shape[3] != x_shape[3]:
        return "grouped convolution"
    blobs, groups = [], 2
    act = (k["act_min"], k["act_max"])
    for w2d in phase_taps(np.ascontiguousarray(w), k["stride"]):
        f = fold_layer_why(np.ascontiguousarray(w2d), bias, k["input_offset"], k["out_mult"], k["out_shift"],
                           k["output_offset"], act, rounding=mode_rounding(mode))
        if isinstance(f, str):
            return f
        why = mode_why_not(f, mode, act)
        if why:
            return why
        blobs.append(pack_gemm_blob(f.w, f, mode))
        groups = max(groups, gemm_groups(w2d.shape[1]))
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], zp, k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            *map(CArg.lit, w.shape[1:3]), CArg("array", np.concatenate(blobs), "wpack", (0, 0)),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # two q15 columns (16 bytes per 4-k group of the largest phase), plus int8 staging when in_c % 4 != 0
    return args, (16 + 4 * (x_shape[3] % 4 != 0)) * groups


def _node_plan(node: Node, graph: Graph, mode: str) -> tuple[list[CArg], int] | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return transpose_conv_plan_why(transpose_conv.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode,
                                   x=x.name, y=y.name)


TRANSPOSE_CONV = tuple(planned_variant("transpose_conv", "", mode, lambda n, g, mode=mode: _node_plan(n, g, mode))
                       for mode in ALL_MODES)

add_variants(OpKind.TRANSPOSE_CONV, *TRANSPOSE_CONV)
