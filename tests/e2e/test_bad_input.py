"""Bad input and the other non-zero exits (issue 2 points 4 and 11).

Exit 2 (bad input or usage): one line `edgecc: error: ...` naming the file/node/op and what to do
(an unsupported model: that summary line and a few indented lines, one per op type and reason),
no traceback, nothing on stdout, and nothing written: OUT does not exist afterwards and no
temporary folder is left beside it (a previous OUT is left untouched).
Exit 3 (guest fault): a complete OUT with the log and the op that was running.
Exit 1 (verification mismatch): a complete OUT; the report says where.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from e2e_helpers import DIGITS, DIGITS_YAML, assert_rejected, leftovers
from onnx import TensorProto, helper, numpy_helper

CALIB = DIGITS / "calibration.npy"


# --------------------------------------------------------------------------- helpers

def save_model(path, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def matmul_model(path, batch):
    """x[batch, 16] @ W[16, 4]; batch may be a symbolic (dynamic) dimension."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32), "W")
    return save_model(path, [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
                      [vinfo("x", [batch, 16])], [vinfo("y", [batch, 4])], [w])


@pytest.fixture
def out(tmp_path):
    return tmp_path / "results" / "out"


@pytest.fixture
def x16(tmp_path):
    p = tmp_path / "x16.npy"
    np.save(p, np.random.default_rng(1).standard_normal((8, 1, 16)).astype(np.float32))
    return p


# --------------------------------------------------------------------------- exit 2

def test_missing_model_file(edgecc, tmp_path, out):
    res = edgecc("run", "--model", tmp_path / "nope.onnx", "--calibration", CALIB, "--out", out)
    assert_rejected(res, out, "nope.onnx", "no such model file")


def test_not_an_onnx_file(edgecc, tmp_path, out):
    fake = tmp_path / "notes.onnx"
    fake.write_text("this is a text file, not a protobuf\n")
    res = edgecc("run", "--model", fake, "--calibration", CALIB, "--out", out)
    assert_rejected(res, out, "notes.onnx", "not an ONNX model")


def test_unsupported_ops_are_all_named_with_the_supported_list(edgecc, tmp_path, out, x16):
    model = save_model(tmp_path / "trig.onnx",
                       [helper.make_node("Cos", ["x"], ["c"], name="my_cos"),
                        helper.make_node("Relu", ["c"], ["r"], name="relu0"),
                        helper.make_node("Sin", ["r"], ["y"], name="my_sin")],
                       [vinfo("x", [1, 16])], [vinfo("y", [1, 16])])
    res = edgecc("run", "--model", model, "--calibration", x16, "--out", out)
    text = assert_rejected(res, out, "trig.onnx: 2 unsupported node(s) of 2 op type(s): Cos (1), Sin (1)",
                           "  Cos x1 (unknown op): my_cos", "  Sin x1 (unknown op): my_sin", max_lines=4)
    assert text.splitlines()[-1] == "  see `edgecc ops` for the supported ops" and "relu0" not in text
    supported = edgecc("ops")  # the pointer leads to the supported ops
    assert supported.code == 0
    for op in ("Conv", "Gemm", "Relu", "Softmax", "MaxPool", "Add"):
        assert f"\n{op} " in supported.out, f"{op} missing from `edgecc ops`"


def test_dynamic_input_dimension_without_a_shape(edgecc, tmp_path, out, x16):
    """A dynamic dimension other than the batch axis (which defaults to 1) needs input_shapes."""
    w = numpy_helper.from_array(np.ones((16, 4), np.float32), "W")
    model = save_model(tmp_path / "dyn.onnx", [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
                       [vinfo("x", [1, "K"])], [vinfo("y", [1, 4])], [w])
    res = edgecc("run", "--model", model, "--calibration", x16, "--out", out)
    assert_rejected(res, out, "dyn.onnx", "'x'", "dynamic", "input_shapes")


def test_symbolic_batch_axis_defaults_to_one_with_a_note(edgecc, need_board, tmp_path, x16):
    need_board("host")
    model = matmul_model(tmp_path / "dyn.onnx", "N")
    res = edgecc("build", "--model", model, "--calibration", x16, "--board", "host", "--out", tmp_path / "b")
    assert res.code == 0, res.err
    assert res.err.count("edgecc: note:") == 1 and "input 'x': symbolic batch axis 'N' taken as 1" in res.err
    quiet = edgecc("build", "--model", model, "--calibration", x16, "--board", "host", "--out", tmp_path / "q",
                   "--quiet")
    assert quiet.code == 0 and "note" not in quiet.err, quiet.err


def test_dynamic_input_dimension_with_input_shapes_in_yaml_passes(edgecc, need_board, tmp_path, x16):
    need_board("host")
    matmul_model(tmp_path / "dyn.onnx", "N")
    yaml = tmp_path / "dyn.yaml"
    yaml.write_text(f"model: dyn.onnx\ncalibration: {x16.name}\nboard: host\nrepeats: 1\n"
                    "input_shapes:\n  x: [1, 16]\n")
    out = tmp_path / "ok"
    res = edgecc("run", yaml, "--out", out, "--quiet")
    assert res.code == 0, res.err
    assert (out / "report.json").is_file() and leftovers(out) == []


def test_calibration_data_of_the_wrong_shape(edgecc, tmp_path, out):
    bad = tmp_path / "bad_shape.npy"
    np.save(bad, np.zeros((4, 3, 3), np.float32))
    res = edgecc("run", DIGITS_YAML, "--calibration", bad, "--out", out)
    assert_rejected(res, out, "bad_shape.npy", "[1, 1, 8, 8]", "preprocess")


@pytest.mark.parametrize("boards", ["host", "host,aarch64"])
def test_verification_data_of_the_wrong_shape(edgecc, monkeypatch, tmp_path, out, boards):
    """Verification data is read at the door, before any C is built (one board or a sweep)."""
    import toolchain.pipeline

    def no_build(*_a, **_k):
        raise AssertionError("the firmware was built before the verification data was read")

    monkeypatch.setattr(toolchain.pipeline, "build_firmware", no_build)
    bad = tmp_path / "verify_7x7.npy"
    np.save(bad, np.zeros((5, 1, 7, 7), np.uint8))
    res = edgecc("run", DIGITS_YAML, "--board", boards, "--verify", bad, "--out", out)
    assert_rejected(res, out, "verify_7x7.npy", "[1, 1, 8, 8]", "preprocess")


@pytest.mark.parametrize("dtype", ["complex64", "bool", "<U1"])
def test_data_of_a_wrong_dtype(edgecc, tmp_path, out, dtype):
    bad = tmp_path / "bad_dtype.npy"
    np.save(bad, np.zeros((4, 1, 8, 8), dtype))
    res = edgecc("run", DIGITS_YAML, "--calibration", bad, "--out", out)
    assert_rejected(res, out, "bad_dtype.npy", "dtype", "integers or floats",
                    np.dtype(dtype).name if dtype != "<U1" else "U1")


def test_model_too_large_for_the_board(edgecc, tmp_path, out):
    """A Gemm with 2048 x 2100 weights = 4,300,800 int8 bytes (17 MB as float ONNX) does not fit the
    4 MiB CODE region of mps2-an386; the check runs before any C is compiled."""
    k, n = 2048, 2100
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n), dtype=np.float32), "W")
    model = save_model(tmp_path / "huge_fc.onnx", [helper.make_node("Gemm", ["x", "W"], ["y"], name="huge_fc")],
                       [vinfo("x", [1, k])], [vinfo("y", [1, n])], [w])
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(1).standard_normal((2, 1, k)).astype(np.float32))
    res = edgecc("run", "--model", model, "--board", "mps2-an386", "--calibration", data, "--out", out)
    line = assert_rejected(res, out, "mps2-an386", "does not fit", "CODE", str(4 * 1024 * 1024))
    weight_bytes = [int(s) for s in re.findall(r"\b(\d{7})\b", line)]
    assert any(b >= k * n for b in weight_bytes), f"the weights' size is not named: {line}"


