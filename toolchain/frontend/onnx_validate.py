"""Validation at the door: an ONNX ModelProto as parsed from the file, checked against the ONNX IR
spec (onnx/docs/IR.md) and the operator schemas (onnx.defs) before canonicalisation or any pass, so
later code may assume a well-formed graph. Every failure is one InputError line:

    FILE: node conv_1 (Conv): reads 'w9', which no graph input, initializer or node produces; re-export the model

Checked here: names (UTF-8, not empty where the IR requires one, escaped in messages), opset imports
(a default-domain one, versions the installed onnx knows), node domains, per node its schema's
input / output counts and attribute types, the graph's SSA form and topological order (no dangling
input, no value produced twice, no cycle, outputs produced), tensor data against dims and dtype,
graph input dims, and that onnx's C++ shape inference does not abort the process on the model.
Quantization parameters: onnx_validate_qdq. Not here: attribute values that need shapes (the
converters' shared helpers: onnx.py `spatial_attrs`, onnx_builder `Builder.axis` / `ints`),
NaN / Inf in float weights (the IR check).
"""
from __future__ import annotations

import faulthandler
import math
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import onnx
import onnx.defs
from google.protobuf.descriptor import FieldDescriptor
from onnx import TensorProto

from toolchain.errors import InputError, printable

MAX_ELEMENTS = 1 << 28   # elements of one tensor (1 GiB of float32): far past any MCU model
MAX_DIM = 1 << 20        # one dimension of a graph input
DEFAULT_DOMAINS = ("", "ai.onnx")
# Other domains a node may have: standard (ai.onnx.ml) or onnxruntime's (com.microsoft, the contrib
# QLinear* ops of its quantizer). The frontends report such nodes as unsupported ops, with the others.
KNOWN_DOMAINS = (*DEFAULT_DOMAINS, "ai.onnx.ml", "com.microsoft")
REEXPORT = "re-export the model"
OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
GUARD_S = 120.0          # seconds the forked shape-inference trial may take


def invalid(path: str | Path, where: str, what: str, todo: str = REEXPORT) -> InputError:
    """`FILE: WHERE: WHAT; TODO` as one InputError line (at most 300 characters: `what` is cut)."""
    head, tail = f"{path}: {where}: ", f"; {todo}"
    room = max(300 - len(head) - len(tail), 40)
    return InputError(head + (what if len(what) <= room else what[: room - 1] + "…") + tail)


def node_where(node: onnx.NodeProto, index: int) -> str:
    """How messages name a node: `node NAME (OP)`, or `node #INDEX (OP)` when unnamed."""
    return f"node {printable(node.name) if node.name else f'#{index}'} ({printable(node.op_type, 40)})"


def q(name: str | bytes) -> str:
    """A tensor name quoted for a message (control characters escaped)."""
    return f"'{printable(name)}'"


def validate(model: onnx.ModelProto, path: str | Path) -> None:
    """Check `model` (as read from `path`) against the ONNX IR spec: see the module docstring.

    Raises InputError (one line naming the file, then the node / tensor) for the first problem."""
    _utf8(model, path, "model")
    _opsets(model, path)
    g = model.graph
    _names(g, path)
    _schemas(model, path)
    _tensors(g, path)
    _input_dims(g, path)
    _graph_order(g, path)
    from toolchain.frontend.onnx_validate_qdq import validate_qdq  # noqa: PLC0415 - it imports this module

    validate_qdq(g, path)
    _shape_inference_survives(model, path)


def _utf8(msg: Any, path: str | Path, where: str) -> None:
    """ONNX IR: every name is a UTF-8 string (protobuf hands back bytes for one that is not)."""
    for field, value in msg.ListFields():
        repeated = getattr(field, "is_repeated", None)  # protobuf >= 6; `label` before (deprecated since)
        items = value if (field.label == FieldDescriptor.LABEL_REPEATED if repeated is None else repeated) else [value]
        if field.type == FieldDescriptor.TYPE_STRING:
            for v in items:
                if isinstance(v, bytes):
                    raise invalid(path, where, f"{field.name} {q(v)} is not UTF-8 text (ONNX names are UTF-8)")
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for i, v in enumerate(items):
                if hasattr(v, "ListFields"):  # map fields give plain values
                    label = getattr(v, "name", "") or f"#{i}"
                    _utf8(v, path, f"{field.name} {printable(label)}")


