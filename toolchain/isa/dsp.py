"""DSP (Cortex-M4/M7/M33, ACLE SMLAD) kernel plans: for each op with a kernel in
c_templates/kernels/dsp/, the predicate under which it is bit-exact with the portable kernel, its
scratch bytes and its argument list, attached to the ops with registry.add_variants.

The numbers (re-packed weights, folded bias, requantization rewrite) come from isa/packing.py; the
op semantics from the op modules (their public `s8_kwargs`/`params`). Not here: C (c_templates/).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa.packing import (C_MODES, F32, F32_DOUBLED, INT32_LIMIT, WEIGHTED_MODES, dsp_variant,
                                   fc_blob_why_not, fc_blocks, fold_layer_why, gemm_groups, mode_rounding,
                                   pack_fc_blob, pack_gemm_blob, pack_sparse_gemm_blob, split_constants)
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.binary import needs_broadcast
from toolchain.ops.fixed_point import AddParams, multiply_by_quantized_multiplier
from toolchain.ops.registry import REGISTRY, CArg, KernelVariant, OpKind, add_variants


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
Plan = tuple[list[CArg], int]  # (argument list, scratch bytes) of one kernel call


def plan_or_none(plan: Plan | str) -> Plan | None:
    """A *_plan_why result as the *_plan functions return it: the plan, or None for a reason."""
    return None if isinstance(plan, str) else plan


def conv2d_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
                mode: str, pointwise: bool, x: str = "input", y: str = "output", sparse: bool = False) -> Plan | None:
    """conv2d_plan_why, None instead of the reason."""
    return plan_or_none(conv2d_plan_why(k, x_shape, w, bias, y_shape, mode=mode, pointwise=pointwise, x=x, y=y,
                                        sparse=sparse))


def mode_why_not(f, mode: str, act_range: tuple[int, int]) -> str | None:
    """Why the requantization mode `mode` is not exact for the Folded layer f (None when it is)."""
    if mode in f.modes:
        return None
    if tuple(act_range) != (-128, 127):
        return "output range is not [-128, 127] (the clamping variant applies)"
    if mode == "relu":
        return "output zero point is not -128 or a multiplier is 0.5 or more"
    if mode == "onnx":
        return "a requantization tie is reachable or a multiplier is 0.5 or more"
    if mode == "onnx_tie":
        return "a multiplier is 0.5 or more (the clamping variant applies)"
    if mode == F32:
        return "not rounding onnx"
    return f"requantization mode {mode} does not apply"


def conv2d_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                    y_shape: tuple[int, ...], *, mode: str, pointwise: bool, x: str = "input", y: str = "output",
                    sparse: bool = False) -> Plan | str:
    """(argument list, scratch bytes) of the dsp conv2d entry point for requantization `mode`
    (packing.WEIGHTED_MODES; its rounding, packing.mode_rounding, is the one computed; F32: onnxruntime's
    float32 output stage, the scales in the blob's multiplier slots), pointwise (dsp/conv2d_1x1)
    or general (dsp/conv2d), given the conv2d_s8 keyword arguments `k`, OHWI weights and the tensor
    names x, y; sparse (pointwise only, dsp/conv2d_1x1_sparse): the live output channels only, the
    ones proven constant written from a row (packing.pack_sparse_gemm_blob; the live count is one more
    argument before the blob). When that entry point does not apply, the first reason in the user's
    words (a string): grouped conv, a requantization it cannot do exactly (packing.fold_layer_why;
    channels whose output is provably constant are packed as such), the mode, no constant channel
    (sparse), or for the 1x1 kernel a kernel other than 1x1, padding, or in_c % 4 != 0.
    Weights of -128 are exact (each product has its own int16 lane, SMLAD sums in 32 bits)."""
    cin, (oh, ow) = x_shape[3], y_shape[1:3]
    if w.shape[3] != cin:
        return "grouped convolution"
    if pointwise:
        if w.shape[1:3] != (1, 1):
            return "kernel is not 1x1"
        if any(k["pad"]):
            return "padding"
        if cin % 4:
            return "input channels not a multiple of 4"
        if (oh - 1) * k["stride"][0] >= x_shape[1] or (ow - 1) * k["stride"][1] >= x_shape[2]:
            return "output larger than the strided input"
    w2d = w.reshape(w.shape[0], -1)
    act = (k["act_min"], k["act_max"])
    f = fold_layer_why(w2d, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"], act,
                       constants=True, rounding=mode_rounding(mode))
    if isinstance(f, str):
        return f
    why = mode_why_not(f, mode, act)
    if why:
        return why
    if mode in ("relu", "full") and not sparse and np.any((f.e < 1) | (f.e > 23)):
        # the 2x3 GEMM (ecc_dsp_gemm3.h) adds k << (e - 1) in 32 bits: relu and full take e in [1, 23]
        return f"a requantization shift outside [1, 23] (the {mode} mode of the 2x3 GEMM, ecc_dsp_gemm3.h)"
    groups = gemm_groups(w2d.shape[1], 8 if sparse else 4)  # the 2x3 kernels take any group count
    if sparse:  # pointwise only: the general kernel's im2col loop has no sparse form
        blob = pack_sparse_gemm_blob(f, mode) if pointwise else None
    else:
        blob = pack_gemm_blob(f.w, f, mode, pad=4)
    if blob is None:
        return "no constant output channel"
    split = split_constants(f.const) if sparse else None
    live = [int(split.live.size)] if split else []
    geometry = [*k["stride"]] if pointwise else [*k["stride"], *k["pad"], *k["dilation"], -k["input_offset"]]
    args = [*map(CArg.lit, [*geometry, k["act_min"], k["act_max"]]), *map(CArg.lit, x_shape), CArg("act", x),
            *map(CArg.lit, [*([] if pointwise else w.shape[1:3]), groups, *live]),
            CArg("array", blob, "wpack", split.skipped(w2d.shape[1], bias is not None) if split else (0, 0)),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # q15 columns (two for the sparse kernel, three for the others: 8 bytes each per 4-k group), plus int8
    # staging for im2col when in_c % 4 != 0
    return args, (8 * (2 if sparse else 3) + 4 * (not pointwise and cin % 4 != 0)) * groups


def _conv2d_node(node: Node, graph: Graph, mode: str, pointwise: bool, sparse: bool = False) -> Plan | str:
    if node.attrs.groups != 1:
        return "grouped convolution"
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return conv2d_plan_why(conv2d.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode,
                           pointwise=pointwise, x=x.name, y=y.name, sparse=sparse)


def planned_variant(op: str, variant: str, mode: str, plan, **kw) -> KernelVariant:
    """dsp_variant whose predicate, scratch, arguments and why_not all come from plan(node, graph),
    a (arguments, scratch bytes) pair or the reason it does not apply (a string)."""
    def why_not(node: Node, graph: Graph) -> str | None:
        p = plan(node, graph)
        return p if isinstance(p, str) else None

    return dsp_variant(op, variant, mode=mode, applies=lambda n, g: why_not(n, g) is None,
                       scratch_bytes=lambda n, g: plan(n, g)[1], args=lambda n, g: plan(n, g)[0],
                       why_not=why_not, **kw)


def _conv2d_dsp(mode: str, pointwise: bool, sparse: bool = False) -> KernelVariant:
    return planned_variant("conv2d", "1x1_sparse" if sparse else "1x1" if pointwise else "", mode,
                           lambda n, g: _conv2d_node(n, g, mode, pointwise, sparse),
                           headers=() if sparse else ("dsp/ecc_dsp_gemm3.h",))


# sparse first: it only applies to layers with a constant channel, which it then runs faster
CONV2D = (*(_conv2d_dsp(mode, True, True) for mode in WEIGHTED_MODES),
          *(_conv2d_dsp(mode, pointwise) for pointwise in (True, False) for mode in WEIGHTED_MODES))


# ---- DSP variants (c_templates/kernels/dsp/): predicates, scratch, argument lists -----------
def depthwise_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                   y_shape: tuple[int, ...], *, mode: str, three: bool, x: str = "input", y: str = "output",
                   w_arg: CArg | None = None) -> Plan | None:
    """depthwise_plan_why, None instead of the reason."""
    return plan_or_none(depthwise_plan_why(k, x_shape, w, bias, y_shape, mode=mode, three=three, x=x, y=y,
                                           w_arg=w_arg))


def depthwise_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                       y_shape: tuple[int, ...], *, mode: str, three: bool, x: str = "input", y: str = "output",
                       w_arg: CArg | None = None) -> Plan | str:
    """(argument list, scratch bytes) of the dsp depthwise entry point for requantization `mode`
    (packing.WEIGHTED_MODES; F32: `mult` holds the float32 bits of S / 2, the sums being 2 acc), 3x3 (dsp/depthwise_conv2d_3x3) or general, given the depthwise_conv2d_s8 keyword
    arguments `k` and [1, KH, KW, C*mult] weights (w_arg: how the kernel call names them; default a
    new array). When it does not apply, the first reason (a string): a requantization it cannot do
    exactly, the mode, or for the 3x3 kernel another kernel size, dilation, depth multiplier or
    in_c % 4 != 0. Weights of -128 are exact: doubled they are -256 in an int16 lane (SADD16 does
    not saturate), and SMLABB / SMLATT keep each product in 32 bits."""
    _, kh, kw, cout = w.shape
    if three:
        if (kh, kw) != (3, 3):
            return "kernel is not 3x3"
        if tuple(k["dilation"]) != (1, 1):
            return "dilation"
        if k["depth_multiplier"] != 1:
            return "depth multiplier is not 1"
        if x_shape[3] % 4:
            return "input channels not a multiple of 4"
    # [out_c, taps]: output channel oc sums x[oc // mult] * w[tap, oc]; the kernels accumulate 2 acc
    act = (k["act_min"], k["act_max"])
    f = fold_layer_why(w.reshape(-1, cout).T, bias, k["input_offset"], k["out_mult"], k["out_shift"],
                       k["output_offset"], act, doubled=True, rounding=mode_rounding(mode))
    if isinstance(f, str):
        return f
    why = mode_why_not(f, mode, act)
    if why:
        return why
    geometry = [*k["stride"], *k["pad"]] + ([] if three else [*k["dilation"], k["depth_multiplier"]])
    args = [*map(CArg.lit, [*geometry, -k["input_offset"], f.k, k["act_min"], k["act_max"]]),
            CArg("array", f.multipliers(mode, F32_DOUBLED), "mult"), CArg("array", f.shift(mode), "shift"),
            *map(CArg.lit, x_shape),
            CArg("act", x), *map(CArg.lit, [] if three else (kh, kw)), w_arg or CArg("array", w.reshape(-1), "w"),
            CArg("array", f.bias, "bias"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # general: the weights of every full channel quad widened to q15 (8 bytes per quad and tap);
    # 3x3: a 120-byte record per quad (bias, requantization, widened weights) and a ring of three
    # padded input rows widened to q15 (2 bytes per value)
    quads = cout // 4 if k["depth_multiplier"] == 1 else 0
    if three:
        return args, 120 * quads + 3 * 2 * ((y_shape[2] - 1) * k["stride"][1] + 3) * cout
    return args, 8 * quads * kh * kw


PAIRED_MAX_SHIFT = 20  # dsp/depthwise_conv2d_3x3p: |k << shift| < 2^29, so SMMLAR's sum stays in 32 bits
# Shorter t-rows leave the paired kernel's per-call records, per-row widening and tails to too few outputs:
# measured on mps2-an386 (VWW), 6 x 6 x 128 at stride 1 still wins by 2 % over dsp/depthwise_conv2d_3x3
# (6 x 6 x 64 at stride 2 by 13 %), 3 x 3 x 256 loses by 2x.
PAIRED_MIN_COLUMNS = {1: 6, 2: 6}


def paired_transposed(out_h: int, out_w: int) -> bool:
    """Whether dsp/depthwise_conv2d_3x3p pairs taps along the height (its ecc_dwp_transposed): when the
    width leaves a tail of outputs (out_w % 4) and the height does not, or the height is longer."""
    return out_w % 4 != 0 and (out_h % 4 == 0 or out_h > out_w)


def depthwise_paired_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                              y_shape: tuple[int, ...], *, pstride: int, x: str = "input", y: str = "output",
                              w_arg: CArg | None = None) -> Plan | str:
    """(argument list, scratch bytes) of dsp/depthwise_conv2d_3x3p (tap-paired SMLAD, RELU mode only),
    entry point for stride `pstride` (1 or 2) along the paired axis (paired_transposed: the height or the
    width; the other stride 1 to 3) and at least PAIRED_MIN_COLUMNS outputs along it: the arguments of
    the 3x3 kernel's RELU entry point, for shifts <= PAIRED_MAX_SHIFT (the kernel adds k << shift to the
    high product); else the reason (a string). Exact for every weight (-128 doubled is -256 in an int16
    lane) and zero point (padding holds it, the bias folds it).
    Scratch: a 48-byte record per channel, per channel a plane of q15 input, 24 bytes per group of four
    columns (ng groups: those the t-row's steps of four outputs and its tail read), and a row of in_c
    zero points (the padding columns' source)."""
    plan = depthwise_plan_why(k, x_shape, w, bias, y_shape, mode="relu", three=True, x=x, y=y, w_arg=w_arg)
    if isinstance(plan, str):
        return plan
    tr = paired_transposed(y_shape[1], y_shape[2])
    sh, sw = k["stride"][::-1] if tr else k["stride"]
    otw = y_shape[1] if tr else y_shape[2]
    if sw != pstride:
        return f"stride along the paired axis is not {pstride}"
    if not 1 <= sh <= 3:
        return "stride across the paired axis is above 3"
    if otw < PAIRED_MIN_COLUMNS[pstride]:
        return f"fewer than {PAIRED_MIN_COLUMNS[pstride]} outputs along the paired axis"
    shift = next(a.value for a in plan[0] if a.name == "shift")
    if int(np.max(shift)) > PAIRED_MAX_SHIFT:
        return f"a shift is above {PAIRED_MAX_SHIFT}"
    nb, rem = divmod(otw, 4)
    ng = nb + 1 + (rem == 3) if pstride == 1 else 2 * nb + 1 + (rem >= 2)
    return plan[0], 48 * y_shape[3] + 24 * ng * y_shape[3] + x_shape[3]


def _depthwise_node(node: Node, graph: Graph, mode: str, three: bool, paired: int = 0) -> Plan | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    if paired:
        return depthwise_paired_plan_why(depthwise_conv2d.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape,
                                         pstride=paired, x=x.name, y=y.name, w_arg=CArg("const", w.name))
    return depthwise_plan_why(depthwise_conv2d.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode,
                              three=three, x=x.name, y=y.name, w_arg=CArg("const", w.name))


def _depthwise_dsp(mode: str, three: bool) -> KernelVariant:
    return planned_variant("depthwise_conv2d", "3x3" if three else "", mode,
                           lambda n, g: _depthwise_node(n, g, mode, three), headers=("dsp/ecc_dsp_depthwise.h",))


def _paired_dsp(pstride: int) -> KernelVariant:
    """dsp/depthwise_conv2d_3x3p's entry point for stride `pstride` along the paired axis (both in one
    template: a model links only the one it calls)."""
    v = planned_variant("depthwise_conv2d", "3x3p" if pstride == 1 else "3x3p_s2", "relu",
                        lambda n, g: _depthwise_node(n, g, "relu", True, paired=pstride))
    return replace(v, template="dsp/depthwise_conv2d_3x3p_s8.c.j2")


# the tap-paired 3x3 kernel first: where it applies (RELU layers, strides 1 and 2) it is the fastest
DEPTHWISE_CONV2D = (_paired_dsp(1), _paired_dsp(2),
                    *(_depthwise_dsp(mode, three) for three in (True, False) for mode in WEIGHTED_MODES))


# ---- DSP variant (c_templates/kernels/dsp/): predicate, scratch, argument list ---------------
def fc_plan(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None, y_shape: tuple[int, ...], *,
            x: str = "input", y: str = "output", rounding: str = "tflm") -> Plan | None:
    """fc_plan_why, None instead of the reason."""
    return plan_or_none(fc_plan_why(k, x_shape, w, bias, y_shape, x=x, y=y, rounding=rounding))


def fc_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                y_shape: tuple[int, ...], *, x: str = "input", y: str = "output",
                rounding: str = "tflm") -> Plan | str:
    """(argument list, scratch bytes) of dsp/fully_connected (entry point ecc_dsp_fully_connected_s8,
    or ecc_dsp_fully_connected_onnx_s8 for rounding "onnx") for the fully_connected_s8 keyword
    arguments `k` and [O, K] weights; when it does not apply, the first reason (a string): a weight
    zero point, a requantization it cannot do exactly (packing.fold_layer_why, where channels whose
    output is provably constant are packed as such), -128 weights or an accumulator bound of 2^23 or
    more (packing.fc_blob_why_not). The requantization mode, passed as its ECC_DSP_* number: the fastest
    exact one of TFLM's (packing.MODES), or F32 for rounding "onnx" (onnxruntime's float32 stage)."""
    if k["filter_offset"] != 0:
        return "weight zero point is not 0"
    f = fold_layer_why(w, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                       (k["act_min"], k["act_max"]), constants=True, rounding=rounding)
    if isinstance(f, str):
        return f
    why = fc_blob_why_not(f)
    if why:
        return why
    mode, blocks = F32 if rounding == "onnx" else f.modes[0], fc_blocks(w.shape[1])
    blob = pack_fc_blob(f, mode)
    args = [*map(CArg.lit, [f.k, k["act_min"], k["act_max"], C_MODES.index(mode), *x_shape]), CArg("act", x),
            CArg.lit(blocks), CArg("array", blob, "wpack"), CArg.lit(y_shape[1]), CArg("act", y)]
    return args, 16 * blocks  # one batch row widened to q15, 16 bytes per 8-k block


def _fc_node(node: Node, graph: Graph, rounding: str) -> Plan | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return fc_plan_why(fully_connected.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, x=x.name, y=y.name,
                       rounding=rounding)


# one entry point per rounding; the mode within it is an argument
FULLY_CONNECTED = planned_variant("fully_connected", "", "full", lambda n, g: _fc_node(n, g, "tflm"))
FULLY_CONNECTED_ONNX = planned_variant("fully_connected", "", F32, lambda n, g: _fc_node(n, g, "onnx"))


def fc_as_conv_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                        y_shape: tuple[int, ...], *, mode: str, pointwise: bool, x: str = "input",
                        y: str = "output") -> Plan | str:
    """A fully connected layer [N, K] x [O, K] as the dsp conv2d GEMM (conv2d_plan_why) of a 1 x N image
    with K channels and a 1x1 kernel: the fallback of dsp/fully_connected for what its 16-bit lane
    pairs cannot take (weights holding -128, accumulators of 2^23 or more), each product in its own
    lane there. pointwise: dsp/conv2d_1x1 (K % 4 == 0), else dsp/conv2d (any K)."""
    if k["filter_offset"] != 0:
        return "weight zero point is not 0"
    conv = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), **{n: k[n] for n in (
        "input_offset", "output_offset", "out_mult", "out_shift", "act_min", "act_max")})
    n, kd = x_shape
    return conv2d_plan_why(conv, (1, 1, n, kd), w.reshape(w.shape[0], 1, 1, kd), bias, (1, 1, n, y_shape[1]),
                           mode=mode, pointwise=pointwise, x=x, y=y)


