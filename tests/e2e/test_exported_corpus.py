"""Issue 11: every real exporter output in ../shared/models/exported/ (PyTorch legacy and dynamo,
an old opset, onnxruntime QDQ, Keras -> TFLite int8) runs as given: `edgecc run --model FILE` with
its `.inputs.npy` as calibration and verification data, exit 0, bit-exact with the interpreter on
the board, a .tflite also bit-exact with TFLM, a QDQ model close to onnxruntime on the QDQ file
itself. Issue 13: the uint8-I/O .tflite (uint8 data: the model's quantized values; a uint8 API) and
the U8U8 QDQ file (uint8 weights with zero points) run too: no file is refused.

Every file on `host`; a representative few on mps2-an386, mps3-an547 and aarch64 in one sweep each;
EDGECC_SLOW=1 runs every file on mps2-an386 too. Skipped without ../shared (fails under CI=true).
"""
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


def _kind(name: str) -> str:
    return "tflite" if name.endswith(".tflite") else "qdq" if "_qdq_" in name else "onnx"


def _check(out: Path, name: str) -> None:
    """Bit-exact with the interpreter on the board; a .tflite equal to TFLM on the file's own inputs
    (the stored reference outputs, 0 LSB: int8 inputs are the model's quantized values); SQNR against
    the model's own reference above the floor."""
    v = json.loads((out / "report.json").read_text())["verification"]
    assert v["bit_exact"] is True and v["samples"] == 8, (name, v)
    if name.endswith(".tflite"):
        assert v["tflm_bit_exact"] is True, (name, v.get("tflm"))
        assert lsb_from_reference(name, out) == 0, name
    assert v["sqnr_db"] is not None and v["sqnr_db"] >= MIN_SQNR_DB[_kind(name)], (name, v["sqnr_db"])


@pytest.mark.parametrize("name", _files() or ["(no corpus)"])
def test_runs_on_host(name, edgecc, need_board, tmp_path):
    need_board("host")
    res = _run(edgecc, name, "host", tmp_path / "out")
    assert res.code == 0, res.err[-3000:]
    _check(tmp_path / "out", name)


def _run_default(edgecc, need_board, name: str, tmp_path: Path) -> None:
    """`edgecc run` of corpus file NAME on host with its default settings (no `rounding` key: onnx, the
    default for a quantized ONNX model, issue 13); OUT: tmp_path/out."""
    need_board("host")
    data = CORPUS / (Path(name).stem + ".inputs.npy")
    yaml = tmp_path / "qdq.yaml"
    yaml.write_text(f"model: {CORPUS / name}\ncalibration: {data}\nverify: {data}\n")
    res = edgecc("run", yaml, "--board", "host", "--out", tmp_path / "out", "--quiet")
    assert res.code == 0, res.err[-3000:]


def test_qdq_file_with_default_settings_equals_onnxruntime(edgecc, need_board, tmp_path):
    """The QDQ file with its default settings reproduces onnxruntime's own outputs (the stored
    reference, default session options) to the LSB: the model's own semantics, not only our
    interpreter's. (Under `rounding: tflm`, still selectable, it was up to 45 LSB off.)"""
    name = "tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx"
    _run_default(edgecc, need_board, name, tmp_path)
    assert lsb_from_reference(name, tmp_path / "out") < 1e-3
    v = json.loads((tmp_path / "out" / "report.json").read_text())["verification"]
    assert "rounding: onnx, the default for a quantized ONNX model" in v["reference"], v["reference"]
    # both onnxruntime figures in report.json: its default session (fused integer QLinear kernels) is
    # matched exactly; its float simulation of the same file differs from that session by 17 LSB
    assert v["ort_default_max_abs_diff_lsb"] == 0 and v["ort_default_exact_fraction"] == 1.0, v
    assert 0 < v["ort_max_abs_diff_lsb"] <= 20, v


