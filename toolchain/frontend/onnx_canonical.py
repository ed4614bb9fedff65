"""ONNX canonicalisation before import: real exporter output -> the plain form both ONNX frontends
(toolchain.frontend.onnx, toolchain.frontend.onnx_qdq) take, on the onnx.ModelProto.

Steps, in order (each keeps the model's semantics exactly):
1. opset < 11: upgraded to 13 with onnx.version_converter (a note says so).
2. Static input shapes: `input_shapes` over the file's; a symbolic batch axis (axis 0) becomes 1
   (a note); other unknown dims are left for the frontends' "set input_shapes" error. Then
   onnx.shape_inference with data propagation.
3. `Constant` nodes become initializers; `Identity` and inference `Dropout` are removed by
   rewiring their readers (an Identity that makes a graph output renames its producer instead).
4. Constant folding to a fixpoint: a node whose inputs are all initializers, and `Shape` / `Size`
   of a value of known shape, is evaluated by onnx.reference.ReferenceEvaluator (the ONNX
   semantics) and becomes an initializer. Never folded: Q/DQ and the other quantized ops (the
   QDQ frontend reads the model's quantization from those nodes), random ops, control flow, and
   outputs much larger than their inputs.
5. Dead nodes and unused initializers dropped (graph inputs and outputs are kept as they are).

Also owns reading the file once per compile: `read_onnx` and `canonical_onnx` cache by (path,
sha256 of the file[, input_shapes]); callers must treat the returned ModelProto as read-only.
Not here: converting ops to the IR, QDQ stripping, the float reference (onnxruntime is always
given the original file: the reference is the file's own semantics).
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.shape_inference
import onnx.version_converter
from onnx import helper, numpy_helper
from onnx.external_data_helper import load_external_data_for_model

from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx_qdq_strip import QDQ_OPS
from toolchain.frontend.onnx_validate import MAX_DIM, validate

UPGRADE_TO = 13
MIN_OPSET = 11
MAX_FOLD_ELEMENTS = 1 << 20   # a folded output above this, and larger than its inputs, stays a node
MAX_ROUNDS = 16               # fold / infer rounds; each round only removes nodes, so few are needed
NO_FOLD = QDQ_OPS | {"DynamicQuantizeLinear", "RandomNormal", "RandomUniform", "RandomNormalLike",
                     "RandomUniformLike", "Multinomial", "Bernoulli", "If", "Loop", "Scan"}
Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class Canonical:
    """A canonical model and the one-line notes saying what was changed (for stderr)."""

    model: onnx.ModelProto
    notes: tuple[str, ...]


def opset_of(model: onnx.ModelProto) -> int:
    """The default-domain (ai.onnx) opset of a model, 0 when it imports none."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


_CACHE: dict[tuple, Any] = {}  # (kind, file, sha256 of its bytes[, input_shapes]) -> result; the last few


def _cached(key: tuple, make: Callable[[], Any]) -> Any:
    if key not in _CACHE:
        if len(_CACHE) >= 8:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]


_DIGESTS: dict[tuple, str] = {}  # (file, device, inode, size, mtime, ctime) -> sha256 of a settled file
SETTLED_NS = 2_000_000_000  # a file whose inode changed longer ago than this: any write since would show


