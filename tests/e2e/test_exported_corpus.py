"""Issue 11: every real exporter output in ../shared/models/exported/ (PyTorch legacy and dynamo,
an old opset, onnxruntime QDQ, Keras -> TFLite int8) runs as given: `edgecc run --model FILE` with
its `.inputs.npy` as calibration and verification data, exit 0, bit-exact with the interpreter on
the board, a .tflite also bit-exact with TFLM, a QDQ model close to onnxruntime on the QDQ file
itself. Two files need features of a later issue and are refused with one line naming them.

Every file on `host`; a representative few on mps2-an386, mps3-an547 and aarch64 in one sweep each;
EDGECC_SLOW=1 runs every file on mps2-an386 too. Skipped without ../shared (fails under CI=true).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from e2e_helpers import REPO, assert_rejected

CORPUS = REPO.parent / "shared" / "models" / "exported"
SLOW = os.environ.get("EDGECC_SLOW") == "1"
# files that need features of the issue on models quantized by other tools: refused by name until then
REFUSED = {"keras_mobilenet_v2_035_uint8io.tflite": "uint8 model input/output",
           "tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx": "non-zero zero points"}
# small and varied: an old opset with a dynamic batch, the TFLite op mix, a QDQ MobileNet
REPRESENTATIVE = ("kws_cnn_legacy_op9_dynbatch.onnx", "keras_opmix_int8.tflite",
                  "tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx")
# SQNR of our int8 against the model's own float or QDQ semantics (onnxruntime; for a .tflite its
# dequantized twin): random-weight networks are close to uniform, so these are floors that only a
# wrong quantization misses (measured values in the closing note of issue 11 are well above)
MIN_SQNR_DB = {"qdq": 15.0, "onnx": 3.0, "tflite": 3.0}


def _files() -> list[str]:
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".onnx", ".tflite"))


@pytest.fixture(scope="module", autouse=True)
def _corpus_present():
    if not CORPUS.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{CORPUS} is missing (CI=true: ../shared is required)")
        pytest.skip(f"{CORPUS} is absent")


def _run(edgecc, name: str, board: str, out: Path):
    data = CORPUS / (Path(name).stem + ".inputs.npy")
    return edgecc("run", "--model", CORPUS / name, "--board", board, "--calibration", data, "--verify", data,
                  "--out", out, "--quiet")


def _kind(name: str) -> str:
    return "tflite" if name.endswith(".tflite") else "qdq" if "_qdq_" in name else "onnx"


def _check_report(report: dict, name: str) -> None:
    v = report["verification"]
    assert v["bit_exact"] is True and v["samples"] == 8, (name, v)
    if name.endswith(".tflite"):
        assert v["tflm_bit_exact"] is True, (name, v.get("tflm"))
    assert v["sqnr_db"] is not None and v["sqnr_db"] >= MIN_SQNR_DB[_kind(name)], (name, v["sqnr_db"])


@pytest.mark.parametrize("name", _files() or ["(no corpus)"])
def test_runs_on_host(name, edgecc, need_board, tmp_path):
    need_board("host")
    res = _run(edgecc, name, "host", tmp_path / "out")
    if name in REFUSED:
        assert_rejected(res, tmp_path / "out", REFUSED[name])
        return
    assert res.code == 0, res.err[-3000:]
    _check_report(json.loads((tmp_path / "out" / "report.json").read_text()), name)


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_representative_files_on_the_arm_boards(name, edgecc, need_board, tmp_path):
    boards = ("mps2-an386", "mps3-an547", "aarch64")
    for b in boards:
        need_board(b)
    res = _run(edgecc, name, ",".join(boards), tmp_path / "out")
    assert res.code == 0, res.err[-3000:]
    for b in boards:
        _check_report(json.loads((tmp_path / "out" / b / "report.json").read_text()), f"{name} on {b}")


@pytest.mark.skipif(not SLOW, reason="every corpus file on mps2-an386: EDGECC_SLOW=1")
@pytest.mark.parametrize("name", [n for n in _files() if n not in REFUSED])
def test_every_file_on_the_m4(name, edgecc, need_board, tmp_path):
    need_board("mps2-an386")
    res = _run(edgecc, name, "mps2-an386", tmp_path / "out")
    assert res.code == 0, res.err[-3000:]
    _check_report(json.loads((tmp_path / "out" / "report.json").read_text()), name)
