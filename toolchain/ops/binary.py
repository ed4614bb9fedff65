"""Sub and Mul: the int8 reference semantics of element-wise subtraction and multiplication with
numpy broadcasting; TFLite int8 spec, TFLM reference_ops::Sub (sub.h, parameters of
micro/kernels/sub_common.cc) and reference_integer_ops::MulElementwise / BroadcastMul6DSlow
(parameters of micro/kernels/mul_common.cc).

Also owns the broadcast plumbing the binary kernels share (Add included): `broadcast_plan`
collapses two broadcast-compatible shapes into at most four loop dimensions with per-input element
strides (0 where an input is broadcast), which the C kernels walk as four nested loops. A constant
operand (e.g. a Mul by a learned scale) is an int8 constant with its own per-tensor qparams, as in
TFLite. 16x8 (int16 activations, zero points 0): sub_s16 / mul_s16, the same arithmetic with
TFLM's int16 parameters (left shift 15 for SUB), kernels portable/{sub,mul}_s16.c.j2.
Not here: Add's arithmetic (add.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops.common import NO_ACT, act_range_s8, apply_act_f32, quantize_constant_operands
from toolchain.ops.elementwise import mul_s8
from toolchain.ops.fixed_point import (
    AddParams,
    MulParams,
    mul_params,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    requantize_s8,
    wrap_int32,
)
from toolchain.ops.quant16 import activation_range_s16
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, rounding_twins, register

MAX_LOOP_DIMS = 4


def sub_params(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int, left_shift: int = 20) -> AddParams:
    """TFLM int8 SUB Prepare (CalculateOpDataSub): like ADD (left shift 20, 15 for int16 outputs;
    inputs rescaled by s_i / (2 max(s1, s2)), the difference by 2 max / (2^left_shift s_out)) but with
    every ratio computed in float32 before widening to double. An output factor >= 1 gets a positive
    shift (TFLM aborts)."""
    f32 = np.float32
    twice_max = f32(2) * max(f32(s1), f32(s2))
    m1, sh1 = quantize_multiplier(float(f32(s1) / twice_max))
    m2, sh2 = quantize_multiplier(float(f32(s2) / twice_max))
    mo, sho = quantize_multiplier(float(twice_max / (f32(1 << left_shift) * f32(s_out))))
    return AddParams(-int(z1), m1, sh1, -int(z2), m2, sh2, left_shift, int(z_out), mo, sho)


def sub_s8(x1: np.ndarray, x2: np.ndarray, p: AddParams, act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 element-wise subtract x1 - x2 with numpy broadcasting (TFLM reference_ops::Sub int8):
    v_i = (x_i + offset_i) << left_shift, s_i = MBQM(v_i, mult_i, shift_i),
    out = MBQM(s1 - s2, output_mult, output_shift) + output_offset, clamped -> int8."""
    shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    a = np.broadcast_to(np.asarray(x1, np.int64), shape)
    b = np.broadcast_to(np.asarray(x2, np.int64), shape)
    s1 = multiply_by_quantized_multiplier((a + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = multiply_by_quantized_multiplier((b + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    return requantize_s8(wrap_int32(s1 - s2), p.output_mult, p.output_shift, p.output_offset, act_min, act_max)


# ---- 16x8: int16 activations, zero points 0 ----------------------------------------------------
def _broadcast_i64(x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    return (np.broadcast_to(np.asarray(x1, np.int64), shape), np.broadcast_to(np.asarray(x2, np.int64), shape))


def sub_s16(x1: np.ndarray, x2: np.ndarray, p: AddParams, act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 element-wise subtract x1 - x2 with numpy broadcasting (TFLM sub.cc on int16:
    reference_ops::Sub / BroadcastQuantSubSlow): sub_s8's arithmetic with left_shift 15 (p from
    sub_params(..., left_shift=15)), zero points 0, clamped to [act_min, act_max] -> int16.
    Every shift of p must be <= 0 (TFLM's QuantizeMultiplierSmallerThanOneExp; sub_params_s16)."""
    a, b = _broadcast_i64(x1, x2)
    s1 = multiply_by_quantized_multiplier(a << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = multiply_by_quantized_multiplier(b << p.left_shift, p.input2_mult, p.input2_shift)
    y = multiply_by_quantized_multiplier(wrap_int32(s1 - s2), p.output_mult, p.output_shift)
    return np.clip(y, act_min, act_max).astype(np.int16)


def mul_s16(x1: np.ndarray, x2: np.ndarray, p: MulParams, act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 element-wise multiply with numpy broadcasting (TFLM mul.cc on int16:
    reference_integer_ops::MulElementwise / BroadcastMul6DSlow): the int32 product x1 * x2 (|.| <= 2^30),
    the 32-bit MultiplyByQuantizedMultiplier (double rounding) by s1 s2 / s_out, clamped -> int16.
    p.output_shift must be <= 0 (mul_params_s16: a left shift could overflow int32 in TFLM)."""
    a, b = _broadcast_i64(x1, x2)
    y = multiply_by_quantized_multiplier(a * b, p.output_mult, p.output_shift)
    return np.clip(y, act_min, act_max).astype(np.int16)


def sub_params_s16(node: Node, graph: Graph) -> tuple[AddParams, tuple[int, int]]:
    """(AddParams with left_shift 15, int16 activation range) of a 16x8 Sub node (TFLM sub_common.cc).
    ValueError when 2 max(s1, s2) / (2^15 s_out) >= 1: TFLM's QuantizeMultiplierSmallerThanOneExp
    aborts there (the int8 SUB keeps a positive shift instead)."""
    a, b, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
    p = sub_params(a.s, 0, b.s, 0, y.s, 0, left_shift=15)
    if p.output_shift > 0:
        raise ValueError(f"int16 SUB with output scale {y.s:.6g} below 2 max(input scales) / 2^15 (real "
                         "multiplier >= 1: TFLM aborts in QuantizeMultiplierSmallerThanOneExp; use a larger "
                         "output scale)")
    return p, activation_range_s16(node.attrs.act, y.s)


def mul_params_s16(node: Node, graph: Graph) -> tuple[MulParams, tuple[int, int]]:
    """(MulParams, int16 activation range) of a 16x8 Mul node (TFLM mul_common.cc). ValueError when
    s1 s2 / s_out >= 1: TFLM then computes product * 2^shift in int32, which overflows (undefined in C)
    for large products, so there is no defined result to match."""
    a, b, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
    p = mul_params(a.s, 0, b.s, 0, y.s, 0)
    if p.output_shift > 0:
        raise ValueError(f"int16 MUL with real multiplier s1 * s2 / s_out = {float(a.s) * float(b.s) / float(y.s):.6g} "
                         ">= 1 (TFLM's int16 MUL overflows int32 in product * 2^shift; use a larger output scale)")
    return p, activation_range_s16(node.attrs.act, y.s)


def _sub_s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_sub_s16 (portable/sub_s16.c.j2)."""
    p, (lo, hi) = sub_params_s16(node, graph)
    ints = [p.input1_mult, p.input1_shift, p.input2_mult, p.input2_shift, p.left_shift, p.output_mult,
            p.output_shift, lo, hi]
    return [*map(CArg.lit, ints), *broadcast_args(node, graph), operand(graph, node.inputs[0]),
            operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]


def _mul_s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_mul_s16 (portable/mul_s16.c.j2)."""
    p, (lo, hi) = mul_params_s16(node, graph)
    return [*map(CArg.lit, (p.output_mult, p.output_shift, lo, hi)), *broadcast_args(node, graph),
            operand(graph, node.inputs[0]), operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]


# ---- broadcast plumbing shared by the binary kernels ------------------------------------------
def broadcast_plan(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """(dims, strides_a, strides_b), four entries each: the output walked as four nested loops of
    `dims`, input element offset = sum(i_k * stride_k). Axes of size 1 are dropped and neighbouring
    axes with the same broadcast pattern merged; ValueError if more than four groups remain or the
    shapes do not broadcast."""
    out = np.broadcast_shapes(a, b)
    r = len(out)
    pa, pb = (1,) * (r - len(a)) + tuple(a), (1,) * (r - len(b)) + tuple(b)
    groups: list[list] = []  # [size, a_is_broadcast, b_is_broadcast]
    for n, da, db in zip(out, pa, pb, strict=True):
        if n == 1:
            continue
        key = (da == 1, db == 1)
        if groups and (groups[-1][1], groups[-1][2]) == key:
            groups[-1][0] *= n
        else:
            groups.append([n, *key])
    if len(groups) > MAX_LOOP_DIMS:
        raise ValueError(f"broadcast of {list(a)} and {list(b)} needs {len(groups)} loop levels (max 4)")
    groups = [[1, False, False]] * (MAX_LOOP_DIMS - len(groups)) + groups
    dims, sa, sb = [], [], []
    run_a = run_b = 1
    for n, ba, bb in reversed(groups):
        dims.append(n)
        sa.append(0 if ba or n == 1 else run_a)
        sb.append(0 if bb or n == 1 else run_b)
        run_a *= 1 if ba else n
        run_b *= 1 if bb else n
    return dims[::-1], sa[::-1], sb[::-1]


def operand(graph: Graph, name: str) -> CArg:
    """A kernel's tensor input: an arena activation, or a constant array in the weights."""
    return CArg("const", name) if graph.t(name).is_const else CArg("act", name)


def broadcast_args(node: Node, graph: Graph) -> list[CArg]:
    """The 12 loop literals (dims, strides of input 1, strides of input 2) of a broadcast kernel."""
    a, b = (graph.t(n).shape for n in node.inputs[:2])
    dims, sa, sb = broadcast_plan(a, b)
    return [*map(CArg.lit, (*dims, *sa, *sb))]


def needs_broadcast(node: Node, graph: Graph) -> bool:
    a, b = (graph.t(n).shape for n in node.inputs[:2])
    return a != b


def broadcast_shape(node: Node, graph: Graph) -> tuple[int, ...]:
    a, b = (graph.t(n).shape for n in node.inputs[:2])
    try:
        shape = tuple(int(s) for s in np.broadcast_shapes(a, b))
        broadcast_plan(a, b)
    except ValueError as e:
        raise ValueError(f"inputs {list(a)} and {list(b)}: {e}") from None
    return shape


# ---- IR glue ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BinaryAttrs:
    """Sub / Mul (ONNX Sub-14, Mul-14 with multidirectional broadcast; TFLite SUB, MUL), fused activation."""

    act: tuple[float, float] = NO_ACT


class _Binary(OpDef):
    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, graph)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        return quantize_constant_operands(node, graph)

    def _io(self, node: Node, graph: Graph):
        return [graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).size, c.weight_bytes, c.act_read_bytes, c.act_write_bytes)


@register("SUB", "Sub")
class Sub(_Binary):
    variants = (*rounding_twins(portable("sub")), portable_s16("sub", args=_sub_s16_args))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [apply_act_f32(np.subtract(ins[0], ins[1], dtype=np.float32), node.attrs.act)]

    def _params(self, node: Node, graph: Graph):
        a, b, y = self._io(node, graph)
        return sub_params(a.s, a.zp, b.s, b.zp, y.s, y.zp), act_range_s8(node.attrs.act, y)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = self._params(node, graph)
        return [sub_s8(ins[0], ins[1], p, lo, hi)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = sub_params_s16(node, graph)
        return [sub_s16(ins[0], ins[1], p, lo, hi)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p, (lo, hi) = self._params(node, graph)
        ints = [p.input1_offset, p.input1_mult, p.input1_shift, p.input2_offset, p.input2_mult, p.input2_shift,
                p.left_shift, p.output_offset, p.output_mult, p.output_shift, lo, hi]
        return [*map(CArg.lit, ints), *broadcast_args(node, graph), operand(graph, node.inputs[0]),
                operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]


@register("MUL", "Mul")
class Mul(_Binary):
    variants = (*rounding_twins(portable("mul")), portable_s16("mul", args=_mul_s16_args))

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [apply_act_f32(np.multiply(ins[0], ins[1], dtype=np.float32), node.attrs.act)]

    def _params(self, node: Node, graph: Graph):
        a, b, y = self._io(node, graph)
        return mul_params(a.s, a.zp, b.s, b.zp, y.s, y.zp), act_range_s8(node.attrs.act, y)

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = self._params(node, graph)
        return [mul_s8(ins[0], ins[1], p, lo, hi)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = mul_params_s16(node, graph)
        return [mul_s16(ins[0], ins[1], p, lo, hi)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p, (lo, hi) = self._params(node, graph)
        ints = [p.input1_offset, p.input2_offset, p.output_offset, p.output_mult, p.output_shift, lo, hi]
        return [*map(CArg.lit, ints), *broadcast_args(node, graph), operand(graph, node.inputs[0]),
                operand(graph, node.inputs[1]), CArg("act", node.outputs[0])]
