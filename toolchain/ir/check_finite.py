"""The numbers a model brings must be usable: every frontend's graph (float ONNX, QDQ ONNX, TFLite)
passes here before passes and quantization, and every quantized graph before lowering.

Refused (InputError naming the model file, the tensor and a consumer node): NaN or inf in a float
constant (weights, biases, constant operands) or NaN in a node attribute (a float attribute may be
inf on purpose: an open Clip bound); a quantization scale that is not finite and > 0, a zero point
outside its tensor's integer type. Without this, NaN weights compile, run and report "PASS" with a
top-1 agreement of 0.0 and a bare NaN in report.json. Colleagues' file validators look at the
files; this is the net behind them at the one point all frontends share.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from toolchain.clip import clip_text
from toolchain.errors import InputError
from toolchain.ir.graph import Graph, Tensor
from toolchain.ir.types import QuantParams

_FIX = "re-export the model from a checkpoint with finite weights"
_FIX_Q = "re-quantize or re-export the model"


def check_finite_graph(graph: Graph, model: Any, after: str = "") -> None:
    """Raise InputError unless every float constant of `graph` is finite, no node attribute is
    NaN and every tensor's quantization (if any) is valid (see check_quant). `after`: the step that
    made the constants (finite weights can overflow float32 when folded), for the message."""
    users = _first_users(graph)
    for name, t in graph.tensors.items():
        if t.is_const and t.data is not None and np.asarray(t.data).dtype.kind in "fc":
            _finite_array(np.asarray(t.data), _where(model, name, users), "values", after)
        if t.quant is not None:
            check_quant(t.quant, t, _where(model, name, users))
    for node in graph.nodes:
        bad = _nan_attr(node.attrs)
        if bad is not None:
            raise InputError(f"{_show(model)}: node {clip_text(node.source or node.name, 60)!r}: attribute "
                             f"{bad} is NaN; {_FIX}")


def check_given(given: Mapping[str, QuantParams], consts: Mapping[str, Tensor], graph: Graph, model: Any) -> None:
    """The quantization a QDQ / QLinear model brings (activation grids and quantized constants),
    checked before the quantizer uses it; raises InputError like check_finite_graph."""
    users = _first_users(graph)
    for name, qp in given.items():
        check_quant(qp, graph.tensors.get(name), _where(model, name, users))
    for name, t in consts.items():
        where = _where(model, name, users)
        if t.data is not None and np.asarray(t.data).dtype.kind in "fc":
            _finite_array(np.asarray(t.data), where, "values")
        if t.quant is not None:  # a constant's values may live in the graph's (dequantized) tensor
            check_quant(t.quant, t if t.data is not None else graph.tensors.get(name, t), where)


def check_quant(qp: QuantParams, tensor: Tensor | None, where: str) -> None:
    """Raise InputError (prefixed with `where`) unless every scale is finite and > 0 and every zero
    point lies in the range of `tensor`'s integer type (int8 when the tensor is float or unknown)."""
    scales = [float(s) for s in qp.scale]
    zero_ok = _zero_scale_harmless(qp, tensor)
    bad = next((s for s in scales if not math.isfinite(s) or s < 0 or (s == 0 and not zero_ok)), None)
    if bad is not None:
        raise InputError(f"{where}: quantization scale {bad!r}, must be finite and > 0; {_FIX_Q}")
    dt = tensor.dtype.np if tensor is not None and tensor.dtype.np.kind in "iu" else np.dtype(np.int8)
    info = np.iinfo(dt)
    zp = next((z for z in qp.zero_point if not info.min <= int(z) <= info.max), None)
    if zp is not None:
        raise InputError(f"{where}: zero point {int(zp)} outside {dt.name} [{info.min}, {info.max}]; {_FIX_Q}")


def _zero_scale_harmless(qp: QuantParams, tensor: Tensor | None) -> bool:
    """Whether a scale of 0 is harmless: in a per-channel quantized constant (BL-18: TFLite / QDQ files
    store 0 for pruned filter channels; the channel's real values are 0 whatever its integers, as
    onnxruntime computes it, and its requantization multiplier becomes 0). A per-tensor scale of 0,
    or one of an activation, has no such reading and stays refused."""
    return tensor is not None and tensor.data is not None and len(qp.scale) > 1


def _finite_array(a: np.ndarray, where: str, what: str, after: str = "") -> None:
    ok = np.isfinite(a)
    if ok.all():
        return
    nan, inf = int(np.isnan(a).sum()), int((~ok).sum() - np.isnan(a).sum())
    kinds = " and ".join(k for k, n in (("NaN", nan), ("inf", inf)) if n)
    if after:
        raise InputError(f"{where}: {kinds} in {nan + inf} of {a.size} {what} after {after} (weights too large "
                         "for float32); re-export the model with smaller weights")
    raise InputError(f"{where}: {kinds} in {nan + inf} of {a.size} {what}; {_FIX}")


def _first_users(graph: Graph) -> dict[str, str]:
    """tensor name -> the first node reading it (its frontend name), for messages."""
    out: dict[str, str] = {}
    for node in graph.nodes:
        for i in node.inputs:
            out.setdefault(i, node.source or node.name)
    return out


def _where(model: Any, name: str, users: Mapping[str, str]) -> str:
    user = users.get(name)
    via = f" (input of node {clip_text(user, 40)!r})" if user else ""
    return f"{_show(model)}: tensor {clip_text(name, 60)!r}{via}"


def _show(model: Any) -> str:
    return clip_text(str(model), 200)


def _nan_attr(attrs: Any, depth: int = 0) -> str | None:
    """The name of a NaN field of an op's attribute dataclass (nested dataclasses, tuples and
    arrays included), else None."""
    if attrs is None or depth > 4 or not dataclasses.is_dataclass(attrs):
        return None
    for f in dataclasses.fields(attrs):
        v = getattr(attrs, f.name)
        if dataclasses.is_dataclass(v):
            inner = _nan_attr(v, depth + 1)
            if inner is not None:
                return f"{f.name}.{inner}"
        elif _has_nan(v):
            return f.name
    return None


def _has_nan(v: Any) -> bool:
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "fc" and bool(np.isnan(v).any())
    if isinstance(v, tuple | list) and len(v) <= 4096:
        return any(_has_nan(x) for x in v)
    return False


__all__ = ["check_finite_graph", "check_given", "check_quant"]