def _opsets(model: onnx.ModelProto, path: str | Path) -> None:
    """ONNX IR: opset_import names each domain once; the default domain's version must be one the
    installed onnx defines (1 .. onnx.defs.onnx_opset_version()); every node's domain is imported."""
    newest = onnx.defs.onnx_opset_version()
    seen: dict[str, int] = {}
    for o in model.opset_import:
        domain = "" if o.domain == "ai.onnx" else o.domain
        if domain in seen:
            raise invalid(path, "opset_import", f"domain {q(o.domain)} imported twice", REEXPORT)
        seen[domain] = o.version
    if "" not in seen:
        raise invalid(path, "opset_import", "no opset of the default domain (ai.onnx)",
                      "re-export the model with an opset_import for domain ''")
    if not 1 <= seen[""] <= newest:
        raise invalid(path, "opset_import", f"default-domain opset {seen['']} (the installed onnx knows 1 to {newest})",
                      "re-export the model with opset 11 to 21")
    for i, n in enumerate(model.graph.node):
        domain = "" if n.domain == "ai.onnx" else n.domain
        if n.domain not in KNOWN_DOMAINS:
            raise invalid(path, node_where(n, i), f"operator of custom domain {q(n.domain)}",
                          "edgecc compiles standard ONNX operators only (domain ''); re-export without custom ops")
        if domain not in seen:
            raise invalid(path, node_where(n, i), f"domain {q(n.domain)} has no opset_import")


def _names(g: onnx.GraphProto, path: str | Path) -> None:
    """ONNX IR: graph inputs, outputs and initializers have non-empty, unique names (an empty node
    input or output is allowed: an optional one left out); a node has an op_type and unique
    attribute names."""
    for kind, items in (("graph input", g.input), ("graph output", g.output), ("initializer", g.initializer)):
        seen: set[str] = set()
        for i, v in enumerate(items):
            if not v.name:
                raise invalid(path, f"{kind} #{i}", "empty name (ONNX requires a name)")
            if v.name in seen:
                raise invalid(path, f"{kind} {q(v.name)}", "listed twice")
            seen.add(v.name)
    if not g.output:
        raise invalid(path, "graph", "no outputs (an ONNX graph needs at least one)")
    if g.sparse_initializer:
        raise invalid(path, f"sparse initializer {q(g.sparse_initializer[0].values.name)}", "not supported",
                      "store the tensor as a dense initializer")
    for i, n in enumerate(g.node):
        if not OP_TYPE.fullmatch(n.op_type):  # every ONNX operator name is an identifier
            raise invalid(path, node_where(n, i), f"op_type {q(n.op_type)} is not an operator name")
        attrs = [a.name for a in n.attribute]
        if "" in attrs or len(set(attrs)) != len(attrs):
            raise invalid(path, node_where(n, i), f"attribute names {[printable(a, 20) for a in attrs]} "
                          "(empty or repeated)")


def _schemas(model: onnx.ModelProto, path: str | Path) -> None:
    """ONNX operator schemas (onnx.defs) at the model's default-domain opset: the node has as many
    inputs and outputs as the schema allows, every required (non-optional) input is given, an
    attribute the schema defines has the schema's type (`group` an INT, `pads` INTS, ...) and a
    required one is present. Attributes the schema does not know are left to the converters
    (reported as unsupported, with every other unsupported node)."""
    opset = next(o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS)
    for i, n in enumerate(model.graph.node):
        if n.domain not in DEFAULT_DOMAINS or not onnx.defs.has(n.op_type):
            continue
        try:
            schema = onnx.defs.get_schema(n.op_type, opset)
        except onnx.defs.SchemaError:  # an op newer than the model's opset: the frontends say so
            continue
        op = f"{n.op_type}-{schema.since_version}"
        _arity(path, n, i, schema, op)
        have = {a.name: a for a in n.attribute}
        for name, spec in schema.attributes.items():
            a = have.get(name)
            if a is None and spec.required:
                raise invalid(path, node_where(n, i), f"no attribute {name} (required by {op})")
            if a is not None and a.type in (onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS):
                _finite(path, n, i, a)
            if a is not None and a.type != int(spec.type.value):
                types = onnx.AttributeProto.AttributeType
                kind = types.Name(a.type) if a.type in types.values() else str(a.type)
                raise invalid(path, node_where(n, i), f"attribute {name} of type {kind} ({op} defines "
                              f"{spec.type.name})")


def _finite(path: str | Path, n: onnx.NodeProto, i: int, a: onnx.AttributeProto) -> None:
    """A float attribute (Gemm alpha / beta, LeakyRelu alpha, epsilon, ...) is a number: NaN never
    is one, and only Clip-6's min / max bounds may be infinite."""
    values = [a.f] if a.type == onnx.AttributeProto.FLOAT else list(a.floats)
    unbounded = n.op_type == "Clip" and a.name in ("min", "max")
    if any(math.isnan(v) or (math.isinf(v) and not unbounded) for v in values):
        raise invalid(path, node_where(n, i), f"attribute {printable(a.name, 20)} = {values[:4]} (not a finite number)")


