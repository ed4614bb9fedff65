"""A MobileNetV3-like block (Conv -> HardSwish decomposed as x * HardSigmoid(x) -> SE block with a
HardSigmoid gate -> Mul) quantized by onnxruntime.quantization.quantize_static (QDQ, per channel,
QInt8/QInt8), as the review's refused tv_mobilenet_v3_small file: the HardSigmoid outputs sit on
the model's own grid (not the forced 1/256) and the model imports and runs under `rounding: onnx`,
close to onnxruntime (default session options)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import import_int8, on_grid, ours
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa: E402

SHAPE = (1, 8, 6, 6)
MAX_LSB = 1  # measured: 1 (the Mul of two table outputs and the SE mean round once each)


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(4)
    inits = []

    def c(name, v):
        inits.append(numpy_helper.from_array(np.asarray(v, np.float32), name))
        return name

    n = [helper.make_node("Conv", ["x", c("w1", rng.normal(0, 0.4, (8, 8, 3, 3))), c("b1", rng.normal(0, 0.1, 8))],
                          ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("HardSigmoid", ["c1"], ["hs1"], alpha=1 / 6, beta=0.5),
         helper.make_node("Mul", ["c1", "hs1"], ["hsw"]),                     # HardSwish, decomposed
         helper.make_node("GlobalAveragePool", ["hsw"], ["gap"]),
         helper.make_node("Conv", ["gap", c("w2", rng.normal(0, 0.4, (4, 8, 1, 1))), c("b2", rng.normal(0, 0.1, 4))], ["s1"]),
         helper.make_node("Relu", ["s1"], ["r1"]),
         helper.make_node("Conv", ["r1", c("w3", rng.normal(0, 0.4, (8, 4, 1, 1))), c("b3", rng.normal(0, 0.1, 8))], ["s2"]),
         helper.make_node("HardSigmoid", ["s2"], ["gate"], alpha=1 / 6, beta=0.5),
         helper.make_node("Mul", ["hsw", "gate"], ["se"]),
         helper.make_node("Conv", ["se", c("w4", rng.normal(0, 0.4, (8, 8, 1, 1))), c("b4", rng.normal(0, 0.1, 8))], ["y"])]
    g = helper.make_graph(n, "mnv3_block", [helper.make_tensor_value_info("x", TP.FLOAT, list(SHAPE))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, list(SHAPE))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


class Reader(CalibrationDataReader):
    def __init__(self, data):
        self.it = iter([{"x": d} for d in data])

    def get_next(self):
        return next(self.it, None)


def test_mobilenet_v3_block_from_quantize_static(tmp_path: Path) -> None:
    fp, qp = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(_model(), fp)
    rng = np.random.default_rng(7)
    quantize_static(str(fp), str(qp), Reader([rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(8)]),
                    quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    g = import_int8(qp)  # refused before: "the int8 op keeps 0.00390625 (it cannot requantize)"
    sess = ort.InferenceSession(str(qp), providers=["CPUExecutionProvider"])
    worst = 0
    for _ in range(3):
        x = rng.uniform(-1, 1, SHAPE).astype(np.float32)
        ref = on_grid(sess.run(None, {"x": x})[0], g)
        got = ours(qp, {"x": x}, "onnx", g)[0]
        worst = max(worst, int(np.abs(got.astype(int) - ref.reshape(got.shape).astype(int)).max()))
    assert worst <= MAX_LSB, worst
