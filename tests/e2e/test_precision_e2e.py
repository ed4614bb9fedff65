"""`precision: int16` through the whole job on a small float ONNX model (edgecc run on the host and the
Cortex-M4): the board equals our interpreter bit for bit, the 16x8 ops say so in report.json, whose
precision section validates against the schema, the output error is far below the int8 build's, and
model.h gives the int16 output's scale. An MLP whose input is int16 (real-valued data, an FC reading it)
checks the int16 graph input: inputs.bin, the harness and model.h."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]


def _model(path: Path) -> None:
    """NCHW [1,4,8,8] -> Conv 1x1 (channel 0 times 100: a wide tensor) -> Conv 1x1 (exact weights) ->
    Conv 3x3 + Relu -> Flatten -> Gemm 10 (the unit tests' wide_net, as ONNX)."""
    rng = np.random.default_rng(0)
    wa = np.diag([100.0, 1.0, 1.0, 1.0]).reshape(4, 4, 1, 1)
    wb = (np.array([[1, 127, 40, -25], [1, 50, 127, 10], [-1, -30, 20, 127], [2, 127, -60, 30]]) / 127.0
          ).reshape(4, 4, 1, 1)
    inits = {"wa": wa, "ba": np.zeros(4), "wb": wb, "bb": rng.uniform(-0.1, 0.1, 4),
             "wc": rng.uniform(-1, 1, (8, 4, 3, 3)), "bc": rng.uniform(-1, 1, 8),
             "wd": rng.uniform(-1, 1, (10, 512)), "bd": rng.uniform(-1, 1, 10)}
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"]),
             helper.make_node("Conv", ["a", "wb", "bb"], ["b"]),
             helper.make_node("Conv", ["b", "wc", "bc"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["c"]),
             helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("Gemm", ["f", "wd", "bd"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())


@pytest.fixture(scope="module")
def wide_job(tmp_path_factory, edgecc, need_board):
    """wide_job(board, precision) -> Job of the wide model (cached)."""
    tmp = tmp_path_factory.mktemp("precision")
    _model(tmp / "wide.onnx")
    rng = np.random.default_rng(1)
    np.save(tmp / "calib.npy", rng.uniform(-2, 2, (48, 1, 4, 8, 8)).astype(np.float32))
    np.save(tmp / "verify.npy", rng.uniform(-2, 2, (8, 1, 4, 8, 8)).astype(np.float32))
    cache = {}

    def get(board: str, precision: str):
        need_board(board)
        if (board, precision) not in cache:
            yaml = tmp / f"{precision}.yaml"
            yaml.write_text(f"model: wide.onnx\ncalibration: calib.npy\nverify: verify.npy\nprecision: {precision}\n"
                            "preprocess:\n  layout: NCHW\n")
            out = tmp / f"out-{board}-{precision}"
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", yaml, "--board", board, "--out", out, "--quiet")
            cache[(board, precision)] = finish(res, out)
        return cache[(board, precision)]

    return get


@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_int16_bit_exact_on_the_board(wide_job, board):
    job = wide_job(board, "int16")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", job.err
    v = r["verification"]
    assert v["bit_exact"] is True and v["samples"] == 8 and "16x8" in v["reference"]
    ops = {o["op_type"]: o for o in r["ops"]}
    # the Transposes (the input NCHW -> NHWC, and NHWC -> NCHW before ONNX's Flatten) have no 16x8 kernel:
    # they run in int8 with a REQUANTIZE on each side
    assert [(o["op_type"], o["precision"]) for o in r["ops"]] == [
        ("Transpose", "int8"), ("Requantize", "int16"), ("Conv2D", "int16"), ("Conv2D", "int16"),
        ("Conv2D", "int16"), ("Requantize", "int16"), ("Transpose", "int8"), ("Requantize", "int16"),
        ("FullyConnected", "int16")]
    assert ops["FullyConnected"]["kernel"].endswith("s16")
    p = r["precision"]
    assert p["mode"] == "int16" and len(p["int16_ops"]) == 4 and p["requantize_ops"] == 3
    assert list(p["io_dtypes"].values()) == ["int8", "int16"]
    assert v["outputs"][0]["dtype"] == "int16"
    header = (job.out / "lib" / "model.h").read_text()
    assert "int16 [1, 10], real = scale * (q - zero_point)" in header and "_OUTPUT0_SCALE" in header
    assert "_OUTPUT0_ZERO_POINT 0" in header


def test_int16_error_far_below_int8(wide_job):
    int8, int16 = (wide_job("host", p).report["verification"] for p in ("int8", "int16"))
    assert int8["bit_exact"] and int16["bit_exact"]
    # measured: int8 12.3 dB (A's wide channel takes B's input grid), 16x8 33.7 dB (the int8 Transpose before
    # the Gemm and the int8 weights bound it)
    assert int8["sqnr_db"] < 15.0 and int16["sqnr_db"] > 31.0, (int8["sqnr_db"], int16["sqnr_db"])


def test_report_with_precision_validates(wide_job):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "profiler" / "schema.json").read_text())
    for precision in ("int8", "int16"):
        report = wide_job("host", precision).report
        jsonschema.validate(report, schema)
        assert report["precision"]["mode"] == precision


def test_int16_input_and_output_of_an_mlp(tmp_path, edgecc, need_board):
    """A Gemm reading the input: real-valued data make the input int16 (host-side quantization to int16,
    inputs.bin of int16 values), and the output is int16; bit-exact with the interpreter."""
    need_board("host")
    rng = np.random.default_rng(2)
    inits = {"w1": rng.uniform(-1, 1, (16, 6)), "b1": rng.uniform(-1, 1, 16), "w2": rng.uniform(-1, 1, (3, 16)),
             "b2": rng.uniform(-1, 1, 3)}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], transB=1), helper.make_node("Relu", ["h0"], ["h"]),
             helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    (tmp_path / "mlp.onnx").write_bytes(m.SerializeToString())
    np.save(tmp_path / "calib.npy", rng.normal(0, 1, (32, 1, 6)).astype(np.float32))
    np.save(tmp_path / "verify.npy", rng.normal(0, 0.5, (6, 1, 6)).astype(np.float32))
    out = tmp_path / "out"
    res = edgecc("run", "--model", tmp_path / "mlp.onnx", "--calibration", tmp_path / "calib.npy", "--verify",
                 tmp_path / "verify.npy", "--precision", "int16", "--board", "host", "--out", out, "--quiet")
    job = finish(res, out)
    r = job.report
    assert r is not None and job.code == 0 and r["verification"]["bit_exact"] is True, job.err
    assert r["precision"]["io_dtypes"] == {"x": "int16", "y": "int16"}
    assert (out / "fw" / "inputs.bin").stat().st_size == 6 * 6 * 2  # 6 samples of 6 int16 values
    header = (out / "lib" / "model.h").read_text()
    assert "int16 [1, 6], real = scale * (q - zero_point)" in header and "_INPUT0_ZERO_POINT 0" in header
    assert r["verification"]["sqnr_db"] > 40.0


def test_a_quantized_model_keeps_its_own_types(tmp_path, edgecc):
    """precision chooses the types of edgecc's own quantization: a .tflite is refused in one line."""
    from e2e_helpers import assert_rejected

    model = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_int8.tflite"
    if not model.is_file():
        pytest.skip("the MLPerf Tiny models are not in ../shared")
    out = tmp_path / "out"
    res = edgecc("build", "--model", model, "--precision", "int16", "--out", out)
    assert_rejected(res, out, "kws_dscnn_int8.tflite", "precision: int16", "keeps its own")
