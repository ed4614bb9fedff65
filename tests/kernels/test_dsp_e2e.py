"""End to end on the Cortex-M4 (mps2-an386): the digits example compiles with the dsp kernel variants
chosen for every convolution, depthwise convolution and fully connected layer, and runs under QEMU
bit-exact against the numpy interpreter on every verification sample.

MLPerf Tiny ResNet-8 and VWW on the M4 (dsp variants everywhere, issue 6's bar of 0.75 x TFLM +
CMSIS-NN instructions) are checked in tests/e2e/test_mlperf_float*.py on the run that verifies all
their images: the same library (the YAML's calibration), so it is not built and run twice."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BOARD = "mps2-an386"
DSP_OPS = {"Conv2D", "DepthwiseConv2D", "FullyConnected"}
YAML = {"digits": REPO / "examples" / "digits" / "pipeline.yaml"}


@pytest.mark.parametrize("model", list(YAML))
def test_dsp_model_bit_exact(model, tmp_path, edgecc, need_board):
    need_board(BOARD)
    out = tmp_path / "out"
    res = edgecc("run", YAML[model], "--board", BOARD, "--out", out, "--quiet")  # its own 32 images
    assert res.code == 0, res.out + res.err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "pass"
    assert report["verification"]["bit_exact"] is True
    kernels = {op["name"]: op["kernel"] for op in report["ops"] if op["op_type"] in DSP_OPS}
    assert kernels and all(k.startswith("dsp") for k in kernels.values()), kernels
