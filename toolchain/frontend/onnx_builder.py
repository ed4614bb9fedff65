"""The state the ONNX converters share: ONNX value -> IR tensor (with its layout), constants,
emitted nodes, and the per-node context used in error messages.

Owns the NCHW<->NHWC bookkeeping: `nhwc(v)` and `onnx_order(v)` return an IR tensor in the
wanted layout, inserting (and caching) a Transpose when needed. With `nhwc_io` (YAML `io_layout:
NHWC`) the 4-D graph inputs and outputs themselves are NHWC ([N, H, W, C] of the ONNX [N, C, H, W]):
no Transpose after the inputs nor before the outputs (graph.meta NHWC_IO lists them).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx_validate import DEFAULT_DOMAINS, invalid
from toolchain.frontend.unsupported import UNKNOWN_OP, NodeUnsupported, Problem, node_label
from toolchain.io_layout import NHWC_IO
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ir.graph import fresh_name
from toolchain.ops.registry import OpKind, opdef
from toolchain.ops.shape_ops import ReshapeAttrs, TransposeAttrs

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


@dataclass(frozen=True)
class Val:
    """An ONNX value as the IR holds it: the IR tensor name and whether it is stored NHWC."""

    name: str
    nhwc: bool


def node_attrs(node: Any) -> dict[str, Any]:
    """An ONNX node's attributes by name (strings decoded)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}


def signature_error(node: Any, fn: Callable[..., Any]) -> str | None:
    """What of an ONNX node its converter `fn` cannot take (attributes it has no parameter for, too
    many inputs, a required input missing or empty), or None. Static: the frontends check every node with it before converting any, so
    a model's unsupported nodes are reported all at once."""
    params = inspect.signature(fn).parameters
    attrs = node_attrs(node)
    unknown = sorted(set(attrs) - set(params))
    if unknown:
        return f"attribute(s) {', '.join(unknown)}"
    variadic = any(p.kind == p.VAR_POSITIONAL for p in params.values())
    if not variadic and len(node.input) > len(params) - 1 - sum(p.kind == p.KEYWORD_ONLY for p in params.values()):
        return f"number of inputs ({len(node.input)})"
    positional = [p for p in params.values() if p.kind == p.POSITIONAL_OR_KEYWORD][1:]  # after the Builder
    both = [p.name for i, p in enumerate(positional) if i < len(node.input) and node.input[i] and p.name in attrs]
    if both:  # e.g. Pad's pads: an attribute before opset 11, an input since; never both
        return f"{', '.join(both)} given both as input and as attribute"
    missing = [p.name for i, p in enumerate(positional)
               if p.default is p.empty and (i >= len(node.input) or not node.input[i])]
    if missing:
        return f"missing required input(s) {', '.join(missing)} ({len(node.input)} given)"
    return None


