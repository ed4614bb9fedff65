"""The flatbuffer side of the TFLite frontend: find the generated schema module, read a .tflite file,
and turn what it says into plain values (IR tensors with the file's own quantization and constant
data; operators as builtin name, tensor indices and builtin options as snake_case keywords).

Owns only reading; mapping operators to IR nodes is toolchain.frontend.tflite. Nothing here changes
a scale or a zero point: float32 scales from the file become the Python floats of the same value.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.tflite_validate import buffer_bytes, printable, validate_model
from toolchain.ir import DType, QuantParams, Tensor

# Generated from tensorflow/lite/schema/schema.fbs; both packages ship the same module.
SCHEMA_MODULES = ("tflite_micro.tensorflow.lite.micro.python.schema_py_generated",
                  "ai_edge_litert.schema_py_generated")


_SCHEMA: list[ModuleType] = []  # the module, once loaded


def _schema_file_alone(name: str) -> ModuleType | None:
    """Module `name` loaded from its file without running its packages' __init__ (tflite_micro's
    imports its interpreter runtime and compression tools, ~0.1 s, which reading a file does not
    need); None if the package or the file is not there."""
    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)  # locates the package, does not import it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / (rest.replace(".", "/") + ".py")
    if not path.is_file():
        return None
    file_spec = importlib.util.spec_from_file_location(f"_edgecc_tflite_schema_{top}", path)
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)  # the generated code imports only flatbuffers
    return module


def schema() -> ModuleType:
    """The generated TFLite schema module: tflite-micro's (loaded from its file alone), else the
    first importable one (tflite-micro, then ai-edge-litert)."""
    if _SCHEMA:
        return _SCHEMA[0]
    module = _schema_file_alone(SCHEMA_MODULES[0])
    for name in SCHEMA_MODULES if module is None else ():
        try:
            module = importlib.import_module(name)
            break
        except ImportError:
            continue
    if module is not None:
        _SCHEMA.append(module)
        return module
    raise InputError("reading .tflite needs the TFLite flatbuffer schema: pip install tflite-micro "
                     "(or ai-edge-litert)")


def _enum_names(cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def _snake(name: str) -> str:
    """Object-API field name -> schema.fbs field name (strideW -> stride_w, filterHeight -> filter_height)."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


_DTYPES = {"INT8": DType.INT8, "INT32": DType.INT32, "UINT8": DType.UINT8, "FLOAT32": DType.FLOAT32,
           "INT16": DType.INT16, "INT64": DType.INT64}  # int16 / int64: 16x8 activations and biases


