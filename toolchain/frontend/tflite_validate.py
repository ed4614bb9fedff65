"""Validation at the door for .tflite files: everything the converters rely on, checked once on the
flatbuffer's object tree (schema ModelT) right after it is read and before anything indexes into it,
so a corrupt or mutated file is refused in one line instead of a traceback, a silent wrap-around of
index -1, or a crash of the TFLM oracle later on.

    FILE: operator #3 CONV_2D: input 1 is tensor index 57 but the subgraph has 12 tensors; re-export the model

Sources of the rules: tensorflow/lite/schema/schema.fbs (indices into the tensors / buffers /
operator_codes vectors; operators "in execution order"; -1 marks an optional input that is absent;
Buffer.offset/size for models over 2 GB), TFLite's InterpreterBuilder (ParseQuantization: as many
zero points as scales, quantized_dimension in [0, rank), 1 or dims[quantized_dimension] scales;
ParseTensors: buffer index in range, constant data of exactly shape x element size), and the
TFLite 8-bit quantization spec (https://ai.google.dev/edge/litert/models/quantization_spec:
real = scale * (q - zero_point), scale > 0, zero point within the integer type).
Not here: what the compiler supports (tflite.py refuses that, listing every operator at once).
"""
from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from toolchain.errors import InputError

MAX_ELEMENTS = 1 << 28   # a tensor larger than this is corruption, not a model for a microcontroller
NAME_WIDTH = 48          # characters of a model-controlled name in a message
REEXPORT = "the file is corrupt or was edited; re-export the model"
REQUANT = "re-quantize the model (TFLite int8 spec: finite scale > 0, zero point within the type)"

# Element sizes in bytes of the fixed-size TensorType values (schema.fbs enum TensorType); STRING,
# RESOURCE, VARIANT and the packed sub-byte types have no fixed size and their data is not checked.
ITEM_SIZE = {"FLOAT32": 4, "FLOAT16": 2, "INT32": 4, "UINT8": 1, "INT64": 8, "BOOL": 1, "INT16": 2,
             "COMPLEX64": 8, "INT8": 1, "FLOAT64": 8, "COMPLEX128": 16, "UINT64": 8, "UINT32": 4,
             "UINT16": 2, "BFLOAT16": 2, "FLOAT8_E4M3FN": 1, "FLOAT8_E5M2": 1}
# Integer types that carry affine quantization, with the zero points they can hold (quantization spec).
ZP_RANGE = {"INT4": (-8, 7), "INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-32768, 32767),
            "UINT16": (0, 65535), "INT32": (-(1 << 31), (1 << 31) - 1), "INT64": (-(1 << 63), (1 << 63) - 1)}
# Inputs that may be -1 (absent), by builtin op and input position (TFLite kernels: the bias of the
# convolutions and FC, RESHAPE's shape, PADV2's constant value, STRIDED_SLICE's strides).
OPTIONAL_INPUTS: dict[str, frozenset[int]] = {
    "CONV_2D": frozenset({2}), "DEPTHWISE_CONV_2D": frozenset({2}), "FULLY_CONNECTED": frozenset({2}),
    "TRANSPOSE_CONV": frozenset({3}), "CONV_3D": frozenset({2}), "CONV_3D_TRANSPOSE": frozenset({3}),
    "RESHAPE": frozenset({1}), "PADV2": frozenset({2}), "STRIDED_SLICE": frozenset({3})}
