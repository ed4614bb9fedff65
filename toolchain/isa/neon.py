"""The NEON kernel variants for AArch64 (c_templates/kernels/neon/): offline weight re-packing, the
input zero point folded into the bias, the requantization blob, the predicates (when a variant is
exact), scratch sizes and argument lists, and the KernelVariant tuples the op modules list.

Two paths. `_dot` variants use the Armv8.2 dot product (SDOT) and require the board feature
`dotprod` (KernelVariant.requires; boards.yaml isa_features); the others are baseline Armv8.0
(SMULL/SMLAL2 + SADALP). Armv8.0 GEMM and depthwise kernels pair two products in one 16-bit lane,
so their plain entry points need no pair of -128 weights sharing a lane (BL-04: only
(-128)(-128) + (-128)(-128) leaves int16; checked on the actual weights, gemm_pair_safe /
taps_pair_safe); otherwise the `_nopair` twin (one product a lane) is chosen. No NEON kernel multiplies two
activations. The C side of these conventions is documented in c_templates/kernels/neon/ecc_neon.h.

Exactness: the accumulators are int32 and wrap like the portable kernels' int32 sums, so folding
the input offset into the bias (mod 2^32) changes nothing; the vectorised requantization equals
TFLite's MultiplyByQuantizedMultiplier for every accumulator when the shift is in [-31, 30].

Rounding: every variant with a requantization epilogue (or a rounding division: average pooling) has
a `rounding: onnx` twin rendered from the same template (function `..._s8_onnx`, kernel
`neon..._onnx`; neon_variant's `rounding`), chosen by fixed_point.graph_rounding, equal to the
portable `_onnx` twins. Conv / depthwise / FC: onnxruntime's float32 output stage (F32_SPEC;
fixed_point.requantize_s8_f32): the blob (neon_packing.rq_lanes) holds the float32 scale
fixed_point.f32_scale per channel, and ecc_neon_rq_f32 converts, multiplies and rounds to even in
float32 (c_templates/kernels/neon/ecc_neon_requant.h). Add: the exact product rounded once, ties to
even (ecc_neon_mbqm_rne); average pooling: ecc_neon_avg_div_rne. Each variant's `why_not`
gives the first reason it steps aside (conv2d_refusal, depthwise_refusal, fc_refusal).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa import neon_chwn
from toolchain.isa.neon_packing import (avg_window_ok,   # noqa: F401 - re-exported: the tests read them here
    AVG_ONNX_CELLS, SHIFT_RANGE, dot_tiles, fold_bias, for_rounding, gemm_pair_safe, k_padded, lane_safe,
    pack_depthwise, pack_dot, pack_mla, pack_sparse_map, qblob, requant_ok, taps_pair_safe, wrap32)
from toolchain.isa.packing import layer_constants, split_constants
from toolchain.ops import add, conv2d, depthwise_conv2d, fully_connected, pool2d
from toolchain.ops.binary import needs_broadcast
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants

NEON_HEADERS = ("neon/ecc_neon_kernels.h", "neon/ecc_neon.h")
DOTPROD = frozenset({"dotprod"})


# ---- variant factory ----------------------------------------------------------------------------
def neon_variant(op: str, variant: str, *, applies: Callable[[Node, Graph], bool],
                 scratch_bytes: Callable[[Node, Graph], int] = lambda n, g: 0,
                 args: Callable[[Node, Graph], list[CArg]] | None = None, template: str | None = None,
                 requires: frozenset[str] = frozenset(), rounding: str | None = "tflm",
                 why_not: Callable[[Node, Graph], str | None] | None = None, **kw: Any) -> KernelVariant:
    """neon/<template or op_variant>_s8.c.j2, function ecc_neon_<op>[_<variant>]_s8, reported as
    kernel "neon[_<variant>]", for graphs with rounding "tflm"; rounding "onnx": the twin rendered
    from the same template, function ..._s8_onnx, kernel "neon[_<variant>]_onnx"; None: a kernel
    that does not round (any graph)."""
    stem = f"{op}_{variant}" if variant else op
    tail = "_onnx" if rounding == "onnx" else ""
    return KernelVariant(f"neon{'_' + variant if variant else ''}{tail}", "neon",
                         f"neon/{template or stem}_s8.c.j2", f"ecc_neon_{stem}_s8{tail}",
                         for_rounding(rounding, applies), scratch_bytes, args, NEON_HEADERS, requires=requires,
                         why_not=for_rounding(rounding, why_not, None), **kw)


def _memo(fn):
    """Cache a plan per (node, graph, flavour): predicates, scratch and args ask for the same plan."""
    cache: dict = {}

    def get(node: Node, graph: Graph, *flavour, onnx: bool = False):
        key = (id(node), id(graph), flavour, onnx)
        hit = cache.get(key)
        if hit is None or hit[0] is not node or hit[1] is not graph:
            hit = (node, graph, fn(node, graph, *flavour, onnx=onnx))
            cache[key] = hit
            if len(cache) > 4096:
                cache.clear()
                cache[key] = hit
        return hit[2]
    return get


def _variants(op: str, plan, refusal, flavours: list[tuple[str, str | None, tuple, frozenset]]
              ) -> tuple[KernelVariant, ...]:
    """Per (variant name, template, plan flavour, requires) the KernelVariant of each rounding (tflm,
    onnx): plan(node, graph, *flavour, onnx=) gives (args, scratch) or None, refusal(node, graph,
    *flavour, onnx=) the reason of a None."""
    return tuple(neon_variant(op, name, template=tpl, requires=req, rounding="onnx" if onnx else "tflm",
                              applies=lambda n, g, f=fl, o=onnx: plan(n, g, *f, onnx=o) is not None,
                              scratch_bytes=lambda n, g, f=fl, o=onnx: plan(n, g, *f, onnx=o)[1],
                              args=lambda n, g, f=fl, o=onnx: plan(n, g, *f, onnx=o)[0],
                              why_not=lambda n, g, f=fl, o=onnx: refusal(n, g, *f, onnx=o))
                 for name, tpl, fl, req in flavours for onnx in (False, True))


def _const(graph: Graph, name: str) -> np.ndarray | None:
    """The data of a constant input (None when the input is absent or an activation)."""
    if not name:
        return None
    t = graph.t(name)
    return t.data if t.is_const else None


# ---- conv2d: pointwise (direct GEMM) and general (im2col + GEMM) ------------------------------------
def quant_refusal(k: dict, pair_unsafe: bool, onnx: bool) -> str | None:
    """Why a NEON entry point cannot take the layer's multipliers (ecc_neon_rq; the `_onnx` twins'
    float32 scale, ecc_neon_rq_f32, takes any) or, for a pairing kernel whose pairs are not exact
    (gemm_pair_safe, taps_pair_safe: BL-04), its weights, or None."""
    if not onnx and not requant_ok(k["out_shift"], k["out_mult"]):
        return "a requantization scale outside TFLite's shift range [-31, 30]"
    if pair_unsafe:
        return "weights hold -128 in both products of an int16 lane"
    return None


def conv2d_refusal(k: dict, x_shape, w: np.ndarray | None, y_shape, *, kind: str, pointwise: bool,
                   onnx: bool = False) -> str | None:
    """The first reason, in the user's words, why a NEON conv2d entry point (conv2d_plan's kind,
    pointwise) does not take the layer, or None when it does."""
    cin, (oh, ow) = x_shape[3], y_shape[1:3]
    if w is None:
        return "weights are not constant"
    if w.shape[3] != cin:
        return "grouped convolution"
    reason = quant_refusal(k, kind == "pair" and not gemm_pair_safe(w.reshape(w.shape[0], -1)), onnx)
    if reason or not pointwise:
        return reason
    if w.shape[1:3] != (1, 1):
        return "kernel is not 1x1"
    if any(k["pad"]):
        return "padded 1x1 convolution"
    if cin % (4 if kind == "dot" else 8):
        return f"input channels not a multiple of {4 if kind == 'dot' else 8}"
    if (oh - 1) * k["stride"][0] >= x_shape[1] or (ow - 1) * k["stride"][1] >= x_shape[2]:
        return "output window past the input"
    return None


def conv2d_plan(k: dict, x_shape, w: np.ndarray, bias, y_shape, *, kind: str, pointwise: bool,
                x: str = "input", y: str = "output", sparse: bool = False,
                onnx: bool = False) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of a NEON conv2d entry point given the conv2d_s8 keyword
    arguments `k` and OHWI weights; kind "dot" (SDOT), "pair" or "nopair" (Armv8.0). None when it does
    not apply: grouped conv, shifts outside SHIFT_RANGE, for "pair" two -128 weights in one lane, for the pointwise
    kernel another kernel size, padding, a window past the input or in_c not a multiple of 4 (dot) / 8
    (conv2d_refusal). sparse (pointwise only, conv2d_1x1_sparse[_dot]): the live output channels only,
    the ones proven constant (packing.layer_constants) merged from a map (sparse_plan); None when no
    channel is constant (such layers keep the dense kernel and its C). onnx: the `_onnx` entry point's
    requantization blob (rounding "onnx", qblob)."""
    if conv2d_refusal(k, x_shape, w, y_shape, kind=kind, pointwise=pointwise, onnx=onnx):
        return None
    dot = kind == "dot"
    w2d = w.reshape(w.shape[0], -1)
    cout = w.shape[0]
    if sparse:
        return sparse_plan(k, x_shape, w2d, bias, y_shape, dot=dot, x=x, y=y, onnx=onnx) if pointwise else None
    q = qblob(fold_bias(w2d, bias, k["input_offset"]), k["out_mult"], k["out_shift"], cout, onnx)
    wpack = pack_dot(w2d) if dot else pack_mla(w2d)
    kp = k_padded(w2d.shape[1], dot)
    quant = [k["output_offset"], k["act_min"], k["act_max"]]
    if pointwise:
        args = [*map(CArg.lit, [*k["stride"], *quant, *x_shape]), CArg("act", x), CArg("array", wpack, "wpack"),
                CArg("array", q, "qparams"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
        return args, 0
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], -k["input_offset"], *quant, *x_shape]),
            CArg("act", x), *map(CArg.lit, [*w.shape[1:3], kp]), CArg("array", wpack, "wpack"),
            CArg("array", q, "qparams"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    return args, 4 * kp + 16  # four im2col rows and the slack of ecc_neon_im2col's 16-byte row copies


def sparse_plan(k: dict, x_shape, w2d: np.ndarray, bias, y_shape, *, dot: bool, x: str = "input",
                y: str = "output", onnx: bool = False) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of conv2d_1x1_sparse[_dot] for [O, K] weights w2d (checked by
    conv2d_plan), or None when no output channel is proven constant. Arguments as conv2d_1x1 with the
    live count before the blob; the blob is pack_sparse_map, then the GEMM weights of the live rows
    (its CArg.skipped: the parameters of the dead rows), qparams of the live rows (one zero quad when
    none is live, never read); scratch: four staging rows of live_c and 16 bytes of load slack."""
    split = split_constants(layer_constants(w2d, bias, k["input_offset"], k["out_mult"], k["out_shift"],
                                            k["output_offset"], (k["act_min"], k["act_max"]),
                                            "onnx" if onnx else "tflm"))
    if split is None:
        return None
    o, live = w2d.shape[0], split.live
    mult = np.broadcast_to(np.asarray(k["out_mult"], np.int64).reshape(-1), (o,))[live]
    shift = np.broadcast_to(np.asarray(k["out_shift"], np.int64).reshape(-1), (o,))[live]
    b = None if bias is None else np.asarray(bias, np.int64).reshape(-1)[live]
    q = qblob(fold_bias(w2d[live], b, k["input_offset"]), mult, shift, live.size, onnx) if live.size else \
        np.zeros(16, np.int32)
    gemm = (pack_dot(w2d[live]) if dot else pack_mla(w2d[live])) if live.size else np.zeros(0, np.int8)
    args = [*map(CArg.lit, [*k["stride"], k["output_offset"], k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            CArg.lit(live.size), CArg("array", np.concatenate([pack_sparse_map(split), gemm]), "wpack",
                                      split.skipped(w2d.shape[1], bias is not None)),
            CArg("array", q, "qparams"), *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    return args, 4 * live.size + 16


@_memo
def _conv2d_node(node: Node, graph: Graph, kind: str, pointwise: bool, sparse: bool = False, *, onnx: bool = False):
    if node.attrs.groups != 1:
        return None
    x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
    bias = _const(graph, node.inputs[2]) if len(node.inputs) > 2 else None
    plan = conv2d_plan(conv2d.s8_kwargs(node, graph), x.shape, _const(graph, node.inputs[1]), bias, y.shape,
                       kind=kind, pointwise=pointwise, x=x.name, y=y.name, sparse=sparse, onnx=onnx)
    if plan is not None and sparse and kind == "dot" and not sparse_dot_pays(plan[0], y.shape[3]):
        return None
    return plan


def _conv2d_why_not(node: Node, graph: Graph, kind: str, pointwise: bool, sparse: bool = False,
                    *, onnx: bool = False) -> str | None:
    """The first reason why conv2d entry point (kind, pointwise, sparse) does not take the node."""
    if node.attrs.groups != 1:
        return "grouped convolution"
    x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
    reason = conv2d_refusal(conv2d.s8_kwargs(node, graph), x.shape, _const(graph, node.inputs[1]), y.shape,
                            kind=kind, pointwise=pointwise, onnx=onnx)
    if reason or not sparse or _conv2d_node(node, graph, kind, pointwise, sparse, onnx=onnx) is not None:
        return reason
    dense = _conv2d_node(node, graph, kind, pointwise, False, onnx=onnx)
    sparse_args = dense and kind == "dot" and sparse_plan(
        conv2d.s8_kwargs(node, graph), x.shape, _const(graph, node.inputs[1]).reshape(y.shape[3], -1),
        _const(graph, node.inputs[2]) if len(node.inputs) > 2 else None, y.shape, dot=True)
    return "too few constant output channels for the sparse kernel to pay" if sparse_args else \
        "no output channel is constant"


# int8 weights not stored (= MACs saved per output pixel) per 16-channel merge block below which the
# dense SDOT kernel is faster: each block costs ~14 instructions per pixel and the live count may
# fall off the 16-channel tiles. VWW on aarch64: 4 of 64 channels dead at K 64 (256 per 4 blocks) ran
# 13% slower sparse, 21 of 128 at K 64 (168 per block) even, 71 of 128 at K 128 (1136) 43% faster.
# The Armv8.0 kernels (4-channel tiles, ~4x the instructions per MAC) gain on every VWW layer.
SPARSE_DOT_MIN_SAVING = 256


def sparse_dot_pays(args: list[CArg], out_c: int) -> bool:
    """Whether the sparse SDOT plan `args` (sparse_plan) skips at least SPARSE_DOT_MIN_SAVING weights
    per 16-channel block of its out_c channels (its blob's CArg.skipped weight bytes)."""
    skipped = next(a for a in args if a.kind == "array").skipped[0]
    return skipped >= SPARSE_DOT_MIN_SAVING * -(-out_c // 16)


# each sparse kernel before the dense ones of its path: they apply only to 1x1 layers with a constant
# output channel (the SDOT one only where it pays, sparse_dot_pays), which they run faster; every SDOT
# kernel before the Armv8.0 ones (a dotprod board falls back to the dense SDOT kernel, not these)
CONV2D = _variants("conv2d", _conv2d_node, _conv2d_why_not, [
    ("1x1_sparse_dot", None, ("dot", True, True), DOTPROD),
    ("1x1_dot", None, ("dot", True), DOTPROD),
    ("dot", None, ("dot", False), DOTPROD),
    ("1x1_sparse", None, ("pair", True, True), frozenset()),
    ("1x1_sparse_nopair", "conv2d_1x1_sparse", ("nopair", True, True), frozenset()),
    ("1x1", None, ("pair", True), frozenset()),
    ("1x1_nopair", "conv2d_1x1", ("nopair", True), frozenset()),
    ("", None, ("pair", False), frozenset()),
    ("nopair", "conv2d", ("nopair", False), frozenset()),
]) + neon_chwn.CONV2D_CHWN


# ---- fully connected ----------------------------------------------------------------------------
def fc_refusal(k: dict, w: np.ndarray | None, *, kind: str, onnx: bool = False) -> str | None:
    """The first reason, in the user's words, why a NEON fully connected entry point does not take the
    layer, or None when it does."""
    if w is None:
        return "weights are not constant"
    if k["filter_offset"] != 0:
        return "weights have a non-zero zero point"
    return quant_refusal(k, kind == "pair" and not gemm_pair_safe(w), onnx)


def fc_plan(k: dict, x_shape, w: np.ndarray, bias, y_shape, *, kind: str, x: str = "input",
            y: str = "output", onnx: bool = False) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of a NEON fully connected entry point for the
    fully_connected_s8 keyword arguments `k` and [O, K] weights; None when it does not apply (a weight
    zero point, shifts outside SHIFT_RANGE, for "pair" two -128 weights in one lane: fc_refusal). onnx: the `_onnx`
    entry point's blob."""
    if fc_refusal(k, w, kind=kind, onnx=onnx):
        return None
    dot = kind == "dot"
    o, kdim = w.shape
    kp = k_padded(kdim, dot)
    q = qblob(fold_bias(w, bias, k["input_offset"]), k["out_mult"], k["out_shift"], o, onnx)
    args = [*map(CArg.lit, [k["output_offset"], k["act_min"], k["act_max"], *x_shape]), CArg("act", x), CArg.lit(kp),
            CArg("array", pack_dot(w) if dot else pack_mla(w), "wpack"), CArg("array", q, "qparams"),
            CArg.lit(y_shape[1]), CArg("act", y)]
    return args, (4 * kp if kp != kdim else 0)


@_memo
def _fc_node(node: Node, graph: Graph, kind: str, *, onnx: bool = False):
    x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
    bias = _const(graph, node.inputs[2]) if len(node.inputs) > 2 else None
    return fc_plan(fully_connected.s8_kwargs(node, graph), x.shape, _const(graph, node.inputs[1]), bias, y.shape,
                   kind=kind, x=x.name, y=y.name, onnx=onnx)


def _fc_why_not(node: Node, graph: Graph, kind: str, *, onnx: bool = False) -> str | None:
    return fc_refusal(fully_connected.s8_kwargs(node, graph), _const(graph, node.inputs[1]), kind=kind, onnx=onnx)


FULLY_CONNECTED = _variants("fully_connected", _fc_node, _fc_why_not, [
    ("dot", None, ("dot",), DOTPROD),
    ("", None, ("pair",), frozenset()),
    ("nopair", "fully_connected", ("nopair",), frozenset()),
])


# ---- depthwise conv2d ---------------------------------------------------------------------------
def depthwise_refusal(k: dict, x_shape, w: np.ndarray | None, *, pair: bool, three: bool,
                      onnx: bool = False) -> str | None:
    """The first reason, in the user's words, why a NEON depthwise entry point does not take the
    layer, or None when it does."""
    if w is None:
        return "weights are not constant"
    if k["depth_multiplier"] != 1:
        return "depth multiplier is not 1"
    if x_shape[3] % 8:
        return "channels not a multiple of 8"
    if three and tuple(w.shape[1:3]) != (3, 3):
        return "window is not 3x3"
    return quant_refusal(k, pair and not taps_pair_safe(w.reshape(-1, w.shape[3])), onnx)


def depthwise_plan(k: dict, x_shape, w: np.ndarray, bias, y_shape, *, pair: bool, three: bool,
                   x: str = "input", y: str = "output", onnx: bool = False) -> tuple[list[CArg], int] | None:
    """(argument list, scratch bytes) of a NEON depthwise entry point given the depthwise_conv2d_s8
    keyword arguments `k` and [1, KH, KW, C] weights; None when it does not apply: a depth
    multiplier other than 1, in_c % 8 != 0, shifts outside SHIFT_RANGE, for "pair" two -128 weights in a lane,
    for the 3x3 kernel another window size (depthwise_refusal). onnx: the `_onnx` entry point's blob."""
    if depthwise_refusal(k, x_shape, w, pair=pair, three=three, onnx=onnx):
        return None
    _, kh, kw, c = w.shape
    q = qblob(fold_bias(w.reshape(-1, c).T, bias, k["input_offset"]), k["out_mult"], k["out_shift"], c, onnx)
    args = [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], -k["input_offset"], k["output_offset"],
                            k["act_min"], k["act_max"], *x_shape]), CArg("act", x), *map(CArg.lit, (kh, kw)),
            CArg("array", pack_depthwise(w), "wpack"), CArg("array", q, "qparams"), *map(CArg.lit, y_shape[1:]),
            CArg("act", y)]
    # a row of the zero point (rounded up to 16 bytes), then for the general kernel its tap pointers
    return args, -(-c // 16) * 16 + (0 if three else 8 * kh * kw)


@_memo
def _depthwise_node(node: Node, graph: Graph, pair: bool, three: bool, *, onnx: bool = False):
    x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
    bias = _const(graph, node.inputs[2]) if len(node.inputs) > 2 else None
    return depthwise_plan(depthwise_conv2d.s8_kwargs(node, graph), x.shape, _const(graph, node.inputs[1]), bias,
                          y.shape, pair=pair, three=three, x=x.name, y=y.name, onnx=onnx)


def _depthwise_why_not(node: Node, graph: Graph, pair: bool, three: bool, *, onnx: bool = False) -> str | None:
    return depthwise_refusal(depthwise_conv2d.s8_kwargs(node, graph), graph.t(node.inputs[0]).shape,
                             _const(graph, node.inputs[1]), pair=pair, three=three, onnx=onnx)


DEPTHWISE_CONV2D = _variants("depthwise_conv2d", _depthwise_node, _depthwise_why_not, [
    ("3x3", None, (True, True), frozenset()),
    ("3x3_nopair", "depthwise_conv2d_3x3", (False, True), frozenset()),
    ("", None, (True, False), frozenset()),
    ("nopair", "depthwise_conv2d", (False, False), frozenset()),
]) + neon_chwn.DEPTHWISE_CONV2D_CHWN


# ---- add, average and max pooling: the portable argument lists ------------------------------------
def add_exact(p, onnx: bool = False) -> bool:
    """Whether neon/add applies to the add parameters `p` (fixed_point.AddParams): the portable
    kernel's left-shift range, shifts inside SHIFT_RANGE and multipliers >= 0 (onnx: the `_onnx`
    twin's output requantization, requant_ok)."""
    return (0 <= p.left_shift <= 23 and all(requant_ok([s], [m]) for s, m in ((p.input1_shift, p.input1_mult),
                                                                              (p.input2_shift, p.input2_mult)))
            and requant_ok([p.output_shift], [p.output_mult], onnx))


def _add_why_not(node: Node, graph: Graph, onnx: bool) -> str | None:
    if needs_broadcast(node, graph):
        return "inputs broadcast"
    return None if add_exact(add.params(node, graph)[0], onnx) else "scales outside the kernel's shift range"


# elementwise over the flat buffer: the same kernel for NHWC and CHWN tensors
ADD = tuple(neon_variant("add", "", rounding="onnx" if onnx else "tflm", scratch_bytes=lambda n, g: 48,
                         applies=lambda n, g, o=onnx: _add_why_not(n, g, o) is None,
                         why_not=lambda n, g, o=onnx: _add_why_not(n, g, o), inplace_inputs=(0, 1),
                         layouts=frozenset({"NHWC", "CHWN"}))
            for onnx in (False, True))


def _pool_channels_ok(node: Node, graph: Graph) -> bool:
    return graph.t(node.inputs[0]).shape[3] % 8 == 0


def _avg_why_not(node: Node, graph: Graph, onnx: bool) -> str | None:
    if not _pool_channels_ok(node, graph):
        return "channels not a multiple of 8"
    kh, kw = node.attrs.window.kernel
    return None if avg_window_ok((kh, kw)) and (not onnx or kh * kw <= AVG_ONNX_CELLS) else "window too large"


AVG_POOL2D_NHWC = tuple(
    neon_variant("avg_pool2d", "", rounding="onnx" if onnx else "tflm",
                 applies=lambda n, g, o=onnx: _avg_why_not(n, g, o) is None,
                 why_not=lambda n, g, o=onnx: _avg_why_not(n, g, o),
                 args=(lambda n, g: pool2d.AvgPool2D()._onnx_args(n, g)) if onnx else None)
    for onnx in (False, True))
MAX_POOL2D_NHWC = neon_variant("max_pool2d", "", applies=_pool_channels_ok, rounding=None,
                               why_not=lambda n, g: None if _pool_channels_ok(n, g) else "channels not a multiple of 8")
AVG_POOL2D = (*AVG_POOL2D_NHWC, *neon_chwn.AVG_POOL2D_CHWN)
MAX_POOL2D = (MAX_POOL2D_NHWC, neon_chwn.MAX_POOL2D_CHWN)


add_variants(OpKind.CONV2D, *CONV2D)
add_variants(OpKind.DEPTHWISE_CONV2D, *DEPTHWISE_CONV2D)
add_variants(OpKind.FULLY_CONNECTED, *FULLY_CONNECTED)
add_variants(OpKind.ADD, *ADD)
add_variants(OpKind.AVG_POOL2D, *AVG_POOL2D)
add_variants(OpKind.MAX_POOL2D, *MAX_POOL2D)
