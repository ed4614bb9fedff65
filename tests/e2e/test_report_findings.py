"""What report.json and the terminal point out beyond the tables (issue 13 items 4-6), on tiny float /
QDQ ONNX models (onnx.helper) through `edgecc run`:

- kernel_reason: a grouped convolution on mps2-an386 runs portable C and says why the DSP kernel
  stepped aside; the plain convolution after it runs the DSP kernel, kernel_reason null; the
  terminal shows the reason;
- flags: a QDQ model's own int32 bias whose accumulator can overflow (quantize.bias_fit) is a flag
  naming the op, in numerics.accumulator_notes and on the terminal's last lines; a float model's
  bias refit (a tiny channel) too;
- multi-output: verification.outputs[] gives each output's SQNR and top-1, recomputed here from the
  board's outputs and onnxruntime; the top-level figures are output 0's; the terminal names each.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
sys.path.append(str(Path(__file__).resolve().parents[1] / "unit"))
from test_bias_fit import INT32_MAX, conv, qdq_weighted  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _save(path: Path, nodes, inits: dict, x_shape, outputs: list[str]) -> Path:
    g = helper.make_graph(nodes, "findings", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _run(tmp_path: Path, edgecc, model: Path, data: np.ndarray, board: str) -> tuple[dict, str]:
    np.save(tmp_path / "d.npy", data.astype(np.float32))
    out = tmp_path / f"out_{board}"
    res = edgecc("run", "--model", model, "--calibration", tmp_path / "d.npy", "--board", board, "--out", out)
    assert res.code == 0, res.err
    report = json.loads((out / "report.json").read_text())
    text = " ".join(res.out.split())  # the terminal's lines as one, wherever rich wrapped them
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(report, json.loads((ROOT / "profiler" / "schema.json").read_text()))
    return report, text


@pytest.mark.needs_gcc
def test_grouped_conv_on_the_m4_says_why_not_dsp(tmp_path: Path, edgecc, need_board) -> None:
    need_board("mps2-an386")
    r = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["g"], group=2, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["g"], ["gr"]),
             helper.make_node("Conv", ["gr", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])]
    inits = {"w1": r.uniform(-1, 1, (8, 4, 3, 3)), "b1": r.uniform(-0.1, 0.1, 8),
             "w2": r.uniform(-1, 1, (16, 8, 3, 3)), "b2": r.uniform(-0.1, 0.1, 16)}
    model = _save(tmp_path / "grouped.onnx", nodes, inits, (1, 8, 8, 8), ["y"])
    report, text = _run(tmp_path, edgecc, model, r.uniform(-1, 1, (8, 1, 8, 8, 8)), "mps2-an386")
    grouped, plain = [o for o in report["ops"] if o["op_type"] == "Conv2D"]  # between the NCHW <-> NHWC transposes
    assert grouped["kernel"].startswith("portable") and grouped["kernel_reason"], grouped
    assert "dsp" in grouped["kernel_reason"]  # "dsp: grouped convolution", or the generic "no dsp kernel ..."
    assert plain["kernel"].startswith("dsp") and plain["kernel_reason"] is None, plain
    assert f"kernel of op {grouped['index']} {grouped['name']} (Conv2D" in text and grouped["kernel_reason"] in text


@pytest.mark.needs_gcc
def test_host_has_no_faster_kernel_to_explain(tmp_path: Path, edgecc, need_board) -> None:
    need_board("host")
    r = np.random.default_rng(1)
    model = conv(tmp_path / "m.onnx", r.uniform(-1, 1, (4, 2, 3, 3)).astype(np.float32),
                 r.uniform(-1, 1, 4).astype(np.float32), (1, 4, 3, 3), group=2)
    report, text = _run(tmp_path, edgecc, model, r.uniform(-1, 1, (4, 1, 4, 3, 3)), "host")
    assert report["ops"] and all(o["kernel_reason"] is None for o in report["ops"]) and "kernel of op" not in text
    assert report["flags"] == [] and "FLAG" not in text


@pytest.mark.needs_gcc
def test_a_models_own_int32_bias_at_risk_is_flagged(tmp_path: Path, edgecc, need_board) -> None:
    need_board("host")
    path = qdq_weighted(tmp_path / "m.onnx", "conv", np.full((2, 4, 3, 3), 127, np.int8), 1e-3,
                        np.zeros(2, np.float32), (1, 4, 3, 3))
    m = onnx.load(str(path))  # the bias as the model's own int32 (DequantizeLinear(b int32, xs * ws)), near 2^31
    next(t for t in m.graph.initializer if t.name == "b").CopyFrom(
        numpy_helper.from_array(np.array([INT32_MAX - 1000, 5], np.int32), "b"))
    m.graph.initializer.extend([numpy_helper.from_array(np.array([1e-3 / 127], np.float32), "bs"),
                                numpy_helper.from_array(np.array([0], np.int32), "bz")])
    m.graph.node.insert(0, helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0))
    next(n for n in m.graph.node if n.op_type == "Conv").input[2] = "bd"
    onnx.save(m, str(path))
    report, text = _run(tmp_path, edgecc, path, np.random.default_rng(3).uniform(-1, 1, (2, 1, 4, 3, 3)), "host")
    conv_op, = [o for o in report["ops"] if o["op_type"] == "Conv2D"]
    risk, = [f for f in report["flags"] if f["kind"] == "int32_overflow_risk"]
    assert (risk["index"], risk["name"], risk["op_type"]) == (conv_op["index"], conv_op["name"], "Conv2D")
    assert "1 of 2 channel(s)" in risk["cause"]
    note, = report["numerics"]["accumulator_notes"]
    assert risk["cause"] in note
    # the bias near 2^31 saturates the output: the isolated SQNR is below 10 dB, a flag as well
    low, = [f for f in report["flags"] if f["kind"] == "low_isolated_sqnr"]
    assert low["index"] == conv_op["index"] and conv_op["sqnr_db_isolated"] < 10
    tail = text.split(" verification vs ")[-1]  # the flags are the terminal's last lines, before PASS
    assert tail.index(f"FLAG op {conv_op['index']} c (Conv2D): isolated SQNR") \
        < tail.index(f"FLAG op {conv_op['index']} c (Conv2D): int32 accumulator can overflow") < tail.index("PASS")


@pytest.mark.needs_gcc
def test_a_float_models_bias_refit_is_flagged(tmp_path: Path, edgecc, need_board) -> None:
    need_board("host")
    r = np.random.default_rng(0)
    w = r.uniform(-1, 1, (2, 4, 3, 3)).astype(np.float32)
    w[1] = r.uniform(-1e-7, 1e-7, w[1].shape)  # a tiny channel with a real bias: its weight scale is raised
    model = conv(tmp_path / "m.onnx", w, np.array([0.05, 0.8], np.float32), (1, 4, 3, 3))
    report, text = _run(tmp_path, edgecc, model, r.uniform(-1, 1, (8, 1, 4, 3, 3)), "host")
    conv_op, = [o for o in report["ops"] if o["op_type"] == "Conv2D"]
    refit, = [f for f in report["flags"] if f["kind"] == "bias_refit"]
    assert refit["index"] == conv_op["index"] and "weight scale of 1 of 2 channel(s) raised" in refit["cause"]
    assert f"FLAG op {conv_op['index']} {conv_op['name']} (Conv2D): weight scale of 1 of 2 channel(s) raised" in text


@pytest.mark.needs_gcc
def test_two_outputs_each_named_with_their_figures(tmp_path: Path, edgecc, need_board) -> None:
    import onnxruntime as ort

    need_board("host")
    r = np.random.default_rng(2)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["y1"], transB=1),
             helper.make_node("Gemm", ["x", "w2", "b2"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y2"])]
    inits = {"w1": r.uniform(-1, 1, (10, 16)), "b1": r.uniform(-0.1, 0.1, 10),
             "w2": r.uniform(-1, 1, (5, 16)), "b2": r.uniform(-0.1, 0.1, 5)}
    model = _save(tmp_path / "two.onnx", nodes, inits, (1, 16), ["y1", "y2"])
    x = r.uniform(-1, 1, (20, 1, 16)).astype(np.float32)
    report, text = _run(tmp_path, edgecc, model, x, "host")
    v = report["verification"]
    outs = v["outputs"]
    assert [(o["name"], o["shape"]) for o in outs] == [("y1", [1, 10]), ("y2", [1, 5])]
    assert v["top1_agreement"] == outs[0]["top1_agreement"] and v["sqnr_db"] == outs[0]["sqnr_db"]
    assert all(o["bit_exact"] and o["max_abs_diff_lsb"] == 0 for o in outs)
    # recomputed from the board's bytes and onnxruntime's float outputs
    from toolchain.config import Config
    from toolchain.pipeline import import_model

    g = import_model(Config(model=model, calibration=tmp_path / "d.npy")).graph_s8
    raw = np.fromfile(tmp_path / "out_host" / "fw" / "outputs.bin", np.int8).reshape(20, 15)
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    ref = [np.stack(y) for y in zip(*(sess.run(None, {"x": xi}) for xi in x))]
    for o, board, f in zip(outs, (raw[:, :10], raw[:, 10:]), ref, strict=True):
        deq = g.t(o["name"]).quant.dequantize(board.reshape(f.shape))
        sqnr = 10 * np.log10(np.sum(f.astype(np.float64) ** 2) / np.sum((f - deq.astype(np.float64)) ** 2))
        top1 = np.mean(f.reshape(20, -1).argmax(1) == deq.reshape(20, -1).argmax(1))
        assert o["sqnr_db"] == pytest.approx(sqnr, abs=1e-3) and o["top1_agreement"] == pytest.approx(top1)
    assert "per output (2):" in text
    for k, o in enumerate(outs):
        line = f"output {k} '{o['name']}' 1x{o['shape'][1]}: top-1 agreement with float {o['top1_agreement']:.4f}"
        assert line in text


def test_digits_on_the_m4_dsp_kernels_have_no_reason(digits_run) -> None:
    """The bundled example on mps2-an386: every op that runs a DSP kernel has kernel_reason null; the
    ops in portable C that have a DSP variant say why (the Add here: too small for the DSP kernel)."""
    report = digits_run("mps2-an386").report
    dsp = [o for o in report["ops"] if o["kernel"].startswith("dsp")]
    assert len(dsp) >= 5 and all(o["kernel_reason"] is None for o in dsp)
    add, = [o for o in report["ops"] if o["op_type"] == "Add"]
    assert add["kernel"].startswith("portable") and "dsp" in add["kernel_reason"]
