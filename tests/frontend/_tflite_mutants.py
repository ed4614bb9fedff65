"""Bad .tflite files for tests/frontend/test_tflite_validate.py: a small valid int8 model (CONV_2D ->
RESHAPE -> FULLY_CONNECTED without bias) and ways to break it, at the flatbuffer-object level
(schema object API: ModelT unpack -> change a field -> pack) and at the byte level (truncate, flip).

Tensors of the base model (index: name, role):
  0 t0 graph input [1, 4, 4, 2]     1 t1 conv weights [2, 3, 3, 2] per-channel    2 t2 conv bias [2]
  3 t3 conv output [1, 4, 4, 2]     4 t4 reshaped [1, 32]                          5 t5 FC weights [3, 32]
  6 t6 FC output = graph output [1, 3]
Operators: #0 CONV_2D (t0, t1, t2) -> t3; #1 RESHAPE (t3) -> t4; #2 FULLY_CONNECTED (t4, t5, -1) -> t6.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flatbuffers
import numpy as np
from _tflite_cases import Model, S


def base_model() -> bytes:
    """The valid three-operator model the mutations start from (bias of the FC absent: -1)."""
    rng = np.random.default_rng(7)
    m = Model()
    t0 = m.tensor([1, 4, 4, 2], S.TensorType.INT8, 0.05, -3)
    ws = np.array([0.01, 0.02], np.float32)
    t1 = m.tensor([2, 3, 3, 2], S.TensorType.INT8, ws, [0, 0], rng.integers(-127, 128, (2, 3, 3, 2)).astype(np.int8))
    t2 = m.tensor([2], S.TensorType.INT32, ws.astype(np.float64) * 0.05, [0, 0],
                  rng.integers(-500, 500, 2).astype(np.int32))
    t3 = m.tensor([1, 4, 4, 2], S.TensorType.INT8, 0.1, 5)
    t4 = m.tensor([1, 32], S.TensorType.INT8, 0.1, 5)
    t5 = m.tensor([3, 32], S.TensorType.INT8, 0.02, 0, rng.integers(-127, 128, (3, 32)).astype(np.int8))
    t6 = m.tensor([1, 3], S.TensorType.INT8, 0.3, -1)
    conv = S.Conv2DOptionsT()
    conv.padding, conv.strideH, conv.strideW = S.Padding.SAME, 1, 1
    reshape = S.ReshapeOptionsT()
    reshape.newShape = [1, 32]
    ops = [(S.BuiltinOperator.CONV_2D, S.BuiltinOptions.Conv2DOptions, conv, [t0, t1, t2], [t3]),
           (S.BuiltinOperator.RESHAPE, S.BuiltinOptions.ReshapeOptions, reshape, [t3], [t4]),
           (S.BuiltinOperator.FULLY_CONNECTED, S.BuiltinOptions.FullyConnectedOptions, S.FullyConnectedOptionsT(),
            [t4, t5, -1], [t6])]
    return m.build_ops(ops, [t0], [t6])


def mutate(model: bytes, edit: Callable[[Any], None]) -> bytes:
    """`model` with `edit(ModelT)` applied: unpack with the object API, change, pack again."""
    obj = S.ModelT.InitFromObj(S.Model.GetRootAsModel(model, 0))
    edit(obj)
    b = flatbuffers.Builder(1024)
    b.Finish(obj.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# -- small editors: each returns the edit function mutate() applies ---------------------------------
def sg(m: Any) -> Any:
    return m.subgraphs[0]


def tensor_field(i: int, field: str, value: Any) -> Callable[[Any], None]:
    """Tensor i's `field` (shape, buffer, shapeSignature, name, type) set to `value`."""
    return lambda m: setattr(sg(m).tensors[i], field, value)


def quant_field(i: int, **fields: Any) -> Callable[[Any], None]:
    """Tensor i's quantization fields (scale, zeroPoint, quantizedDimension) set."""
    def edit(m: Any) -> None:
        for k, v in fields.items():
            setattr(sg(m).tensors[i].quantization, k, v)
    return edit


def op_field(k: int, field: str, value: Any) -> Callable[[Any], None]:
    """Operator k's `field` (inputs, outputs, opcodeIndex) set to `value`."""
    return lambda m: setattr(sg(m).operators[k], field, value)


def op_index(k: int, field: str, pos: int, value: int) -> Callable[[Any], None]:
    """One entry of operator k's inputs / outputs set to `value`."""
    def edit(m: Any) -> None:
        v = list(getattr(sg(m).operators[k], field))
        v[pos] = value
        setattr(sg(m).operators[k], field, v)
    return edit


def graph_field(field: str, value: list[int]) -> Callable[[Any], None]:
    """The subgraph's inputs / outputs list set to `value`."""
    return lambda m: setattr(sg(m), field, value)


def swap_ops(a: int, b: int) -> Callable[[Any], None]:
    def edit(m: Any) -> None:
        ops = sg(m).operators
        ops[a], ops[b] = ops[b], ops[a]
    return edit


def _orphan(m: Any) -> int:
    """Append an int8 tensor 'orphan' without data that no operator writes; its index."""
    t = S.TensorT()
    t.shape, t.type, t.name, t.buffer = [1, 4, 4, 2], S.TensorType.INT8, "orphan", 0
    t.quantization = S.QuantizationParametersT()
    t.quantization.scale, t.quantization.zeroPoint = [0.1], [5]
    sg(m).tensors.append(t)
    return len(sg(m).tensors) - 1


def add_tensor_read_by(k: int, pos: int) -> Callable[[Any], None]:
    """Operator k reads, at input `pos`, a new tensor that nothing writes."""
    return lambda m: op_index(k, "inputs", pos, _orphan(m))(m)


def add_orphan_output() -> Callable[[Any], None]:
    """A second graph output: a new tensor that nothing writes."""
    return lambda m: setattr(sg(m), "outputs", [*sg(m).outputs, _orphan(m)])


def buffer_of(i: int, **fields: Any) -> Callable[[Any], None]:
    """Fields (data, offset, size) of the buffer tensor i uses."""
    def edit(m: Any) -> None:
        for k, v in fields.items():
            setattr(m.buffers[sg(m).tensors[i].buffer], k, v)
    return edit


def short_data(i: int, keep: int) -> Callable[[Any], None]:
    """Tensor i's constant data cut to its first `keep` bytes."""
    return lambda m: setattr(m.buffers[sg(m).tensors[i].buffer], "data", m.buffers[sg(m).tensors[i].buffer].data[:keep])


def flipped(model: bytes, rng: np.random.Generator, flips: int) -> bytes:
    """`model` with `flips` random bytes XOR-ed with a random non-zero value."""
    b = bytearray(model)
    for _ in range(flips):
        b[int(rng.integers(0, len(b)))] ^= int(rng.integers(1, 256))
    return bytes(b)
