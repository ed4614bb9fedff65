"""DSP (Cortex-M4/M7/M33, ACLE SMLAD) kernel plans: for each op with a kernel in
c_templates/kernels/dsp/, the predicate under which it is bit-exact with the portable kernel, its
scratch bytes and its argument list, attached to the ops with registry.add_variants.

The numbers (re-packed weights, folded bias, requantization rewrite) come from isa/packing.py; the
op semantics from the op modules (their public `s8_kwargs`/`params`). Not here: C (c_templates/).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa.packing import (INT32_LIMIT, MODES, dsp_variant, fc_blocks, fold_layer, gemm_groups, pack_fc_blob,
                                   pack_gemm_blob, pack_sparse_gemm_blob, split_constants)
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.binary import needs_broadcast
from toolchain.ops.fixed_point import AddParams, multiply_by_quantized_multiplier
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
def conv2d_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
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


def _conv2d_node(node: Node, graph: Graph, mode: str, pointwise: bool,
               sparse: bool = False) -> tuple[list[CArg], int] | None:
    if node.attrs.groups != 1:
        return None
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return conv2d_plan(conv2d.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode, pointwise=pointwise,
                    x=x.name, y=y.name, sparse=sparse)


def _conv2d_dsp(mode: str, pointwise: bool, sparse: bool = False) -> KernelVariant:
    return dsp_variant("conv2d", "1x1_sparse" if sparse else "1x1" if pointwise else "", mode=mode,
                       applies=lambda n, g: _conv2d_node(n, g, mode, pointwise, sparse) is not None,
                       scratch_bytes=lambda n, g: _conv2d_node(n, g, mode, pointwise, sparse)[1],
                       args=lambda n, g: _conv2d_node(n, g, mode, pointwise, sparse)[0])


# sparse first: it only applies to layers with a constant channel, which it then runs faster
CONV2D = (*(_conv2d_dsp(mode, True, True) for mode in MODES),
                *(_conv2d_dsp(mode, pointwise) for pointwise in (True, False) for mode in MODES))


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
def depthwise_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
             mode: str, three: bool, x: str = "input", y: str = "output",
             w_arg: CArg | None = None) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of the dsp depthwise entry point for requantization `mode`,
    3x3 (dsp/depthwise_conv2d_3x3) or general, given the depthwise_conv2d_s8 keyword arguments `k`
    and [1, KH, KW, C*mult] weights (w_arg: how the kernel call names them; default a new array);
    None when it does not apply: -128 weights, a requantization it cannot do exactly, or for the
    3x3 kernel another kernel size, dilation, depth multiplier or in_c % 4 != 0."""
    _, kh, kw, cout = w.shape
    if three and ((kh, kw) != (3, 3) or tuple(k["dilation"]) != (1, 1) or k["depth_multiplier"] != 1
                  or x_shape[3] % 4):
        return None
    # [out_c, taps]: output channel oc sums x[oc // mult] * w[tap, oc]; the kernels accumulate 2 acc
    f = fold_layer(w.reshape(-1, cout).T, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                   (k["act_min"], k["act_max"]), doubled=True)
    if f is None or mode not in f.modes:
        return None
    geometry = [*k["stride"], *k["pad"]] + ([] if three else [*k["dilation"], k["depth_multiplier"]])
    args = [*map(CArg.lit, [*geometry, -k["input_offset"], f.k, k["act_min"], k["act_max"]]),
            CArg("array", f.mult, "mult"), CArg("array", f.shift(mode), "shift"), *map(CArg.lit, x_shape),
            CArg("act", x), *map(CArg.lit, [] if three else (kh, kw)), w_arg or CArg("array", w.reshape(-1), "w"),
            CArg("array", f.bias, "bias"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # general: the weights of every full channel quad widened to q15 (8 bytes per quad and tap);
    # 3x3: a 120-byte record per quad (bias, requantization, widened weights) and a ring of three
    # padded input rows widened to q15 (2 bytes per value)
    quads = cout // 4 if k["depth_multiplier"] == 1 else 0
    if three:
        return args, 120 * quads + 3 * 2 * ((y_shape[2] - 1) * k["stride"][1] + 3) * cout
    return args, 8 * quads * kh * kw


def _depthwise_node(node: Node, graph: Graph, mode: str, three: bool) -> tuple[list[CArg], int] | None:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return depthwise_plan(depthwise_conv2d.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode, three=three, x=x.name,
                    y=y.name, w_arg=CArg("const", w.name))


def _depthwise_dsp(mode: str, three: bool) -> KernelVariant:
    return dsp_variant("depthwise_conv2d", "3x3" if three else "", mode=mode,
                       applies=lambda n, g: _depthwise_node(n, g, mode, three) is not None,
                       scratch_bytes=lambda n, g: _depthwise_node(n, g, mode, three)[1],
                       args=lambda n, g: _depthwise_node(n, g, mode, three)[0], headers=("dsp/ecc_dsp_depthwise.h",))


DEPTHWISE_CONV2D = tuple(_depthwise_dsp(mode, three) for three in (True, False) for mode in MODES)


# ---- DSP variant (c_templates/kernels/dsp/): predicate, scratch, argument list ---------------
def fc_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
             x: str = "input", y: str = "output") -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of dsp/fully_connected for the fully_connected_s8 keyword arguments
    `k` and [O, K] weights; None when it does not apply (a weight zero point, -128 weights, a
    requantization it cannot do exactly, packing.fold_layer, where channels whose output is provably
    constant are packed as such, or an accumulator bound of 2^23 or more, packing.pack_fc_blob).
    The requantization mode is the fastest exact one (packing.MODES),
    passed as its ECC_DSP_* number."""
    if k["filter_offset"] != 0:
        return None
    f = fold_layer(w, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                   (k["act_min"], k["act_max"]), constants=True)
    if f is None:
        return None
    mode, blocks = f.modes[0], fc_blocks(w.shape[1])
    blob = pack_fc_blob(f, mode)
    if blob is None:
        return None
    args = [*map(CArg.lit, [f.k, k["act_min"], k["act_max"], MODES.index(mode), *x_shape]), CArg("act", x),
            CArg.lit(blocks), CArg("array", blob, "wpack"), CArg.lit(y_shape[1]), CArg("act", y)]
    return args, 16 * blocks  # one batch row widened to q15, 16 bytes per 8-k block


def _fc_node(node: Node, graph: Graph) -> tuple[list[CArg], int] | None:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return fc_plan(fully_connected.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, x=x.name, y=y.name)


FULLY_CONNECTED = dsp_variant("fully_connected", applies=lambda n, g: _fc_node(n, g) is not None,
                  scratch_bytes=lambda n, g: _fc_node(n, g)[1], args=lambda n, g: _fc_node(n, g)[0])


# ---- DSP variant (c_templates/kernels/dsp/add_s8.c.j2): same arguments, tabulated inputs ------
DSP_MIN_SIZE = 1024  # the tables cost 2 KB of scratch and about 14k instructions to fill


def dsp_exact(p: AddParams) -> bool:
    """Whether dsp/add is exact: it tabulates each input's rescaled term and requantizes the sum with
    ecc_dsp_out, exact for output_shift in [-31, 0] when twice the largest possible sum stays clear
    of int32."""
    if not -31 <= p.output_shift <= 0 or not 0 <= p.left_shift <= 23:
        return False
    x = np.arange(-128, 128, dtype=np.int64)
    t1 = multiply_by_quantized_multiplier((x + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    t2 = multiply_by_quantized_multiplier((x + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    return 2 * (int(np.abs(t1).max()) + int(np.abs(t2).max())) + 512 < INT32_LIMIT


# where it pays (DSP_MIN_SIZE elements on); like the portable flat kernel, the output may alias an input
ADD = dsp_variant("add", applies=lambda n, g: (not needs_broadcast(n, g) and g.t(n.outputs[0]).size >= DSP_MIN_SIZE
                                              and dsp_exact(add.params(n, g)[0])),
                  scratch_bytes=lambda n, g: 2 * 256 * 4, inplace_inputs=(0, 1))


# ---- DSP variants (c_templates/kernels/dsp/): the portable argument lists, no scratch ---------
# avg: four channels summed in int16 lanes, exact while a window holds at most 255 cells
AVG_POOL2D = dsp_variant("avg_pool2d", applies=lambda n, g: n.attrs.window.kernel[0] * n.attrs.window.kernel[1] <= 255,
                      scratch_bytes=lambda n, g: 0)
MAX_POOL2D = dsp_variant("max_pool2d", applies=lambda n, g: True, scratch_bytes=lambda n, g: 0)



add_variants(OpKind.CONV2D, *CONV2D)
add_variants(OpKind.DEPTHWISE_CONV2D, *DEPTHWISE_CONV2D)
add_variants(OpKind.FULLY_CONNECTED, FULLY_CONNECTED)
add_variants(OpKind.ADD, ADD)
add_variants(OpKind.AVG_POOL2D, AVG_POOL2D)
add_variants(OpKind.MAX_POOL2D, MAX_POOL2D)
