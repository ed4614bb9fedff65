"""A 16x8 ResNet-8 through the whole job (issue 14 "done when"): the MLPerf Tiny int8 ResNet-8 file made
16x8 with the flatbuffer API (tests/models/tflite_16x8_from_int8.py: same weights and real ranges,
int16 activations, int64 biases), run by `edgecc run` on the Cortex-M4 (mps2-an386) and AArch64 on
real CIFAR-10 images: the board's outputs equal our interpreter's and TFLM's bit for bit, and the
16x8 file agrees with the int8 one on the top-1 class of every image."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

_MODELS = str(Path(__file__).resolve().parents[1] / "models")
if _MODELS not in sys.path:
    sys.path.append(_MODELS)

from tflite_16x8_from_int8 import convert, inputs16  # noqa: E402

SHARED = Path(__file__).resolve().parents[3] / "shared"
INT8 = SHARED / "models" / "mlperf_tiny" / "ic_resnet8_int8.tflite"
IMAGES = SHARED / "data" / "cifar10_calib_200.npz"
SAMPLES = 6


@pytest.mark.parametrize("board", ["mps2-an386", "aarch64"])
def test_resnet8_16x8_bit_exact_with_tflm(tmp_path, edgecc, need_board, board):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    need_board(board)
    if not INT8.is_file():
        pytest.skip(f"{INT8} is missing")
    model, io = convert(INT8.read_bytes())
    (tmp_path / "r8_16.tflite").write_bytes(model)
    images = np.load(IMAGES)["images"][:SAMPLES].astype(np.float32)  # pixel values 0..255: the int8 file's range
    (scale16,) = (s16 for _, s16 in io.values())
    np.savez(tmp_path / "data.npz", input_1_int8=inputs16(images, scale16))
    res = edgecc("run", "--model", tmp_path / "r8_16.tflite", "--board", board, "--verify", tmp_path / "data.npz",
                 "--out", tmp_path / "out", "--quiet")
    job = finish(res, tmp_path / "out")
    r = job.report
    assert r is not None and job.code == 0 and r["status"] == "pass", (job.err, r and r["verification"])
    v = r["verification"]
    assert v["bit_exact"] and v["tflm_bit_exact"] is True and v["samples"] == SAMPLES, v.get("tflm")
    # int16 DATA are the model's own quantized values: none saturates (they were once clipped to int8), and the
    # 16x8 outputs follow the float twin of the file closely (68 dB on host)
    assert v["input_saturation"]["fraction"] == 0.0
    assert v["top1_agreement"] == 1.0 and v["sqnr_db"] > 50, (v["top1_agreement"], v["sqnr_db"])
    ops = r["ops"]
    assert [op["op_type"] for op in ops].count("Conv2D") == 9
    assert {op["op_type"] for op in ops} >= {"Conv2D", "Add", "AveragePool2D", "FullyConnected", "Softmax"}
    # int16 activations: the arena holds 2-byte buffers (the widest live pair: two 32x32x16 tensors)
    assert r["arena_bytes"] >= 2 * 2 * 32 * 32 * 16
    # the 16x8 file (whose outputs the board equals) names the int8 file's top-1 class on every image
    from tflite_micro import runtime

    i8 = runtime.Interpreter.from_bytes(INT8.read_bytes(), arena_size=1 << 20)
    i16 = runtime.Interpreter.from_bytes(model, arena_size=1 << 21)
    x16 = inputs16(images, scale16)
    for k in range(SAMPLES):
        i8.set_input((images[k:k + 1] - 128).astype(np.int8), 0)
        i16.set_input(x16[k:k + 1], 0)
        i8.invoke()
        i16.invoke()
        assert int(np.argmax(i16.get_output(0))) == int(np.argmax(i8.get_output(0))), k
