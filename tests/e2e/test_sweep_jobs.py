"""Parallel sweeps (toolchain/units.py, executors.py) and split verification (toolchain/split_verify.py):
a matrix of 3 boards x 2 models gives the same OUT (summary.json, every report.json but its timings) with
--jobs 1, --jobs 2 and the Ray executor; a verification split into chunks gives the serial report; bad
matrix / jobs / executor input is one error line naming the file and key."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from e2e_helpers import DIGITS, DIGITS_YAML, assert_rejected

from toolchain.units import Unit, expand_units

BOARDS = ["mps2-an386", "mps3-an547", "aarch64"]  # exact instruction counts: reports comparable byte for byte


def comparable(report: dict) -> dict:
    """A report without what depends on the clock (build and run seconds)."""
    return {k: v for k, v in report.items() if k != "timings_s"}


def reports_of(out: Path) -> dict[str, dict]:
    return {p.parent.name: comparable(json.loads(p.read_text())) for p in sorted(out.glob("*/report.json"))}


def _matrix_yaml(tmp_path: Path) -> Path:
    """The digits pipeline over a matrix of the three boards and two models (a copy of the model)."""
    shutil.copy(DIGITS / "model.onnx", tmp_path / "model2.onnx")
    y = tmp_path / "sweep.yaml"
    y.write_text(f"model: {DIGITS / 'model.onnx'}\ncalibration: {DIGITS / 'calibration.npy'}\n"
                 f"verify: {DIGITS / 'verify.npy'}\npreprocess: {{scale: 0.0625, layout: NCHW}}\n"
                 f"matrix:\n  board: [{', '.join(BOARDS)}]\n  model: [{DIGITS / 'model.onnx'}, model2.onnx]\n",
                 encoding="utf-8")
    return y


def test_units_are_named_and_ordered():
    units = expand_units(["b1", "b2"], {"model": ["x/m1.onnx", "m2.tflite"], "optimize": ["speed"]}, "s.yaml")
    assert [u.name for u in units] == ["b1_m1", "b1_m2", "b2_m1", "b2_m2"]
    assert units[1] == Unit("b1_m2", "b1", {"model": "m2.tflite", "optimize": "speed"}, "b1")
    assert [u.name for u in expand_units(["b1", "b2"], None, "s.yaml")] == ["b1", "b2"]  # OUT/<board>/ as before
    assert [u.name for u in expand_units(["b1"], {"optimize": ["speed", "ram"]}, "s.yaml")] == ["b1_speed", "b1_ram"]
    with pytest.raises(Exception, match="both be named 'b1_m'"):
        expand_units(["b1"], {"model": ["a/m.onnx", "b/m.onnx"]}, "s.yaml")


@pytest.mark.parametrize(("matrix", "needles"), [
    ("{out: [a, b]}", ("matrix", "'out'", "allowed")),
    ("{optimise: [speed]}", ("matrix", "'optimise'")),
    ("{board: []}", ("matrix.board", "list of 1 to 64")),
    ("{board: host}", ("matrix.board", "list")),
    ("[board, host]", ("matrix must map",)),
    ("{optimize: [speed, fast]}", ("optimize", "speed or ram", "fast")),
])
def test_bad_matrix_is_one_line_naming_file_and_key(edgecc, tmp_path, matrix, needles):
    y = tmp_path / "bad.yaml"
    text = DIGITS_YAML.read_text()
    for name in ("model.onnx", "calibration.npy", "verify.npy"):
        text = text.replace(f": {name}", f": {DIGITS / name}")
    y.write_text(text + f"matrix: {matrix}\n", encoding="utf-8")
    out = tmp_path / "out"
    assert_rejected(edgecc("build", y, "--out", out), out, "bad.yaml", *needles)


@pytest.mark.parametrize(("flag", "needles"), [(("--jobs", "0"), ("--jobs", "between 1 and 1024")),
                                               (("--executor", "dask"), ("--executor", "ray=ADDRESS")),
                                               (("--verify-chunk", "0"), ("--verify-chunk",))])
def test_bad_jobs_and_executor_flags(edgecc, tmp_path, flag, needles):
    out = tmp_path / "out"
    assert_rejected(edgecc("run", DIGITS_YAML, *flag, "--out", out), out, *needles)


def test_ray_missing_is_one_line(edgecc, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    out = tmp_path / "out"
    res = edgecc("build", DIGITS_YAML, "--board", "host", "--executor", "ray", "--out", out)
    assert_rejected(res, out, "pip install edgecc[ray]")


@pytest.fixture(scope="module")
def matrix_runs(tmp_path_factory, edgecc, need_board):
    """OUT of the 3 x 2 matrix sweep per executor (--jobs 1, --jobs 2, ray local), run once each."""
    for b in BOARDS:
        need_board(b)
    tmp = tmp_path_factory.mktemp("matrix")
    y = _matrix_yaml(tmp)
    cache: dict[str, Path] = {}

    def get(how: str) -> Path:
        if how not in cache:
            out = tmp / f"out-{how.replace('=', '-')}"
            flags = ["--jobs", "2", "--executor", "ray"] if how == "ray" else ["--jobs", how]
            res = edgecc("run", y, "--out", out, "--quiet", *flags)
            assert res.code == 0, res.err
            assert "(worst of 6 units)" in res.out
            cache[how] = out
        return cache[how]

    return get


def test_matrix_sweep_jobs_2_equals_jobs_1(matrix_runs):
    one, two = matrix_runs("1"), matrix_runs("2")
    doc = json.loads((one / "summary.json").read_text())
    assert [e["unit"] for e in doc["boards"]] == [f"{b}_{m}" for b in BOARDS for m in ("model", "model2")]
    assert [e["params"]["model"] for e in doc["boards"][:2]] == [str(DIGITS / "model.onnx"), "model2.onnx"]
    assert all(e["status"] == "pass" and e["bit_exact"] for e in doc["boards"]) and doc["exit_code"] == 0
    assert (two / "summary.json").read_text() == (one / "summary.json").read_text()
    r1 = reports_of(one)
    assert sorted(r1) == sorted(e["unit"] for e in doc["boards"]) and r1 == reports_of(two)
    # the same model under two names: the same code, so the same counts
    assert r1["mps2-an386_model"]["total_cost"] == r1["mps2-an386_model2"]["total_cost"] > 0
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[2] / "profiler" / "summary.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_matrix_sweep_on_ray_equals_jobs_1(matrix_runs):
    pytest.importorskip("ray")
    one, ray = matrix_runs("1"), matrix_runs("ray")
    assert (ray / "summary.json").read_text() == (one / "summary.json").read_text()
    assert reports_of(ray) == reports_of(one)
    assert (ray / "aarch64_model2" / "lib" / "model.h").is_file()


def test_split_verification_equals_one_run(edgecc, digits_run, tmp_path):
    serial = digits_run("mps2-an386")
    out = tmp_path / "split"
    res = edgecc("run", DIGITS_YAML, "--board", "mps2-an386", "--verify-chunk", "10", "--jobs", "2",
                 "--out", out, "--quiet")
    assert res.code == 0, res.err
    split = json.loads((out / "report.json").read_text())
    assert split["verification"]["samples"] == 32 and split["verification"]["bit_exact"]
    assert comparable(split) == comparable(serial.report)
    assert (out / "fw" / "outputs.bin").read_bytes() == (serial.out / "fw" / "outputs.bin").read_bytes()
    assert not list((out / "fw").glob(".chunk-*"))
    assert "ECC_DONE samples=10" in (out / "fw" / "run.log").read_text()  # chunk 0's run: samples 0-9


def test_a_ray_task_that_fails_is_retried_once_and_recorded(tmp_path):
    """A task whose worker-side code raises (here: a job the worker cannot read) fails twice (Ray retries
    it once) and becomes that unit's internal-error entry; the sweep goes on."""
    pytest.importorskip("ray")
    from toolchain.executors import run_units
    from toolchain.units import UnitJob

    bad = UnitJob("build", None, {}, None, Unit("u", "host", {}, "host"), tmp_path / "u", cwd=5)  # Path(5): TypeError
    done = []
    (r,) = run_units([bad], 1, "ray", done.append)
    assert done == [1] and r.exit_code == 4 and r.report is None
    assert r.entry["unit"] == "u" and r.entry["status"] == "error"
    assert "failed twice (retried once)" in r.entry["error"] and "TypeError" in r.entry["error"]


def test_split_verification_on_ray_equals_one_run(edgecc, digits_run, tmp_path):
    """Under the Ray executor the unit is a Ray task and its chunks Ray tasks too: the same report."""
    pytest.importorskip("ray")
    serial = digits_run("mps2-an386")
    out = tmp_path / "ray"
    res = edgecc("run", DIGITS_YAML, "--board", "mps2-an386", "--verify-chunk", "10", "--jobs", "2",
                 "--executor", "ray", "--out", out, "--quiet")
    assert res.code == 0, res.err
    split = json.loads((out / "mps2-an386" / "report.json").read_text())  # Ray: always a sweep's layout
    assert comparable(split) == comparable(serial.report)
    assert (out / "mps2-an386" / "fw" / "outputs.bin").read_bytes() == (serial.out / "fw" / "outputs.bin").read_bytes()
