"""Validation at the door, quantization parameters: the scales and zero points of the quantized ONNX
operators (QuantizeLinear-10..21, DequantizeLinear-10..21, QLinearConv-10, QLinearMatMul-10,
ConvInteger-10, MatMulInteger-10, ONNX operator docs) that are constants of the file, checked
before any pass (toolchain.frontend.onnx_validate runs this).

Spec rules checked: a scale is float; a zero point has the integer type of its tensor, the same
shape as its scale, and int32 only where the spec allows it (DequantizeLinear of int32: bias, zero
point 0). Beyond the spec, what the int8 code generation needs: every scale finite, positive and a
normal float32 (a subnormal scale makes requantization multipliers overflow; 0 only for constant
integers: onnxruntime gives a weight channel of zeros scale 0); zero points of the
int8 / uint8 types (no int16 / 4-bit / float8 quantization); a per-axis scale 1-D, of the length of
its constant tensor's axis, and that axis in range.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from toolchain.frontend.onnx_validate import DEFAULT_DOMAINS, invalid, node_where, q

# op -> (integer tensor, its scale, its zero point) input positions; -1 = none
ROLES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "QuantizeLinear": ((-1, 1, 2),), "DequantizeLinear": ((0, 1, 2),),
    "QLinearConv": ((0, 1, 2), (3, 4, 5), (-1, 6, 7)), "QLinearMatMul": ((0, 1, 2), (3, 4, 5), (-1, 6, 7)),
    "ConvInteger": ((0, -1, 2), (1, -1, 3)), "MatMulInteger": ((0, -1, 2), (1, -1, 3))}
INT8_TYPES = (TensorProto.INT8, TensorProto.UINT8)
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)
TINY = float(np.finfo(np.float32).tiny)
FIX = "re-quantize the model (finite positive scales, int8 / uint8 zero points)"


def validate_qdq(g: onnx.GraphProto, path: str | Path) -> None:
    """The scale / zero point constants of every quantized node of the default domain (see the
    module docstring). Inputs that are not constants are left to the QDQ frontend.

    Raises InputError naming the file, the node and the tensor."""
    consts = {t.name: t for t in g.initializer}
    for n in g.node:  # Constant nodes hold scales in some exporters' files
        if n.op_type == "Constant" and n.domain in DEFAULT_DOMAINS and n.output:
            value = next((a.t for a in n.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None)
            if value is not None:
                consts[n.output[0]] = value
    for i, n in enumerate(g.node):
        if n.domain not in DEFAULT_DOMAINS or n.op_type not in ROLES:
            continue
        where = node_where(n, i)
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        for x, s, z in ROLES[n.op_type]:
            scale = _const(n, s, consts)
            zp = _const(n, z, consts)
            data = _const(n, x, consts)
            if scale is not None:  # 0 may scale constant integers: a weight channel of zeros (onnxruntime)
                _check_scale(path, where, n.input[s], scale, zero_ok=data is not None)
            if zp is not None:
                _check_zero_point(path, where, n, n.input[z], zp, data)
            if n.op_type in ("QuantizeLinear", "DequantizeLinear") and scale is not None:
                _check_axis(path, where, n, axis, scale, zp, _const(n, 0, consts))  # float or int input


def _const(n: onnx.NodeProto, pos: int, consts: dict[str, TensorProto]) -> TensorProto | None:
    return consts.get(n.input[pos]) if 0 <= pos < len(n.input) and n.input[pos] else None


def _check_scale(path: str | Path, where: str, name: str, t: TensorProto, zero_ok: bool) -> None:
    if t.data_type not in FLOAT_TYPES:
        raise invalid(path, where, f"scale {q(name)} of type {TensorProto.DataType.Name(t.data_type).lower()} "
                      "(ONNX scales are float)", FIX)
    with np.errstate(all="ignore"):  # a NaN or out-of-range value is what this looks for: no warning
        v = numpy_helper.to_array(t).astype(np.float64).reshape(-1)
    bad = v[~(np.isfinite(v) & ((v >= TINY) | ((v == 0) & zero_ok)))]
    if bad.size:
        raise invalid(path, where, f"scale {q(name)} holds {float(bad[0])!r} (scales must be finite, positive and at "
                      f"least {TINY:.3g})", FIX)


def _check_zero_point(path: str | Path, where: str, n: onnx.NodeProto, name: str, t: TensorProto,
                      data: TensorProto | None) -> None:
    dtype = TensorProto.DataType.Name(t.data_type).lower()
    bias = n.op_type == "DequantizeLinear" and t.data_type == TensorProto.INT32
    if t.data_type not in INT8_TYPES and not bias:
        raise invalid(path, where, f"zero point {q(name)} of type {dtype} (int8 or uint8; int32 only for a "
                      "DequantizeLinear of int32 bias)", FIX)
    if data is not None and data.data_type != t.data_type:
        have = TensorProto.DataType.Name(data.data_type).lower()
        raise invalid(path, where, f"zero point {q(name)} of type {dtype} for integers {q(n.input[0])} of type "
                      f"{have} (ONNX: the same type)", FIX)
    if bias:  # ONNX DequantizeLinear: int32 has no zero point ("supposed to be 0")
        v = numpy_helper.to_array(t).astype(np.int64).reshape(-1)
        if np.any(v != 0):
            raise invalid(path, where, f"int32 zero point {q(name)} holds {int(v[v != 0][0])} (must be 0)", FIX)
        return
    raw = np.asarray(t.int32_data, np.int64)  # int8 / uint8 values kept in int32_data may lie outside the type
    lo, hi = (-128, 127) if t.data_type == TensorProto.INT8 else (0, 255)
    if np.any((raw < lo) | (raw > hi)):
        shown = int(raw[(raw < lo) | (raw > hi)][0])
        raise invalid(path, where, f"zero point {q(name)} holds {shown} (outside [{lo}, {hi}] for {dtype})", FIX)


def _check_axis(path: str | Path, where: str, n: onnx.NodeProto, axis: int, scale: TensorProto,
                zp: TensorProto | None, data: TensorProto | None) -> None:
    """Per-tensor: a scalar (or 1-element) scale. Per-axis: a 1-D scale of data.shape[axis] values,
    axis within the rank of the constant data; zero point of the scale's shape."""
    if zp is not None and list(zp.dims) != list(scale.dims) and _count(zp) != _count(scale):
        raise invalid(path, where, f"zero point {q(n.input[2])} of shape {list(zp.dims)} for scale "
                      f"{q(n.input[1])} of shape {list(scale.dims)} (ONNX: the same shape)", FIX)
    if _count(scale) == 1 and len(scale.dims) <= 1:
        return
    if len(scale.dims) != 1:
        raise invalid(path, where, f"scale {q(n.input[1])} of shape {list(scale.dims)} (a scalar, or 1-D per "
                      "axis; blocked quantization is not supported)", FIX)
    if data is None:
        return  # per-axis on an activation: the QDQ frontend refuses it
    rank = len(data.dims)
    if not -rank <= axis < rank:
        raise invalid(path, where, f"axis {axis} for {q(n.input[0])} of rank {rank}", FIX)
    if data.dims[axis % rank] != scale.dims[0]:
        raise invalid(path, where, f"{scale.dims[0]} scales for axis {axis} of {q(n.input[0])} of shape "
                      f"{list(data.dims)}", FIX)


def _count(t: TensorProto) -> int:
    return int(np.prod(t.dims, dtype=np.int64))


__all__ = ["validate_qdq"]
