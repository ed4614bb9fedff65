"""An unsupported model gets one short error (issue 11 item 3): a summary line with the counts per
op type, one line per (op type, reason) group naming its first nodes (`#INDEX` when unnamed), and a
pointer to `edgecc ops`; at most 15 lines of about 200 characters however many nodes fail (a
300-node Paddle model once gave a 13.7 KB line). Same formatter for float ONNX, QDQ ONNX and TFLite;
through the CLI: exit 2, nothing written."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder
from onnx import helper

from toolchain.errors import UnsupportedModel
from toolchain.frontend.onnx import load_onnx
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.frontend.tflite import load_tflite
from toolchain.frontend.unsupported import MAX_LINES, MAX_WIDTH, POINTER, Problem, summary_lines

CLIP_NODES = 50


def _check_shape(msg: str, head: str) -> list[str]:
    """The error's lines, after checking the summary line, the line budget and the pointer line."""
    lines = msg.splitlines()
    assert len(lines) <= MAX_LINES, msg
    assert all(len(ln) <= MAX_WIDTH for ln in lines[1:]), msg
    assert lines[0] == head, msg
    assert lines[-1] == POINTER
    return lines


def _rejected(res, out: Path, head_end: str) -> list[str]:
    """Through the CLI: exit 2, `edgecc: error: ` on the summary line, further lines indented,
    no traceback, nothing on stdout and no OUT."""
    assert "Traceback" not in res.err and res.code == 2, res.err
    lines = res.err.strip().splitlines()
    assert lines[0].startswith("edgecc: error: ") and lines[0].endswith(head_end), lines[0]
    assert 2 < len(lines) <= MAX_LINES and all(ln.startswith("  ") for ln in lines[1:]), res.err
    assert res.out == "" and not out.exists()
    return lines


# ---- float ONNX: 150 Erf + 100 Cos (unknown ops, every third unnamed) + 50 Clip (non-constant min) ------
def _float_300(path: Path) -> Path:
    nodes = [helper.make_node("Erf", ["x"], [f"e{i}"], name="" if i % 3 == 1 else f"erf_{i}") for i in range(150)]
    nodes += [helper.make_node("Cos", ["x"], [f"c{i}"], name="" if i % 3 == 0 else f"cos_{i}") for i in range(100)]
    nodes += [helper.make_node("Clip", ["x", f"e{i}"], [f"k{i}"], name=f"clip_{i}") for i in range(CLIP_NODES)]
    outs = [o for n in nodes for o in n.output]
    g = helper.make_graph(nodes, "many", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, [1, 16]) for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


FLOAT_GROUPS = ["  Erf x150 (unknown op): erf_0, #1, erf_2, +147 more",
                "  Cos x100 (unknown op): #150, cos_1, cos_2, +97 more",
                "  Clip x50 (non-constant min input '…' (must be an initializer)): clip_0, clip_1, clip_2, +47 more"]


def test_float_onnx_300_nodes_fit_in_a_few_lines(tmp_path: Path) -> None:
    path = _float_300(tmp_path / "many.onnx")
    with pytest.raises(UnsupportedModel) as e:
        load_onnx(path)
    lines = _check_shape(str(e.value), f"{path}: 300 unsupported node(s) of 3 op type(s): Erf (150), Cos (100), "
                                       "Clip (50)")
    assert lines[1:-1] == FLOAT_GROUPS


def test_float_onnx_300_nodes_through_the_cli(tmp_path: Path, edgecc) -> None:
    path, out = _float_300(tmp_path / "many.onnx"), tmp_path / "results" / "out"
    np.save(tmp_path / "d.npy", np.zeros((2, 1, 16), np.float32))
    res = edgecc("build", "--model", path, "--calibration", tmp_path / "d.npy", "--board", "host", "--out", out)
    lines = _rejected(res, out, "300 unsupported node(s) of 3 op type(s): Erf (150), Cos (100), Clip (50)")
    assert lines[1:-1] == FLOAT_GROUPS


# ---- QDQ ONNX: the same mix behind a Q/DQ pair, unnamed nodes labelled by their index in the file -----
def _qdq_300(path: Path) -> Path:
    m = ModelBuilder(13)
    x = m.dq(m.q(m.input("x", (1, 16)), 0.05, 0, "xq"), 0.05, 0, "xd")
    first = len(m.nodes)
    for i in range(200):
        m.nodes.append(helper.make_node("Erf", [x], [f"e{i}"], name="" if i % 2 else f"erf_{i}"))
    for i in range(60):
        m.nodes.append(helper.make_node("Sin", [x], [f"s{i}"]))                 # all unnamed
    for i in range(40):
        m.nodes.append(helper.make_node("Clip", [x, f"e{i}"], [f"k{i}"], name=f"clip_{i}"))
    for n in m.nodes[first:]:
        m.output(n.output[0])
    return m.save(path)


