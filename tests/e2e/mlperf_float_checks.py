"""Issue 3, "Done when": both MLPerf Tiny float models (ResNet-8 on 200 CIFAR-10 images, VWW
MobileNetV1-0.25 on 300 VWW JPEGs), through our own INT8 PTQ, pass bit-exact verification on
every board, and the top-1 agreement with the float model holds the bar of issue 3 point 3
(one image below the TFLite converter's own int8 models on the same images).

The checks and their fixtures; the test files import them and name the model (fixture `model`):
tests/e2e/test_mlperf_float.py (ResNet-8) and tests/e2e/test_mlperf_float_vww.py (VWW), two files so
that `--dist loadfile` runs the two models on different workers.

Default suite: mps2-an386, mps3-an547, aarch64. The other four boards (host, mps2-an500,
mps2-an505, aarch64-v80) are marked slow and skipped unless EDGECC_SLOW=1 (or `-m slow`):

    EDGECC_SLOW=1 /work/venv/bin/python -m pytest -q tests/e2e/test_mlperf_float*.py

Each (model, board) is compiled and run once per module (one `edgecc run`, all samples in one
QEMU run); every test of that pair reads the same report.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from e2e_helpers import Job, finish

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
# model -> (YAML, samples, minimum top-1 agreement of issue 3 point 3)
MODELS = {
    "ic_resnet8_float": (MODELS_DIR / "ic_resnet8_float.yaml", 200, 0.970),
    "vww_mobilenet_float": (MODELS_DIR / "vww_mobilenet_float.yaml", 300, 0.983),
}
# Loose regression floor for SQNR of the whole output vs onnxruntime (measured ~27-28 dB on
# every board; issue 3 only asks that it is reported).
MIN_SQNR_DB = 20.0
DEFAULT_BOARDS = ["mps2-an386", "mps3-an547", "aarch64"]
SLOW_BOARDS = ["host", "mps2-an500", "mps2-an505", "aarch64-v80"]


def _slow_enabled(config: pytest.Config) -> bool:
    if os.environ.get("EDGECC_SLOW") == "1":
        return True
    expr = (config.getoption("markexpr", "") or "").replace(" ", "")
    return "slow" in expr and "notslow" not in expr


def _board_params() -> list:
    return [pytest.param(b, id=b) for b in DEFAULT_BOARDS] + \
           [pytest.param(b, id=b, marks=pytest.mark.slow) for b in SLOW_BOARDS]


@pytest.fixture(scope="module")
def mlperf_run(tmp_path_factory, edgecc, need_board, request):
    """mlperf_run(model, board) -> Job of `edgecc run tests/models/MODEL.yaml --board BOARD`
    (cached for the module: one compile and one run per pair)."""
    cache: dict[tuple[str, str], Job] = {}

    def get(model: str, board: str) -> Job:
        if board in SLOW_BOARDS and not _slow_enabled(request.config):
            pytest.skip(f"slow board {board}: set EDGECC_SLOW=1 (or -m slow) to run it")
        need_board(board)
        if (model, board) not in cache:
            out = tmp_path_factory.mktemp(f"mlperf-{model}-{board}") / "out"
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", MODELS[model][0], "--board", board, "--out", out, "--quiet")
            cache[(model, board)] = finish(res, out)
        return cache[(model, board)]

    return get


@pytest.fixture(params=_board_params())
def board(request):
    return request.param


def test_passes_bit_exact(mlperf_run, model, board):
    job = mlperf_run(model, board)
    r = job.report
    assert r is not None, f"no report.json; exit {job.code}; stderr:\n{job.err}"
    assert job.code == 0, (f"edgecc run exited {job.code} (status {r['status']}, fault {r['fault']}, "
                           f"mismatches {r['verification']['mismatches']}); stderr:\n{job.err}")
    assert r["status"] == "pass" and r["fault"] is None
    v = r["verification"]
    assert v["samples"] == MODELS[model][1], "not all verification samples went through the run"
    assert v["bit_exact"] is True and v["mismatches"] is None
    assert r["board"] == board


def test_agreement_and_sqnr(mlperf_run, model, board, record_property):
    job = mlperf_run(model, board)
    assert job.report is not None, f"no report.json; exit {job.code}; stderr:\n{job.err}"
    v = job.report["verification"]
    _, samples, bar = MODELS[model]
    agree, sqnr = v["top1_agreement"], v["sqnr_db"]
    record_property("top1_agreement", agree)
    record_property("sqnr_db", sqnr)
    print(f"{model} on {board}: top-1 agreement {agree:.4f} on {samples} images, SQNR {sqnr:.2f} dB")
    assert agree is not None and agree >= bar, \
        f"{model}: top-1 agreement with the float model {agree} < {bar} (issue 3 point 3)"
    assert sqnr is not None and math.isfinite(sqnr) and sqnr >= MIN_SQNR_DB, f"{model}: SQNR {sqnr} dB"
    assert set(v["sqnr_db_per_output"]) and all(math.isfinite(s) for s in v["sqnr_db_per_output"].values())


def test_report_has_costs(mlperf_run, model, board):
    """QEMU boards report exact instruction counts per inference; host reports microseconds."""
    r = mlperf_run(model, board).report
    assert r is not None
    macs = sum(op["macs"] for op in r["ops"])
    assert macs > 0
    if board == "host":
        assert r["cost_unit"] == "us" and r["total_cost"] > 0
    else:
        assert r["cost_unit"] == "instructions"
        # per inference, not per op or per sample batch: no core here retires 32 MACs per instruction
        assert isinstance(r["total_instructions"], int) and r["total_instructions"] > macs / 32
        assert all(isinstance(op["instructions"], int) and op["instructions"] > 0 for op in r["ops"])
    assert r["arena_bytes"] > 0 and r["flash_bytes"] > 0 and r["harness_bytes"] > 0


# Issue 6 on the Cortex-M4, on the same runs (they were built and run a second time on 8 images by
# tests/kernels/test_dsp_e2e.py): the dsp variants are chosen for every convolution, depthwise
# convolution and fully connected layer, and where they pay for the adds and average pools; the
# instructions per inference (sample 0, exact counts) stay within 0.75 x TFLM + CMSIS-NN.
TFLM_CMSIS_NN_M4 = {"ic_resnet8_float": 29.86e6, "vww_mobilenet_float": 24.10e6}  # instructions per inference
DSP_OPS = {"Conv2D", "DepthwiseConv2D", "FullyConnected"}


def test_m4_runs_the_dsp_kernels_within_issue6_bar(mlperf_run, model):
    report = mlperf_run(model, "mps2-an386").report
    assert report is not None and report["status"] == "pass"
    assert report["verification"]["bit_exact"] is True
    kernels = {op["name"]: op["kernel"] for op in report["ops"] if op["op_type"] in DSP_OPS}
    assert kernels and all(k.startswith("dsp") for k in kernels.values()), kernels
    assert report["total_instructions"] <= 0.75 * TFLM_CMSIS_NN_M4[model], report["total_instructions"]
    others = {op["op_type"]: op["kernel"] for op in report["ops"] if op["op_type"] in ("Add", "AveragePool2D")}
    assert all(k == "dsp" for k in others.values()), others


# Issue 6 on AArch64 (Armv8.2 + dotprod), on the same runs (tests/kernels/test_neon_e2e.py runs these
# two models on aarch64-v80 only): the neon variants are chosen for every convolution, depthwise
# convolution, fully connected layer, add and pool, the GEMMs on the dotprod ones, and the Conv2D
# layers run at least 4 MACs per instruction (sample 0, exact counts).
NEON_OPS = {"Conv2D", "DepthwiseConv2D", "FullyConnected", "Add", "AveragePool2D", "MaxPool2D"}


def test_aarch64_runs_the_neon_kernels_within_issue6_bar(mlperf_run, model):
    report = mlperf_run(model, "aarch64").report
    assert report is not None and report["status"] == "pass"
    assert report["verification"]["bit_exact"] is True
    kernels = {op["name"]: op["kernel"] for op in report["ops"] if op["op_type"] in NEON_OPS}
    assert kernels and all(k.startswith("neon") for k in kernels.values()), kernels
    gemm = [op for op in report["ops"] if op["op_type"] in ("Conv2D", "FullyConnected")]
    assert gemm and all("_dot" in op["kernel"] for op in gemm), gemm
    conv = [op for op in report["ops"] if op["op_type"] == "Conv2D"]
    macs = sum(op["macs"] for op in conv) / sum(op["instructions"] for op in conv)
    assert macs >= 4.0, f"{model}: {macs:.2f} MACs per instruction on the Conv2D layers"

