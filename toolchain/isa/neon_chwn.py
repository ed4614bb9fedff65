"""The NEON kernel variants for CHWN activations (batch innermost; c_templates/kernels/neon/*_chwn_s8):
batched inference on AArch64 vectorised across the batch, for batches that are a multiple of 8.
Chosen only for nodes the layout pass (passes/select_layout.py) put into CHWN
(KernelVariant.layouts); they run on every AArch64 board (Armv8.0 instructions only).

Unlike the NHWC kernels they add the input offset to every input (SADDW) and skip the taps outside
the input, as TFLM does, so the bias is not folded; the requantization is the same
(ecc_neon_mbqm, per output channel {bias, mult, lsh, rsh} broadcast over the batch lanes; the `_onnx`
twins: {bias, float32 scale bits, 0, 0}, ecc_neon_rq_f32).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.isa.neon_packing import AVG_ONNX_CELLS, avg_window_ok, for_rounding, requant_ok, rq_lanes
from toolchain.ops import conv2d, depthwise_conv2d, pool2d
from toolchain.ops.registry import CArg, KernelVariant, OpKind, opdef
from toolchain.ops.relayout import storage_dims

CHWN = frozenset({"CHWN"})
NEON_HEADERS = ("neon/ecc_neon_kernels.h", "neon/ecc_neon.h")




def _variant(op: str, applies, args, scratch_bytes=lambda n, g: 0, rounding: str | None = "tflm",
             why_not=None) -> KernelVariant:
    """neon/<op>_chwn_s8 for graphs of `rounding` ("onnx": the `_onnx` twin; None: any graph)."""
    tail = "_onnx" if rounding == "onnx" else ""
    return KernelVariant(f"neon_chwn{tail}", "neon", f"neon/{op}_chwn_s8.c.j2", f"ecc_neon_{op}_chwn_s8{tail}",
                         for_rounding(rounding, applies), scratch_bytes, args, NEON_HEADERS, layouts=CHWN,
                         why_not=for_rounding(rounding, why_not, None))


def batch_ok(graph: Graph, node: Node) -> bool:
    """A 4-D input whose batch is a multiple of 8 (one vector of int8 lanes per step)."""
    shape = graph.t(node.inputs[0]).shape
    return len(shape) == 4 and shape[0] % 8 == 0


def per_channel_q(bias, mult, shift, n: int, onnx: bool = False) -> np.ndarray:
    """[n][4] int32: bias (not folded) and the requantization lanes {multiplier, left shift, right
    shift} (neon_packing.rq_lanes; `onnx`: the float32 scale's bits and two zero lanes) per output
    channel."""
    q = np.zeros((n, 4), np.int64)
    q[:, 0] = 0 if bias is None else np.asarray(bias, np.int64).reshape(-1)
    q[:, 1], q[:, 2], q[:, 3] = rq_lanes(mult, shift, n, onnx)
    return ((q + 2**31) % 2**32 - 2**31).reshape(-1).astype(np.int32)


def pack_conv_chwn(w: np.ndarray) -> np.ndarray:
    """OHWI int8 -> [out_c / 8][k_h][k_w][in_c][8] (out_c zero-padded to a multiple of 8)."""
    o = w.shape[0]
    op = -(-o // 8) * 8
    wp = np.zeros((op, *w.shape[1:]), np.int8)
    wp[:o] = w
    return np.ascontiguousarray(wp.reshape(op // 8, 8, *w.shape[1:]).transpose(0, 2, 3, 4, 1)).reshape(-1)


def _const(graph: Graph, name: str):
    if not name:
        return None
    t = graph.t(name)
    return t.data if t.is_const else None


def _requant_ok(k: dict, onnx: bool) -> bool:
    """ecc_neon_mbqm's shift and multiplier range (tflm); the `_onnx` float32 scale takes any."""
    return onnx or requant_ok(k["out_shift"], k["out_mult"])


def conv2d_chwn_plan(k: dict, x_shape, w: np.ndarray | None, bias, y_shape, *, x: str = "input",
                     y: str = "output", onnx: bool = False) -> list[CArg] | None:
    """The argument list of neon/conv2d_chwn for the conv2d_s8 keyword arguments `k`, OHWI weights and
    logical NHWC shapes; None when it does not apply (grouped conv, activation weights, a batch not a
    multiple of 8, shifts or multipliers out of range). onnx: the `_onnx` entry point's lanes."""
    if w is None or w.shape[3] != x_shape[3] or x_shape[0] % 8 or not _requant_ok(k, onnx):
        return None
    return [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], k["input_offset"], k["output_offset"],
                            k["act_min"], k["act_max"], *storage_dims(x_shape, "CHWN")]), CArg("act", x),
            *map(CArg.lit, w.shape[1:3]), CArg("array", pack_conv_chwn(w), "wpack"),
            CArg("array", per_channel_q(bias, k["out_mult"], k["out_shift"], w.shape[0], onnx), "qparams"),
            *map(CArg.lit, [y_shape[3], *y_shape[1:3]]), CArg("act", y)]


