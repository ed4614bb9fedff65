"""Add: the int8 reference semantics of element-wise addition; TFLite int8 spec, TFLM
reference_integer_ops::AddFunc with the parameters of micro/kernels/add_common.cc.

Owns `add_s8`. Parameters come from fixed_point.add_params. Unlike TFLite, an output multiplier
>= 1 is supported (positive output shift, saturating; BL-02): we use the general
MultiplyByQuantizedMultiplier everywhere, which equals TFLite's ...SmallerThanOneExp for shift <= 0.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import AddParams, add_params, multiply_by_quantized_multiplier, requantize_s8, wrap_int32
from dataclasses import dataclass
from toolchain.ir import Graph, Node
from toolchain.ops.binary import broadcast_args, broadcast_shape, needs_broadcast, operand
from toolchain.ops.common import NO_ACT, act_range_s8, apply_act_f32, quantize_constant_operands
from toolchain.ops.quant16 import activation_range_s16
from toolchain.ops.registry import CArg, Cost, OpDef, portable, portable_s16, rounding_twins, register


def add_s8(x1: np.ndarray, x2: np.ndarray, p: AddParams, act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 element-wise add (TFLM reference_integer_ops::AddFunc).

    x1, x2: int8 arrays of one shape (numpy broadcasting is accepted; the C kernel takes equal
    sizes only). Per element: v_i = (x_i + offset_i) << left_shift; s_i = MBQM(v_i, mult_i, shift_i);
    out = MBQM(s1 + s2, output_mult, output_shift) + output_offset, clamped -> int8.
    """
    try:
        shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    except ValueError:
        raise ValueError(f"add inputs {np.shape(x1)} and {np.shape(x2)} do not broadcast") from None
    a = np.broadcast_to(np.asarray(x1, np.int64), shape)
    b = np.broadcast_to(np.asarray(x2, np.int64), shape)
    s1 = multiply_by_quantized_multiplier((a + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = multiply_by_quantized_multiplier((b + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    # int32 sum as in C; with |input| <= 255 << 20 scaled by <= 0.5 it cannot actually wrap.
    return requantize_s8(wrap_int32(s1 + s2), p.output_mult, p.output_shift, p.output_offset, act_min, act_max)


def add_s16(x1: np.ndarray, x2: np.ndarray, p: AddParams, act_min: int = -32768, act_max: int = 32767) -> np.ndarray:
    """16x8 element-wise add (TFLite 16x8 spec; TFLM add.cc on int16 with pot_scale_int16 false, the
    TFLite converter's setting: reference_ops::AddElementwise): add_s8's arithmetic with left_shift 15
    (add_common.cc; p from add_params(..., left_shift=15)), zero points 0, clamped to int16.
    x1, x2: int16 arrays that broadcast (numpy rules; TFLM's int16 BroadcastAdd6DSlow computes each
    element the same way) -> int16."""
    try:
        shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    except ValueError:
        raise ValueError(f"int16 add inputs {np.shape(x1)} and {np.shape(x2)} do not broadcast") from None
    a = np.broadcast_to(np.asarray(x1, np.int64), shape)
    b = np.broadcast_to(np.asarray(x2, np.int64), shape)
    s1 = multiply_by_quantized_multiplier((a + p.input1_offset) << p.left_shift, p.input1_mult, p.input1_shift)
    s2 = multiply_by_quantized_multiplier((b + p.input2_offset) << p.left_shift, p.input2_mult, p.input2_shift)
    y = multiply_by_quantized_multiplier(wrap_int32(s1 + s2), p.output_mult, p.output_shift) + p.output_offset
    return np.clip(y, act_min, act_max).astype(np.int16)


def params_s16(node: Node, graph: Graph) -> tuple[AddParams, tuple[int, int]]:
    """(AddParams with left_shift 15, int16 (act_min, act_max)) of a 16x8 Add node (add_common.cc)."""
    a, b, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
    return add_params(a.s, 0, b.s, 0, y.s, 0, left_shift=15), activation_range_s16(node.attrs.act, y.s)


def s16_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_add_s16 (portable/add_s16.c.j2): no offsets (zero points are 0); an operand may
    be an int16 constant."""
    p, (lo, hi) = params_s16(node, graph)
    ints = [p.input1_mult, p.input1_shift, p.input2_mult, p.input2_shift, p.left_shift, p.output_mult,
            p.output_shift, lo, hi, graph.t(node.outputs[0]).size]
    return [*map(CArg.lit, ints), operand(graph, node.inputs[0]), operand(graph, node.inputs[1]),
            CArg("act", node.outputs[0])]


def s16_broadcast_args(node: Node, graph: Graph) -> list[CArg]:
    """Arguments of ecc_add_broadcast_s16 (portable/add_broadcast_s16.c.j2): ecc_add_s16's without the
    size, then the loop plan of ops/binary.py, the operands."""
    flat = s16_args(node, graph)
    return [*flat[:9], *broadcast_args(node, graph), operand(graph, node.inputs[0]), operand(graph, node.inputs[1]),
            flat[-1]]


# ---- IR glue: attrs, shapes, float semantics, kernel call -----------------------------------
@dataclass(frozen=True)
class AddAttrs:
    """Add (ONNX Add-14 with multidirectional broadcast, TFLite ADD), fused activation. Same shapes run
    the flat `add` kernel, broadcast ones `add_broadcast` (loop plan of ops/binary.py)."""

    act: tuple[float, float] = NO_ACT


def params(node: Node, graph: Graph) -> tuple[AddParams, tuple[int, int]]:
    """(AddParams, (act_min, act_max)) of a quantized Add node (TFLM add_common.cc Prepare)."""
    a, b, y = (graph.t(n).quant for n in (*node.inputs[:2], node.outputs[0]))
    return add_params(a.s, a.zp, b.s, b.zp, y.s, y.zp), act_range_s8(node.attrs.act, y)


@register("ADD", "Add")
class Add(OpDef):
    stacks_samples = True  # elementwise
    stacks_samples_int8 = True  # add_s8: elementwise integer arithmetic

    def stacks_samples_f32(self, node: Node, graph: Graph) -> bool:
        # a broadcast activation of lower rank would line its axis 0 up with another axis
        rank = len(graph.t(node.outputs[0]).shape)
        return all(graph.t(i).is_const or len(graph.t(i).shape) == rank for i in node.inputs)
    # the flat kernel allows output == either input; broadcast shapes take the strided kernel;
    # ISA variants: toolchain/isa/
    variants = (*rounding_twins(portable("add", applies=lambda n, g: not needs_broadcast(n, g), inplace_inputs=(0, 1))),
                *rounding_twins(portable("add_broadcast", applies=needs_broadcast, args=lambda n, g: _broadcast_args(n, g))),
                portable_s16("add", applies=lambda n, g: not needs_broadcast(n, g), args=s16_args,
                             inplace_inputs=(0, 1)),
                portable_s16("add_broadcast", applies=needs_broadcast, args=s16_broadcast_args))

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, graph)]

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        return quantize_constant_operands(node, graph)

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        return [apply_act_f32((ins[0] + ins[1]).astype(np.float32), node.attrs.act)]

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = params(node, graph)
        return [add_s8(ins[0], ins[1], p, lo, hi)]

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        p, (lo, hi) = params_s16(node, graph)
        return [add_s16(ins[0], ins[1], p, lo, hi)]

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        p, (lo, hi) = params(node, graph)
        ints = [p.input1_offset, p.input1_mult, p.input1_shift, p.input2_offset, p.input2_mult, p.input2_shift,
                p.left_shift, p.output_offset, p.output_mult, p.output_shift, lo, hi, graph.t(node.outputs[0]).size]
        return [*map(CArg.lit, ints), operand(graph, node.inputs[0]), operand(graph, node.inputs[1]),
                CArg("act", node.outputs[0])]

    def cost(self, node: Node, graph: Graph) -> Cost:
        c = super().cost(node, graph)
        return Cost(graph.t(node.outputs[0]).size, c.weight_bytes, c.act_read_bytes, c.act_write_bytes)


def _broadcast_args(node: Node, graph: Graph) -> list[CArg]:
    """add_broadcast_s8: the flat kernel's parameters without the size, the loop plan, the operands."""
    flat = Add().kernel_args(node, graph)
    return [*flat[:12], *broadcast_args(node, graph), *flat[13:]]