def _bytes_key(path: Path) -> tuple[Path, str, bytes | None]:
    """The cache key part naming the file's bytes (by content: mtimes are too coarse to tell two
    writes within a few ms apart, which tests do), and the bytes. A file whose status (ctime
    included: every write or utime moves it) is unchanged since it was hashed while settled is not
    read again once it is parsed: then the bytes are None (the parse is in the cache)."""
    if not path.is_file():
        raise InputError(f"{path}: no such model file")
    resolved, st = path.resolve(), path.stat()
    stamp = (resolved, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = _DIGESTS.get(stamp)
    if digest is not None and ("read", resolved, digest) in _CACHE:
        return resolved, digest, None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if time.time_ns() - st.st_ctime_ns > SETTLED_NS:
        if len(_DIGESTS) >= 64:
            _DIGESTS.pop(next(iter(_DIGESTS)))
        _DIGESTS[stamp] = digest
    return resolved, digest, data


def read_onnx(path: str | Path) -> onnx.ModelProto:
    """The ONNX file as written, external data loaded from beside the file whatever the cwd (as
    onnx.load does), checked by toolchain.frontend.onnx_validate (ONNX IR spec), cached while the
    file's bytes are unchanged. Read-only for callers. Both frontends and is_quantized_onnx read
    the file through here (canonical_onnx too), so every path sees a validated model.

    Raises InputError: no such file, not ONNX bytes, external data missing, or the model breaks
    the ONNX IR rules (one line naming the node or tensor)."""
    path = Path(path)
    resolved, digest, data = _bytes_key(path)
    return _cached(("read", resolved, digest), lambda: _parse(path, resolved, data))


def _parse(path: Path, resolved: Path, data: bytes) -> onnx.ModelProto:
    try:
        model = onnx.load_model_from_string(data)
        load_external_data_for_model(model, str(resolved.parent))
    except Exception as e:  # noqa: BLE001 - DecodeError, ValueError, a missing .data file, ...
        raise InputError(f"{path}: not an ONNX model ({type(e).__name__}); pass a .onnx file "
                         "(with its .onnx.data file beside it if it has one)") from None
    validate(model, path)  # the ONNX IR rules: everything after this may assume a well-formed graph
    return model


def canonical_onnx(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> Canonical:
    """read_onnx + canonicalize, cached by (file bytes, input_shapes). Read-only for callers; the
    notes are for the caller to show (the pipeline prints them with toolchain.progress.note)."""
    path = Path(path)
    resolved, digest, data = _bytes_key(path)
    model = _cached(("read", resolved, digest), lambda: _parse(path, resolved, data))
    frozen = tuple(sorted((k, tuple(int(d) for d in v)) for k, v in (input_shapes or {}).items()))

    def make() -> Canonical:
        canonical, notes = canonicalize(model, path, dict(frozen))
        return Canonical(canonical, tuple(notes))

    return _cached(("canonical", resolved, digest, frozen), make)


def _keep_resize10_semantics(m: onnx.ModelProto) -> None:
    """Upsample-7/9 and Resize-10 scale with asymmetric coordinates (x_in = x_out / scale) and, in
    nearest mode, floor (ONNX Upsample-9 / Resize-10, as onnxruntime runs them); the version
    converter writes a Resize-13 without those attributes, whose defaults (half_pixel,
    round_prefer_floor) would change the values. Every Resize of an upgraded model that lacks them
    gets them (a Resize of opset < 11 has no such attribute to keep)."""
    for node in m.graph.node:
        if node.op_type != "Resize" or node.domain not in ("", "ai.onnx"):
            continue
        have = {a.name for a in node.attribute}
        if "coordinate_transformation_mode" not in have:
            node.attribute.append(helper.make_attribute("coordinate_transformation_mode", "asymmetric"))
        mode = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "mode"), b"nearest")
        if mode in (b"nearest", "nearest") and "nearest_mode" not in have:
            node.attribute.append(helper.make_attribute("nearest_mode", "floor"))


def canonicalize(model: onnx.ModelProto, path: str | Path,
                 input_shapes: dict[str, tuple[int, ...]] | None = None) -> tuple[onnx.ModelProto, list[str]]:
    """The canonical form of `model` (a copy; `model` is not changed) and notes, one line each.

    input_shapes: graph input name -> static shape, over the file's (names not in the model are
    ignored here; the frontends report them). Semantics: ONNX operators of the model's opset, as
    onnx.reference evaluates them. Raises InputError when an old opset cannot be upgraded and
    UnsupportedModel for a Constant of a kind we cannot hold (strings, sparse)."""
    path = Path(path)
    m, notes = onnx.ModelProto(), []
    m.CopyFrom(model)
    opset = opset_of(m)
    if 0 < opset < MIN_OPSET:
        try:
            m = onnx.version_converter.convert_version(m, UPGRADE_TO)
        except Exception as e:  # noqa: BLE001 - the converter raises ValueError / RuntimeError / its own
            first = (str(e).strip().splitlines() or [""])[0][-80:]  # the end says what failed, not the C++ file
            raise InputError(f"{path}: opset {opset} is too old (need >= {MIN_OPSET}) and onnx.version_converter "
                             f"could not upgrade it ({type(e).__name__}: {first}); re-export the model") from None
        _keep_resize10_semantics(m)
        notes.append(f"{path}: opset {opset} upgraded to {UPGRADE_TO} with onnx.version_converter")
    notes += _static_inputs(m, path, input_shapes or {})
    _constants_to_initializers(m, path)
    _remove_identities(m)
    for _ in range(MAX_ROUNDS):
        shapes, types, m = _infer(m)
        if not _fold_once(m, shapes, types):
            break
    _remove_dead(m)
    return _infer(m)[2], notes


