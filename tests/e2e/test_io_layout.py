"""Issue 15 item 5: `io_layout: NHWC` gives an ONNX model NHWC inputs and outputs in the generated
API, so no Transpose runs at the edges. A small NCHW model (3-channel input, a 4-D output and a
flattened one): the op list loses both layout Transposes, model.h declares NHWC shapes, the outputs
are the NCHW build's outputs transposed (bit for bit, the same quantization), the M4 run saves
the Transposes' instructions, and NCHW verification data are still accepted
(transposed on the host); data that fit neither layout get one error line naming the fix."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from e2e_helpers import assert_rejected
from onnx import TensorProto, helper, numpy_helper

from toolchain.config import load_config
from toolchain.errors import InputError
from toolchain.ir.verify import verify
from toolchain.ops.registry import opdef
from toolchain.pipeline import import_model


def _model(path: Path) -> Path:
    """x [1, 3, 8, 8] -> Conv 3x3 (4) -> Relu -> Conv 1x1 (2) = y [1, 2, 8, 8]; y -> GlobalAveragePool
    -> Flatten = p [1, 2]. Seeded random weights."""
    rng = np.random.default_rng(15)
    w1 = numpy_helper.from_array(rng.normal(0, 0.4, (4, 3, 3, 3)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.4, (2, 4, 1, 1)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"]),
             helper.make_node("GlobalAveragePool", ["y"], ["g"]),
             helper.make_node("Flatten", ["g"], ["p"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])
    p = helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph(nodes, "nchw_edges", [x], [y, p], [w1, b1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("io_layout")
    model = _model(d / "model.onnx")
    nchw = np.random.default_rng(3).normal(0, 1, (6, 1, 3, 8, 8)).astype(np.float32)
    np.save(d / "nchw.npy", nchw)
    np.save(d / "nhwc.npy", nchw.transpose(0, 1, 3, 4, 2))
    return d, model


def _yaml(d: Path, name: str, board: str, data: str, **extra: str) -> Path:
    lines = [f"model: {d / 'model.onnx'}", f"board: {board}", f"calibration: {d / 'nchw.npy'}",
             f"verify: {d / data}", *(f"{k}: {v}" for k, v in extra.items())]
    path = d / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ops(report: dict) -> Counter:
    return Counter(o["op_type"] for o in report["ops"])


def _outputs(out: Path) -> np.ndarray:
    return np.fromfile(out / "fw" / "outputs.bin", np.int8)


def test_nhwc_io_removes_the_edge_transposes_from_the_graph(case):
    d, model = case
    graphs = {}
    for layout in (None, "NHWC"):
        cfg = load_config(None, {"model": str(model), "calibration": str(d / "nchw.npy"), "io_layout": layout})
        g = import_model(cfg).graph_s8
        verify(g, lambda node, gr: opdef(node).infer_shapes(node, gr), after="import")
        graphs[layout] = g
    default, nhwc = graphs[None], graphs["NHWC"]
    assert Counter(n.op.value for n in default.nodes)["Transpose"] == 2  # after the input, before output y
    assert Counter(n.op.value for n in nhwc.nodes)["Transpose"] == 0
    assert len(nhwc.nodes) == len(default.nodes) - 2
    assert [default.t(n).shape for n in (*default.inputs, *default.outputs)] == [(1, 3, 8, 8), (1, 2, 8, 8), (1, 2)]
    assert [nhwc.t(n).shape for n in (*nhwc.inputs, *nhwc.outputs)] == [(1, 8, 8, 3), (1, 8, 8, 2), (1, 2)]
    assert nhwc.meta["nhwc_io"] == ("x", "y") and nhwc.meta["input_layout"] == "NHWC"
    assert "nhwc_io" not in default.meta


@pytest.fixture(scope="module")
def host_runs(case, edgecc, need_board):
    """OUT of `edgecc run` on host: default, io_layout NHWC with NCHW data (no layout key), and with NHWC data."""
    need_board("host")
    d, _ = case
    outs = {}
    for name, data, extra in (("default", "nchw.npy", {}), ("nhwc", "nchw.npy", {"io_layout": "NHWC"}),
                              ("nhwc_data", "nhwc.npy", {"io_layout": "NHWC"})):
        out = d / f"out_{name}"
        res = edgecc("run", _yaml(d, name, "host", data, **extra), "--out", out, "--quiet")
        assert res.code == 0, f"{name}: exit {res.code}: {res.err}"
        outs[name] = out
    return outs


def test_generated_api_is_nhwc_and_outputs_are_the_nchw_ones_transposed(host_runs):
    reports = {k: json.loads((v / "report.json").read_text()) for k, v in host_runs.items()}
    assert _ops(reports["default"])["Transpose"] == 2
    assert _ops(reports["nhwc"])["Transpose"] == 0
    assert all(r["verification"]["bit_exact"] for r in reports.values())
    header = (host_runs["nhwc"] / "lib" / "model.h").read_text()
    assert re.search(r'input0: tensor "x", int8 \[1, 8, 8, 3\]', header)
    assert re.search(r'output0: tensor "y", int8 \[1, 8, 8, 2\]', header)
    assert re.search(r'output1: tensor "p", int8 \[1, 2\]', header)
    assert "ECC_INPUT0_SIZE 192u" in header and "ECC_OUTPUT0_SIZE 128u" in header
    assert re.search(r"input0: .*int8 \[1, 3, 8, 8\]", (host_runs["default"] / "lib" / "model.h").read_text())
    # the same quantization (scales equal): the outputs are the NCHW build's, transposed
    default = _outputs(host_runs["default"]).reshape(6, 130)
    nhwc = _outputs(host_runs["nhwc"]).reshape(6, 130)
    y_nchw = default[:, :128].reshape(6, 1, 2, 8, 8)
    assert np.array_equal(nhwc[:, :128].reshape(6, 1, 8, 8, 2), y_nchw.transpose(0, 1, 3, 4, 2))
    assert np.array_equal(nhwc[:, 128:], default[:, 128:])
    # NCHW data (the ONNX file's own layout, no preprocess.layout) were transposed on the host: the same
    # run as with NHWC data
    assert np.array_equal(_outputs(host_runs["nhwc_data"]), _outputs(host_runs["nhwc"]))
    v, w = reports["default"]["verification"], reports["nhwc"]["verification"]
    # ORT is fed the file's NCHW and its NCHW output y read back as NHWC: the same figures (the default
    # run names y's NCHW copy y_nchw)
    assert list(w["sqnr_db_per_output"]) == ["y", "p"]
    assert list(w["sqnr_db_per_output"].values()) == pytest.approx(list(v["sqnr_db_per_output"].values()), abs=1e-9)


def test_m4_run_saves_the_transposes_instructions(case, edgecc, need_board):
    """mps2-an386, exact instruction counts: the two Transposes are gone and every other op costs the
    same to a few instructions (the arena plan differs: other buffer addresses, other edge loops)."""
    need_board("mps2-an386")
    d, _ = case
    reports = {}
    for name, extra in (("m4_default", {}), ("m4_nhwc", {"io_layout": "NHWC"})):
        out = d / f"out_{name}"
        res = edgecc("run", _yaml(d, name, "mps2-an386", "nchw.npy", **extra), "--out", out, "--quiet")
        assert res.code == 0, f"{name}: exit {res.code}: {res.err}"
        reports[name] = json.loads((out / "report.json").read_text())
    default, nhwc = reports["m4_default"], reports["m4_nhwc"]
    transposes = [o["instructions"] for o in default["ops"] if o["op_type"] == "Transpose"]
    assert len(transposes) == 2 and min(transposes) > 500  # measured: 2,132 (input) and 1,067 (output y)
    rest = [o for o in default["ops"] if o["op_type"] != "Transpose"]
    assert [o["op_type"] for o in nhwc["ops"]] == [o["op_type"] for o in rest] == ["Conv2D", "Conv2D", "AveragePool2D"]
    assert all(abs(a["instructions"] - b["instructions"]) <= 16 for a, b in zip(nhwc["ops"], rest, strict=True))
    saved = default["total_instructions"] - nhwc["total_instructions"]
    assert abs(saved - sum(transposes)) <= 32, (saved, transposes)


def test_data_fitting_neither_layout_is_refused_naming_the_fix(case, edgecc, tmp_path):
    d, _ = case
    np.save(d / "wrong.npy", np.zeros((2, 1, 8, 3, 8), np.float32))
    out = tmp_path / "out"
    res = edgecc("run", _yaml(d, "wrong", "host", "wrong.npy", io_layout="NHWC"), "--out", out, "--quiet")
    assert_rejected(res, out, "wrong.npy", "[1, 8, 8, 3]", "preprocess.layout")


def test_io_keys_are_checked_as_written(tmp_path):
    with pytest.raises(InputError, match=r"io_layout: NCHW applies to ONNX models; a .tflite model's inputs"):
        load_config(None, {"model": str(tmp_path / "m.tflite"), "io_layout": "NCHW"})
    with pytest.raises(InputError, match=r"io_layout must be NHWC or NCHW, not 'nhwc'"):
        load_config(None, {"model": str(tmp_path / "m.onnx"), "io_layout": "nhwc"})
    (tmp_path / "p.yaml").write_text("model: m.onnx\nio_dtype: int4\n")
    with pytest.raises(InputError, match=r"p.yaml: io_dtype must be int8 or uint8 or float32, not 'int4'"):
        load_config(tmp_path / "p.yaml", {})
    (tmp_path / "p.yaml").write_text("model: m.onnx\nio_dtyp: int8\n")
    with pytest.raises(InputError, match=r"p.yaml: unknown key\(s\) io_dtyp; did you mean io_dtype\? allowed: batch, "):
        load_config(tmp_path / "p.yaml", {})


def test_cubic_samples_are_read_nhwc_with_a_warning(tmp_path, capsys):
    """C == H == W: NCHW and NHWC samples have the same shape; NHWC (the API's layout) is read, and said."""
    from toolchain.config import Preprocess
    from toolchain.data import load_data
    from toolchain.frontend.onnx import load_onnx

    w = numpy_helper.from_array(np.ones((4, 4, 1, 1), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "cube",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "cube.onnx")
    g = load_onnx(tmp_path / "cube.onnx", nhwc_io=True)
    data = np.arange(2 * 64, dtype=np.float32).reshape(2, 1, 4, 4, 4)
    np.save(tmp_path / "d.npy", data)
    got = load_data(tmp_path / "d.npy", g, Preprocess())["x"]
    assert np.array_equal(got, data)
    err = capsys.readouterr().err
    assert "fit the input both as NHWC (io_layout: NHWC) and as the ONNX file's NCHW; read as NHWC" in err
