"""Shared by tests/frontend/test_onnx_validate*.py: small valid ONNX models to break, and the CLI
build that must refuse a broken one in one line."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from _qdq_cases import ModelBuilder
from onnx import TensorProto, helper, numpy_helper

sys.path.append(str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_helpers import assert_rejected  # noqa: E402 - tests/e2e is no package

X_SHAPE = (1, 2, 4, 4)


def float_model(conv: dict | None = None, w_shape=(3, 2, 3, 3)) -> onnx.ModelProto:
    """x [1,2,4,4] -> Conv (node 'conv1', weights 'w') -> Relu ('relu1') -> y: valid as built."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", **(conv or {"pads": [1, 1, 1, 1]})),
             helper.make_node("Relu", ["c"], ["y"], name="relu1")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X_SHAPE))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.full(w_shape, 0.1, np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def qdq_model(scale=0.05, zp=0, zp_dtype=np.int8, w_scale=0.1, **conv) -> ModelBuilder:
    """x -> Q/DQ ('xq'/'xd') -> Conv ('qconv') with DQ weights ('wd') -> Q/DQ -> y."""
    m = ModelBuilder(13)
    x = m.dq(m.q(m.input("x", X_SHAPE), scale, zp, "xq", zp_dtype), 0.05, 0, "xd")
    w = m.dq(m.const("w", np.ones((3, 2, 3, 3)), np.int8), w_scale, 0, "wd")
    m.nodes.append(helper.make_node("Conv", [x, w], ["c"], name="qconv", **(conv or {"pads": [1, 1, 1, 1]})))
    m.dq(m.q("c", 0.05, 0, "cq"), 0.05, 0, "y")
    m.output("y")
    return m


def build(tmp_path: Path, edgecc, model: onnx.ModelProto | bytes | ModelBuilder, *needles: str) -> str:
    """Save `model`, `edgecc build` it on host with float calibration data, assert a one-line refusal
    naming the file and every needle. Returns the error line."""
    path = tmp_path / "bad.onnx"
    if isinstance(model, ModelBuilder):
        model = model.model()
    path.write_bytes(model if isinstance(model, bytes) else model.SerializeToString())
    np.save(tmp_path / "calib.npy", np.zeros((2, *X_SHAPE), np.float32))
    out = tmp_path / "out"
    res = edgecc("build", "--model", path, "--calibration", tmp_path / "calib.npy", "--board", "host", "--out", out)
    line = assert_rejected(res, out, f"{path}: ", *needles)
    # 300 characters after "edgecc: error: " with a 75-character path; the path is pytest's temp
    # folder, whose length varies (pytest-NNN, popen-gwN/ under xdist), so the rest is what is bounded
    assert len(line) - len(str(path)) <= 300 + len("edgecc: error: ") - 75, line
    assert line.isprintable(), line
    return line


def mutate(fn: Callable[[onnx.ModelProto], object], base: Callable[[], onnx.ModelProto] = float_model):
    m = base()
    fn(m)
    return m


def single(op: str, shape=X_SHAPE, **attrs) -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="n1", **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def with_const(op: str, const: np.ndarray, *extra: np.ndarray, **attrs) -> onnx.ModelProto:
    m = single(op, **attrs)
    names = ["c0", *(f"c{k + 1}" for k in range(len(extra)))]
    m.graph.node[0].input.extend(["", *names] if op == "Resize" else names)
    m.graph.initializer.extend(numpy_helper.from_array(v, n) for n, v in zip(names, (const, *extra), strict=True))
    return m