def _fc_conv_node(node: Node, graph: Graph, mode: str, pointwise: bool) -> Plan | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    bias = graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None
    return fc_as_conv_plan_why(fully_connected.s8_kwargs(node, graph), x.shape, w.data, bias, y.shape, mode=mode,
                               pointwise=pointwise, x=x.name, y=y.name)


# after FULLY_CONNECTED*: the conv2d entry points, reported as kernel "dsp_gemm[_1x1][_<mode>]"
FULLY_CONNECTED_AS_CONV = tuple(
    replace(v, name="dsp_gemm" + v.name.removeprefix("dsp")) for v in (
        planned_variant("conv2d", "1x1" if pointwise else "", mode,
                        lambda n, g, m=mode, p=pointwise: _fc_conv_node(n, g, m, p), headers=("dsp/ecc_dsp_gemm3.h",))
        for pointwise in (True, False) for mode in WEIGHTED_MODES))


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
def add_why_not(node: Node, graph: Graph) -> str | None:
    """Why dsp/add does not apply to an Add node (None when it does)."""
    if needs_broadcast(node, graph):
        return "broadcast"
    if graph.t(node.outputs[0]).size < DSP_MIN_SIZE:
        return f"fewer than {DSP_MIN_SIZE} elements (the tables would not pay)"
    if not dsp_exact(add.params(node, graph)[0]):
        return "requantization multiplier out of range"
    return None


