"""Bad ONNX input fails loudly and completely (issue 4 point 7): every node with attributes its
converter does not take is listed in one error before any C is written (float and QDQ models), and a
broadcast needing more loop levels than the C kernels walk (4) names the node instead of emitting
wrong code (Add, Sub, Mul, PRelu)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder
from onnx import helper, numpy_helper

from toolchain.errors import UnsupportedModel
from toolchain.frontend.onnx import load_onnx
from toolchain.frontend.onnx_qdq import load_qdq


def _float_model(path: Path, nodes: list, inputs: dict[str, tuple[int, ...]], inits: dict | None = None) -> Path:
    vi = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    g = helper.make_graph(nodes, "t", vi, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _two_bad_nodes(path: Path) -> Path:
    """Conv with an attribute `frobnicate`, a good Relu, then MaxPool with `sparkle`."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv_bad", frobnicate=1),
             helper.make_node("Relu", ["c"], ["r"], name="relu_ok"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool_bad", kernel_shape=[2, 2], sparkle=0.5)]
    return _float_model(path, nodes, {"x": (1, 2, 4, 4)}, {"w": np.ones((3, 2, 1, 1))})


def test_every_node_with_unsupported_attributes_at_once(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedModel) as e:
        load_onnx(_two_bad_nodes(tmp_path / "m.onnx"))
    msg = str(e.value)
    assert msg.splitlines()[1:3] == ["  Conv x1 (attribute(s) frobnicate): conv_bad",
                                     "  MaxPool x1 (attribute(s) sparkle): pool_bad"], msg
    assert "relu_ok" not in msg


def test_qdq_model_lists_every_bad_node(tmp_path: Path) -> None:
    m = ModelBuilder(13)
    x = m.dq(m.q(m.input("x", (1, 2, 4, 4)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w = m.dq(m.const("w", np.ones((3, 2, 1, 1)), np.int8), 0.1, 0, "wd")
    m.nodes.append(helper.make_node("Conv", [x, w], ["c"], name="qconv_bad", frobnicate=1))
    m.nodes.append(helper.make_node("MaxPool", ["c"], ["p"], name="qpool_bad", kernel_shape=[2, 2], sparkle=1))
    m.dq(m.q("p", 0.05, 0, "pq"), 0.05, 0, "y")
    m.output("y")
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(m.save(tmp_path / "q.onnx"))
    msg = str(e.value)
    assert "2 unsupported node(s) of 2 op type(s): Conv (1), MaxPool (1)" in msg.splitlines()[0], msg
    assert "(attribute(s) frobnicate): qconv_bad" in msg and "(attribute(s) sparkle): qpool_bad" in msg


def test_cli_reports_both_bad_nodes_in_one_error_and_writes_nothing(tmp_path: Path, edgecc) -> None:
    model = _two_bad_nodes(tmp_path / "m.onnx")
    np.save(tmp_path / "d.npy", np.zeros((2, 1, 2, 4, 4), np.float32))
    res = edgecc("build", "--model", model, "--calibration", tmp_path / "d.npy", "--board", "host",
                 "--out", tmp_path / "out")
    assert res.code == 2 and not (tmp_path / "out").exists()
    head, conv, pool, pointer = res.err.strip().splitlines()
    assert head.startswith("edgecc: error: ") and "2 unsupported node(s)" in head and "Traceback" not in res.err
    assert conv.endswith("Conv x1 (attribute(s) frobnicate): conv_bad") and pool.endswith("): pool_bad")
    assert "edgecc ops" in pointer


# ---- broadcast beyond the kernels' four loop levels ---------------------------------------------
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "PRelu"])
def test_broadcast_beyond_four_loop_levels_names_the_node(tmp_path: Path, edgecc, op: str) -> None:
    # (2,1,3,1,5) against (1,4,3,2,1): five alternating groups of broadcast axes
    if op == "PRelu":  # the slope is a constant broadcast against x
        nodes = [helper.make_node(op, ["a", "k"], ["y"], name=f"{op.lower()}_wide")]
        model = _float_model(tmp_path / "m.onnx", nodes, {"a": (2, 4, 3, 2, 5)},   # slope broadcasts one way
                             {"k": np.full((1, 4, 1, 2, 1), 0.25)})
    else:
        nodes = [helper.make_node(op, ["a", "b"], ["y"], name=f"{op.lower()}_wide")]
        model = _float_model(tmp_path / "m.onnx", nodes, {"a": (2, 1, 3, 1, 5), "b": (1, 4, 3, 2, 1)})
    with pytest.raises(UnsupportedModel, match=rf"{op} x1 \(.*5 loop levels \(max 4\)\): {op.lower()}_wide"):
        load_onnx(model)
    shapes = {"a": (2, 4, 3, 2, 5)} if op == "PRelu" else {"a": (2, 1, 3, 1, 5), "b": (1, 4, 3, 2, 1)}
    np.savez(tmp_path / "d.npz", **{k: np.ones((1, *v), np.float32) for k, v in shapes.items()})
    res = edgecc("build", "--model", model, "--calibration", tmp_path / "d.npz", "--board", "host",
                 "--out", tmp_path / "out")
    assert res.code == 2 and not (tmp_path / "out").exists()
    group = res.err.strip().splitlines()[1]
    assert group.startswith(f"  {op} x1 (") and "loop levels" in group and group.endswith(f"{op.lower()}_wide")