def _arity(path: str | Path, n: onnx.NodeProto, i: int, schema: Any, op: str) -> None:
    """Inputs and outputs against the schema's counts; a required input left empty."""
    if not schema.min_input <= len(n.input) <= schema.max_input:
        raise invalid(path, node_where(n, i), f"{len(n.input)} inputs ({op} takes {schema.min_input} to "
                      f"{min(schema.max_input, 99)}{'+' if schema.max_input > 99 else ''})")
    if not schema.min_output <= len(n.output) <= schema.max_output:
        raise invalid(path, node_where(n, i), f"{len(n.output)} outputs ({op} gives {schema.min_output} to "
                      f"{min(schema.max_output, 99)}{'+' if schema.max_output > 99 else ''})")
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    for k, (name, formal) in enumerate(zip(n.input, schema.inputs, strict=False)):
        if not name and formal.option == single:
            raise invalid(path, node_where(n, i), f"required input {k} ({formal.name}) is empty")


def _tensors(g: onnx.GraphProto, path: str | Path) -> None:
    """Every initializer and every tensor-valued attribute (Constant value, ...)."""
    for t in g.initializer:
        check_tensor(t, path, f"initializer {q(t.name)}")
    for i, n in enumerate(g.node):
        for a in n.attribute:
            for t in [a.t] if a.type == onnx.AttributeProto.TENSOR else list(a.tensors):
                check_tensor(t, path, f"{node_where(n, i)} attribute {printable(a.name, 20)}")


_PACKED = {getattr(TensorProto, k): per for k, per in (("INT4", 2), ("UINT4", 2), ("FLOAT4E2M1", 2),
                                                        ("INT2", 4), ("UINT2", 4)) if hasattr(TensorProto, k)}
_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def check_tensor(t: onnx.TensorProto, path: str | Path, where: str) -> None:
    """ONNX IR TensorProto: a known data type, dims >= 0, at most MAX_ELEMENTS elements, and data
    (raw_data bytes, or the one typed field) of exactly the dims' element count.

    Raises InputError naming `where`."""
    if t.data_type == TensorProto.UNDEFINED or t.data_type not in TensorProto.DataType.values():
        raise invalid(path, where, f"data type {t.data_type} (not an ONNX tensor type)")
    dtype = TensorProto.DataType.Name(t.data_type).lower()
    count = 1
    for d in t.dims:
        if d < 0:
            raise invalid(path, where, f"negative dimension in shape {list(t.dims)}")
        count *= d
    if count > MAX_ELEMENTS:
        raise invalid(path, where, f"shape {list(t.dims)} has {count} elements (at most {MAX_ELEMENTS})")
    if t.data_location == TensorProto.EXTERNAL:
        return  # external data left unloaded: read_onnx loads it (or refuses the file) before this
    held = [f for f in _FIELDS if len(getattr(t, f))]
    if len(held) > 1:
        raise invalid(path, where, f"data in {len(held)} fields ({', '.join(held)}; ONNX allows one)")
    if not held:
        if count:
            raise invalid(path, where, f"no data for shape {list(t.dims)} ({count} elements)")
        return
    field, per = held[0], _PACKED.get(t.data_type, 1)
    need = -(-count // per)  # packed 4-bit / 2-bit types: several values per byte or int32
    if field == "raw_data":
        if t.data_type == TensorProto.STRING:
            raise invalid(path, where, "string tensor in raw_data (ONNX keeps strings in string_data)")
        size = 1 if t.data_type in _PACKED else onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        have, want, unit = len(t.raw_data), need * size, "bytes"
    else:
        reads = onnx.helper.tensor_dtype_to_field(t.data_type)  # the one typed field ONNX reads this type from
        complex_ = t.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128)
        have, want, unit = len(getattr(t, field)), need * (2 if complex_ else 1), "values"
        if field != reads:
            raise invalid(path, where, f"{dtype} data in {field} (ONNX reads {reads})")
    if have != want:
        raise invalid(path, where, f"{have} {unit} of {dtype} data for shape {list(t.dims)} (needs {want})")