def depthwise_chwn_plan(k: dict, x_shape, w: np.ndarray | None, bias, y_shape, *, x: str = "input",
                        y: str = "output", onnx: bool = False) -> list[CArg] | None:
    """The argument list of neon/depthwise_conv2d_chwn for the depthwise_conv2d_s8 keyword arguments
    `k` and [1, KH, KW, C] weights; None when it does not apply (depth multiplier != 1, activation
    weights, a batch not a multiple of 8, shifts or multipliers out of range)."""
    if (w is None or k["depth_multiplier"] != 1 or x_shape[0] % 8
            or not _requant_ok(k, onnx)):
        return None
    c = w.shape[3]
    return [*map(CArg.lit, [*k["stride"], *k["pad"], *k["dilation"], k["input_offset"], k["output_offset"],
                            k["act_min"], k["act_max"], *storage_dims(x_shape, "CHWN")]), CArg("act", x),
            *map(CArg.lit, w.shape[1:3]), CArg("array", np.ascontiguousarray(w.reshape(-1, c).T).reshape(-1), "wpack"),
            CArg("array", per_channel_q(bias, k["out_mult"], k["out_shift"], c, onnx), "qparams"),
            *map(CArg.lit, [y_shape[3], *y_shape[1:3]]), CArg("act", y)]


def _node_plan(node: Node, graph: Graph, onnx: bool = False) -> list[CArg] | None:
    x, y = graph.t(node.inputs[0]), graph.t(node.outputs[0])
    if len(x.shape) != 4:
        return None
    bias = _const(graph, node.inputs[2]) if len(node.inputs) > 2 else None
    w = _const(graph, node.inputs[1])
    if node.op is OpKind.CONV2D:
        if node.attrs.groups != 1:
            return None
        return conv2d_chwn_plan(conv2d.s8_kwargs(node, graph), x.shape, w, bias, y.shape, x=x.name, y=y.name,
                                onnx=onnx)
    return depthwise_chwn_plan(depthwise_conv2d.s8_kwargs(node, graph), x.shape, w, bias, y.shape, x=x.name,
                               y=y.name, onnx=onnx)


def _why_not(node: Node, graph: Graph, onnx: bool = False) -> str | None:
    """The first reason the CHWN kernel does not take a node (a CHWN output: the layout pass chose it)."""
    if _node_plan(node, graph, onnx) is not None:
        return None
    x, w = graph.t(node.inputs[0]), _const(graph, node.inputs[1])
    if len(x.shape) != 4 or x.shape[0] % 8:
        return "batch not a multiple of 8"
    if w is None:
        return "weights are not constant"
    if node.op is OpKind.CONV2D and node.attrs.groups != 1:
        return "grouped convolution"
    if node.op is not OpKind.CONV2D and depthwise_conv2d.s8_kwargs(node, graph)["depth_multiplier"] != 1:
        return "depth multiplier is not 1"
    return "requantization scales out of the kernel's range"


def _gemm_variants(op: str, **kw) -> tuple[KernelVariant, KernelVariant]:
    """The tflm and onnx variants of conv2d / depthwise_conv2d _chwn."""
    return tuple(_variant(op, lambda n, g, o=onnx: _node_plan(n, g, o) is not None,
                          lambda n, g, o=onnx: _node_plan(n, g, o), rounding="onnx" if onnx else "tflm",
                          why_not=lambda n, g, o=onnx: _why_not(n, g, o), **kw) for onnx in (False, True))


def pool_chwn_args(node: Node, graph: Graph, onnx: bool = False) -> list[CArg]:
    """The portable pooling arguments (onnx: those of the portable `_onnx` average pooling) with the
    input dims in CHWN storage order."""
    args = (pool2d.AvgPool2D()._onnx_args if onnx else opdef(node).kernel_args)(node, graph)
    at = next(i for i, a in enumerate(args) if a.kind == "act")
    return [*args[:at - 4], *map(CArg.lit, storage_dims(graph.t(node.inputs[0]).shape, "CHWN")), *args[at:]]


CONV2D_CHWN = _gemm_variants("conv2d")
DEPTHWISE_CONV2D_CHWN = _gemm_variants("depthwise_conv2d",
                                       scratch_bytes=lambda n, g: 2 * int(np.prod(g.t(n.inputs[1]).shape[1:3])))
def _pool_why_not(node: Node, graph: Graph, onnx: bool = False) -> str | None:
    """The first reason the CHWN pooling kernels do not take a node (onnx: the `_onnx` average pooling,
    windows of at most AVG_ONNX_CELLS)."""
    if not batch_ok(graph, node):
        return "batch not a multiple of 8"
    kh, kw = node.attrs.window.kernel
    if node.op is OpKind.AVG_POOL2D and not (avg_window_ok((kh, kw)) and (not onnx or kh * kw <= AVG_ONNX_CELLS)):
        return "window too large"
    return None


AVG_POOL2D_CHWN = tuple(_variant("avg_pool2d", lambda n, g, o=onnx: _pool_why_not(n, g, o) is None,
                                 lambda n, g, o=onnx: pool_chwn_args(n, g, o), rounding="onnx" if onnx else "tflm",
                                 why_not=lambda n, g, o=onnx: _pool_why_not(n, g, o)) for onnx in (False, True))
MAX_POOL2D_CHWN = _variant("max_pool2d", lambda n, g: _pool_why_not(n, g) is None, pool_chwn_args, rounding=None,
                           why_not=_pool_why_not)
