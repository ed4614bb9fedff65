"""uint8 model inputs and outputs (issue 13 item 2), as the TFLite converter writes them for
inference_input_type / inference_output_type = tf.uint8 (QUANTIZE uint8 -> int8 at the input,
int8 -> uint8 at the output) and as quantized ONNX models declare them: int8 inside (integers and
zero point - 128, the same real values), uint8 in the generated API (OUT/lib/model.h), in the
harness' files and for the DATA rule (uint8 data for a uint8 input: the model's quantized values).

Checked against TFLM (a requantizing QUANTIZE: TFLM's multiplier QuantizeMultiplier(double(s_in) /
double(s_out))) and onnxruntime, in the interpreter and through `edgecc run` on host and the M4."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder
from _tflite_cases import Model, S

from toolchain import tflm_oracle
from toolchain.data import load_data, quantize_inputs
from toolchain.config import Preprocess
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.io_dtypes import from_model_dtype, io_dtype, io_qparams, to_model_dtype
from toolchain.ir import DType

needs_tflm = pytest.mark.skipif(not tflm_oracle.available(), reason="tflite-micro is not installed")
U8 = np.arange(256, dtype=np.uint8).reshape(16, 1, 16)  # every uint8 value, 16 samples of [1, 16]


def uint8_io_tflite(path: Path, s_in: float, s_core: float, s_out: float, z_core: int) -> Path:
    """t0 uint8 (s_in, 128) -> QUANTIZE -> t1 int8 (s_core, z_core) -> FULLY_CONNECTED (weights zero point
    -20) -> t4 int8 (0.2, -5) -> QUANTIZE -> t5 uint8 (s_out, 131)."""
    rng = np.random.default_rng(0)
    m = Model()
    t0 = m.tensor((1, 16), S.TensorType.UINT8, s_in, 128)
    t1 = m.tensor((1, 16), S.TensorType.INT8, s_core, z_core)
    tw = m.tensor((6, 16), S.TensorType.INT8, 0.01, -20, rng.integers(-128, 128, (6, 16)).astype(np.int8))
    tb = m.tensor((6,), S.TensorType.INT32, 0.01 * s_core, 0, rng.integers(-900, 900, 6).astype(np.int32))
    t4 = m.tensor((1, 6), S.TensorType.INT8, 0.2, -5)
    t5 = m.tensor((1, 6), S.TensorType.UINT8, s_out, 131)
    ops = [(S.BuiltinOperator.QUANTIZE, 0, None, [t0], [t1]),
           (S.BuiltinOperator.FULLY_CONNECTED, S.BuiltinOptions.FullyConnectedOptions, S.FullyConnectedOptionsT(),
            [t1, tw, tb], [t4]),
           (S.BuiltinOperator.QUANTIZE, 0, None, [t4], [t5])]
    path.write_bytes(m.build_ops(ops, [t0], [t5]))
    return path


CASES = {"requantizing": (0.1, 0.07, 0.3, 3), "equal scales": (0.05, 0.05, 0.2, 0)}


@pytest.mark.parametrize("case", CASES)
def test_uint8_edges_are_int8_inside_with_the_same_real_values(tmp_path, case):
    g = load_tflite(uint8_io_tflite(tmp_path / "m.tflite", *CASES[case]))
    x, y = g.inputs[0], g.outputs[0]
    assert g.t(x).dtype == g.t(y).dtype == DType.INT8 and g.meta["uint8_io"] == ("t0", "t5")
    assert g.t(x).quant.zero_point == (0,) and io_qparams(g, x).zero_point == (128,)
    assert io_dtype(g, x) == np.uint8 and io_qparams(g, y).zero_point == (131,) and g.t(y).quant.zero_point == (3,)
    assert g.t(x).quant.scale == (float(np.float32(CASES[case][0])),)  # the file's float32 scale, unchanged
    assert np.array_equal(to_model_dtype(g, x, from_model_dtype(g, x, U8)), U8)
    kinds = [n.op.value for n in g.nodes]
    # equal scales: QUANTIZE uint8 -> int8 is the -128 shift the API does: a view, no kernel
    assert kinds == (["Requantize", "FullyConnected", "Requantize"] if case == "requantizing"
                     else ["Reshape", "FullyConnected", "Requantize"])


@needs_tflm
@pytest.mark.parametrize("case", CASES)
def test_uint8_io_equals_tflm_on_every_input_value(tmp_path, case):
    path = uint8_io_tflite(tmp_path / "m.tflite", *CASES[case])
    g = load_tflite(path)
    ours = np.stack([interpret(g, {g.inputs[0]: from_model_dtype(g, g.inputs[0], s)})[g.outputs[0]] for s in U8])
    theirs = tflm_oracle.run_tflm(path, [U8])["outputs"][0]
    assert theirs.dtype == np.uint8
    np.testing.assert_array_equal(to_model_dtype(g, g.outputs[0], ours), theirs.reshape(ours.shape))
    assert len(np.unique(theirs)) > 20


def test_uint8_data_are_quantized_values_and_float_data_real_values(tmp_path):
    g = load_tflite(uint8_io_tflite(tmp_path / "m.tflite", *CASES["requantizing"]))
    np.save(tmp_path / "u8.npy", U8)
    real = load_data(tmp_path / "u8.npy", g, Preprocess(), g)[g.inputs[0]]
    np.testing.assert_allclose(real.reshape(U8.shape), (U8.astype(np.float64) - 128) * 0.1, rtol=1e-6)
    assert np.array_equal(quantize_inputs({g.inputs[0]: real}, g)[g.inputs[0]].reshape(U8.shape),
                          (U8.astype(np.int16) - 128).astype(np.int8))
    np.save(tmp_path / "f.npy", (U8.astype(np.float32) - 128) * 0.1)
    again = load_data(tmp_path / "f.npy", g, Preprocess(), g)[g.inputs[0]]
    np.testing.assert_allclose(again, real, rtol=1e-6)


def _api(out: Path) -> str:
    return (out / "lib" / "model.h").read_text()


@needs_tflm
@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_uint8_io_tflite_runs_with_a_uint8_api(tmp_path, edgecc, need_board, board):
    need_board(board)
    path = uint8_io_tflite(tmp_path / "m.tflite", *CASES["requantizing"])
    np.save(tmp_path / "u8.npy", U8)
    out = tmp_path / "out"
    res = edgecc("run", "--model", path, "--board", board, "--verify", tmp_path / "u8.npy", "--out", out, "--quiet")
    assert res.code == 0, res.err[-2000:]
    v = json.loads((out / "report.json").read_text())["verification"]
    assert v["bit_exact"] is True and v["tflm_bit_exact"] is True and v["samples"] == 16
    h = _api(out)
    assert "int ecc_model_run(const uint8_t *input0, uint8_t *output0);" in h
    assert re.search(r"input0: tensor \"t0\", uint8 \[1, 16\]", h) and "ECC_INPUT0_ZERO_POINT 128" in h
    assert "ECC_OUTPUT0_ZERO_POINT 131" in h and "ECC_INPUT0_SCALE 0.1" in h
    g = load_tflite(path)  # the board's uint8 outputs are TFLM's
    theirs = tflm_oracle.run_tflm(path, [U8])["outputs"][0]
    board_out = np.fromfile(out / "fw" / "outputs.bin", np.uint8).reshape(theirs.shape)
    assert np.array_equal(board_out, theirs) and g.outputs == ("t5",)


def _qlinear_u8(path: Path) -> Path:
    """uint8 x -> QLinearConv (uint8 weights, zero point 40: beyond int8) -> uint8 y."""
    rng = np.random.default_rng(1)
    m = ModelBuilder(13)
    ins = [m.input("x", (1, 2, 5, 5), np.uint8), m.const("xs", 0.02), m.const("xz", 100, np.uint8),
           m.const("w", rng.integers(0, 256, (3, 2, 3, 3)), np.uint8), m.const("ws", 0.004),
           m.const("wz", 40, np.uint8), m.const("ys", 0.3), m.const("yz", 120, np.uint8),
           m.const("bias", rng.integers(-900, 900, 3), np.int32)]
    m.node("QLinearConv", ins, "y", pads=[1, 1, 1, 1])
    m.output("y", np.uint8)
    return m.save(path)


def test_uint8_io_qlinear_onnx_runs_with_a_uint8_api_equal_to_onnxruntime(tmp_path, edgecc, need_board):
    pytest.importorskip("onnxruntime")
    need_board("host")
    path = _qlinear_u8(tmp_path / "q.onnx")
    np.save(tmp_path / "u8.npy", np.random.default_rng(2).integers(0, 256, (6, 1, 2, 5, 5)).astype(np.uint8))
    yaml = tmp_path / "q.yaml"
    yaml.write_text(f"model: {path}\nverify: {tmp_path / 'u8.npy'}\nrounding: onnx\n")
    out = tmp_path / "out"
    res = edgecc("run", yaml, "--board", "host", "--out", out, "--quiet")
    assert res.code == 0, res.err[-2000:]
    v = json.loads((out / "report.json").read_text())["verification"]
    assert v["bit_exact"] is True and v["ort_max_abs_diff_lsb"] == 0 and v["ort_exact_fraction"] == 1.0
    h = _api(out)
    assert "int ecc_model_run(const uint8_t *input0, uint8_t *output0);" in h
    assert "ECC_INPUT0_ZERO_POINT 100" in h and "ECC_OUTPUT0_ZERO_POINT 120" in h
