"""Deterministic mutators for the front-door fuzzer (issue 12 item 5): each takes the bytes of one
valid input file and a seeded numpy Generator and returns the bytes of a damaged one. The same
(input, seed) always gives the same output, so a failing case is reproduced from its seed alone.

Kinds: ONNX (protobuf-aware: graph wiring, attributes, initializers, I/O shapes, opsets, domains,
names; plus raw bytes), TFLite (flatbuffer object API: any int / float / list field of the model
tree; plus raw bytes), YAML (keys and values, alias bombs, deep nesting, duplicate keys, encodings)
and data (.npy headers, dtypes, shapes, non-finite values, truncation).
Not here: running edgecc on the result (fuzz_driver.py).
"""
from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import yaml

INTS = [0, -1, 1, 2, 3, 5, 7, 64, 255, 256, 2**15, 2**31 - 1, -(2**31), 2**40, -(2**40), 10**6]
FLOATS = [0.0, -0.0, -1.0, 1e-45, 1e-30, 1e30, 3.4e38, math.nan, math.inf, -math.inf, 0.5, 255.0]
NAMES = ["", "x", "a\nb", "\x1b[31mred", "ünï", "n" * 5000, "../../etc/passwd", "*/", "\\", "%s%n", "con"]


def _pick(rng: np.random.Generator, seq: list) -> Any:
    return seq[int(rng.integers(len(seq)))]


# --------------------------------------------------------------------------- raw bytes (every kind)

def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """Flip, overwrite, insert or delete a few bytes, truncate, or append junk."""
    b = bytearray(data)
    how = int(rng.integers(6))
    if how == 0 and b:
        for _ in range(int(rng.integers(1, 9))):
            b[int(rng.integers(len(b)))] ^= 1 << int(rng.integers(8))
    elif how == 1 and b:
        for _ in range(int(rng.integers(1, 5))):
            b[int(rng.integers(len(b)))] = _pick(rng, [0, 0xFF, 0x7F, 0x80])
    elif how == 2:
        return bytes(b[:int(rng.integers(len(b) + 1))])
    elif how == 3:
        return bytes(b) + rng.bytes(int(rng.integers(1, 64)))
    elif how == 4 and b:
        i = int(rng.integers(len(b)))
        del b[i:i + int(rng.integers(1, 16))]
    else:
        i = int(rng.integers(len(b) + 1))
        b[i:i] = rng.bytes(int(rng.integers(1, 16)))
    return bytes(b)


# --------------------------------------------------------------------------- ONNX

def _tensor_names(m: onnx.ModelProto) -> list[str]:
    g = m.graph
    names = [i.name for i in g.input] + [i.name for i in g.initializer]
    for n in g.node:
        names += list(n.output)
    return names or ["x"]


