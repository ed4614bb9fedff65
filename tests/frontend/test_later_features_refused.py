"""Features of a later issue are refused until then in ONE line naming the feature (issue 11 "Done
when"): exit 2, no traceback, nothing written, before the other checks pile up.

- TFLite uint8 model input/output (QUANTIZE uint8 -> int8 at the input, int8 -> uint8 at the output):
  `keras_mobilenet_v2_035_uint8io.tflite`.
- QDQ weights with non-zero zero points (asymmetric int8 / uint8 weights), named by the file's own
  tensor and zero point as written (uint8 134, not the shifted int8 6):
  `tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx`.
Each with the corpus file (../shared/models/exported: skipped when absent, a failure under CI=true)
and a hand-built equivalent, so the behaviour is tested without the corpus.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder, qlinear_conv
from onnx import numpy_helper

from toolchain.errors import UnsupportedModel
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.frontend.tflite import load_tflite

REPO = Path(__file__).resolve().parents[2]
UINT8_IO = ("uint8 model input/output ({names}: QUANTIZE uint8<->int8 at the graph edges) is not supported yet; "
            "convert with inference_input_type/inference_output_type=tf.int8 or float32")
ASYMMETRIC = "asymmetric int8/uint8 weights are not supported yet; quantize weights symmetric (onnxruntime: " \
             "weight_type=QInt8, per_channel or not)"


def _exported(name: str) -> Path:
    """A file of the shared corpus: ../shared next to the checkout, or next to the main checkout of a
    worktree (REPO/../../shared). Skipped when absent; a failure under CI=true."""
    for root in (REPO.parent, REPO.parents[1]):
        path = root / "shared" / "models" / "exported" / name
        if path.is_file():
            return path
    msg = f"shared/models/exported/{name} is not present"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg + " (CI=true: the corpus is required)")
    pytest.skip(msg)


def _one_line(res, out: Path) -> str:
    """Exit 2, one `edgecc: error:` line, no traceback, nothing on stdout, no OUT; the message."""
    assert "Traceback" not in res.err and res.code == 2, res.err
    line, = res.err.strip().splitlines()
    assert line.startswith("edgecc: error: ") and res.out == "" and not out.exists()
    return line.removeprefix("edgecc: error: ")


# ---- TFLite uint8 model input / output ----------------------------------------------------------------
def test_corpus_uint8_io_tflite_is_refused_naming_the_feature(tmp_path: Path, edgecc) -> None:
    path, out = _exported("keras_mobilenet_v2_035_uint8io.tflite"), tmp_path / "out"
    msg = _one_line(edgecc("build", "--model", path, "--board", "host", "--out", out), out)
    names = "input 'serving_default_keras_tensor:0', output 'StatefulPartitionedCall_1:0'"
    assert msg == f"{path}: " + UINT8_IO.format(names=names)


def _uint8_io_tflite(path: Path, output_uint8: bool = True) -> Path:
    """t0 uint8 -> QUANTIZE -> t1 int8 -> QUANTIZE -> t2 uint8 (or int8): what the TFLite converter
    writes for inference_input_type / inference_output_type = tf.uint8 around an int8 core."""
    from _tflite_cases import Model, S

    m = Model()
    t0 = m.tensor((1, 8), S.TensorType.UINT8, 0.1, 128)
    t1 = m.tensor((1, 8), S.TensorType.INT8, 0.1, 0)
    t2 = m.tensor((1, 8), S.TensorType.UINT8 if output_uint8 else S.TensorType.INT8, 0.2, 128 if output_uint8 else 0)
    ops = [(S.BuiltinOperator.QUANTIZE, 0, None, [t0], [t1]), (S.BuiltinOperator.QUANTIZE, 0, None, [t1], [t2])]
    path.write_bytes(m.build_ops(ops, [t0], [t2]))
    return path


def test_hand_built_uint8_io_tflite_is_refused_in_one_line(tmp_path: Path, edgecc) -> None:
    path, out = _uint8_io_tflite(tmp_path / "u8io.tflite"), tmp_path / "out"
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(path)
    assert str(e.value) == f"{path}: " + UINT8_IO.format(names="input 't0', output 't2'")
    assert _one_line(edgecc("build", "--model", path, "--board", "host", "--out", out), out) == str(e.value)


def test_uint8_input_alone_is_refused_the_same_way(tmp_path: Path) -> None:
    path = _uint8_io_tflite(tmp_path / "u8in.tflite", output_uint8=False)
    with pytest.raises(UnsupportedModel, match=r"uint8 model input/output \(input 't0': QUANTIZE uint8<->int8"):
        load_tflite(path)


# ---- QDQ weights with non-zero zero points ----------------------------------------------------------
def test_corpus_uint8_weights_with_zero_points_are_refused_naming_the_file_tensors(tmp_path: Path, edgecc) -> None:
    path, out = _exported("tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx"), tmp_path / "out"
    msg = _one_line(edgecc("build", "--model", path, "--board", "host", "--out", out), out)
    assert msg.startswith(f"{path}: 50 weight tensors with non-zero zero points (e.g. '") and msg.endswith(ASYMMETRIC)
    name, rest = msg.split("(e.g. '", 1)[1].split("' zero point ", 1)
    zp = int(rest.split(",", 1)[0])
    assert rest.startswith(f"{zp}, uint8, where 128 is symmetric): ")
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    assert name in inits and inits[name].dtype == np.uint8  # the file's own integer tensor ...
    dq = next(n for n in onnx.load(str(path)).graph.node if n.op_type == "DequantizeLinear" and n.input[0] == name)
    assert int(inits[dq.input[2]]) == zp != 128                # ... and its zero point as written


def _asymmetric_qdq(path: Path) -> Path:
    """x -> Q/DQ -> Conv (uint8 weights 'w_u8', zero point 134) -> Conv (int8 per-channel weights
    'w_s8', zero points 0 and 3) -> Q/DQ -> y, then an unknown op that must not be reported first."""
    rng = np.random.default_rng(0)
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 2, 4, 4)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w1 = m.dq(m.const("w_u8", rng.integers(100, 160, (2, 2, 1, 1)), np.uint8), 0.01, 134, "w1", np.uint8)
    w2 = m.dq(m.const("w_s8", rng.integers(-50, 50, (2, 2, 1, 1)), np.int8), np.array([0.01, 0.02], np.float32),
              np.array([0, 3]), "w2", np.int8, axis=0)
    y = m.node("Conv", [m.node("Conv", [xd, w1], "c1"), w2], "c2")
    m.dq(m.q(m.node("Erf", [y], "e"), 0.05, 0, "yq"), 0.05, 0, "y")
    m.output("y")
    return m.save(path)


def test_hand_built_qdq_weight_zero_points_are_refused_in_one_line(tmp_path: Path, edgecc) -> None:
    path, out = _asymmetric_qdq(tmp_path / "asym.onnx"), tmp_path / "out"
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(path)
    assert str(e.value) == (f"{path}: 2 weight tensors with non-zero zero points (e.g. 'w_u8' zero point 134, uint8, "
                            f"where 128 is symmetric): {ASYMMETRIC}")
    np.save(tmp_path / "d.npy", np.zeros((2, 1, 2, 4, 4), np.float32))
    res = edgecc("build", "--model", path, "--verify", tmp_path / "d.npy", "--board", "host", "--out", out)
    assert _one_line(res, out) == str(e.value)


def test_qlinear_conv_int8_per_channel_zero_points_name_the_weights(tmp_path: Path) -> None:
    m = qlinear_conv((1, 2, 3, 3), np.ones((4, 2, 1, 1), np.int8), np.full(4, 0.1, np.float32))
    model = m.model()
    wz = next(i for i in model.graph.initializer if i.name == "wz")
    wz.CopyFrom(numpy_helper.from_array(np.array([0, 2, -1, 5], np.int8), "wz"))
    onnx.save(model, str(tmp_path / "ql.onnx"))
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(tmp_path / "ql.onnx")
    assert "1 weight tensor with non-zero zero points (e.g. 'w' zero points 0, 2, -1, … (per channel), int8)" in str(e.value)


def test_uint8_weights_at_zero_point_128_are_symmetric_and_accepted(tmp_path: Path) -> None:
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 2, 4, 4)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w = m.dq(m.const("w", np.full((2, 2, 1, 1), 140), np.uint8), 0.01, 128, "wd", np.uint8)
    m.dq(m.q(m.node("Conv", [xd, w], "c"), 0.05, 0, "cq"), 0.05, 0, "y")
    m.output("y")
    assert load_qdq(m.save(tmp_path / "sym.onnx")).given_consts  # no refusal
