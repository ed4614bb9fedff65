"""Issue 3 point 3, out of sample: calibrate our INT8 PTQ on one part of the images and measure
top-1 agreement with the float model on the other part, which calibration never saw.

- ResNet-8: calibrate on CIFAR images 0..99, verify on 100..199 (two .npz files, key `images`).
- VWW: calibrate on the first 150 JPEGs by name, verify on the other 150 (two folders of symlinks).

Runs on `host` (native, fastest); the verification is still bit-exact against the numpy int8
interpreter. Thresholds are set from measurement with a margin of about two images (see
HOLDOUT below and bench/results/quant_holdout.md), so a real loss of quality fails.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import finish

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS.parents[1] / "shared" / "data"
BOARD = "host"
# model -> (YAML, verification samples, minimum out-of-sample top-1 agreement).
# Measured (host, bit-exact): see bench/results/quant_holdout.md.
HOLDOUT = {
    "ic_resnet8_float": (TESTS / "models" / "ic_resnet8_float.yaml", 100, 0.96),
    "vww_mobilenet_float": (TESTS / "models" / "vww_mobilenet_float.yaml", 150, 0.98),
}
MIN_SQNR_DB = 20.0
# calibration_method: auto on ResNet-8 fold A (issue 14): measured 96% (4 of 100 images; the TFLite
# converter's int8 file: 95% with LiteRT's reference kernels) and 26.4 dB; bar two images lower.
AUTO_BAR, AUTO_MIN_SQNR_DB = 0.94, 24.0


def _split_cifar(tmp: Path) -> tuple[Path, Path]:
    images = np.load(DATA / "cifar10_calib_200.npz")["images"]
    assert images.shape == (200, 32, 32, 3) and images.dtype == np.uint8
    calib, verify = tmp / "calib.npz", tmp / "verify.npz"
    np.savez(calib, images=images[:100])
    np.savez(verify, images=images[100:])
    return calib, verify


def _split_vww(tmp: Path) -> tuple[Path, Path]:
    files = sorted(p for p in (DATA / "vww_calib").iterdir() if p.suffix.lower() == ".jpg")
    assert len(files) == 300
    calib, verify = tmp / "calib", tmp / "verify"
    for folder, part in ((calib, files[:150]), (verify, files[150:])):
        folder.mkdir()
        for f in part:
            (folder / f.name).symlink_to(f.resolve())
    return calib, verify


@pytest.fixture(scope="module")
def holdout_run(tmp_path_factory, edgecc, need_board):
    """holdout_run(model) -> (Job, calibration path, verification path), once per module."""
    cache: dict = {}

    def get(model: str, method: str | None = None, precision: str = "int8"):
        need_board(BOARD)
        if (model, method, precision) not in cache:
            tmp = tmp_path_factory.mktemp(f"holdout-{model}")
            calib, verify = (_split_cifar if model.startswith("ic_") else _split_vww)(tmp)
            out = tmp / "out"
            config = HOLDOUT[model][0]
            if method is not None:  # the model's YAML with calibration_method set (paths made absolute)
                text = config.read_text().replace("../../../shared", str(DATA.parent))
                config = tmp / "config.yaml"
                config.write_text(f"{text}\ncalibration_method: {method}\nprecision: {precision}\n")
            with pytest.MonkeyPatch.context() as mp:
                mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
                res = edgecc("run", config, "--board", BOARD, "--calibration", calib,
                             "--verify", verify, "--out", out, "--quiet")
            cache[(model, method, precision)] = (finish(res, out), calib, verify)
        return cache[(model, method, precision)]

    return get


@pytest.mark.parametrize("model", list(HOLDOUT))
def test_holdout_agreement(holdout_run, model, record_property):
    job, calib, verify = holdout_run(model)
    r = job.report
    assert r is not None, f"no report.json; exit {job.code}; stderr:\n{job.err}"
    assert job.code == 0, f"edgecc run exited {job.code} (status {r['status']}); stderr:\n{job.err}"
    v = r["verification"]
    _, samples, bar = HOLDOUT[model]
    # the run really verified on the held-out part only
    assert v["samples"] == samples and Path(v["data"]) == verify
    assert v["bit_exact"] is True
    agree, sqnr = v["top1_agreement"], v["sqnr_db"]
    record_property("top1_agreement", agree)
    record_property("sqnr_db", sqnr)
    print(f"{model} out of sample: top-1 agreement {agree:.4f} on {samples} held-out images, SQNR {sqnr:.2f} dB")
    assert agree >= bar, f"{model}: out-of-sample top-1 agreement {agree} < {bar}"
    assert math.isfinite(sqnr) and sqnr >= MIN_SQNR_DB, f"{model}: out-of-sample SQNR {sqnr} dB"


@pytest.mark.skipif(os.environ.get("EDGECC_SLOW") != "1", reason="EDGECC_SLOW=1: auto's held-out search takes minutes")
def test_holdout_auto_resnet8(holdout_run, record_property):
    """calibration_method: auto, out of sample (fold A): at least the TFLite converter's int8 file."""
    job, calib, verify = holdout_run("ic_resnet8_float", "auto")
    r = job.report
    assert r is not None and job.code == 0, f"exit {job.code}; stderr:\n{job.err}"
    v = r["verification"]
    assert v["samples"] == 100 and Path(v["data"]) == verify and v["bit_exact"] is True
    record_property("top1_agreement", v["top1_agreement"])
    assert v["top1_agreement"] >= AUTO_BAR, v["top1_agreement"]
    assert v["sqnr_db"] >= AUTO_MIN_SQNR_DB, v["sqnr_db"]


# precision: auto with calibration_method auto, no budget (issue 14 item 3), fold A: measured 100% (int8
# auto: 96%) and 38.3 dB with every layer in 16x8 but the input Transpose; bar one image lower.
PRECISION_AUTO_BAR, PRECISION_AUTO_MIN_SQNR_DB = 0.99, 35.0


@pytest.mark.skipif(os.environ.get("EDGECC_SLOW") != "1", reason="EDGECC_SLOW=1: the held-out searches take minutes")
def test_holdout_precision_auto_resnet8(holdout_run, record_property):
    """precision: auto out of sample (fold A): the layers whose int8 error hurts move to 16x8 until the
    held-out target; top-1 agreement at least 99%, bit-exact on the board."""
    from toolchain.ops.registry import REGISTRY, OpDef, OpKind

    if any(type(REGISTRY[k]).reference_s16 is OpDef.reference_s16 for k in (OpKind.AVG_POOL2D, OpKind.SOFTMAX)):
        pytest.skip("needs the 16x8 AveragePool2D / Softmax kernels (issue 14 item 2)")
    job, calib, verify = holdout_run("ic_resnet8_float", "auto", "auto")
    r = job.report
    assert r is not None and job.code == 0, f"exit {job.code}; stderr:\n{job.err}"
    v = r["verification"]
    assert v["samples"] == 100 and Path(v["data"]) == verify and v["bit_exact"] is True
    p = r["precision"]
    assert p["mode"] == "auto" and p["auto"]["held_out_samples"] == 100 and len(p["int16_ops"]) >= 8
    assert p["auto"]["steps"][0]["taken"]  # the worst layer (the classifier, or the pool before it) pays
    record_property("top1_agreement", v["top1_agreement"])
    assert v["top1_agreement"] >= PRECISION_AUTO_BAR, v["top1_agreement"]
    assert v["sqnr_db"] >= PRECISION_AUTO_MIN_SQNR_DB, v["sqnr_db"]