def _static_inputs(m: onnx.ModelProto, path: Path, input_shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """Static shapes on the graph inputs; stale value_info and output shapes cleared (re-inferred)."""
    notes, inits = [], {t.name for t in m.graph.initializer}
    for inp in m.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        dims = inp.type.tensor_type.shape.dim
        given = input_shapes.get(inp.name)
        if given is not None and not all(1 <= int(s) <= MAX_DIM for s in given):
            raise InputError(f"{path}: input_shapes for {inp.name!r}: {list(given)} (each dimension 1 to {MAX_DIM}); "
                             "fix `input_shapes` in the YAML")
        if given is None:
            if not inp.type.tensor_type.HasField("shape"):
                continue  # rank unknown: the frontend asks for input_shapes
            shape = [d.dim_value if d.HasField("dim_value") else 0 for d in dims]
            if shape and shape[0] <= 0:
                notes.append(f"{path}: input {inp.name!r}: symbolic batch axis "
                             f"{dims[0].dim_param or '?'!r} taken as 1 (set input_shapes to choose)")
                shape[0] = 1
            if any(s <= 0 for s in shape):
                continue  # another unknown dim: the frontend asks for input_shapes
            given = shape
        inp.type.tensor_type.ClearField("shape")
        for s in given:
            inp.type.tensor_type.shape.dim.add().dim_value = int(s)
    del m.graph.value_info[:]
    for out in m.graph.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")
    return notes


def _constants_to_initializers(m: onnx.ModelProto, path: Path) -> None:
    """ONNX Constant-13: exactly one of value / value_float(s) / value_int(s) / value_string(s) /
    sparse_value; the numeric ones become an initializer of the output's name."""
    keep = []
    for node in m.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            keep.append(node)
            continue
        attr = {a.name: a for a in node.attribute}
        if "value" in attr:
            t = onnx.TensorProto()
            t.CopyFrom(attr["value"].t)
        elif attr.keys() & {"value_float", "value_floats", "value_int", "value_ints"}:
            kind = next(iter(attr.keys() & {"value_float", "value_floats", "value_int", "value_ints"}))
            dtype = np.float32 if "float" in kind else np.int64
            t = numpy_helper.from_array(np.asarray(helper.get_attribute_value(attr[kind]), dtype))
        else:
            raise UnsupportedModel(f"{path}: node {node.name or node.output[0]} (Constant): unsupported value kind "
                                   f"{sorted(attr)} (numeric value, value_float(s) and value_int(s) only)")
        t.name = node.output[0]
        m.graph.initializer.append(t)
    del m.graph.node[:]
    m.graph.node.extend(keep)


def _subgraph_names(node: onnx.NodeProto) -> set[str]:
    """Every value name read inside a node's subgraphs (If / Loop / Scan bodies may read outer names)."""
    names: set[str] = set()
    for a in node.attribute:
        for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
            for n in g.node:
                names.update(n.input)
                names |= _subgraph_names(n)
    return names


def _is_noop(node: onnx.NodeProto, consts: dict[str, np.ndarray], used: set[str]) -> bool:
    """Identity, or Dropout in inference (ONNX Dropout-13: no training_mode, or a constant false
    one, and the mask unused) with its data input present."""
    if node.domain not in ("", "ai.onnx") or not node.input or not node.input[0]:
        return False
    if node.op_type == "Identity":
        return True
    if node.op_type != "Dropout" or (len(node.output) > 1 and node.output[1] in used):
        return False
    mode = node.input[2] if len(node.input) > 2 else ""
    return not mode or (mode in consts and not bool(consts[mode]))


def _remove_identities(m: onnx.ModelProto) -> None:
    g = m.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.data_type == onnx.TensorProto.BOOL}
    outputs = {o.name for o in g.output}
    fixed = {i.name for i in g.input} | {t.name for t in g.initializer} | outputs
    inner = set().union(*(_subgraph_names(n) for n in g.node))
    for node in list(g.node):
        used = {i for n in g.node for i in n.input} | outputs
        if not _is_noop(node, consts, used) or node.output[0] in inner:
            continue
        src, dst = node.input[0], node.output[0]
        if dst in outputs:  # keep the graph output's name: the producer of src writes it directly
            if src in fixed or src in inner:
                continue  # a graph output equal to an input or a constant: the node stays
            old, new = src, dst
        else:
            old, new = dst, src
        g.node.remove(node)
        for n in g.node:
            n.input[:] = [new if i == old else i for i in n.input]
            n.output[:] = [new if o == old else o for o in n.output]


def _infer(m: onnx.ModelProto) -> tuple[Shapes, dict[str, int], onnx.ModelProto]:
    """Static shapes and element types by name after onnx.shape_inference (data propagation on:
    shape subgraphs);
    inference is best effort (a model it cannot type keeps what it has)."""
    try:
        m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    except Exception:  # noqa: BLE001, S110 - an untypable model: the frontends report its real problem
        pass
    shapes: Shapes = {t.name: tuple(t.dims) for t in m.graph.initializer}
    types = {t.name: t.data_type for t in m.graph.initializer}
    for vi in (*m.graph.input, *m.graph.value_info, *m.graph.output):
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        if tt.elem_type:
            types[vi.name] = tt.elem_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shapes.setdefault(vi.name, tuple(d.dim_value for d in tt.shape.dim))
    return shapes, types, m


