"""Per-output verification figures of a run (report.json `verification.outputs[]`): for every graph
output, the board against our interpreter (bit-exact, max LSB) and the dequantized int8 output
against the float reference (SQNR, top-1 agreement; index agreement for int32 index outputs), and
for a quantized ONNX model onnxruntime's output on our grid in LSB. Not here: how the outputs
were produced (toolchain.runner) or the whole-run verdict.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from toolchain.frontend.onnx_qdq_ort import lsb_agreement
from toolchain.ir import DType, Graph


def sqnr_db(ref: np.ndarray, approx: np.ndarray) -> float | None:
    """10 log10(signal power / noise power); None when the two are identical or the reference is all
    zero (no signal: the ratio is undefined, and -inf is not JSON)."""
    noise = float(np.sum((ref.astype(np.float64) - approx) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return None if noise == 0 or signal == 0 else 10 * np.log10(signal / noise)


def _whole(x: float) -> int | float:
    """An int when x is whole (int8 outputs: LSB), else the float (float32 edge outputs)."""
    return int(x) if float(x).is_integer() else float(x)


def output_figures(g: Graph, got: Sequence[np.ndarray] | None, expected: Sequence[np.ndarray],
                   floats: Sequence[np.ndarray], samples: int, qdq: bool) -> list[dict[str, Any]]:
    """One dict per output of graph g, in output order: name (IR tensor), model_name (the model file's
    output name, ONNX QDQ: graph meta `onnx_outputs`; else None), shape (one sample's), dtype, bit_exact /
    max_abs_diff_lsb (board `got` vs interpreter `expected`, [S, *shape] each; None without board
    outputs), sqnr_db and top1_agreement (dequantized int8 output vs `floats`, the float reference
    [S, *shape]; top-1 over outputs with more than one value per sample; None for int32 index
    outputs), index_agreement (int32 outputs: the fraction of indices equal to the reference's),
    and for a quantized ONNX model (`qdq`) ort_max_abs_diff_lsb / ort_exact_fraction
    (onnx_qdq_ort.lsb_agreement)."""
    # the model file's own output names where the frontend kept them (a QDQ model's graph outputs are
    # the float twins behind its last QuantizeLinear / DequantizeLinear, which the IR names differently)
    model_names = g.meta.get("onnx_outputs")
    if model_names is None or len(model_names) != len(g.outputs):
        model_names = [None] * len(g.outputs)
    out = []
    for k, name in enumerate(g.outputs):
        t, e, f = g.t(name), expected[k], floats[k]
        index = t.dtype == DType.INT32  # ARG_MAX: indices, no SQNR or top-1
        deq = t.quant.dequantize(e) if t.quant else e.astype(np.float32)  # float32 edge outputs as they are
        ref2, q2 = np.asarray(f).reshape(samples, -1), deq.reshape(samples, -1)
        o: dict[str, Any] = {"name": name, "model_name": model_names[k], "shape": list(t.shape),
                             "dtype": t.dtype.value, "bit_exact": None, "max_abs_diff_lsb": None,
                             "sqnr_db": None if index else sqnr_db(np.asarray(f), deq),
                             "top1_agreement": float(np.mean(ref2.argmax(1) == q2.argmax(1)))
                             if ref2.shape[1] > 1 and not index else None,
                             "index_agreement": float(np.mean(np.asarray(f).reshape(-1) == e.reshape(-1)))
                             if index else None}
        if got is not None:
            d = np.abs(got[k].astype(np.float64) - e)
            o["bit_exact"], o["max_abs_diff_lsb"] = bool(np.all(d == 0)), _whole(d.max(initial=0))
        if qdq:
            o["ort_max_abs_diff_lsb"], o["ort_exact_fraction"] = lsb_agreement([got[k] if got is not None else e],
                                                                               [f], [t.quant])
        out.append(o)
    return out
