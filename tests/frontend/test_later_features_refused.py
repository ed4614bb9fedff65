"""Features of a later issue are refused until then in ONE line naming the feature (issue 11 "Done
when"): exit 2, no traceback, nothing written, before the other checks pile up.

- TFLite uint8 model input/output (QUANTIZE uint8 -> int8 at the input, int8 -> uint8 at the output):
  `keras_mobilenet_v2_035_uint8io.tflite`.
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