def _input_dims(g: onnx.GraphProto, path: str | Path) -> None:
    """Graph inputs are tensors with an element type; no dim_value anywhere is negative; an input's
    known dims are at most MAX_DIM each and MAX_ELEMENTS together (a symbolic dim is left to
    `input_shapes`)."""
    inits = {t.name for t in g.initializer}
    for kind, items in (("graph input", g.input), ("graph output", g.output), ("value_info", g.value_info)):
        for v in items:
            tt = v.type.tensor_type
            if kind == "graph input" and v.name not in inits:
                if not v.type.HasField("tensor_type") or tt.elem_type == TensorProto.UNDEFINED:
                    raise invalid(path, f"{kind} {q(v.name)}", "not a tensor of a known element type")
            dims = [d.dim_value for d in tt.shape.dim if d.HasField("dim_value")]
            if any(d < 0 for d in dims):
                raise invalid(path, f"{kind} {q(v.name)}", f"negative dimension in shape {dims}")
            if kind != "graph input" or v.name in inits:
                continue
            count = 1
            for d in dims:
                count *= d
            if max(dims, default=0) > MAX_DIM or count > MAX_ELEMENTS:
                raise invalid(path, f"{kind} {q(v.name)}", f"shape {dims} too large (at most {MAX_DIM} a dimension, "
                              f"{MAX_ELEMENTS} elements)", "set smaller `input_shapes` or re-export the model")


def _graph_order(g: onnx.GraphProto, path: str | Path) -> None:
    """ONNX IR (SSA, topological order): every node input is a graph input, an initializer or the
    output of an EARLIER node; every value is produced once; the graph outputs are produced. A node
    reading a later node's output is a cycle when no order exists, else nodes out of order."""
    producer: dict[str, str] = {v.name: "a graph input" for v in g.input}
    producer.update({t.name: "an initializer" for t in g.initializer if t.name not in producer})
    made_by = {o: (i, n) for i, n in enumerate(g.node) for o in n.output if o}
    for i, n in enumerate(g.node):
        for name in n.input:
            if not name or name in producer:
                continue
            if name not in made_by:
                raise invalid(path, node_where(n, i), f"reads {q(name)}, which no graph input, initializer or node "
                              "produces")
            j, later = made_by[name]
            cycle = _cycle(g)
            if cycle:
                names = " -> ".join(node_where(g.node[k], k).removeprefix("node ") for k in cycle[:4])
                raise invalid(path, node_where(n, i), f"is on a cycle ({names}{' …' if len(cycle) > 4 else ''}); "
                              "ONNX graphs are acyclic")
            raise invalid(path, node_where(n, i), f"reads {q(name)} before {node_where(later, j)} produces it "
                          "(ONNX requires nodes in topological order)", "re-export the model or sort its nodes")
        for name in n.output:
            if name and name in producer:
                raise invalid(path, node_where(n, i), f"produces {q(name)}, already produced by {producer[name]} "
                              "(ONNX values are assigned once)")
            if name:
                producer[name] = node_where(n, i)
    for o in g.output:
        if o.name not in producer:
            raise invalid(path, f"graph output {q(o.name)}", "nothing produces it (no node output, graph input or "
                          "initializer of that name)")


def _shape_inference_survives(model: onnx.ModelProto, path: str | Path) -> None:
    """onnx.shape_inference is C++ built with assertions: a dimension that goes negative (a Resize
    scale below 0, Pad or ConvTranspose pads past the input) and reaches e.g. Slice's inference
    aborts the whole process, where canonicalisation calls it. So it runs once here in a forked child
    (stderr silenced: the assertion text); a child killed by a signal refuses the model. A child
    still running after GUARD_S is killed and the model let through (the real run then decides)."""
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            faulthandler.disable()  # pytest's (or -X faulthandler's) report of the abort would reach stderr
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            onnx.shape_inference.infer_shapes(model, data_prop=True)
        finally:
            os._exit(0)  # a Python error is canonicalisation's to handle (it catches inference errors)
    deadline = time.monotonic() + GUARD_S
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    elif os.WIFSIGNALED(done[1]):
        raise invalid(path, "graph", f"onnx shape inference aborts on it (signal {os.WTERMSIG(done[1])}): some "
                      "dimension goes negative or out of range (e.g. a Resize scale, Pad or ConvTranspose pads)",
                      "fix the model's shapes and re-export it")


def _cycle(g: onnx.GraphProto) -> list[int]:
    """Indices of the nodes left when Kahn's algorithm stalls (on or behind a cycle), [] if none."""
    made_by = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    deps = [{made_by[x] for x in n.input if x in made_by} for n in g.node]
    done: set[int] = set()
    changed = True
    while changed:
        ready = [i for i in range(len(deps)) if i not in done and deps[i] <= done]
        done.update(ready)
        changed = bool(ready)
    return [i for i in range(len(deps)) if i not in done]


__all__ = ["MAX_DIM", "MAX_ELEMENTS", "check_tensor", "invalid", "node_where", "validate"]