def input_as_attribute(node: Any, fn: Callable[..., Any], opset: int) -> str | None:
    """An attribute named like one of the converter's inputs (Pad's pads, Squeeze's axes: inputs in
    newer opsets, attributes in older ones) that the node's own opset does not define as an
    attribute (ONNX operator schema of `opset`), or None. Such a value would reach the converter as
    a Python list where it reads an input name."""
    params = [p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
    named = sorted(set(node_attrs(node)) & set(params))
    if not named or not onnx.defs.has(node.op_type):
        return None
    schema = onnx.defs.get_schema(node.op_type, opset)
    stray = [a for a in named if a not in schema.attributes]
    return f"attribute(s) {', '.join(stray)} ({node.op_type}-{schema.since_version} has no such attribute)" if stray \
        else None


def inferred_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    """ONNX value name -> its static shape from onnx.shape_inference (values of unknown or dynamic
    shape left out; {} when inference fails). Used only to keep checking the nodes after an
    unsupported one."""
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is a best effort here: the model is already being rejected
        return {}
    out = {}
    for vi in (*model.graph.input, *model.graph.value_info, *model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            out[vi.name] = tuple(int(d.dim_value) for d in dims)
    return out


class Builder:
    """Accumulates IR tensors and nodes while converters run over the ONNX nodes in order."""

    def __init__(self, path: Path, opset: int, name: str, nhwc_io: bool = False) -> None:
        self.path, self.opset, self.name = path, opset, name
        self.nhwc_io = nhwc_io  # io_layout: NHWC: 4-D graph inputs and outputs in NHWC
        self.consts: dict[str, np.ndarray] = {}
        self.vals: dict[str, Val] = {}
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self._cache: dict[tuple[str, tuple[int, ...]], str] = {}
        self.node: Any = None
        self.op_type = ""
        self.errors: list[Problem] = []  # every unsupported node so far, reported together at the end
        self.index: dict[tuple[str, ...], int] = {}  # node outputs -> its index in the ONNX graph
        self.rejected: set[tuple[str, ...]] = set()  # outputs of nodes the static checks already listed
        self.model: Any = None           # the ONNX model, for shapes after an unsupported node
        self._shapes: dict[str, tuple[int, ...]] | None = None

    # -- errors and context ------------------------------------------------------------------
    def label(self, node: Any) -> str:
        """A node as errors name it: its name, or `#INDEX` in the ONNX graph when it has none."""
        return node_label(node.name, self.index.get(tuple(node.output)))

    def unsupported(self, what: str) -> NodeUnsupported:
        """An error naming the file, the node and its op; the caller raises it."""
        return NodeUnsupported(self.path, Problem(self.label(self.node), self.op_type, what))

    def invalid(self, what: str, todo: str = "fix the node against the ONNX operator spec") -> InputError:
        """A one-line InputError for the current node breaking the ONNX operator spec (not merely
        unsupported): `FILE: node NAME (OP): WHAT; TODO`. The caller raises it; it stops the import."""
        return invalid(self.path, f"node {self.label(self.node)} ({self.op_type})", what, todo)

    def axis(self, value: Any, rank: int, what: str = "axis") -> int:
        """An axis attribute or input value in [-rank, rank) (ONNX operator spec), as 0..rank-1.

        Raises InputError (self.invalid) outside that range or when it is not an integer."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not -rank <= value < rank:
            raise self.invalid(f"{what} {value!r} out of range for rank {rank} (ONNX: [-{rank}, {rank - 1}])")
        return int(value) % rank

    def axes(self, values: Any, rank: int, what: str = "axes") -> list[int]:
        """Several axes (self.axis each), none repeated (ONNX operator spec), as 0..rank-1."""
        out = [self.axis(v, rank, what) for v in values]
        if len(set(out)) != len(out):
            raise self.invalid(f"{what} {[int(v) for v in values]} repeat an axis")
        return out

    def convert(self, node: Any, fn: Callable[..., Any] | None, after: Callable[[int], None] | None = None) -> bool:
        """Run one converter on one ONNX node, mapping inputs positionally and attributes by name
        (then `after(index of its first IR node)`). An unsupported node does not stop the
        conversion: its error goes to self.errors and its outputs get placeholder values (shapes from
        ONNX shape inference) so later nodes are still checked; a node reading a value nobody could
        compute is skipped silently (its own problems cannot be known). Returns True on success."""
        self.node, self.op_type = node, node.op_type
        unknown_input = any(i and i not in self.vals and i not in self.consts for i in node.input)
        if fn is None or tuple(node.output) in self.rejected or unknown_input:
            self._placeholders(node)
            return False
        problem = signature_error(node, fn)
        first = len(self.nodes)
        try:
            if problem:
                raise self.unsupported(problem)
            fn(self, *node.input, **node_attrs(node))
            if after is not None:
                after(first)
        except UnsupportedModel as e:
            self.errors.append(e.problem if isinstance(e, NodeUnsupported) else
                               Problem(self.label(node), node.op_type, str(e).removeprefix(f"{self.path}: ")))
            self._placeholders(node)
            return False
        return True

    def _placeholders(self, node: Any) -> None:
        """Give the outputs of a node that could not be converted a producer-less IR tensor of the
        shape ONNX infers (ONNX layout), or nothing when it infers none."""
        if self._shapes is None:
            self._shapes = inferred_shapes(self.model) if self.model is not None else {}
        for o in node.output:
            if o and o not in self.vals and o in self._shapes:
                name = fresh_name(self.tensors, o)
                self.tensors[name] = Tensor(name, self._shapes[o], DType.FLOAT32)
                self.vals[o] = Val(name, False)

    def check_statically(self, nodes: Any, converters: dict[str, Callable[..., Any]]) -> bool:
        """List in self.errors every node whose op has no converter or whose attributes / inputs its
        converter cannot take; convert() then skips them. Static (no shapes), so these are found even
        behind an unsupported node whose outputs are unknown. True when some op has no converter.
        The converters are those of the default ONNX domain: a node of another domain (onnxruntime's
        com.microsoft, ai.onnx.ml) is unsupported whatever its op_type.
        Also indexes the nodes (for `#INDEX` labels) unless the caller set self.index already."""
        self.index = self.index or {tuple(n.output): i for i, n in enumerate(nodes)}
        missing = [n for n in nodes if n.op_type not in converters or n.domain not in DEFAULT_DOMAINS]
        self.errors += [Problem(self.label(n), n.op_type, UNKNOWN_OP if n.domain in DEFAULT_DOMAINS else
                                f"op of domain {n.domain!r} (standard ONNX operators only)") for n in missing]
        for n in nodes:
            fn = converters.get(n.op_type) if n.domain in DEFAULT_DOMAINS else None
            if fn is not None and (e := signature_error(n, fn) or input_as_attribute(n, fn, self.opset)):
                self.errors.append(Problem(self.label(n), n.op_type, e))
                self.rejected.add(tuple(n.output))
        self.rejected |= {tuple(n.output) for n in missing}
        return bool(missing)

    # -- values ------------------------------------------------------------------------------
    def is_const(self, name: str) -> bool:
        return name in self.consts

    def const(self, name: str, what: str) -> np.ndarray:
        if name not in self.consts:
            raise self.unsupported(f"non-constant {what} input {name!r} (must be an initializer)")
        return np.asarray(self.consts[name])

    def ints(self, name: str, what: str) -> list[int]:
        """A constant input that the ONNX spec types as a 1-D int64 tensor (shape, axes, starts, pads,
        split, sizes) as a list. Raises NodeUnsupported when it is not a constant and InputError
        (self.invalid) when it is not a 1-D (or scalar) integer tensor."""
        v = self.const(name, what)
        if v.ndim > 1 or v.dtype.kind not in "iu":
            raise self.invalid(f"{what} input {name!r} of shape {list(v.shape)} and type {v.dtype} (ONNX: 1-D int64)")
        return [int(x) for x in v.reshape(-1)]

    def scalar(self, name: str, what: str) -> float:
        """A constant input that the ONNX spec types as a scalar (Clip min / max, Dropout's
        training_mode): one element. Raises InputError (self.invalid) otherwise."""
        v = self.const(name, what)
        if v.size != 1:
            raise self.invalid(f"{what} input {name!r} of shape {list(v.shape)} (ONNX: a scalar)")
        return float(v.reshape(-1)[0])

    def val(self, name: str) -> Val:
        if name not in self.vals:
            raise self.unsupported(f"input {name!r} (constant where an activation is expected)")
        return self.vals[name]

    def shape(self, ir_name: str) -> tuple[int, ...]:
        return self.tensors[ir_name].shape

    def onnx_shape(self, name: str) -> tuple[int, ...]:
        v = self.val(name)
        s = self.shape(v.name)
        return tuple(s[i] for i in TO_NCHW) if v.nhwc else s

    def is_nhwc(self, name: str) -> bool:
        return self.val(name).nhwc

    def is_nhwc_name(self, ir_name: str) -> bool:
        return any(v.nhwc for v in self.vals.values() if v.name == ir_name)

    def any_layout(self, name: str) -> str:
        return self.val(name).name

    def nhwc(self, name: str) -> str:
        v = self.val(name)
        if v.nhwc:
            return v.name
        if len(self.shape(v.name)) != 4:
            raise self.unsupported(f"input {name!r} of rank {len(self.shape(v.name))} (needs 4-D NCHW)")
        return self._transpose(v.name, TO_NHWC)

    def onnx_order(self, name: str) -> str:
        v = self.val(name)
        return self._transpose(v.name, TO_NCHW) if v.nhwc else v.name

    def transpose_to(self, ir_name: str, perm: tuple[int, ...]) -> str:
        """IR tensor `ir_name` permuted by `perm` (a Transpose node, cached per tensor and perm)."""
        return self._transpose(ir_name, perm)

    def _transpose(self, ir_name: str, perm: tuple[int, ...]) -> str:
        key = (ir_name, perm)
        if key not in self._cache:
            suffix = {TO_NHWC: "nhwc", TO_NCHW: "nchw"}.get(perm, "t")
            out = fresh_name(self.tensors, f"{ir_name}_{suffix}")
            self._add_node(OpKind.TRANSPOSE, [ir_name], TransposeAttrs(perm), out)
            self._cache[key] = out
        return self._cache[key]

    # -- emission ----------------------------------------------------------------------------
    def add_input(self, name: str, shape: tuple[int, ...], dtype: DType) -> None:
        """A graph input of ONNX `shape`; with nhwc_io a 4-D one is held (and given to the user) NHWC."""
        nhwc = self.nhwc_io and len(shape) == 4
        self.tensors[name] = Tensor(name, tuple(shape[i] for i in TO_NHWC) if nhwc else tuple(shape), dtype)
        self.inputs.append(name)
        self.vals[name] = Val(name, nhwc)

    def add_const(self, suffix: str, data: np.ndarray) -> str:
        base = self.node.output[0] if self.node is not None else "const"
        name = fresh_name(self.tensors, f"{base}_{suffix}")
        arr = np.ascontiguousarray(data, dtype=np.float32)
        self.tensors[name] = Tensor(name, tuple(arr.shape), DType.FLOAT32, None, arr)
        return name

    def emit(self, kind: OpKind, args: list[str], attrs: Any, nhwc: bool = False, intermediate: bool = False) -> str:
        """Append an IR node computing the current ONNX node's first output (or, with
        intermediate, a helper tensor of a multi-node lowering); returns the IR tensor name."""
        out = self.node.output[0]
        if intermediate:
            out = fresh_name(self.tensors, f"{out}_{kind.value.lower()}")
        self._add_node(kind, args, attrs, out)
        if not intermediate:
            self.vals[out] = Val(out, nhwc)
        return out

    def reshape_to(self, ir_name: str, shape: tuple[int, ...]) -> str:
        """A Reshape view of an IR tensor (no copy)."""
        return self.emit(OpKind.RESHAPE, [ir_name], ReshapeAttrs(tuple(shape)), intermediate=True)

    def alias(self, name: str) -> None:
        self.vals[self.node.output[0]] = self.val(name)

    def _add_node(self, kind: OpKind, args: list[str], attrs: Any, out: str) -> None:
        node = Node(out if out not in {n.name for n in self.nodes} else fresh_name([n.name for n in self.nodes], out),
                    kind, tuple(args), (out,), attrs, source=(self.node.name if self.node is not None else ""))
        probe = Graph(self.name, (node,), self.tensors, tuple(self.inputs), ())
        try:
            (shape,) = opdef(node).infer_shapes(node, probe)
        except ValueError as e:
            raise self.unsupported(f"shapes: {e}") from None
        dtype = self.tensors[args[0]].dtype
        self.tensors[out] = Tensor(out, tuple(int(s) for s in shape), dtype)
        self.nodes.append(node)

    def finish(self, outputs: list[str]) -> Graph:
        """The Graph: ONNX outputs in ONNX element order, or with nhwc_io the 4-D ones NHWC (a Transpose
        only where the value is not NHWC already, e.g. behind a Reshape to 4-D)."""
        self.node = None
        outs = []
        for o in outputs:
            if o not in self.vals:
                raise UnsupportedModel(f"{self.path}: graph output {o!r} is a constant")
            nhwc = self.nhwc_io and len(self.onnx_shape(o)) == 4
            outs.append(self.nhwc(o) if nhwc else self.onnx_order(o))
        io = [n for n in (*self.inputs, *outs) if self.nhwc_io and len(self.tensors[n].shape) == 4]
        return Graph(self.name, tuple(self.nodes), self.tensors, tuple(self.inputs), tuple(outs),
                     meta={"source": str(self.path), "opset": self.opset, "format": "onnx",
                           "input_layout": "NHWC" if self.nhwc_io else "NCHW", **({NHWC_IO: tuple(io)} if io else {})})
