"""The per-op float reference of a quantized ONNX model (QDQ / QLinear; profiler.numerics): the
model's own float semantics as onnxruntime computes them, not its float core without the Q/DQ
pairs (whose grids clamp: a ReLU6-like range at every QuantizeLinear).

- ort_tensors: onnxruntime's value of every float tensor whose name is also an IR tensor's (the
  model run with ORT_DISABLE_ALL, those tensors exposed as outputs). Our IR keeps the ONNX names
  of the float core's tensors (the value a QuantizeLinear reads), so a name found in both is the
  same tensor; 4-D activations are NCHW in ONNX and NHWC in the IR (`oriented`).
- qdq_transform: for interpret(transform=) on the float graph: each tensor replaced by ORT's value
  (when ORT has one and it agrees with ours to a few LSB: float summation order aside, the same
  value), then put through QuantizeLinear / DequantizeLinear on the model's grid where the model
  quantizes it. Anchoring every tensor to ORT keeps our float interpreter's own rounding
  differences from compounding, so the last op's cumulative error is the output's against ORT.
Not here: the error figures (profiler.numerics), the output comparison (toolchain.frontend.onnx_qdq_ort).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.interpret import Transform
from toolchain.io_layout import to_file_layout
from toolchain.ir import DType, Graph
from toolchain.notes import GIVEN_TENSORS

AGREE_LSB = 4  # ORT's value replaces ours when within this many LSB of the tensor's grid (else ours is kept)
AGREE_FLOAT = 1e-3  # for a tensor without a grid: relative to its largest magnitude


def is_qdq(graph_f32: Graph) -> bool:
    """True for the float graph of a quantized ONNX model (QDQ / QLinear): its reference is this module's."""
    return graph_f32.meta.get("format") == "onnx-qdq"


def model_grids(graph_s8: Graph) -> dict[str, tuple[Any, Any]]:
    """name -> (QuantParams, np.iinfo of its dtype) of every activation the model itself quantizes
    (a Q/DQ pair in the file: graph_s8.meta[GIVEN_TENSORS]; without that list, every per-tensor int8 /
    uint8 activation). Not the grids our int8 graph adds (e.g. for a Softmax output the model leaves
    in float); views hold their input's values, already on the grid."""
    names = graph_s8.meta.get(GIVEN_TENSORS)
    names = set(graph_s8.tensors if names is None else names)
    return {name: (t.quant, np.iinfo(t.dtype.np)) for name, t in graph_s8.tensors.items()
            if name in names and not t.is_const and t.dtype in (DType.INT8, DType.UINT8) and t.quant is not None
            and not t.quant.is_per_channel}


def qdq_transform(graph_s8: Graph, anchor: Mapping[str, np.ndarray]) -> Transform:
    """For interpret(transform=) on the float graph: a tensor's float value -> ORT's value of it
    (`anchor`: name -> ORT's array, ort_tensors; used when `oriented` fits our shape and agrees to
    AGREE_LSB LSB, or AGREE_FLOAT relative without a grid) -> on a model grid (model_grids), ONNX
    QuantizeLinear-13 (x / scale in float32, ties to even, saturated to the dtype's range), then
    DequantizeLinear. Non-float values pass unchanged."""
    grids = model_grids(graph_s8)

    def transform(name: str, value: np.ndarray) -> np.ndarray:
        if not np.issubdtype(np.asarray(value).dtype, np.floating):
            return value
        grid = grids.get(name)
        theirs = oriented(anchor[name], value) if name in anchor else None
        if theirs is not None:
            tol = AGREE_LSB * grid[0].s if grid else AGREE_FLOAT * float(np.max(np.abs(value), initial=0.0)) + 1e-12
            if float(np.max(np.abs(theirs.astype(np.float64) - value), initial=0.0)) <= tol:
                value = theirs
        if grid is None:
            return value
        qp, info = grid
        q = np.rint(np.asarray(value, np.float32) / np.float32(qp.s)) + qp.zp  # rint: ties to even
        return qp.dequantize(np.clip(q, info.min, info.max))
    return transform


def ort_tensors(model: str | Path, graph_s8: Graph, names: Collection[str], data_f32: Mapping[str, np.ndarray],
                data_s8: Mapping[str, np.ndarray], samples: int) -> list[dict[str, np.ndarray]]:
    """Per sample (the first `samples`), ORT's float32 value of every float tensor of the model named
    in `names`, as ORT shapes it (NCHW for 4-D). Inputs are fed as the model declares them
    (graph_s8.meta["onnx_io_types"]): float32 data as is, int8 inputs as our int8 values, uint8 ones
    as our int8 values + 128. Raises whatever onnx / onnxruntime raise for a model they cannot run."""
    import onnx
    import onnxruntime as ort

    from toolchain.frontend.onnx_canonical import read_onnx

    m = onnx.ModelProto()
    m.CopyFrom(read_onnx(model))
    inferred = onnx.shape_inference.infer_shapes(m)
    floats = {vi.name for vi in (*inferred.graph.value_info, *inferred.graph.output)
              if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    wanted = sorted((floats & set(names)) - {o.name for o in m.graph.output})
    m.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in wanted)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3  # errors only: its warnings (unused initializers) are not the user's business here
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    types = graph_s8.meta["onnx_io_types"]
    feeds = {n: to_file_layout(graph_s8, n, data_f32[n] if types[n] == "float32" else  # io_layout: NHWC: NCHW
                               (data_s8[n].astype(np.int16) + 128).astype(np.uint8) if types[n] == "uint8" else
                               data_s8[n]) for n in graph_s8.inputs}
    out_names = [o.name for o in m.graph.output]
    runs = []
    for i in range(samples):
        values = dict(zip(out_names, sess.run(None, {k: v[i] for k, v in feeds.items()}), strict=True))
        runs.append({n: np.asarray(v, np.float32) for n, v in values.items()
                     if n in names and np.asarray(v).dtype == np.float32})
    return runs


def oriented(ort_value: np.ndarray, ours: np.ndarray) -> np.ndarray | None:
    """ORT's value laid out as our tensor `ours` is: as is, or NCHW -> NHWC for 4-D; when both fit
    the shape (H = W = C), the one closer to ours. None when neither has our shape."""
    fits = [c for c in (ort_value, ort_value.transpose(0, 2, 3, 1) if ort_value.ndim == 4 else None)
            if c is not None and c.shape == ours.shape]
    if not fits:
        return None
    return min(fits, key=lambda c: float(np.max(np.abs(c.astype(np.float64) - ours), initial=0.0)))