@dataclass(frozen=True)
class TflOp:
    """One operator as the file states it: builtin name ("CONV_2D", "CUSTOM(name)"), tensor indices
    (-1 = absent optional input), builtin options and the schema defaults of those options."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict[str, Any]
    defaults: dict[str, Any]


@dataclass(frozen=True)
class TflModel:
    """Subgraph 0 of a .tflite file: IR tensors by index (None where the element type has no IR
    dtype; `type_names` says which), operators in execution order, graph input/output indices."""

    tensors: tuple[Tensor | None, ...]
    type_names: tuple[str, ...]
    ops: tuple[TflOp, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    description: str


def read_tflite(path: Path) -> TflModel:
    """Parse a .tflite file. InputError for a missing, unreadable, non-TFLite or malformed file (a
    corrupt flatbuffer, or anything tflite_validate.validate_model refuses); UnsupportedModel for
    more than one subgraph."""
    if not path.is_file():
        raise InputError(f"{path}: no such model file")
    buf = path.read_bytes()
    S = schema()
    if len(buf) < 8 or not S.Model.ModelBufferHasIdentifier(buf, 0):
        raise InputError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier); pass a .tflite file")
    try:
        model = S.ModelT.InitFromObj(S.Model.GetRootAsModel(buf, 0))
    except Exception as e:  # noqa: BLE001 - a corrupt flatbuffer raises struct, index, unicode, value or
        # recursion errors (all Exception subclasses) from deep inside the generated reader: all mean the same
        kind = type(e).__name__ if type(e).__module__ == "builtins" else f"{type(e).__module__}.{type(e).__name__}"
        raise InputError(f"{path}: not a valid .tflite flatbuffer: {kind} ({printable(str(e), 80)}); "
                         "re-export the model") from None
    if model.subgraphs is not None and len(model.subgraphs) > 1:
        raise UnsupportedModel(f"{path}: {len(model.subgraphs)} subgraphs (only single-subgraph models)")
    validate_model(path, buf, model, S)  # before anything below indexes into the tree
    sg = model.subgraphs[0]
    type_names = _enum_names(S.TensorType)
    names = _unique_names(sg.tensors or [])
    tensors, tnames = [], []
    for i, t in enumerate(sg.tensors or []):
        tnames.append(type_names.get(t.type, str(t.type)))
        tensors.append(_tensor(path, buf, model, t, names[i], tnames[-1]))
    ops = tuple(_op(S, model, i, op) for i, op in enumerate(sg.operators or []))
    desc = model.description.decode(errors="replace") if isinstance(model.description, bytes) else str(model.description or "")
    return TflModel(tuple(tensors), tuple(tnames), ops, tuple(int(i) for i in sg.inputs),
                    tuple(int(o) for o in sg.outputs), desc)


def _unique_names(tensors: list) -> list[str]:
    """Tensor names from the file, made unique with a suffix (the IR keys tensors by name)."""
    seen: set[str] = set()
    out = []
    for i, t in enumerate(tensors):
        raw = t.name.decode(errors="backslashreplace") if isinstance(t.name, bytes) else str(t.name or "")
        name = raw or f"tensor_{i}"
        if name in seen:
            name = f"{name}_{i}"
        seen.add(name)
        out.append(name)
    return out


def _quant(path: Path, t: Any, name: str) -> QuantParams | None:
    q = t.quantization
    if q is None or q.scale is None or len(q.scale) == 0:
        return None
    if q.details is not None and q.detailsType:
        raise UnsupportedModel(f"{path}: tensor {name!r}: custom quantization details")
    scale = tuple(float(s) for s in q.scale)
    zps = q.zeroPoint if q.zeroPoint is not None and len(q.zeroPoint) else [0] * len(scale)
    if len(zps) != len(scale):
        raise InputError(f"{path}: tensor {name!r} has {len(scale)} scales but {len(zps)} zero points")
    # One scale is per-tensor whatever quantized_dimension says (TFLM: is_per_channel = scale->size > 1).
    axis = int(q.quantizedDimension) if len(scale) > 1 else None
    return QuantParams(scale, tuple(int(z) for z in zps), axis)


def _tensor(path: Path, buf: bytes, model: Any, t: Any, name: str, type_name: str) -> Tensor | None:
    dtype = _DTYPES.get(type_name)
    if dtype is None:
        return None
    if t.sparsity is not None or getattr(t, "externalBuffer", 0):
        raise UnsupportedModel(f"{path}: tensor {name!r} is sparse or stored in an external buffer")
    shape = tuple(int(s) for s in (t.shape if t.shape is not None else ()))
    sig = t.shapeSignature
    if sig is not None and any(int(s) < 0 for s in list(sig)[1:]):
        raise UnsupportedModel(f"{path}: tensor {name!r} has a dynamic dimension {list(sig)}")
    data = None
    raw = buffer_bytes(buf, model.buffers[t.buffer])  # index and size checked by validate_model
    if raw is not None:
        data = np.frombuffer(raw, dtype.np.newbyteorder("<")).astype(dtype.np).reshape(shape)
    elif t.isVariable:
        raise UnsupportedModel(f"{path}: tensor {name!r} is a variable (stateful models are not supported)")
    return Tensor(name, shape, dtype, _quant(path, t, name), data)


def _op(S: ModuleType, model: Any, index: int, op: Any) -> TflOp:
    code = model.operatorCodes[op.opcodeIndex]
    # deprecated_builtin_code holds codes < 127; builtin_code the rest (schema v3a rule).
    builtin = max(int(code.builtinCode), int(code.deprecatedBuiltinCode))
    name = _enum_names(S.BuiltinOperator).get(builtin, f"BUILTIN_{builtin}")
    if name == "CUSTOM":
        name = f"CUSTOM({printable(code.customCode)})"  # model-controlled: escaped, one line
    opts = op.builtinOptions
    options = {_snake(k): v for k, v in vars(opts).items()} if opts is not None else {}
    defaults = {_snake(k): v for k, v in vars(type(opts)()).items()} if opts is not None else {}
    opts2 = getattr(op, "builtinOptions2", None)  # newer schemas: options of the StableHLO ops
    if opts2 is not None:
        options.update({_snake(k): v for k, v in vars(opts2).items()})
        defaults.update({_snake(k): v for k, v in vars(type(opts2)()).items()})
    inputs = tuple(int(i) for i in (op.inputs if op.inputs is not None else ()))
    outputs = tuple(int(o) for o in (op.outputs if op.outputs is not None else ()))
    return TflOp(index, name, inputs, outputs, options, defaults)


def uint8_edges(m: TflModel) -> tuple[TflModel, tuple[str, ...]]:
    """uint8 model inputs read only by QUANTIZE and uint8 outputs written by QUANTIZE (TFLite converter,
    inference_input/output_type = tf.uint8) -> int8 tensors of the same real values (integers and zero
    point - 128, same scale): the QUANTIZE computes what TFLM's uint8 Requantize does. Returns the model
    and their names (the API keeps them uint8: toolchain.io_dtypes); other uint8 tensors are refused later."""
    def uint8(i: int) -> bool:
        t = m.tensors[i]
        return t is not None and t.dtype == DType.UINT8 and t.quant is not None and not t.quant.is_per_channel

    ins = [i for i in m.inputs if uint8(i) and {op.name for op in m.ops if i in op.inputs} == {"QUANTIZE"}]
    outs = [i for i in m.outputs if uint8(i) and i not in m.inputs and
            [op.name for op in m.ops if i in op.outputs] == ["QUANTIZE"]]
    tensors = list(m.tensors)
    for i in (*ins, *outs):
        t = tensors[i]
        tensors[i] = replace(t, dtype=DType.INT8, quant=QuantParams.per_tensor(t.quant.s, t.quant.zp - 128))
    return replace(m, tensors=tuple(tensors)), tuple(tensors[i].name for i in (*ins, *outs))