def _shape_value(node: onnx.NodeProto, shapes: Shapes) -> np.ndarray | None:
    """ONNX Shape-15 (start / end, clamped like Python slicing) and Size-13 of a known shape."""
    shape = shapes.get(node.input[0])
    if shape is None:
        return None
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), np.int64)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return np.array(shape[attrs.get("start", 0):attrs.get("end", len(shape))], np.int64)


def _evaluate(m: onnx.ModelProto, node: onnx.NodeProto, consts: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """The node's outputs by onnx.reference on a one-node model of the same opsets; None when the
    evaluator cannot run it (the node then stays for the frontend to judge)."""
    from onnx.reference import ReferenceEvaluator

    inits = [numpy_helper.from_array(consts[i], i) for i in dict.fromkeys(node.input) if i]
    g = helper.make_graph([node], "fold", [], [onnx.ValueInfoProto(name=o) for o in node.output if o], inits)
    one = helper.make_model(g, opset_imports=list(m.opset_import))
    one.ir_version = m.ir_version
    try:
        return [np.asarray(v) for v in ReferenceEvaluator(one).run(None, {})]
    except Exception:  # noqa: BLE001 - an op or case onnx.reference does not implement (any error type)
        return None


def _fold_once(m: onnx.ModelProto, shapes: Shapes, types: dict[str, int]) -> bool:
    """One pass in node order: foldable nodes become initializers. True when anything changed."""
    g = m.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    outputs = {o.name for o in g.output}
    keep, changed = [], False
    for node in g.node:
        values = _fold_node(m, node, consts, shapes, types, outputs)
        if values is None:
            keep.append(node)
            continue
        for name, v in zip([o for o in node.output if o], values, strict=True):
            consts[name] = v
            g.initializer.append(numpy_helper.from_array(v, name))
        changed = True
    del g.node[:]
    g.node.extend(keep)
    return changed


def _fold_node(m: onnx.ModelProto, node: onnx.NodeProto, consts: dict[str, np.ndarray], shapes: Shapes,
               types: dict[str, int], outputs: set[str]) -> list[np.ndarray] | None:
    if node.domain not in ("", "ai.onnx") or node.op_type in NO_FOLD or set(node.output) & outputs:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return None
    if node.op_type in ("Shape", "Size") and node.input[0] not in consts:
        v = _shape_value(node, shapes)
        return None if v is None else [v]
    ins = [i for i in node.input if i]
    if not ins or not all(i in consts for i in ins):
        return None
    in_size = sum(consts[i].size for i in ins)
    known = [shapes.get(o) for o in node.output if o]
    if any(s is not None and _too_big(int(np.prod(s, dtype=np.int64)), in_size) for s in known):
        return None  # e.g. ConstantOfShape / Expand / Tile of a big shape: cheaper as a node
    values = _evaluate(m, node, consts)
    if values is None or len(values) != len([o for o in node.output if o]):
        return None
    if any(_too_big(v.size, in_size) for v in values):
        return None
    for name, v in zip([o for o in node.output if o], values, strict=True):  # the evaluator's dtype must be
        if name in types and helper.tensor_dtype_to_np_dtype(types[name]) != v.dtype:  # the inferred one
            return None
    return values


def _too_big(out_size: int, in_size: int) -> bool:
    return out_size > MAX_FOLD_ELEMENTS and out_size > in_size


def _remove_dead(m: onnx.ModelProto) -> None:
    """Nodes none of whose outputs reach a graph output, then initializers nothing reads (also out
    of graph.input, where IR < 4 lists them). Graph inputs stay: they are the model's interface."""
    g = m.graph
    needed = {o.name for o in g.output}
    live = []
    for node in reversed(g.node):
        if set(node.output) & needed:
            live.append(node)
            needed |= set(node.input) | _subgraph_names(node)
    del g.node[:]
    g.node.extend(reversed(live))
    unused = {t.name for t in g.initializer} - needed
    kept = [t for t in g.initializer if t.name not in unused]
    del g.initializer[:]
    g.initializer.extend(kept)
    inputs = [i for i in g.input if i.name not in unused]
    del g.input[:]
    g.input.extend(inputs)


__all__ = ["Canonical", "canonical_onnx", "canonicalize", "opset_of", "read_onnx"]
