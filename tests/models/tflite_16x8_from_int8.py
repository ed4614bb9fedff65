"""A 16x8 .tflite made from a real int8 .tflite with the flatbuffer object API (issue 14: "build them
with the TFLite flatbuffer API"): the same graph, weights and real ranges, with every int8 activation
turned into an int16 one as TFLite's 16x8 quantization spec defines it.

- activation (int8, scale s, zero point z): the real range [s(-128 - z), s(127 - z)] it covered, now
  symmetric int16: scale max(|lo|, |hi|) / 32767 (float32), zero point 0;
- weights: unchanged (int8, symmetric per channel);
- int32 bias q of a layer whose input scale went from s8 to s16: int64 round(q * s8 / s16) (the same
  real bias in units of s16 * s_w), its quantization scale s16 * s_w;
- SOFTMAX / LOGISTIC / TANH outputs: 1/32768, zero point 0 (the 16x8 spec's fixed output).

Used by the 16x8 ResNet-8 tests (TFLM computes the expected outputs); `inputs16` quantizes float
data (the int8 file's real input range) to the new int16 input.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from tflite_op_cases import S  # noqa: E402 - the schema module the case builders use

_vs = sys.modules["test_vs_tflm"]
F32 = np.float32
FIXED_OUT = {S.BuiltinOperator.SOFTMAX, S.BuiltinOperator.LOGISTIC, S.BuiltinOperator.TANH}


def _scale16(scale: float, zp: int) -> F32:
    lo, hi = scale * (-128 - zp), scale * (127 - zp)
    return F32(max(abs(lo), abs(hi)) / 32767.0)


def convert(int8_model: bytes) -> tuple[bytes, dict[int, tuple[float, float]]]:
    """int8 .tflite bytes -> (16x8 .tflite bytes, {tensor index: (old int8 scale, new int16 scale)}
    of the graph inputs). ValueError for a model with anything but int8 activations."""
    m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(int8_model, 0))
    sg = m.subgraphs[0]
    codes = [max(oc.builtinCode, oc.deprecatedBuiltinCode) for oc in m.operatorCodes]
    const = {i for i, t in enumerate(sg.tensors) if m.buffers[t.buffer].data is not None}
    old: dict[int, float] = {}
    for i, t in enumerate(sg.tensors):
        if i in const or t.type != S.TensorType.INT8:
            continue
        q = t.quantization
        old[i] = float(q.scale[0])
        t.type = S.TensorType.INT16
        q.scale, q.zeroPoint = [float(_scale16(float(q.scale[0]), int(q.zeroPoint[0])))], [0]
    for op in sg.operators:
        if codes[op.opcodeIndex] in FIXED_OUT:
            q = sg.tensors[op.outputs[0]].quantization
            q.scale, q.zeroPoint = [1.0 / 32768], [0]
        if len(op.inputs) < 3 or op.inputs[2] < 0 or op.inputs[0] not in old:
            continue
        b = sg.tensors[op.inputs[2]]
        if b.type != S.TensorType.INT32:
            continue
        s8, s16 = old[op.inputs[0]], float(sg.tensors[op.inputs[0]].quantization.scale[0])
        q = np.frombuffer(bytes(m.buffers[b.buffer].data), np.int32).astype(np.float64)
        b.type = S.TensorType.INT64
        m.buffers[b.buffer].data = np.round(q * s8 / s16).astype(np.int64).tobytes()
        ws = np.asarray(sg.tensors[op.inputs[1]].quantization.scale, np.float64)
        b.quantization.scale = list((ws * s16).astype(F32))
    b = _vs.flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    io = {i: (old[i], float(sg.tensors[i].quantization.scale[0])) for i in sg.inputs}
    return bytes(b.Output()), io


def inputs16(x: np.ndarray, scale16: float) -> np.ndarray:
    """Real input values -> int16 (round half away from zero, as TFLite's Quantize, clamped)."""
    v = np.asarray(x, np.float64) / scale16
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -32768, 32767).astype(np.int16)
