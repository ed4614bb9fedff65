"""Issue 15 item 5: the I/O element type firmware wants (YAML `io_dtype`) and a float Quantize in single
precision. On the float-I/O MobileNetV2 .tflite: io_dtype int8 / uint8 leave no floating point in
OUT/lib (no Quantize / Dequantize, no `float` in its sources), the board stays bit-exact with our
interpreter and with TFLM running the float-I/O file; the default keeps the float API, whose input
Quantize now costs ~35 instructions per element on the Cortex-M4 (it was ~220 with double arithmetic,
6,080,270 instructions). On the digits ONNX model io_dtype float32 gives a float API."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from e2e_helpers import DIGITS_YAML, REPO

CORPUS = REPO.parent / "shared" / "models" / "exported"
FLOATIO = CORPUS / "keras_mobilenet_v2_035_floatio.tflite"
FLOAT_WORDS = re.compile(r"\b(float|double)\b")


@pytest.fixture(scope="module")
def floatio(tmp_path_factory):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    if not FLOATIO.is_file():
        pytest.skip(f"{FLOATIO} is absent")
    d = tmp_path_factory.mktemp("io_dtype")
    np.save(d / "one.npy", np.load(CORPUS / "keras_mobilenet_v2_035_floatio.inputs.npy")[:1])
    return d


def _run(edgecc, d: Path, name: str, board: str, io_dtype: str | None) -> dict:
    yaml = d / f"{name}.yaml"
    yaml.write_text(f"model: {FLOATIO}\nboard: {board}\nverify: {d / 'one.npy'}\n"
                    + (f"io_dtype: {io_dtype}\n" if io_dtype else ""))
    out = d / f"out_{name}"
    res = edgecc("run", yaml, "--out", out, "--quiet")
    assert res.code == 0, f"{name}: exit {res.code}: {res.err}"
    return json.loads((out / "report.json").read_text())


def _code(lib: Path) -> str:
    """The library's C without comments; *_f32.h (onnxruntime's float32 requantization of the `_onnx`
    twins, always shipped, unused under rounding tflm) left out as in test_library."""
    text = "".join(p.read_text() for p in sorted(lib.glob("*.[ch]")) if not p.name.endswith("_f32.h"))
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def test_int8_and_uint8_io_leave_no_float_in_the_library(floatio, edgecc, need_board):
    need_board("host")
    reports = {k: _run(edgecc, floatio, f"host_{k}", "host", k) for k in ("int8", "uint8")}
    for k, r in reports.items():
        v = r["verification"]
        assert v["bit_exact"] and v["tflm_bit_exact"] is True, (k, v.get("tflm"))
        assert [o["op_type"] for o in r["ops"]][:1] == ["Conv2D"] and r["ops"][-1]["op_type"] == "Softmax"
        lib = floatio / f"out_host_{k}" / "lib"
        assert not (lib / "ecc_float_edge_kernels.h").exists()
        assert FLOAT_WORDS.findall(_code(lib)) == [], k
        header = (lib / "model.h").read_text()
        assert re.search(rf"input0: .*, {k} \[1, 96, 96, 3\], real = scale", header)
        assert f"int ecc_model_run(const {k}_t *input0, {k}_t *output0);" in header
        zp = int(re.search(r"#define ECC_INPUT0_ZERO_POINT (-?\d+)", header).group(1))
        assert -128 <= zp <= 127 if k == "int8" else 0 <= zp <= 255
    a = np.fromfile(floatio / "out_host_int8" / "fw" / "outputs.bin", np.int8).astype(np.int16)
    b = np.fromfile(floatio / "out_host_uint8" / "fw" / "outputs.bin", np.uint8).astype(np.int16)
    assert np.array_equal(b, a + 128)


def test_m4_float_quantize_is_single_precision_and_int8_io_drops_it(floatio, edgecc, need_board):
    need_board("mps2-an386")
    default = _run(edgecc, floatio, "m4_default", "mps2-an386", None)
    int8 = _run(edgecc, floatio, "m4_int8", "mps2-an386", "int8")
    for r in (default, int8):
        assert r["verification"]["bit_exact"] and r["verification"]["tflm_bit_exact"] is True
    quant = [o for o in default["ops"] if o["op_type"] == "Quantize"]
    assert len(quant) == 1 and quant[0]["kernel"] == "portable"
    per_element = quant[0]["instructions"] / (96 * 96 * 3)
    assert per_element < 40, per_element  # measured 34.5 (953,619); double arithmetic: 220 (6,080,270)
    deq = [o for o in default["ops"] if o["op_type"] == "Dequantize"]
    assert len(deq) == 1 and deq[0]["instructions"] < 200  # 10 values: measured 103 (was 886)
    assert not {o["op_type"] for o in int8["ops"]} & {"Quantize", "Dequantize"}
    saved = default["total_instructions"] - int8["total_instructions"]
    assert saved >= quant[0]["instructions"] + deq[0]["instructions"] - 2000, saved


def test_float32_io_for_a_float_onnx_model(edgecc, need_board, tmp_path):
    need_board("host")
    yaml = tmp_path / "p.yaml"
    yaml.write_text(DIGITS_YAML.read_text().replace("out: out/digits", "io_dtype: float32\nboard: host")
                    .replace("model: model.onnx", f"model: {DIGITS_YAML.parent / 'model.onnx'}")
                    .replace("calibration: calibration.npy", f"calibration: {DIGITS_YAML.parent / 'calibration.npy'}")
                    .replace("verify: verify.npy", f"verify: {DIGITS_YAML.parent / 'verify.npy'}")
                    .replace("board: mps2-an386\n", ""))
    res = edgecc("run", yaml, "--out", tmp_path / "out", "--quiet")
    assert res.code == 0, res.err
    r = json.loads((tmp_path / "out" / "report.json").read_text())
    assert r["verification"]["bit_exact"] and r["verification"]["top1_agreement"] == 1.0
    assert [r["ops"][0]["op_type"], r["ops"][-1]["op_type"]] == ["Quantize", "Dequantize"]
    header = (tmp_path / "out" / "lib" / "model.h").read_text()
    assert "int ecc_model_run(const float *input0, float *output0);" in header