def test_u8u8_qdq_file_with_default_settings(edgecc, need_board, tmp_path):
    """The U8U8 QDQ file (uint8 activations, uint8 weights whose zero points put w - zw beyond int8 in
    50 of 53 tensors: widened inputs / int8 halves on the ISA kernels) with its default settings: bit-exact with the
    interpreter, and equal to onnxruntime's stored reference (default session options: integer
    QLinearConv) on 7 of the 8 samples; sample 2 differs from it (14 LSB), as it differs from ORT's
    float simulation: the first differing value there is a product 2.5e-6 LSB from a rounding tie,
    which ORT's float32 arithmetic rounds the other way (measured layer by layer, issue 13 item 2)."""
    name = "tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx"
    _run_default(edgecc, need_board, name, tmp_path)
    assert json.loads((tmp_path / "out" / "report.json").read_text())["verification"]["bit_exact"] is True
    ref = np.load(CORPUS / (Path(name).stem + ".ref.npz"))
    header = (tmp_path / "out" / "lib" / "model.h").read_text()
    unit = float(re.search(r"ECC_OUTPUT0_SCALE ([-0-9.eE+]+)f", header).group(1))
    got = board_outputs(tmp_path / "out")[0]
    lsb = np.abs(got - ref[ref.files[0]].reshape(got.shape)).reshape(len(got), -1).max(axis=1) / unit
    assert [i for i, v in enumerate(lsb) if v > 1e-3] == [2], lsb


def test_u8u8_qdq_file_every_op_has_an_isolated_error(edgecc, need_board, tmp_path):
    """Every op of the U8U8 file has an isolated error (issue 13 item 5): the layers the weight-zero-point
    split rewrote (a Gather widening the input, a depthwise layer's fix-up channels put back by
    ScatterChannels) run isolated as one group from the layer's input, and their helper ops report the
    figures of the op writing the layer's output, naming it (error_at). Against the model's own float
    semantics (onnxruntime) every op is exact but for 1 LSB on three layers (near-tie products, see the
    test above)."""
    _run_default(edgecc, need_board, "tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx", tmp_path)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    ops, by_output = report["ops"], {}
    assert len(ops) == 179 and {o["op_type"] for o in ops} >= {"Gather", "ScatterChannels", "Conv2D", "Add"}
    for o in ops:
        assert o["max_abs_err_lsb_isolated"] is not None, o  # a value for every op: none left blank
        assert o["max_abs_err_lsb_isolated"] <= 1.0, o
        exact = o["max_abs_err_lsb_isolated"] == 0
        assert (o["sqnr_db_isolated"] is None) == exact and (exact or o["sqnr_db_isolated"] > 60), o
        if o["error_at"] is None:
            by_output[o["name"]] = o
    helpers = [o for o in ops if o["error_at"] is not None]
    assert len(helpers) == 114 and {o["op_type"] for o in helpers} == {"Gather", "Conv2D", "DepthwiseConv2D"}
    for o in helpers:  # the figures of the op writing the layer's output (named by the ONNX tensor)
        layer = by_output[o["error_at"]]
        assert layer["index"] > o["index"] and layer["name"].startswith(("/features", "536_"))
        assert all(o[k] == layer[k] for k in ("sqnr_db_isolated", "max_abs_err_lsb_isolated", "sqnr_db_cumulative"))
    plain = [o for o in ops if o["op_type"] in ("Transpose", "Add") or "GlobalAveragePool" in o["name"]]
    assert len(plain) == 12 and all(o["max_abs_err_lsb_isolated"] == 0 for o in plain)  # exact ops show exact
    assert sum(o["max_abs_err_lsb_isolated"] == 0 for o in ops) == 179 - 12
    worst = report["numerics"]["worst_isolated_op"]
    assert worst["name"].endswith("features.2/conv/conv.1/conv.1.2/Clip_output_0__scatter"), worst


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_representative_files_on_the_arm_boards(name, edgecc, need_board, tmp_path):
    boards = ("mps2-an386", "mps3-an547", "aarch64")
    for b in boards:
        need_board(b)
    res = _run(edgecc, name, ",".join(boards), tmp_path / "out")
    assert res.code == 0, res.err[-3000:]
    for b in boards:
        _check(tmp_path / "out" / b, name)


@pytest.mark.skipif(not SLOW, reason="every corpus file on mps2-an386: EDGECC_SLOW=1")
@pytest.mark.parametrize("name", _files())
def test_every_file_on_the_m4(name, edgecc, need_board, tmp_path):
    need_board("mps2-an386")
    res = _run(edgecc, name, "mps2-an386", tmp_path / "out")
    assert res.code == 0, res.err[-3000:]
    _check(tmp_path / "out", name)
