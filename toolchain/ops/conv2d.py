"""Conv2D: the int8 reference semantics of a (grouped, dilated) 2-D convolution; TFLite int8 spec,
TFLM reference_integer_ops::ConvPerChannel.

Owns: `conv2d_s8` (the numpy oracle) and `im2col_s8_offset`, the patch gatherer shared with the
depthwise reference. Layout NHWC activations, OHWI weights (I = Cin / groups). Taps outside the
input are skipped, i.e. read as the input zero point (BL-07). Also the plans of the dsp kernel
variants (`dsp_plan`: predicate, argument list, scratch), the sparse 1x1 one included (output
channels proven constant neither stored nor computed, issue 6). Not here: float conv (common.py),
parameter preparation (fixed_point.py), weight re-packing (packing.py), C code (c_templates/).
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import requantize_s8, wrap_int32
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, Window, apply_act_f32, conv_f32, quantize_bias, quantize_weights, weighted_requant
from toolchain.ops.packing import (MODES, dsp_variant, fold_layer, gemm_groups, pack_gemm_blob,
                                   pack_sparse_gemm_blob, split_constants)
from toolchain.ops import neon_variants
from toolchain.ops import helium_variants
from toolchain.ops.registry import CArg, Cost, KernelVariant, OpDef, OpKind, portable, rounding_twins, register


def _check_geometry(x: np.ndarray, kernel: tuple[int, int], stride, pad, dilation, out_hw) -> None:
    if x.ndim != 4:
        raise ValueError(f"input must be NHWC (4-D), got shape {x.shape}")
    if min(stride) < 1 or min(dilation) < 1 or min(pad) < 0 or min(out_hw) < 1 or min(kernel) < 1:
        raise ValueError(f"bad geometry: kernel {kernel} stride {stride} pad {pad} dilation {dilation} out {out_hw}")


def im2col_s8_offset(x: np.ndarray, kernel: tuple[int, int], *, stride, pad, dilation, out_hw,
                     input_offset: int) -> np.ndarray:
    """Patches of (x + input_offset) as int64 [N, OH, OW, KH, KW, C]; taps outside the input are 0
    (so they add nothing to the accumulator, exactly like TFLM's skipped taps).

    The bottom/right padding is whatever out_hw needs; windows are anchored at
    oh*stride - pad_top (TFLM in_y_origin)."""
    _check_geometry(x, kernel, stride, pad, dilation, out_hw)
    n, h, w, c = x.shape
    (kh, kw), (sh, sw), (pt, pl), (dh, dw), (oh, ow) = kernel, stride, pad, dilation, out_hw
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.zeros((n, max(need_h, pt + h), max(need_w, pl + w), c), np.int64)
    xp[:, pt:pt + h, pl:pl + w, :] = x.astype(np.int64) + int(input_offset)
    rows = (np.arange(oh) * sh)[:, None] + (np.arange(kh) * dh)[None, :]   # [OH, KH] padded coords
    cols = (np.arange(ow) * sw)[:, None] + (np.arange(kw) * dw)[None, :]   # [OW, KW]
    return xp[:, rows[:, None, :, None], cols[None, :, None, :], :]        # [N, OH, OW, KH, KW, C]


def _as_per_channel(v, cout: int, name: str) -> np.ndarray:
    v = np.asarray(v, np.int64).reshape(-1)
    if v.size not in (1, cout):
        raise ValueError(f"{name} has {v.size} entries, expected 1 or {cout}")
    return np.broadcast_to(v, (cout,))


def conv2d_s8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride=(1, 1), pad=(0, 0),
              dilation=(1, 1), out_hw, input_offset: int, output_offset: int, out_mult, out_shift,
              act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 grouped 2-D convolution (TFLite int8 spec, TFLM reference_integer_ops::ConvPerChannel).

    x: int8 [N, H, W, Cin]; w: int8 [Cout, KH, KW, Cin/groups] (groups = Cin // w.shape[3]);
    bias: int32 [Cout] or None; out_mult/out_shift: int32 [Cout] (or length 1, per-tensor).
    stride/pad(top, left)/dilation/out_hw are (h, w) pairs. Output channel o reads input
    channels g*Cg..(g+1)*Cg-1 with g = o // (Cout/groups).
    acc = sum w * (x + input_offset) + bias (int32, wrapping as in C), then
    MultiplyByQuantizedMultiplier (double rounding) + output_offset, clamp -> int8 [N, OH, OW, Cout].
    Weight zero point is 0 (symmetric), as in TFLite's per-channel conv.
    """
    if w.ndim != 4:
        raise ValueError(f"weights must be OHWI (4-D), got shape {w.shape}")
    cout, kh, kw, cg = w.shape
    if x.ndim != 4 or cg < 1 or x.shape[3] % cg:
        raise ValueError(f"input channels {x.shape[-1] if x.ndim else '?'} not a multiple of weight channels {cg}")
    groups = x.shape[3] // cg
    if cout % groups:
        raise ValueError(f"output channels {cout} not divisible by groups {groups}")
    if bias is not None and np.shape(bias) != (cout,):
        raise ValueError(f"bias shape {np.shape(bias)} != ({cout},)")
    mult, shift = _as_per_channel(out_mult, cout, "out_mult"), _as_per_channel(out_shift, cout, "out_shift")

    p = im2col_s8_offset(x, (kh, kw), stride=stride, pad=pad, dilation=dilation, out_hw=out_hw,
                         input_offset=input_offset)
    n, oh, ow = p.shape[:3]
    # [M, G, K] patches and [G, K, Cout/G] weights, K ordered (KH, KW, Cg) on both sides.
    p = p.reshape(n * oh * ow, kh, kw, groups, cg).transpose(0, 3, 1, 2, 4).reshape(-1, groups, kh * kw * cg)
    wg = w.astype(np.int64).reshape(groups, cout // groups, kh * kw * cg).transpose(0, 2, 1)
    # float64 matmul is exact: every product and partial sum is an integer far below 2^53.
    acc = np.matmul(p.transpose(1, 0, 2).astype(np.float64), wg.astype(np.float64))  # [G, M, Cout/G]
    acc = acc.transpose(1, 0, 2).reshape(n, oh, ow, cout).astype(np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return requantize_s8(wrap_int32(acc), mult, shift, output_offset, act_min, act_max)


# ---- IR glue: attrs, shapes, float semantics, quantization, kernel call ---------------------
@dataclass(frozen=True)
class Conv2DAttrs:
    """Conv2D (ONNX Conv-11 with group, TFLite CONV_2D): window, groups, fused activation."""

    window: Window
    groups: int = 1
    act: tuple[float, float] = NO_ACT


def _s8_kwargs(node: Node, graph: Graph) -> dict:
    win = node.attrs.window
    return dict(stride=win.stride, pad=win.pads[:2], dilation=win.dilation,
                out_hw=graph.t(node.outputs[0]).shape[1:3], **weighted_requant(node, graph, out_axis=0))


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
def dsp_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
             mode: str, pointwise: bool, x: str = "input", y: str = "output",
             sparse: bool = False) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of the dsp conv2d entry point for requantization `mode`
    (packing.MODES), pointwise (dsp/conv2d_1x1) or general (dsp/conv2d), given the conv2d_s8 keyword
    arguments `k`, OHWI weights and the tensor names x, y; sparse (pointwise only,
    dsp/conv2d_1x1_sparse): the live output channels only, the ones proven constant written from a
    row (packing.pack_sparse_gemm_blob; the live count is one more argument before the blob), None
    when no channel is constant. None when that entry point does not apply:
    grouped conv, -128 weights, a requantization it cannot do exactly (packing.fold_layer; channels
    whose output is provably constant are packed as such), or for
    the 1x1 kernel a kernel other than 1x1, padding, or in_c % 4 != 0."""
    cin, (oh, ow) = x_shape[3], y_shape[1:3]
    if w.shape[3] != cin:
        return None
    if pointwise and (w.shape[1:3] != (1, 1) or any(k["pad"]) or cin % 4
                      or (oh - 1) * k["stride"][0] >= x_shape[1] or (ow - 1) * k["stride"][1] >= x_shape[2]):
        return None
    w2d = w.reshape(w.shape[0], -1)
    f = fold_layer(w2d, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                   (k["act_min"], k["act_max"]), constants=True)
    if f is None or mode not in f.modes:
        return None
    groups = gemm_groups(w2d.shape[1])
    if sparse:  # pointwise only: the general kernel's im2col loop has no sparse form
        blob = pack_sparse_gemm_blob(f, mode) if pointwise else None
    else:
        blob = pack_gemm_blob(f.w, f, mode)
    if blob is None:
        return None
    split = split_constants(f.const) if sparse else None
    live = [int(split.live.size)] if split else []
    geometry = [*k["stride"]] if pointwise else [*k["stride"], *k["pad"], *k["dilation"], -k["input_offset"]]
    args = [*map(CArg.lit, [*geometry, k["act_min"], k["act_max"]]), *map(CArg.lit, x_shape), CArg("act", x),
            *map(CArg.lit, [*([] if pointwise else w.shape[1:3]), groups, *live]),
            CArg("array", blob, "wpack", split.skipped(w2d.shape[1], bias is not None) if split else (0, 0)),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # two q15 columns (16 bytes per 4-k group), plus int8 staging for im2col when in_c % 4 != 0
    return args, (16 + 4 * (not pointwise and cin % 4 != 0)) * groups


def _node_plan(node: Node, graph: Graph, mode: str, pointwise: bool,
               sparse: bool = False) -> tuple[list[CArg], int] | None:
    if node.attrs.groups != 1:
        return None
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return dsp_plan(_s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode, pointwise=pointwise,
                    x=x.name, y=y.name, sparse=sparse)


def _dsp(mode: str, pointwise: bool, sparse: bool = False) -> KernelVariant:
    return dsp_variant("conv2d", "1x1_sparse" if sparse else "1x1" if pointwise else "", mode=mode,
                       applies=lambda n, g: _node_plan(n, g, mode, pointwise, sparse) is not None,
                       scratch_bytes=lambda n, g: _node_plan(n, g, mode, pointwise, sparse)[1],
                       args=lambda n, g: _node_plan(n, g, mode, pointwise, sparse)[0])


# sparse first: it only applies to layers with a constant channel, which it then runs faster
DSP_VARIANTS = (*(_dsp(mode, True, True) for mode in MODES),
                *(_dsp(mode, pointwise) for pointwise in (True, False) for mode in MODES))


@register(OpKind.CONV2D)
class Conv2D(OpDef):
    variants = (*DSP_VARIANTS, *neon_variants.CONV2D, *helium_variants.CONV2D, *rounding_twins(portable("conv2d")))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        n, h, w, cin = graph.t(node.inputs[0]).shape
        cout, _, _, gin = graph.t(node.inputs[1]).shape
        if gin * node.attrs.groups != cin:
            raise ValueError(f"weights expect {gin * node.attrs.groups} input channels, got {cin}")
        return [(n, *node.attrs.window.out_hw(h, w), cout)]

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        b = ins[2] if len(ins) > 2 else None
        return [apply_act_f32(conv_f32(ins[0], ins[1], b, node.attrs.window, node.attrs.groups), node.attrs.act)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        graph = quantize_weights(graph, node.inputs[1], axis=0)
        return quantize_bias(graph, node.inputs[2], graph.t(node.inputs[0]).quant.s, graph.t(node.inputs[1]).quant.scale)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [conv2d_s8(ins[0], ins[1], ins[2], **_s8_kwargs(node, graph))]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        k = _s8_kwargs(node, graph)
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        ints = [*k["stride"], *k["pad"], *k["dilation"], k["input_offset"], k["output_offset"], k["act_min"], k["act_max"]]
        return [*map(CArg.lit, ints), CArg("array", k["out_mult"], "mult"), CArg("array", k["out_shift"], "shift"),
                *map(CArg.lit, x.shape), CArg("act", x.name), *map(CArg.lit, w.shape[1:]), CArg("const", w.name),
                CArg("const", node.inputs[2]), *map(CArg.lit, y.shape[1:]), CArg("act", y.name)]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        w, y = graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return Cost(y.size * w.size // w.shape[0], c.weight_bytes, c.act_read_bytes, c.act_write_bytes)
