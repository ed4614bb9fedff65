"""The M4's DSP kernels under `rounding: onnx` (issue 13 item 1) on a QDQ file another tool wrote:
tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx (../shared/models/exported) on mps2-an386 runs every
Conv / DepthwiseConv / FullyConnected on a DSP kernel of the onnx rounding (kernel column `dsp*_onnx*`),
bit-exact with the interpreter and equal to the file's own onnxruntime reference, at the instructions
of the TFLM rounding (measured 20.25 M vs 20.28 M). kws_dscnn_qdq and -128 weights:
tests/e2e/test_qdq_models.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_exported_corpus import CORPUS, lsb_from_reference

NAME = "tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx"


@pytest.mark.needs_gcc
@pytest.mark.skipif(not (CORPUS / NAME).is_file(), reason=f"{CORPUS / NAME} not present")
def test_mobilenet_qdq_on_the_m4_dsp_kernels_both_roundings(edgecc, need_board, tmp_path: Path) -> None:
    need_board("mps2-an386")
    data = CORPUS / (Path(NAME).stem + ".inputs.npy")
    reports = {}
    for rounding in ("onnx", "tflm"):
        yaml = tmp_path / f"{rounding}.yaml"
        yaml.write_text(f"model: {CORPUS / NAME}\ncalibration: {data}\nverify: {data}\nrounding: {rounding}\n")
        out = tmp_path / rounding
        res = edgecc("run", yaml, "--board", "mps2-an386", "--out", out, "--quiet")
        assert res.code == 0, res.err[-3000:]
        reports[rounding] = json.loads((out / "report.json").read_text())
        assert reports[rounding]["verification"]["bit_exact"] is True
    assert lsb_from_reference(NAME, tmp_path / "onnx") < 1e-3  # onnxruntime's own outputs, to the LSB
    for rounding, report in reports.items():
        heavy = {op["kernel"] for op in report["ops"]
                 if op["op_type"] in ("Conv2D", "DepthwiseConv2D", "FullyConnected")}
        assert all(k.startswith("dsp") and ("_onnx" in k) == (rounding == "onnx") for k in heavy), heavy
    onnx, tflm = (reports[r]["total_instructions"] for r in ("onnx", "tflm"))
    assert onnx <= 1.02 * tflm, (onnx, tflm)