def test_qdq_onnx_300_nodes_fit_in_a_few_lines(tmp_path: Path) -> None:
    path = _qdq_300(tmp_path / "many_qdq.onnx")
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(path)
    lines = _check_shape(str(e.value), f"{path}: 300 unsupported node(s) of 3 op type(s): Erf (200), Sin (60), "
                                       "Clip (40)")
    graph = onnx.load(str(path)).graph.node
    first_erf = next(i for i, n in enumerate(graph) if n.op_type == "Erf")
    sins = [i for i, n in enumerate(graph) if n.op_type == "Sin"][:3]
    assert lines[1] == f"  Erf x200 (unknown op): erf_0, #{first_erf + 1}, erf_2, +197 more"
    assert lines[2] == f"  Sin x60 (unknown op): #{sins[0]}, #{sins[1]}, #{sins[2]}, +57 more"
    assert lines[3] == "  Clip x40 (non-constant min input '…' (must be an initializer)): clip_0, clip_1, clip_2, +37 more"


def test_qdq_onnx_300_nodes_through_the_cli(tmp_path: Path, edgecc) -> None:
    path, out = _qdq_300(tmp_path / "many_qdq.onnx"), tmp_path / "out"
    np.save(tmp_path / "d.npy", np.zeros((2, 1, 16), np.float32))
    res = edgecc("build", "--model", path, "--verify", tmp_path / "d.npy", "--board", "host", "--out", out)
    lines = _rejected(res, out, "300 unsupported node(s) of 3 op type(s): Erf (200), Sin (60), Clip (40)")
    assert lines[1].startswith("  Erf x200 (unknown op): erf_0, #")


# ---- TFLite: 300 operators of 3 unknown builtins -----------------------------------------------------
def _tflite_300(path: Path) -> Path:
    from _tflite_cases import Model, S

    m = Model()
    x = m.tensor((1, 8), S.TensorType.INT8, 0.1, 0)
    codes = [S.BuiltinOperator.EXP] * 160 + [S.BuiltinOperator.LOG] * 90 + [S.BuiltinOperator.SIN] * 50
    ops = [(code, 0, None, [x], [m.tensor((1, 8), S.TensorType.INT8, 0.1, 0)]) for code in codes]
    path.write_bytes(m.build_ops(ops, [x], [op[4][0] for op in ops]))
    return path


TFLITE_GROUPS = ["  EXP x160 (unknown op): operator 0 't1', operator 1 't2', operator 2 't3', +157 more",
                 "  LOG x90 (unknown op): operator 160 't161', operator 161 't162', operator 162 't163', +87 more",
                 "  SIN x50 (unknown op): operator 250 't251', operator 251 't252', operator 252 't253', +47 more"]


def test_tflite_300_unknown_builtins_fit_in_a_few_lines(tmp_path: Path) -> None:
    path = _tflite_300(tmp_path / "many.tflite")
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(path)
    lines = _check_shape(str(e.value), f"{path}: 300 unsupported node(s) of 3 op type(s): EXP (160), LOG (90), "
                                       "SIN (50)")
    assert lines[1:-1] == TFLITE_GROUPS


def test_tflite_300_unknown_builtins_through_the_cli(tmp_path: Path, edgecc) -> None:
    path, out = _tflite_300(tmp_path / "many.tflite"), tmp_path / "out"
    res = edgecc("build", "--model", path, "--board", "host", "--out", out)
    lines = _rejected(res, out, "300 unsupported node(s) of 3 op type(s): EXP (160), LOG (90), SIN (50)")
    assert lines[1:-1] == TFLITE_GROUPS


# ---- the formatter on its own: many groups, long names, per-node values ------------------------------
def test_many_groups_and_long_names_stay_within_the_budget() -> None:
    problems = [Problem(f"node_{i}_" + "x" * 300, f"Op{i % 40}", f"attribute(s) a{i % 7} on tensor '{'t' * 90}{i}'")
                for i in range(300)]
    lines = summary_lines("m.onnx", problems)
    assert len(lines) == MAX_LINES and all(len(ln) <= MAX_WIDTH for ln in lines)
    assert lines[0].startswith("m.onnx: 300 unsupported node(s) of 40 op type(s): Op0 (8), Op1 (8), ")
    assert lines[0].endswith(", +32 more")
    assert lines[-2].startswith("  +") and "more groups of" in lines[-2]
    assert sum(int(ln.split(" x", 1)[1].split(" ", 1)[0]) for ln in lines[1:-2]) + int(
        lines[-2].split(" of ", 1)[1].split(" ", 1)[0]) == 300


def test_nodes_differing_only_in_values_share_a_group() -> None:
    problems = [Problem(f"relu_{i}", "RELU", f"RELU from scale 0.{i + 1}/zp {i} to 0.5/zp -3") for i in range(5)]
    problems.append(Problem("pool", "MAX_POOL_2D", "fused activation 4 (TANH/SIGN_BIT)"))
    lines = summary_lines("m.tflite", problems)
    assert lines[1] == "  RELU x5 (RELU from scale …/zp … to …/zp …): relu_0, relu_1, relu_2, +2 more"
    assert lines[2] == "  MAX_POOL_2D x1 (fused activation 4 (TANH/SIGN_BIT)): pool"  # one node: its own reason
