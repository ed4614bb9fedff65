"""onnxruntime as the outside reference of a quantized ONNX model.

ORT (graph optimisations off) executes QDQ as float simulation: float ops between
DequantizeLinear and QuantizeLinear (ties to even). With its default session options it fuses
DQ -> op -> Q into its integer QLinear kernels (QLinearConv, QLinearMatMul, ...), which round the
accumulator once; the two can differ by several LSB on one model (a float32 sum landing on the other
side of a tie, then compounding), so both are measured (`optimized`). Its outputs are put on our output's int8 grid
the way its own QuantizeLinear would and compared with ours in LSB. Inputs are fed as the model
declares them: float32 data as is, int8 / uint8 inputs as the integers our board got (uint8 + 128).
Not here: our own verification (toolchain.runner compares the board with the numpy interpreter).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from toolchain.io_layout import from_file_layout, to_file_layout
from toolchain.ir import Graph, QuantParams
from toolchain.ops.fixed_point import quantize_real


def run_onnxruntime(model: str | Path, graph: Graph, data_f32: Mapping[str, np.ndarray],
                    data_s8: Mapping[str, np.ndarray], optimized: bool = False) -> list[np.ndarray]:
    """ORT outputs of the quantized model per graph output, float32 [S, *shape]: float outputs as
    ORT gives them, int8 / uint8 outputs dequantized with the grid of our matching output.
    `graph`: our int8 graph of the model (inputs, outputs and meta of load_qdq). optimized: ORT's
    default session options (graph optimisations on: its fused integer QLinear kernels where it can fuse, float elsewhere), else
    ORT_DISABLE_ALL (QDQ as float simulation)."""
    import onnxruntime as ort

    types = graph.meta["onnx_io_types"]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only: ORT warns about every unused initializer of exported files
    if not optimized:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    n = len(next(iter(data_f32.values())))
    feeds = {}
    for name in graph.inputs:
        kind = types[name]
        feeds[name] = to_file_layout(graph, name, data_f32[name] if kind == "float32" else  # io_layout: NHWC: NCHW
                                     (data_s8[name].astype(np.int16) + 128).astype(np.uint8) if kind == "uint8" else
                                     data_s8[name])
    runs = [sess.run(None, {k: v[i] for k, v in feeds.items()}) for i in range(n)]
    outs = []
    for j, (name, ours) in enumerate(zip(graph.meta["onnx_outputs"], graph.outputs, strict=True)):
        y = np.stack([r[j] for r in runs])
        if types[name] in ("int8", "uint8"):
            y = graph.t(ours).quant.dequantize(y.astype(np.int64) - (128 if types[name] == "uint8" else 0))
        outs.append(from_file_layout(graph, ours, y.astype(np.float32)))
    return outs


def lsb_agreement(ours: Sequence[np.ndarray], ort_f32: Sequence[np.ndarray],
                  grids: Sequence[QuantParams]) -> tuple[int, float]:
    """(max |ours - ORT on our grid| in LSB, fraction of elements equal) over every output; ORT's
    float output goes onto the grid as QuantizeLinear would (float32 division, ties to even)."""
    worst, equal, total = 0, 0, 0
    for q, f, qp in zip(ours, ort_f32, grids, strict=True):
        ref = quantize_real(np.asarray(f, np.float32).reshape(q.shape), qp.s, qp.zp, "onnx")
        d = np.abs(q.astype(np.int64) - ref)
        worst, equal, total = max(worst, int(d.max(initial=0))), equal + int((d == 0).sum()), total + d.size
    return worst, (equal / total if total else 1.0)
