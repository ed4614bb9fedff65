"""Element-wise and data-movement int8 ops without their own module: the int8 reference semantics
of Mul (TFLM reference_integer_ops::MulElementwise), Relu/Clip with identical in/out qparams
(a clamp), Pad (TFLite PAD: the pad value is the output zero point) and Transpose.

Owns `mul_s8`, `clamp_s8`, `pad_s8`, `transpose_s8`. Mul parameters come from
fixed_point.mul_params.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolchain.ops.fixed_point import MulParams, check_act_range, requantize_s8


def mul_s8(x1: np.ndarray, x2: np.ndarray, p: MulParams, act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """int8 element-wise multiply (TFLM reference_integer_ops::MulElementwise).

    x1, x2: int8 of one shape (numpy broadcasting accepted). out = MBQM((x1 + o1) * (x2 + o2),
    output_mult, output_shift) + output_offset, clamped -> int8. |product| <= 2^16 fits int32.
    """
    try:
        shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    except ValueError:
        raise ValueError(f"mul inputs {np.shape(x1)} and {np.shape(x2)} do not broadcast") from None
    a = np.broadcast_to(np.asarray(x1, np.int64), shape) + p.input1_offset
    b = np.broadcast_to(np.asarray(x2, np.int64), shape) + p.input2_offset
    return requantize_s8(a * b, p.output_mult, p.output_shift, p.output_offset, act_min, act_max)


def clamp_s8(x: np.ndarray, act_min: int, act_max: int) -> np.ndarray:
    """Standalone Relu/Relu6/Clip on int8 with identical in/out qparams: clip to
    [act_min, act_max] (bounds from fixed_point.activation_range, i.e. zero-point based; BL-27)."""
    check_act_range(act_min, act_max)
    return np.clip(np.asarray(x), act_min, act_max).astype(np.int8)


def pad_s8(x: np.ndarray, pads: Sequence[tuple[int, int]], *, pad_value: int) -> np.ndarray:
    """Constant pad (TFLite PAD/PADV2 int8): pads[i] = (before, after) for axis i, both >= 0.
    pad_value is the quantized constant, normally the output zero point (real 0; BL-07)."""
    if len(pads) != x.ndim or any(len(pr) != 2 or min(pr) < 0 for pr in pads):
        raise ValueError(f"pads {pads!r} do not give (before, after) >= 0 for each of {x.ndim} axes")
    if not -128 <= pad_value <= 127:
        raise ValueError(f"pad value {pad_value} is not an int8")
    return np.pad(np.asarray(x, np.int8), [tuple(int(v) for v in pr) for pr in pads],
                  mode="constant", constant_values=np.int8(pad_value))


def transpose_s8(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """Transpose (TFLite TRANSPOSE): output axis i is input axis perm[i] (np.transpose)."""
    perm = [int(v) for v in perm]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of {x.ndim} axes")
    return np.ascontiguousarray(np.transpose(x, perm))
