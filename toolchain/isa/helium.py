"""The Helium (MVE) kernel variants for the Cortex-M55 (c_templates/kernels/helium/): the predicates
(when a variant is exact, and why_not: the first reason it is not), scratch sizes and argument
lists, and the KernelVariant tuples the op modules list; the offline weight re-packing and bias
folding are helium_pack.py, the choice of requantization entry point helium_rq.py. Every variant
requires the board feature `mve` (KernelVariant.requires), the `_onnx` ones of Conv / depthwise / FC
also `mve_fp` (onnxruntime's float32 output stage).

GEMM kernels (conv2d, conv2d_1x1, fully_connected) multiply with VMLADAV(A).S8: each product and
sum is exact in 32 bits, no two products share a 16-bit lane, so weights of -128 are accepted
(BL-04 does not apply). The depthwise kernel sums two products in one int16 lane where every weight
is in [-127, 127] (checked on the actual weights); a layer holding -128 runs the same kernel with
every tap widened alone (tap_pairs = 0). 3x3 depthwise layers of stride_w 1 and >= 16 channels take
depthwise_conv2d_3x3 first: one VMLADAV.S8 per output over a gathered 4 x 4 window, every product
and sum exact in 32 bits (any weight).

Exactness: the accumulators are int32 and wrap like the portable kernels' int32 sums, so folding
the input offset into the bias (mod 2^32) changes nothing; the vectorised requantization equals
TFLite's MultiplyByQuantizedMultiplier for shifts in [-31, 0] and multipliers in [0, 2^31)
(ecc_helium.h), and under rounding "onnx" the `_onnx` entry points of Conv / depthwise / FC do the
float32 operations of fixed_point.requantize_s8_f32 (the portable `_onnx` twins). Each variant's
why_not gives the first reason it does not apply. The C side of these conventions is documented in
c_templates/kernels/helium/ecc_helium.h.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node
# the offline parts, also reached through this module (tests: hv.fold, hv.pack_gemm, hv.DW_LANES ...)
from toolchain.isa.helium_pack import DW_LANES, Folded, fold, wrap32  # noqa: F401
from toolchain.isa.helium_pack import (as_mode, fold_or_reason, lane_safe, lanes_px, mode_reason, n_chunks,
                                       pack_depthwise, pack_depthwise_3x3, pack_gemm, pack_sparse_gemm)
from toolchain.isa.helium_rq import MODES, ONNX, ONNX_FEATURES, ONNX_FEATURES_WHY, add_onnx_reason
from toolchain.isa.packing import ConstantSplit, fold_bias, layer_constants, split_constants
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.binary import needs_broadcast
from toolchain.ops.fixed_point import graph_rounding, requantize_s8_f32
from toolchain.ops.pool2d import AvgPool2D
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants

HELIUM_HEADERS = ("helium/ecc_helium_kernels.h", "helium/ecc_helium.h")
MVE = frozenset({"mve"})
# requantization entry points (helium_rq): "relu" = ECC_HELIUM_NOFIX, "full" = ECC_HELIUM_FIX (rounding
# tflm), "onnx" = ECC_HELIUM_F32 for Conv / depthwise / FC (rounding onnx; Add: ECC_HELIUM_RNE[_TIES])
Plan = tuple[list[CArg], int]  # (argument list, scratch bytes)


# ---- variant factory ----------------------------------------------------------------------------
TAILS = {"relu": "_relu", "full": "", ONNX: "_onnx", "any": ""}


def rounding_of(mode: str) -> str | None:
    """The model rounding (YAML `rounding`) an entry point of requantization `mode` serves (None: an
    op without rounding, mode "any")."""
    return None if mode == "any" else "onnx" if mode == ONNX else "tflm"


def helium_variant(op: str, variant: str = "", *, mode: str = "full", applies: Callable[[Node, Graph], bool],
                   scratch_bytes: Callable[[Node, Graph], int] = lambda n, g: 0,
                   args: Callable[[Node, Graph], list[CArg]] | None = None,
                   why_not: Callable[[Node, Graph], str | None] = lambda n, g: None, requires: frozenset = MVE,
                   **kw: Any) -> KernelVariant:
    """The helium/<op>[_<variant>]_s8.c.j2 entry point for one requantization mode: function
    ecc_helium_<op>[_<variant>][_relu|_onnx]_s8, reported as kernel "helium[_<variant>][<same>]",
    applying only to graphs of its rounding (fixed_point.graph_rounding); why_not: the first reason
    it does not apply (the given why_not; None under the other rounding, where the twin speaks);
    requires: the board features it needs (kw may give KernelVariant.requires_why)."""
    stem = f"{op}_{variant}" if variant else op
    tail, rounding = TAILS[mode], rounding_of(mode)

    def reason(n: Node, g: Graph) -> str | None:
        if rounding is not None and graph_rounding(g) != rounding:
            return None  # not a candidate under the model's rounding: its twin gives the reason (as dsp, neon)
        return why_not(n, g)

    return KernelVariant(f"helium{'_' + variant if variant else ''}{tail}", "helium", f"helium/{stem}_s8.c.j2",
                         f"ecc_helium_{stem}{tail}_s8",
                         lambda n, g: rounding in (None, graph_rounding(g)) and applies(n, g),
                         scratch_bytes, args, HELIUM_HEADERS, requires=requires, why_not=reason, **kw)


def _plan_variant(op: str, variant: str, mode: str, plan: Callable[[Node, Graph], Plan | str],
                  **kw: Any) -> KernelVariant:
    """A variant of a weighted op (Conv / depthwise / FC) from a plan: (argument list, scratch bytes)
    when it applies, else the reason; its onnx mode (float32 output stage) also needs mve_fp."""
    if mode == ONNX:
        kw = dict(requires=MVE | ONNX_FEATURES, requires_why=ONNX_FEATURES_WHY, **kw)
    return helium_variant(op, variant, mode=mode, applies=lambda n, g: not isinstance(plan(n, g), str),
                          scratch_bytes=lambda n, g: plan(n, g)[1], args=lambda n, g: plan(n, g)[0],
                          why_not=lambda n, g: r if isinstance(r := plan(n, g), str) else None, **kw)


def _plan_or_none(plan: Plan | str) -> Plan | None:
    return None if isinstance(plan, str) else plan


def _bias(node: Node, graph: Graph) -> np.ndarray | None:
    return graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None


# ---- conv2d: pointwise (rows straight from the input) and general (im2col) ----------------------
def _sparse_split(w2d: np.ndarray, bias: np.ndarray | None, k: dict, mode: str) -> ConstantSplit | str:
    """The constant channels of a 1x1 layer (packing.layer_constants, TFLM rounding), their row values
    re-derived with onnx's float32 output stage (requantize_s8_f32) for mode "onnx" (both monotone
    in the accumulator: a channel is constant iff its two extreme accumulators agree; a channel
    constant under one rounding but not the other leaves the layer to the dense kernel); the reason
    when there is none."""
    act = (k["act_min"], k["act_max"])
    split = split_constants(layer_constants(w2d, bias, k["input_offset"], k["out_mult"], k["out_shift"],
                                            k["output_offset"], act))
    if split is None:
        return "no output channel is constant"
    if rounding_of(mode) != "onnx":
        return split
    o = w2d.shape[0]
    mult = np.broadcast_to(np.asarray(k["out_mult"], np.int64).reshape(-1), (o,))
    shift = np.broadcast_to(np.asarray(k["out_shift"], np.int64).reshape(-1), (o,))
    w = w2d.astype(np.int64)
    b = np.where(mult != 0, fold_bias(w2d, bias, k["input_offset"]), 0)
    # the ends of a constant channel's range are inside int32 (layer_constants): no wrap to model
    ends = [requantize_s8_f32(b + np.where(w > 0, e * w, (-1 - e) * w).sum(axis=1), mult, shift,
                              int(k["output_offset"]), *act) for e in (-128, 127)]
    const = np.setdiff1d(np.arange(o), split.live)
    if np.any(ends[0][const] != ends[1][const]):
        return "a channel constant under TFLM rounding is not constant under onnx rounding"
    row = split.row.copy()
    row[const] = ends[0][const]
    return ConstantSplit(split.live, row)


def conv_plan_or_reason(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                        y_shape: tuple[int, ...], *, mode: str, pointwise: bool, x: str = "input", y: str = "output",
                        sparse: bool = False) -> Plan | str:
    """(argument list, scratch bytes) of helium conv2d_1x1 (pointwise) or conv2d for requantization
    `mode`, given the conv2d_s8 keyword arguments `k`, OHWI weights and the tensor names x, y; the
    reason (user's words) when that entry point does not apply: grouped conv, a requantization it
    cannot do exactly, or for the 1x1 kernel a kernel other than 1x1 or padding. sparse (pointwise
    only: conv2d_1x1_sparse): the live output channels only, the ones proven constant
    (packing.layer_constants) written from a row (pack_sparse_gemm; the live count is one more
    argument before the blob, whose CArg.skipped counts the parameters not stored); not when no
    channel is constant (such layers keep the dense kernel and its C)."""
    cin, (oh, ow) = x_shape[3], y_shape[1:3]
    if w.shape[3] != cin:
        return "grouped convolution"
    if pointwise and (w.shape[1:3] != (1, 1) or any(k["pad"])):
        return "not a 1x1 kernel without padding"
    if pointwise and ((oh - 1) * k["stride"][0] >= x_shape[1] or (ow - 1) * k["stride"][1] >= x_shape[2]):
        return "the output reads past the input"
    w2d = w.reshape(w.shape[0], -1)
    f = fold_or_reason(w2d, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                       (k["act_min"], k["act_max"]))
    if (why := mode_reason(f, mode)) is not None:
        return why
    f = as_mode(f, mode)  # the record words this entry point reads
    quant = [k["output_offset"], k["act_min"], k["act_max"]]
    if sparse:
        split = _sparse_split(w2d, bias, k, mode) if pointwise else "not a 1x1 kernel without padding"
        if isinstance(split, str):
            return split
        args = [*map(CArg.lit, [*k["stride"], *quant, *x_shape]), CArg("act", x), CArg.lit(split.live.size),
                CArg("array", pack_sparse_gemm(w2d, f, split), "wpack", split.skipped(cin, bias is not None)),
                *map(CArg.lit, y_shape[1:]), CArg("act", y)]
        return args, (2 * (16 * n_chunks(cin) + 16) if cin % 16 else 0)
    if pointwise:
        args = [*map(CArg.lit, [*k["stride"], *quant, *x_shape]), CArg("act", x),
                CArg("array", pack_gemm(w2d, f), "wpack"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
        return args, (2 * (16 * n_chunks(cin) + 16) if cin % 16 else 0)  # rows staged at the input's end
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], -k["input_offset"], *quant, *x_shape]),
            CArg("act", x), *map(CArg.lit, w.shape[1:3]), CArg("array", pack_gemm(w2d, f), "wpack"),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    return args, 2 * (16 * n_chunks(w2d.shape[1]) + 16)  # two im2col rows, 16 bytes of slack each


def conv_plan(*args: Any, **kw: Any) -> Plan | None:
    """conv_plan_or_reason, None instead of a reason."""
    return _plan_or_none(conv_plan_or_reason(*args, **kw))


def _conv_node(mode: str, pointwise: bool, sparse: bool = False) -> Callable[[Node, Graph], Plan | str]:
    def plan(node: Node, graph: Graph):
        if node.attrs.groups != 1:
            return "grouped convolution"
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return conv_plan_or_reason(conv2d.s8_kwargs(node, graph), x.shape, w.data, _bias(node, graph), y.shape,
                                   mode=mode, pointwise=pointwise, x=x.name, y=y.name, sparse=sparse)
    return plan


# sparse first: it applies only to 1x1 layers with a constant output channel, which it runs faster
CONV2D = (tuple(_plan_variant("conv2d", "1x1_sparse", mode, _conv_node(mode, True, True)) for mode in MODES)
          + tuple(_plan_variant("conv2d", "1x1" if pw else "", mode, _conv_node(mode, pw))
                  for pw in (True, False) for mode in MODES))


# ---- fully connected -----------------------------------------------------------------------------
def fc_plan_or_reason(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                      y_shape: tuple[int, ...], *, mode: str, x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of helium fully_connected for the fully_connected_s8 keyword
    arguments `k` and [O, K] weights; the reason when it does not apply (a weight zero point or a
    requantization it cannot do exactly)."""
    if k["filter_offset"] != 0:
        return "a non-zero weight zero point"
    f = fold_or_reason(w, bias, k["input_offset"], k["out_mult"], k["out_shift"], k["output_offset"],
                       (k["act_min"], k["act_max"]))
    if (why := mode_reason(f, mode)) is not None:
        return why
    f = as_mode(f, mode)  # the record words this entry point reads
    args = [*map(CArg.lit, [k["output_offset"], k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            CArg("array", pack_gemm(w, f), "wpack"), CArg.lit(y_shape[1]), CArg("act", y)]
    return args, (2 * 16 * n_chunks(w.shape[1]) if w.shape[1] % 16 else 0)  # rows staged when K % 16 != 0


def fc_plan(*args: Any, **kw: Any) -> Plan | None:
    """fc_plan_or_reason, None instead of a reason."""
    return _plan_or_none(fc_plan_or_reason(*args, **kw))


def _fc_node(mode: str) -> Callable[[Node, Graph], Plan | str]:
    def plan(node: Node, graph: Graph):
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return fc_plan_or_reason(fully_connected.s8_kwargs(node, graph), x.shape, w.data, _bias(node, graph),
                                 y.shape, mode=mode, x=x.name, y=y.name)
    return plan


FULLY_CONNECTED = tuple(_plan_variant("fully_connected", "", mode, _fc_node(mode)) for mode in MODES)


# ---- depthwise conv2d ------------------------------------------------------------------------------
def _dw_fold(k: dict, w: np.ndarray, bias: np.ndarray | None, mode: str) -> Folded | str:
    """The folded layer of [1, KH, KW, C] depthwise weights as requantization `mode`'s entry points read
    it (as_mode), or the reason it does not apply: a depth multiplier other than 1, or a requantization
    the mode cannot do exactly."""
    if k["depth_multiplier"] != 1:
        return f"depth multiplier {k['depth_multiplier']}"
    f = fold_or_reason(w.reshape(-1, w.shape[-1]).T, bias, k["input_offset"], k["out_mult"], k["out_shift"],
                       k["output_offset"], (k["act_min"], k["act_max"]))
    if (why := mode_reason(f, mode)) is not None:
        return why
    return as_mode(f, mode)


def dw_plan_or_reason(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                      y_shape: tuple[int, ...], *, mode: str, x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of helium depthwise_conv2d for requantization `mode`, given the
    depthwise_conv2d_s8 keyword arguments `k` and [1, KH, KW, C] weights; the reason when it does not
    apply: a depth multiplier other than 1, or a requantization it cannot do exactly. Weights
    holding -128 set tap_pairs = 0 (no int16 pair sums: BL-04)."""
    _, kh, kw, c = w.shape
    f = _dw_fold(k, w, bias, mode)
    if isinstance(f, str):
        return f
    px = lanes_px(c, k["stride"][1])
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], px, int(lane_safe(w)), -k["input_offset"],
                            k["output_offset"], k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            *map(CArg.lit, (kh, kw)), CArg("array", pack_depthwise(w, f, px), "wpack"), *map(CArg.lit, y_shape[1:]),
            CArg("act", y)]
    # tap offsets, then k_h input rows padded with the zero point (16 bytes of slack each)
    wp = (y_shape[2] - 1) * k["stride"][1] + (kw - 1) * k["dilation"][1] + 1
    return args, -(-4 * kh * kw // 16) * 16 + kh * ((wp * c + 31) // 16 * 16)


# measured on the MLPerf Tiny VWW / KWS layers (mps3-an547): with fewer channels (two blocks of four per pixel
# pair) or stride_w 2 (one output per window, two interleaved columns per output) the channel-parallel kernel takes
# fewer estimated cycles
DW3_MIN_CHANNELS = 16


def dw3_plan_or_reason(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias: np.ndarray | None,
                       y_shape: tuple[int, ...], *, mode: str, x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of helium depthwise_conv2d_3x3 (pixel-parallel VMLADAV) for
    requantization `mode`; the reason when it does not apply: a window other than 3x3, dilation,
    stride_w other than 1, fewer than DW3_MIN_CHANNELS channels, a depth multiplier other than 1, or a
    requantization it cannot do exactly. Any weight value (-128 included): every
    product and sum is exact in 32 bits."""
    _, kh, kw, c = w.shape
    if (kh, kw) != (3, 3) or tuple(k["dilation"]) != (1, 1):
        return "not a 3x3 window without dilation"
    if k["stride"][1] != 1:
        return f"stride_w {k['stride'][1]} (the channel-parallel kernel is faster there)"
    if c < DW3_MIN_CHANNELS:
        return f"fewer than {DW3_MIN_CHANNELS} channels (the channel-parallel kernel is faster there)"
    f = _dw_fold(k, w, bias, mode)
    if isinstance(f, str):
        return f
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], -k["input_offset"], k["output_offset"], k["act_min"],
                            k["act_max"], *x_shape]), CArg("act", x),
            CArg("array", pack_depthwise_3x3(w, f), "wpack"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    # the interleaved rows (cols + 1 columns of c words, 64 bytes of VST4 slack), a row of the zero point
    # (16 bytes of slack)
    cols = y_shape[2] + 2
    return args, -(-(4 * (cols + 1) * c + 64) // 16) * 16 + -(-c // 16) * 16 + 16


def dw3_plan(*args: Any, **kw: Any) -> Plan | None:
    """dw3_plan_or_reason, None instead of a reason."""
    return _plan_or_none(dw3_plan_or_reason(*args, **kw))


def dw_plan(*args: Any, **kw: Any) -> Plan | None:
    """dw_plan_or_reason, None instead of a reason."""
    return _plan_or_none(dw_plan_or_reason(*args, **kw))


def _dw_node(mode: str, planner: Callable[..., Plan | str] = dw_plan_or_reason) -> Callable[[Node, Graph], Plan | str]:
    def plan(node: Node, graph: Graph):
        x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
        return planner(depthwise_conv2d.s8_kwargs(node, graph), x.shape, w.data, _bias(node, graph),
                       y.shape, mode=mode, x=x.name, y=y.name)
    return plan


# the 3x3 kernel first: where it applies (3x3, stride_w 1, 16 channels or more) it takes fewer instructions and cycles
DEPTHWISE_CONV2D = (tuple(_plan_variant("depthwise_conv2d", "3x3", mode, _dw_node(mode, dw3_plan_or_reason))
                          for mode in MODES)
                    + tuple(_plan_variant("depthwise_conv2d", "", mode, _dw_node(mode)) for mode in MODES))


# ---- add, average / max pooling: the portable argument lists ---------------------------------------
ADD_MIN_SIZE = 64  # the two 256-entry tables cost about 1.2k instructions


def add_exact(p) -> bool:
    """Whether helium/add is exact for AddParams p: its tables and requantization are TFLite's
    MultiplyByQuantizedMultiplier for shifts in [-31, 0] and multipliers in [0, 2^31) (a left shift
    up to 23 keeps (x + offset) << left_shift inside int32)."""
    return _add_reason(p) is None


def _add_reason(p) -> str | None:
    shifts = (p.input1_shift, p.input2_shift, p.output_shift)
    mults = (p.input1_mult, p.input2_mult, p.output_mult)
    if not (0 <= p.left_shift <= 23 and all(-31 <= s <= 0 for s in shifts) and all(0 <= m < 2**31 for m in mults)):
        return "an input or output scale ratio outside what its fixed-point tables hold"
    return None


def add_why_not(p, mode: str) -> str | None:
    """Why helium/add (mode "full") or add_onnx (mode "onnx") is not exact for AddParams p (None: it is)."""
    return _add_reason(p) or (add_onnx_reason(p) if mode == ONNX else None)


def _add_node(mode: str) -> Callable[[Node, Graph], str | None]:
    def why_not(node: Node, graph: Graph) -> str | None:
        if needs_broadcast(node, graph):
            return "the inputs broadcast"
        if graph.t(node.outputs[0]).size < ADD_MIN_SIZE:
            return f"fewer than {ADD_MIN_SIZE} elements (the tables cost more than they save)"
        return add_why_not(add.params(node, graph)[0], mode)
    return why_not


def _avg_why_not(node: Node, graph: Graph) -> str | None:
    return "a window of more than 255 cells" if np.prod(node.attrs.window.kernel) > 255 else None


# like the portable flat kernel, the output may alias an input
ADD = tuple(helium_variant("add", mode=mode, applies=lambda n, g, w=_add_node(mode): w(n, g) is None,
                           why_not=_add_node(mode), scratch_bytes=lambda n, g: 2 * 256 * 4, inplace_inputs=(0, 1))
            for mode in ("full", ONNX))
# avg: 16 channels summed in int16 lanes, exact while a window holds at most 255 cells; the onnx twin takes the
# portable twin's arguments (the padding worth the zero point)
AVG_POOL2D = (helium_variant("avg_pool2d", applies=lambda n, g: _avg_why_not(n, g) is None, why_not=_avg_why_not),
              helium_variant("avg_pool2d", mode=ONNX, applies=lambda n, g: _avg_why_not(n, g) is None,
                             why_not=_avg_why_not, args=lambda n, g: AvgPool2D()._onnx_args(n, g)))
# no rounding: one entry point for both
MAX_POOL2D = (helium_variant("max_pool2d", mode="any", applies=lambda n, g: True),)


add_variants(OpKind.CONV2D, *CONV2D)
add_variants(OpKind.DEPTHWISE_CONV2D, *DEPTHWISE_CONV2D)
add_variants(OpKind.FULLY_CONNECTED, *FULLY_CONNECTED)
add_variants(OpKind.ADD, *ADD)
add_variants(OpKind.AVG_POOL2D, *AVG_POOL2D)
add_variants(OpKind.MAX_POOL2D, *MAX_POOL2D)