def test_unknown_board(edgecc, out):
    res = edgecc("run", DIGITS_YAML, "--board", "nosuch-board", "--out", out)
    assert_rejected(res, out, "nosuch-board", "unknown board", "mps2-an386", "host")


def test_unknown_yaml_key(edgecc, tmp_path, out):
    yaml = tmp_path / "typo.yaml"
    yaml.write_text(f"model: {DIGITS / 'model.onnx'}\ncalibration: {CALIB}\ncalibraton_data: x.npy\n")
    res = edgecc("run", yaml, "--out", out)
    assert_rejected(res, out, "typo.yaml", "calibraton_data", "unknown key", "allowed")


def test_missing_yaml_file(edgecc, tmp_path, out):
    res = edgecc("run", tmp_path / "nowhere.yaml", "--out", out)
    assert_rejected(res, out, "nowhere.yaml", "no such config file")


def test_no_model_at_all(edgecc, out):
    res = edgecc("build", "--calibration", CALIB, "--out", out)
    assert_rejected(res, out, "no model given", "--model")


def test_bad_input_leaves_a_previous_out_untouched(edgecc, tmp_path, out):
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("previous result\n")
    res = edgecc("run", tmp_path / "nowhere.yaml", "--out", out)
    assert res.code == 2 and "Traceback" not in res.err
    assert (out / "keep.txt").read_text() == "previous result\n"
    assert leftovers(out) == []


