"""The exported-model corpus of issue 11 (../shared/models/exported/: real exporter outputs, each
with NAME.inputs.npy and the file's own reference outputs NAME.ref.npz): its files, one `edgecc run`
of a file as given, and the checks its tests share (tests/e2e/test_exported_corpus.py on host,
tests/e2e/test_exported_corpus_arm.py on the Arm boards)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import REPO

CORPUS = REPO.parent / "shared" / "models" / "exported"
SLOW = os.environ.get("EDGECC_SLOW") == "1"
# small and varied: an old opset with a dynamic batch, the TFLite op mix, a QDQ MobileNet
REPRESENTATIVE = ("kws_cnn_legacy_op9_dynbatch.onnx", "keras_opmix_int8.tflite",
                  "tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx")
# SQNR of our int8 against the model's own float or QDQ semantics (onnxruntime; for a .tflite its
# dequantized twin): random-weight networks are close to uniform, so these are floors that only a
# wrong quantization misses (measured values in the closing note of issue 11 are well above)
MIN_SQNR_DB = {"qdq": 8.0, "onnx": 3.0, "tflite": 3.0}


def corpus_files() -> list[str]:
    """The corpus' .onnx and .tflite file names, sorted ([] without the corpus)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".onnx", ".tflite"))


def need_corpus() -> None:
    """Skip (fail under CI=true) when the corpus folder is absent."""
    if not CORPUS.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{CORPUS} is missing (CI=true: ../shared is required)")
        pytest.skip(f"{CORPUS} is absent")


def run_file(edgecc, name: str, board: str, out: Path):
    """`edgecc run --model NAME --board BOARD` with its inputs as calibration and verification data."""
    data = CORPUS / (Path(name).stem + ".inputs.npy")
    return edgecc("run", "--model", CORPUS / name, "--board", board, "--calibration", data, "--verify", data,
                  "--out", out, "--quiet")


def board_outputs(out: Path) -> list[np.ndarray]:
    """The board's outputs of every sample as real values, [S, *shape] per model output, decoded
    with the I/O description of the generated OUT/lib/model.h (int8 or uint8 with ECC_OUTPUTk_SCALE
    and _ZERO_POINT, or float32 for a model with float outputs)."""
    header = (out / "lib" / "model.h").read_text()
    decl = re.findall(r"/\* output(\d+): tensor .*?, (u?int8|float) \[([\d, ]+)\]", header)
    raw = np.fromfile(out / "fw" / "outputs.bin", np.uint8)
    shapes = [tuple(int(d) for d in dims.split(",")) for _, _, dims in decl]
    sizes = [int(np.prod(sh)) * (4 if kind == "float" else 1) for sh, (_, kind, _) in zip(shapes, decl, strict=True)]
    per = raw.reshape(-1, sum(sizes))
    got, at = [], 0
    for (k, kind, _), shape, size in zip(decl, shapes, sizes, strict=True):
        chunk = np.ascontiguousarray(per[:, at:at + size])
        at += size
        if kind == "float":
            got.append(chunk.view(np.float32).reshape(-1, *shape))
            continue
        scale = float(re.search(rf"ECC_OUTPUT{k}_SCALE ([-0-9.eE+]+)f", header).group(1))
        zp = int(re.search(rf"ECC_OUTPUT{k}_ZERO_POINT (-?\d+)", header).group(1))
        got.append((chunk.view(np.dtype(kind)).astype(np.float64).reshape(-1, *shape) - zp) * scale)
    return got


def lsb_from_reference(name: str, out: Path) -> float:
    """Largest difference, in output LSBs (ECC_OUTPUT0_SCALE; float outputs: in units of 1e-6), of
    the board's outputs from NAME.ref.npz, the file's own reference tool (onnxruntime with default
    session options for ONNX, TFLM for .tflite) on the same inputs."""
    ref = np.load(CORPUS / (Path(name).stem + ".ref.npz"))
    header = (out / "lib" / "model.h").read_text()
    m = re.search(r"ECC_OUTPUT0_SCALE ([-0-9.eE+]+)f", header)
    unit = float(m.group(1)) if m else 1e-6
    got = board_outputs(out)
    worst = 0.0
    for g, key in zip(got, ref.files, strict=True):  # ref.npz keeps the model's output order
        want = ref[key].astype(np.float64)
        if want.dtype != np.float64 or ref[key].dtype in (np.int8, np.uint8):  # a quantized TFLite output
            zp = int(re.search(r"ECC_OUTPUT0_ZERO_POINT (-?\d+)", header).group(1))
            want = (ref[key].astype(np.float64) - zp) * unit
        worst = max(worst, float(np.abs(g - want.reshape(g.shape)).max()) / unit)
    return worst


def kind(name: str) -> str:
    return "tflite" if name.endswith(".tflite") else "qdq" if "_qdq_" in name else "onnx"


def check(out: Path, name: str) -> None:
    """Bit-exact with the interpreter on the board; a .tflite equal to TFLM on the file's own inputs
    (the stored reference outputs, 0 LSB: int8 inputs are the model's quantized values); SQNR against
    the model's own reference above the floor."""
    v = json.loads((out / "report.json").read_text())["verification"]
    assert v["bit_exact"] is True and v["samples"] == 8, (name, v)
    if name.endswith(".tflite"):
        assert v["tflm_bit_exact"] is True, (name, v.get("tflm"))
        assert lsb_from_reference(name, out) == 0, name
    assert v["sqnr_db"] is not None and v["sqnr_db"] >= MIN_SQNR_DB[kind(name)], (name, v["sqnr_db"])