# (the onnx entry point: the output stage of rounding onnx, the input terms as TFLM's in both, as portable add)
ADD, ADD_ONNX = (dsp_variant("add", mode=mode, applies=lambda n, g: add_why_not(n, g) is None, why_not=add_why_not,
                             scratch_bytes=lambda n, g: 2 * 256 * 4, inplace_inputs=(0, 1))
                 for mode in ("full", "onnx"))


# ---- DSP variants (c_templates/kernels/dsp/): the portable argument lists, no scratch ---------
# avg: four channels summed in int16 lanes, exact while a window holds at most 255 cells
def _avg_cells(node: Node) -> int:
    return node.attrs.window.kernel[0] * node.attrs.window.kernel[1]


# onnx: the portable twin's arguments (pad_value = the input zero point)
AVG_POOL2D, AVG_POOL2D_ONNX = (dsp_variant(
    "avg_pool2d", mode=mode, applies=lambda n, g: _avg_cells(n) <= 255, scratch_bytes=lambda n, g: 0,
    why_not=lambda n, g: "window of more than 255 cells" if _avg_cells(n) > 255 else None,
    args=None if mode == "full" else lambda n, g: REGISTRY[OpKind.AVG_POOL2D]._onnx_args(n, g))
    for mode in ("full", "onnx"))
MAX_POOL2D = dsp_variant("max_pool2d", applies=lambda n, g: True, scratch_bytes=lambda n, g: 0,
                         roundings=("tflm", "onnx"))  # rounds nothing



add_variants(OpKind.CONV2D, *CONV2D)
add_variants(OpKind.DEPTHWISE_CONV2D, *DEPTHWISE_CONV2D)
add_variants(OpKind.FULLY_CONNECTED, FULLY_CONNECTED, FULLY_CONNECTED_ONNX, *FULLY_CONNECTED_AS_CONV)
add_variants(OpKind.ADD, ADD, ADD_ONNX)
add_variants(OpKind.AVG_POOL2D, AVG_POOL2D, AVG_POOL2D_ONNX)
add_variants(OpKind.MAX_POOL2D, MAX_POOL2D)