# Ops whose many optional inputs (peepholes, projections, states) are not listed position by position:
# -1 is accepted anywhere (edgecc refuses the op itself later, by name).
ANY_OPTIONAL = frozenset({"LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "SVDF", "RNN",
                          "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "CUSTOM"})


def printable(text: str | bytes | None, width: int = NAME_WIDTH) -> str:
    """`text` as one line of printable characters: invalid UTF-8 as \\xNN, control and other
    non-printable characters as \\xNN / \\uNNNN escapes, cut to `width` characters with '…'."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text or ""))
    return out if len(out) <= width else out[:width - 1] + "…"


def buffer_bytes(file: bytes, buffer: Any) -> bytes | None:
    """The constant data a Buffer holds: its `data` vector, or for models over 2 GB the `size` bytes
    at `offset` in the file (schema.fbs Buffer; offset 0 and 1 mean none). None when it holds none."""
    if buffer is None:
        return None
    if buffer.data is not None and len(buffer.data):
        return np.asarray(buffer.data, np.uint8).tobytes()
    if int(buffer.offset) > 1:
        return file[int(buffer.offset):int(buffer.offset) + int(buffer.size)]
    return None


def _ints(v: Any) -> list[int]:
    return [int(x) for x in v] if v is not None else []


class _Door:
    """One validation run: the file, its object tree, and how errors name tensors and operators."""

    def __init__(self, path: Path, file: bytes, model: Any, S: ModuleType) -> None:
        self.path, self.file, self.model = path, file, model
        self.sg = model.subgraphs[0]
        self.tensors = list(self.sg.tensors or [])
        self.buffers = list(model.buffers or [])
        self.codes = list(model.operatorCodes or [])
        self.type_names = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}
        self.op_names = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}

    def fail(self, where: str, what: str, todo: str = REEXPORT) -> InputError:
        """The one-line error: file, where (operator / tensor / graph input ...), what, what to do."""
        return InputError(f"{self.path}: {where}: {what}; {todo}")

    def tensor(self, i: int) -> str:
        """`tensor #I 'name'` (the name escaped and shortened)."""
        return f"tensor #{i} '{printable(self.tensors[i].name)}'"

    def op_name(self, op: Any) -> str:
        code = self.codes[int(op.opcodeIndex)]
        # deprecated_builtin_code holds codes < 127; builtin_code the rest (schema v3a rule).
        builtin = max(int(code.builtinCode), int(code.deprecatedBuiltinCode))
        name = self.op_names.get(builtin, f"BUILTIN_{builtin}")
        return f"CUSTOM({printable(code.customCode)})" if name == "CUSTOM" else name

    def index(self, i: int, where: str, role: str) -> None:
        """A tensor index of `role` must name a tensor: 0 <= i < len(tensors) (-1 is checked by the caller)."""
        if not 0 <= i < len(self.tensors):
            raise self.fail(where, f"{role} is tensor index {i} but the subgraph has {len(self.tensors)} tensors")

    # -- tensors -------------------------------------------------------------------------------
    def check_tensor(self, i: int) -> bool:
        """Type, shape, buffer, data size and quantization of tensor i; True when it is a constant."""
        t, where = self.tensors[i], self.tensor(i)
        type_name = self.type_names.get(int(t.type))
        if type_name is None:
            raise self.fail(where, f"element type {int(t.type)} is not a TFLite TensorType")
        shape = _ints(t.shape)
        if any(d < 1 for d in shape):
            raise self.fail(where, f"shape {shape} has a dimension < 1 (edgecc needs static positive dims)")
        count = math.prod(shape)
        if count > MAX_ELEMENTS:
            raise self.fail(where, f"shape {shape} holds {count} elements (more than 2^28)")
        sig = _ints(t.shapeSignature)
        if sig and (len(sig) != len(shape) or any(s != d and s != -1 for s, d in zip(sig, shape, strict=True))):
            raise self.fail(where, f"shape_signature {sig} disagrees with shape {shape} (entries must match or be -1)")
        if not 0 <= int(t.buffer) < len(self.buffers):
            raise self.fail(where, f"buffer index {int(t.buffer)} but the model has {len(self.buffers)} buffers")
        buffer = self.buffers[int(t.buffer)]
        if int(buffer.offset) > 1 and int(buffer.offset) + int(buffer.size) > len(self.file):
            raise self.fail(where, f"buffer #{int(t.buffer)} at offset {int(buffer.offset)} size {int(buffer.size)} "
                            f"lies outside the {len(self.file)}-byte file")
        data = buffer_bytes(self.file, buffer)
        if data is not None and type_name in ITEM_SIZE and len(data) != count * ITEM_SIZE[type_name]:
            raise self.fail(where, f"constant data of {len(data)} bytes for shape {shape} of {type_name.lower()} "
                            f"({count * ITEM_SIZE[type_name]} bytes)")
        self.check_quant(i, t, shape, type_name)
        return data is not None

    def check_quant(self, i: int, t: Any, shape: list[int], type_name: str) -> None:
        """Affine quantization (InterpreterBuilder::ParseQuantization and the int8 quantization spec)."""
        q = t.quantization
        scales = [float(s) for s in q.scale] if q is not None and q.scale is not None else []
        if not scales:
            return  # not quantized (float tensors, shape constants)
        where, zps = self.tensor(i), _ints(q.zeroPoint)
        if len(zps) != len(scales):
            raise self.fail(where, f"{len(scales)} scale(s) but {len(zps)} zero point(s)", REQUANT)
        axis = int(q.quantizedDimension)
        if axis < 0 or (shape and axis >= len(shape)):
            raise self.fail(where, f"quantized_dimension {axis} outside the rank-{len(shape)} shape {shape}", REQUANT)
        if len(scales) > 1 and (not shape or len(scales) != shape[axis]):
            extent = shape[axis] if shape else 1
            raise self.fail(where, f"{len(scales)} scales for quantized_dimension {axis} of extent {extent} "
                            "(need 1 or one per channel)", REQUANT)
        if type_name not in ZP_RANGE:
            return  # quantization on a float tensor is ignored by TFLite kernels
        bad = next((k for k, s in enumerate(scales) if not (math.isfinite(s) and s > 0)), None)
        if bad is not None:
            raise self.fail(where, f"scale[{bad}] is {scales[bad]} (must be finite and > 0)", REQUANT)
        lo, hi = ZP_RANGE[type_name]
        bad = next((k for k, z in enumerate(zps) if not lo <= z <= hi), None)
        if bad is not None:
            raise self.fail(where, f"zero point[{bad}] {zps[bad]} outside {type_name.lower()} [{lo}, {hi}]", REQUANT)

    # -- graph ---------------------------------------------------------------------------------
    def check_edges(self, role: str, indices: list[int]) -> None:
        """Graph inputs / outputs: at least one, each naming a tensor, none twice."""
        if not indices:
            raise self.fail("subgraph 0", f"no graph {role}s (the {role}s list is empty)")
        for k, i in enumerate(indices):
            self.index(i, f"graph {role} #{k}", "it")
            if indices.index(i) != k:
                raise self.fail(f"graph {role} #{k}", f"{self.tensor(i)} is listed twice")

    def check_ops(self, constants: set[int], inputs: list[int]) -> set[int]:
        """Operators: opcode and tensor indices in range, -1 only where an input is optional, every
        input written earlier (execution order: no self-loop, no cycle, no later producer), every
        tensor written once. Returns the tensors written by operators."""
        writer: dict[int, int] = {}
        ops = list(self.sg.operators or [])
        for k, op in enumerate(ops):
            if not 0 <= int(op.opcodeIndex) < len(self.codes):
                raise self.fail(f"operator #{k}", f"opcode index {int(op.opcodeIndex)} but the model has "
                                f"{len(self.codes)} operator codes")
            name = self.op_name(op)
            where = f"operator #{k} {name}"
            outs = _ints(op.outputs)
            if not outs:
                raise self.fail(where, "no outputs")
            for p, o in enumerate(outs):
                self.index(o, where, f"output {p}")
                if o in constants or o in inputs:
                    kind = "a constant" if o in constants else "a graph input"
                    raise self.fail(where, f"output {p} is {self.tensor(o)}, {kind} (an operator may not overwrite it)")
                if o in writer:
                    raise self.fail(where, f"output {p} is {self.tensor(o)}, already written by operator #{writer[o]}")
                writer[o] = k
        for k, op in enumerate(ops):
            name = self.op_name(op)
            where = f"operator #{k} {name}"
            for p, i in enumerate(_ints(op.inputs)):
                if i == -1:
                    if name in ANY_OPTIONAL or name.startswith("CUSTOM(") or p in OPTIONAL_INPUTS.get(name, ()):
                        continue
                    raise self.fail(where, f"input {p} is -1 (absent) but {name} input {p} is not optional")
                self.index(i, where, f"input {p}")
                if i in constants or i in inputs or self.tensors[i].isVariable:
                    continue
                w = writer.get(i)
                if w is None:
                    raise self.fail(where, f"input {p} is {self.tensor(i)}, which no operator writes and which is "
                                    "neither a graph input nor a constant")
                if w == k:
                    raise self.fail(where, f"input {p} is its own output {self.tensor(i)} (a self-loop)")
                if w > k:
                    raise self.fail(where, f"input {p} is {self.tensor(i)}, written by the later operator #{w} "
                                    "(operators must be stored in execution order; a cycle cannot run)")
        return set(writer)


def validate_model(path: Path, file: bytes, model: Any, S: ModuleType) -> None:
    """Check subgraph 0 of a parsed .tflite (schema object API ModelT read from `file`) is well formed:
    graph inputs/outputs, every tensor (type, dims, size bound, shape_signature, buffer index and
    data size, offsets inside the file, quantization) and every operator (opcode and tensor indices,
    optional -1 inputs, execution order, single writer). Raises InputError naming the file and the
    operator (#index and opcode) or tensor (#index and escaped name), in one line. Sources: see the
    module docstring (schema.fbs, InterpreterBuilder, the TFLite int8 quantization spec)."""
    if not model.subgraphs:
        raise InputError(f"{path}: model: no subgraph; {REEXPORT}")
    door = _Door(path, file, model, S)
    constants = {i for i in range(len(door.tensors)) if door.check_tensor(i)}
    inputs, outputs = _ints(door.sg.inputs), _ints(door.sg.outputs)
    door.check_edges("input", inputs)
    door.check_edges("output", outputs)
    written = door.check_ops(constants, inputs)
    for k, o in enumerate(outputs):
        if o not in written and o not in inputs and o not in constants:
            raise door.fail(f"graph output #{k}", f"{door.tensor(o)} is written by no operator")