def _onnx_wiring(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    g = m.graph
    if not g.node:
        return
    n = g.node[int(rng.integers(len(g.node)))]
    how = int(rng.integers(8))
    if how == 0 and n.input:
        n.input[int(rng.integers(len(n.input)))] = _pick(rng, [*_tensor_names(m), "dangling", "", n.output[0]])
    elif how == 1 and n.output:
        n.output[0] = _pick(rng, [*_tensor_names(m), "", "new_out"])
    elif how == 2:
        del g.node[int(rng.integers(len(g.node)))]
    elif how == 3:
        g.node.append(n)  # the same node twice: every output produced twice
    elif how == 4 and len(g.node) > 1:
        nodes = list(g.node)
        i, j = (int(v) for v in rng.choice(len(nodes), 2, replace=False))
        nodes[i], nodes[j] = nodes[j], nodes[i]
        del g.node[:]
        g.node.extend(nodes)
    elif how == 5:
        n.input.append(_pick(rng, _tensor_names(m)))
    elif how == 6 and n.input:
        del n.input[int(rng.integers(len(n.input)))]
    else:  # a cycle: the first node reads the last node's output
        g.node[0].input.append(g.node[-1].output[0] if g.node[-1].output else "")


def _onnx_attribute(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    nodes = [n for n in m.graph.node if n.attribute] or list(m.graph.node)
    if not nodes:
        return
    n = _pick(rng, nodes)
    if not n.attribute or rng.random() < 0.2:
        name = _pick(rng, ["group", "strides", "pads", "kernel_shape", "dilations", "axis", "perm", "alpha", "bogus"])
        n.attribute.append(onnx.helper.make_attribute(name, _pick(rng, [0, -1, [1] * 5, [0, 0], 2.5, "s"])))
        return
    a = _pick(rng, list(n.attribute))
    if a.type == onnx.AttributeProto.INT:
        a.i = _pick(rng, INTS)
    elif a.type == onnx.AttributeProto.INTS:
        ints = list(a.ints)
        how = int(rng.integers(4))
        if how == 0 and ints:
            ints.pop(int(rng.integers(len(ints))))
        elif how == 1:
            ints.append(_pick(rng, INTS))
        elif how == 2 and ints:
            ints[int(rng.integers(len(ints)))] = _pick(rng, INTS)
        else:
            ints = []
        del a.ints[:]
        a.ints.extend(ints)
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = _pick(rng, FLOATS)
    elif a.type == onnx.AttributeProto.STRING:
        a.s = _pick(rng, [b"", b"\xff\xfe", b"SAME_UPPER", b"bogus", b"x" * 300])
    else:
        a.type = onnx.AttributeProto.INT  # a type the op does not take
        a.i = 1


def _onnx_initializer(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    inits = list(m.graph.initializer)
    if not inits:
        return
    t = _pick(rng, inits)
    how = int(rng.integers(6))
    if how == 0 and t.raw_data:
        t.raw_data = t.raw_data[:int(rng.integers(len(t.raw_data)))]
    elif how == 1 and t.dims:
        t.dims[int(rng.integers(len(t.dims)))] = _pick(rng, INTS)
    elif how == 2:
        if rng.random() < 0.5 and t.dims:
            del t.dims[-1]
        else:
            t.dims.append(_pick(rng, [1, 2, 0]))
    elif how == 3 and t.data_type == onnx.TensorProto.FLOAT:
        arr = onnx.numpy_helper.to_array(t).copy()
        if arr.size:
            arr.flat[int(rng.integers(arr.size))] = _pick(rng, [math.nan, math.inf, -math.inf, 3.4e38])
            t.CopyFrom(onnx.numpy_helper.from_array(arr, t.name))
    elif how == 4:
        t.data_type = _pick(rng, [0, 2, 3, 6, 7, 8, 10, 11, 16, 99])
    else:
        t.name = _pick(rng, NAMES)


def _onnx_io(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    g = m.graph
    how = int(rng.integers(6))
    vis = list(g.input) + list(g.output)
    if how == 0 and vis:
        v = _pick(rng, vis)
        dims = v.type.tensor_type.shape.dim
        if dims:
            d = dims[int(rng.integers(len(dims)))]
            if rng.random() < 0.7:
                d.dim_value = _pick(rng, INTS)
            else:
                d.dim_param = _pick(rng, ["N", "", "x y"])
    elif how == 1 and vis:
        _pick(rng, vis).type.tensor_type.elem_type = _pick(rng, [0, 2, 3, 6, 7, 9, 10, 11, 16, 99])
    elif how == 2:
        del g.output[:]
    elif how == 3 and g.input:
        del g.input[int(rng.integers(len(g.input)))]
    elif how == 4 and vis:
        _pick(rng, vis).name = _pick(rng, NAMES)
    else:
        g.output.append(onnx.helper.make_tensor_value_info(_pick(rng, _tensor_names(m)), 1, None))


def _onnx_header(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    how = int(rng.integers(5))
    if how == 0 and m.opset_import:
        m.opset_import[0].version = _pick(rng, [1, 6, 7, 9, 10, 12, 17, 21, 99, 10**6, -1])
    elif how == 1:
        del m.opset_import[:]
    elif how == 2 and m.graph.node:
        _pick(rng, list(m.graph.node)).domain = _pick(rng, ["com.example", "ai.onnx.ml", "com.microsoft", "x"])
    elif how == 3 and m.graph.node:
        _pick(rng, list(m.graph.node)).op_type = _pick(rng, ["Conv", "Relu", "Add", "MatMul", "Bogus", "", "If",
                                                             "Loop", "Resize", "Softmax", "Reshape", "Concat"])
    else:
        m.ir_version = _pick(rng, [0, 1, 3, 7, 10, 99])


def _onnx_names(m: onnx.ModelProto, rng: np.random.Generator) -> None:
    if m.graph.node:
        _pick(rng, list(m.graph.node)).name = _pick(rng, NAMES)


ONNX_STRUCT: list[Callable[[onnx.ModelProto, np.random.Generator], None]] = [
    _onnx_wiring, _onnx_attribute, _onnx_initializer, _onnx_io, _onnx_header, _onnx_names]


def _non_utf8(data: bytes, m: onnx.ModelProto, rng: np.random.Generator) -> bytes:
    """A node or tensor name's bytes replaced by invalid UTF-8 of the same length (protobuf's
    Python API refuses to store such strings, so the bytes are edited after serialising)."""
    names = sorted({n for n in _tensor_names(m) if len(n) >= 2} | {n.name for n in m.graph.node if len(n.name) >= 2})
    if not names:
        return data
    name = _pick(rng, names).encode()
    return data.replace(name, b"\xff" * len(name), 1)


def mutate_onnx(data: bytes, rng: np.random.Generator) -> bytes:
    """1-3 structural mutations of the ModelProto (sometimes a name made invalid UTF-8), or raw bytes."""
    if rng.random() < 0.15:
        return mutate_bytes(data, rng)
    m = onnx.ModelProto()
    m.ParseFromString(data)
    for _ in range(int(rng.integers(1, 4))):
        _pick(rng, ONNX_STRUCT)(m, rng)
    try:
        out = m.SerializeToString()
    except Exception:  # e.g. a mutation protobuf cannot serialise: fall back to bytes
        return mutate_bytes(data, rng)
    return _non_utf8(out, m, rng) if rng.random() < 0.1 else out


# --------------------------------------------------------------------------- TFLite

def _leaves(obj: Any, path: str, out: list[tuple[Any, str, Any]], depth: int = 0) -> None:
    """Every (owner, attribute, value) of an int, float, list or array field in a flatbuffer object tree."""
    if depth > 8 or obj is None:
        return
    for k, v in vars(obj).items():
        if isinstance(v, bool):
            out.append((obj, k, v))
        elif isinstance(v, int | float | bytes | np.ndarray):
            out.append((obj, k, v))
        elif isinstance(v, list):
            out.append((obj, k, v))
            for i, item in enumerate(v[:64]):
                if hasattr(item, "__dict__"):
                    _leaves(item, f"{path}.{k}[{i}]", out, depth + 1)
        elif hasattr(v, "__dict__"):
            _leaves(v, f"{path}.{k}", out, depth + 1)


def _mutate_value(v: Any, rng: np.random.Generator) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return _pick(rng, INTS + [v + 1, v - 1])
    if isinstance(v, float):
        return _pick(rng, FLOATS)
    if isinstance(v, bytes):
        return v[:int(rng.integers(len(v) + 1))] if v else b"\x01"
    items = list(v)
    how = int(rng.integers(4))
    if how == 0 and items:
        items.pop(int(rng.integers(len(items))))
    elif how == 1:
        items.append(items[-1] if items and not isinstance(items[-1], int | float) else _pick(rng, INTS))
    elif how == 2 and items and isinstance(items[0], int | float | np.integer | np.floating):
        i = int(rng.integers(len(items)))
        items[i] = _pick(rng, FLOATS) if isinstance(items[i], float | np.floating) else _pick(rng, INTS)
    else:
        items = []
    if isinstance(v, np.ndarray):
        try:
            return np.asarray(items, dtype=v.dtype)
        except (OverflowError, ValueError):
            return np.asarray(items[:0], dtype=v.dtype)
    return items


def mutate_tflite(data: bytes, rng: np.random.Generator) -> bytes:
    """1-3 mutations of any numeric or list field of the unpacked ModelT, re-packed; or raw bytes."""
    import flatbuffers

    from toolchain.frontend.tflite_reader import schema

    if rng.random() < 0.25:
        return mutate_bytes(data, rng)
    S = schema()
    m = S.ModelT.InitFromPackedBuf(data, 0)
    for _ in range(int(rng.integers(1, 4))):
        leaves: list[tuple[Any, str, Any]] = []
        _leaves(m, "model", leaves)
        owner, attr, value = _pick(rng, leaves)
        setattr(owner, attr, _mutate_value(value, rng))
    try:
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())
    except Exception:  # a value the builder cannot store (e.g. 2**40 in an int32 field)
        return mutate_bytes(data, rng)


# --------------------------------------------------------------------------- YAML

def _alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return "\n".join(lines) + f"\nmodel: *a{levels - 1}\n"


YAML_VALUES = [None, True, False, 0, -1, 2**63, 1.5, math.nan, math.inf, -math.inf, "", "x" * 5000, [], {},
               [1, 2], [[1]], {"a": 1}, "/dev/null", "/dev/zero", "/nonexistent/file", ".", "..", "model.onnx",
               "a\nb", "\x1b[31m", "ünï", "-1", "1e400", [math.nan], [0, 0], [-1, 8], [10**9, 10**9]]
YAML_KEYS = ["model", "board", "calibration", "verify", "out", "preprocess", "input_shapes", "profile",
             "min_top1_agreement", "min_sqnr_db", "weights_section", "calibration_method", "rounding", "repeats",
             "warmup", "optimize", "batch", "debug_guards", "kernels", "bogus"]
PREPROCESS_KEYS = ["cast", "resize", "scale", "mean", "std", "channel_order", "layout", "bogus"]


def mutate_yaml(text: bytes, rng: np.random.Generator) -> bytes:
    """A key's value replaced, a key removed or added (also inside preprocess / input_shapes), or a
    hostile document: alias bomb, deep nesting, duplicate keys, another encoding, raw bytes."""
    how = int(rng.integers(10))
    if how == 0:
        return _alias_bomb(int(rng.integers(2, 10))).encode()
    if how == 1:
        d = int(_pick(rng, [50, 500, 5000, 50000]))
        return (b"model: " + b"[" * d + b"]" * d + b"\n") if rng.random() < 0.5 else \
            "".join(f"{' ' * i}k{i}:\n" for i in range(min(d, 3000))).encode()
    if how == 2:
        lines = text.splitlines(keepends=True)
        return b"".join(lines) + (lines[int(rng.integers(len(lines)))] if lines else b"a: 1\n")
    if how == 3:
        return text.decode("utf-8", "replace").replace("model", "modèl", 1).encode("latin-1", "replace") + b"\xe9\n"
    if how == 4:
        return mutate_bytes(text, rng)
    doc = yaml.safe_load(text) or {}
    target = doc
    if how in (5, 6) and isinstance(doc.get("preprocess"), dict):
        target = doc["preprocess"]
        keys = PREPROCESS_KEYS
    elif how == 7:
        doc["input_shapes"] = {_pick(rng, ["input", "x", ""]): _pick(rng, YAML_VALUES)}
        return yaml.safe_dump(doc).encode()
    else:
        keys = YAML_KEYS
    key = _pick(rng, keys)
    if rng.random() < 0.2:
        target.pop(key, None)
    else:
        target[key] = _pick(rng, YAML_VALUES)
    try:
        return yaml.safe_dump(doc, allow_unicode=bool(rng.integers(2))).encode()
    except yaml.YAMLError:
        return text


# --------------------------------------------------------------------------- data (.npy)

def mutate_npy(data: bytes, rng: np.random.Generator) -> bytes:
    """The array re-typed, re-shaped, emptied or given non-finite values; or the file's bytes damaged
    (header or body)."""
    how = int(rng.integers(8))
    if how <= 1:
        if rng.random() < 0.5:  # damage the header, where numpy parses a Python literal
            b = bytearray(data)
            i = int(rng.integers(10, min(len(b), 128)))
            b[i] = _pick(rng, [ord("("), ord("'"), ord("9"), 0, 0xFF, ord("}")])
            return bytes(b)
        return mutate_bytes(data, rng)
    arr = np.load(io.BytesIO(data), allow_pickle=False)
    if how == 2:
        arr = arr.astype(_pick(rng, [np.float16, np.float64, np.int8, np.uint8, np.int64, np.bool_, np.complex64,
                                     np.uint16, np.int32, "U3", "S2"]))
    elif how == 3:
        arr = _pick(rng, [arr[:0], arr[:1], arr.reshape(-1), arr[..., :1], arr[None], arr.T, arr.reshape(arr.shape[0], -1),
                          np.zeros((0,), np.float32), np.float32(1.0)])
    elif how == 4:
        arr = np.array(arr, np.float32)
        arr.flat[int(rng.integers(max(arr.size, 1)))] = _pick(rng, [math.nan, math.inf, -math.inf, 3.4e38, -3.4e38])
    elif how == 5:
        arr = np.asarray(arr, np.float32) * _pick(rng, [1e30, -1e30, 1e-30, 0.0])
    elif how == 6:
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        return buf.getvalue()
    else:
        buf = io.BytesIO()
        np.savez(buf, **{_pick(rng, ["x", "input", "calibration", ""]) or "arr_0": arr, "other": arr[:1]})
        return buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()