def test_console_script_prints_no_traceback(tmp_path):
    """The real console script (not in-process): exit 2 and one line on stderr."""
    out = tmp_path / "out"
    script = Path(sys.executable).with_name("edgecc")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "toolchain.cli"]
    p = subprocess.run([*cmd, "run", "--model", str(tmp_path / "nope.onnx"), "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and "nope.onnx" in p.stderr
    assert not out.exists()


# ---- product bugs found while writing these tests (xfail strict: remove the mark with the fix)

@pytest.mark.parametrize("line", ["min_sqnr_db: high", "repeats: many"])
def test_non_numeric_yaml_value(edgecc, tmp_path, out, line):
    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"model: {DIGITS / 'model.onnx'}\ncalibration: {CALIB}\n{line}\n")
    res = edgecc("run", yaml, "--out", out)
    assert_rejected(res, out, "p.yaml", line.split(":")[0])


def test_empty_calibration_data(edgecc, tmp_path, out):
    empty = tmp_path / "empty.npy"
    np.save(empty, np.zeros((0, 1, 8, 8), np.float32))
    res = edgecc("run", DIGITS_YAML, "--calibration", empty, "--out", out)
    assert_rejected(res, out, "empty.npy", "sample")


def test_non_finite_calibration_data(edgecc, tmp_path, out):
    bad = tmp_path / "nan.npy"
    arr = np.load(CALIB).astype(np.float32)
    arr[3, 0, 2, 2] = np.nan
    np.save(bad, arr)
    res = edgecc("build", DIGITS_YAML, "--calibration", bad, "--out", out)
    assert_rejected(res, out, "nan.npy")


def test_input_shapes_naming_no_input(edgecc, tmp_path, out):
    yaml = tmp_path / "p.yaml"
    yaml.write_text(f"model: {DIGITS / 'model.onnx'}\ncalibration: {CALIB}\n"
                    "preprocess: {scale: 0.0625, layout: NCHW}\ninput_shapes: {imput: [1, 1, 8, 8]}\n")
    res = edgecc("build", yaml, "--out", out)
    assert_rejected(res, out, "imput", "input")


def test_out_is_an_existing_file(edgecc, need_board, tmp_path):
    need_board("host")
    out = tmp_path / "results.txt"
    out.write_text("not a folder\n")
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--out", out)
    assert res.code == 2 and "Traceback" not in res.err and "results.txt" in res.err, res.err
    assert out.read_text() == "not a folder\n"
    assert leftovers(out) == []


# --------------------------------------------------------------------------- exit 3

@pytest.mark.parametrize("board", ["mps2-an386", "host"])
def test_guest_fault_names_the_running_op(edgecc, need_board, monkeypatch, tmp_path, board):
    need_board(board)
    monkeypatch.setenv("EDGECC_DEBUG_FAULT_AT_OP", "3")
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", board, "--out", out, "--quiet")
    assert "Traceback" not in res.err, res.err
    assert res.code == 3, f"exit {res.code}; stderr:\n{res.err}"
    assert "FAULT" in res.out
    r = json.loads((out / "report.json").read_text())
    assert r["status"] == "fault"
    assert r["fault"]["op"] == 3
    assert r["fault"]["op_name"] == r["ops"][3]["name"] and r["fault"]["op_name"]
    assert r["fault"]["reason"]
    log = (out / "fw" / "run.log").read_text()
    assert "OP=3" in log
    for rel in ("lib/model.c", "lib/model.h", "fw/main.c", "fw/firmware.elf", "report.md"):
        assert (out / rel).is_file(), f"missing OUT/{rel}"
    assert f"op 3 ({r['ops'][3]['name']})" in (out / "report.md").read_text()
    assert leftovers(out) == []


def test_run_log_names_the_firmware_in_out(edgecc, need_board, tmp_path):
    need_board("host")
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert res.code == 0, res.err
    assert f".{out.name}.tmp-" not in (out / "fw" / "run.log").read_text()


def test_runner_error_is_one_line(edgecc, need_board, monkeypatch, tmp_path):
    need_board("host")
    import toolchain.runner as runner
    from targets.errors import RunError

    def no_emulator(*a, **kw):
        raise RunError("cannot run: 'qemu-system-arm' not found")

    monkeypatch.setattr(runner, "run_firmware", no_emulator)
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", "host", "--out", out, "--quiet")
    assert "Traceback" not in res.err, res.err
    assert res.code in (2, 3) and "qemu-system-arm" in res.err
    assert leftovers(out) == []


# --------------------------------------------------------------------------- exit 1

def test_verification_mismatch_is_exit_1_and_located(edgecc, need_board, monkeypatch, tmp_path):
    """Make the oracle disagree with the C on one element (sample 2, output flat index 5)."""
    need_board("mps2-an386")
    import toolchain.runner as runner

    real = runner.interpret_each

    def flipped(graph, inputs, *a, **kw):  # the int8 reference of sample 2 off by one LSB at flat index 5
        for i, env in real(graph, inputs, *a, **kw):
            name = graph.outputs[0]
            if i == 2 and env[name].dtype == np.int8:
                arr = np.array(env[name], copy=True)
                arr.flat[5] = np.int8(arr.flat[5] ^ 1)
                env = {**env, name: arr}
            yield i, env

    monkeypatch.setattr(runner, "interpret_each", flipped)
    monkeypatch.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
    out = tmp_path / "out"
    res = edgecc("run", DIGITS_YAML, "--board", "mps2-an386", "--out", out, "--quiet")
    assert "Traceback" not in res.err, res.err
    assert res.code == 1, f"exit {res.code}; stderr:\n{res.err}"
    assert "FAIL (verification)" in res.out
    r = json.loads((out / "report.json").read_text())
    v = r["verification"]
    assert r["status"] == "mismatch"
    assert v["bit_exact"] is False
    m = v["mismatches"]
    assert m["count"] == 1 and m["output"] == "probs"
    assert m["first_sample"] == 2 and m["first_index"] == [0, 5]
    assert m["max_abs_diff_lsb"] == 1
    assert r["total_instructions"] and len(r["ops"]) > 0  # the rest of the report is complete
    for rel in ("lib/model.c", "fw/main.c", "fw/firmware.elf", "fw/run.log", "report.md"):
        assert (out / rel).is_file(), f"missing OUT/{rel}"
    assert "MISMATCH" in (out / "report.md").read_text()
    assert leftovers(out) == []


REPO_ROOT = DIGITS.parents[1]


def test_build_sweep_writes_a_summary(edgecc, need_board, tmp_path):
    need_board("host")
    need_board("mps2-an386")
    out = tmp_path / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host,mps2-an386", "--out", out, "--quiet")
    assert res.code == 0, res.err
    doc = json.loads((out / "summary.json").read_text())
    assert [e["board"] for e in doc["boards"]] == ["host", "mps2-an386"]
    assert doc["exit_code"] == 0 and {e["status"] for e in doc["boards"]} == {"built"}
    for e in doc["boards"]:
        assert e["arena_bytes"] > 0 and e["flash_bytes"] > 0 and e["total_cost"] is None
        assert (out / e["board"] / "lib" / "model.h").is_file()
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "summary.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert "summary in" in res.out.strip().splitlines()[-1]


def test_repeat_flag_is_blamed_not_the_yaml(edgecc, out):
    res = edgecc("run", DIGITS_YAML, "--repeat", "0", "--out", out)
    line = assert_rejected(res, out, "--repeat", "between 1 and 1000", "not 0")
    assert "pipeline.yaml" not in line


def test_tflm_mismatch_fails_the_run(edgecc, need_board, monkeypatch, tmp_path):
    """A .tflite run whose outputs differ from TFLM used to exit 0 (only recorded in the report)."""
    need_board("host")
    import toolchain.runner as runner

    model = REPO_ROOT.parent / "shared" / "models" / "mlperf_tiny" / "ad_autoencoder_int8.tflite"
    data = REPO_ROOT / "tests" / "models" / "data" / "ad_autoencoder_int8_random.npy"
    if not model.is_file() or not data.is_file():
        pytest.skip("the MLPerf Tiny autoencoder is not in ../shared")
    few = tmp_path / "few.npy"
    np.save(few, np.load(data)[:2])

    def differs(graph, model_path, inputs, got, real=None):
        node = graph.nodes[1]
        return {"tflm_bit_exact": False, "tflm": {
            "reference": "test", "compared": "board outputs", "error": None,
            "mismatches": {"count": 3, "first_sample": 0, "max_abs_diff": 1.0},
            "first_difference": {"op_index": 1, "name": node.name, "op_type": node.op.value, "source": None,
                                 "tensor": node.outputs[0], "sample": 0, "elements": 3, "max_abs_diff": 1.0}}}

    monkeypatch.setattr(runner, "tflm_verification", differs)
    out = tmp_path / "out"
    res = edgecc("run", "--model", model, "--verify", few, "--board", "host", "--out", out, "--quiet")
    assert "Traceback" not in res.err, res.err
    assert res.code == 1, (res.code, res.err, res.out)
    last = res.out.strip().splitlines()[-1]
    assert "FAIL (verification)" in last and "TFLM differs" in last and "at op 1 (" in last, last
    r = json.loads((out / "report.json").read_text())
    assert r["status"] == "mismatch" and r["verification"]["bit_exact"] is True

