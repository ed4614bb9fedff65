"""End to end on AArch64: MLPerf Tiny's DS-CNN keyword spotter as a QDQ ONNX file (PPQ's, weights holding
-128) under `rounding: onnx` runs the NEON `_onnx` kernels on every convolution, depthwise convolution
and fully connected layer, bit-exact with the numpy interpreter and equal to onnxruntime (0 LSB), on
`aarch64` (dotprod) and `aarch64-v80` (Armv8.0); lowering picks the same NEON kernels under both
roundings (only the `_onnx` suffix differs); the depthwise layers, whose weights hold -128 but never
two in one int16 lane, keep the pairing 3x3 kernel; why_not names the first reason of the others."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO.parent / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_qdq.onnx"
BOARDS = ("aarch64", "aarch64-v80")
GEMM = {"Conv2D", "DepthwiseConv2D", "FullyConnected"}


def _yaml(tmp: Path, rounding: str) -> Path:
    data = tmp / "mfcc.npy"
    if not data.exists():  # MFCC-like features of the model's input range, seeded
        np.save(data, np.random.default_rng(0).normal(0, 20, (4, 490)).astype(np.float32))
    y = tmp / f"kws_{rounding}.yaml"
    y.write_text(f"model: {MODEL}\nboard: aarch64\nverify: {data}\ncalibration: {data}\nrounding: {rounding}\n")
    return y


@pytest.fixture(scope="module")
def kws():
    if not MODEL.exists():
        pytest.skip(f"{MODEL} not found")
    return MODEL


def test_kws_qdq_onnx_rounding_runs_neon(kws, tmp_path, edgecc, need_board):
    for b in BOARDS:
        need_board(b)
    out = tmp_path / "out"
    res = edgecc("run", _yaml(tmp_path, "onnx"), "--board", ",".join(BOARDS), "--out", out, "--quiet")
    assert res.code == 0, res.out + res.err
    for board in BOARDS:
        report = json.loads((out / board / "report.json").read_text())
        v = report["verification"]
        assert report["status"] == "pass" and v["bit_exact"] is True, board
        assert v["ort_max_abs_diff_lsb"] == 0, (board, v["ort_max_abs_diff_lsb"])
        kernels = {op["name"]: op["kernel"] for op in report["ops"] if op["op_type"] in GEMM}
        assert kernels and all(k.startswith("neon") and k.endswith("_onnx") for k in kernels.values()), (board, kernels)
        dw3 = [op["kernel"] for op in report["ops"] if op["op_type"] == "DepthwiseConv2D"]
        assert sum(k == "neon_3x3_onnx" for k in dw3) >= 4, dw3  # -128 weights, none paired in a lane
        if board == "aarch64":
            assert all("_dot" in op["kernel"] for op in report["ops"] if op["op_type"] in ("Conv2D", "FullyConnected"))


def test_same_kernels_under_both_roundings(kws, tmp_path):
    """Per node, the NEON variants that apply under `rounding: onnx` are those under tflm plus `_onnx`
    (the model's multipliers are QuantizeMultiplier's), and the pairing ones give their reason."""
    from toolchain.config import load_config
    from toolchain.ops.registry import REGISTRY, OpKind
    from toolchain.pipeline import import_model

    g = import_model(load_config(_yaml(tmp_path, "onnx"), {})).graph_s8
    tflm = replace(g, meta={**g.meta, "rounding": "tflm"})
    seen = 0
    for node in g.nodes:
        if node.op not in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED):
            continue
        neon = [v for v in REGISTRY[node.op].variants if v.isa == "neon"]
        on = {v.name for v in neon if v.applies(node, g)}
        off = {v.name for v in neon if v.applies(node, tflm)}
        assert on and on == {f"{n}_onnx" for n in off}, (node.name, on, off)
        assert all(v.why_not(node, tflm) is None for v in neon if v.name.endswith("_onnx"))  # not its rounding
        reasons = {v.name: v.why_not(node, g) for v in neon if v.name not in on}
        assert all(r for r in reasons.values() if r is not None) and reasons.get("neon_1x1_onnx", "x"), reasons
        w = g.t(node.inputs[1]).data
        if node.op is OpKind.DEPTHWISE_CONV2D and w.shape[1:3] == (3, 3):
            seen += int(w.min()) == -128 and "neon_3x3_onnx" in on  # PPQ's -128 weights: the pairing kernel
        elif node.op is OpKind.DEPTHWISE_CONV2D:
            assert reasons["neon_3x3_onnx"] == "window is not 3x3", reasons
    assert seen >= 4
