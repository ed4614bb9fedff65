"""select_layout (issue 6, layouts): the minimum cut is exact; the same model gets CHWN where it pays
with batch 8 on `aarch64` and stays NHWC with batch 1 on `mps2-an386` (numbers of relayouts
asserted); the rewritten graph computes the same int8 outputs (P7); and end to end, batch 8 with
CHWN runs bit-exact on both AArch64 boards with per-inference figures and every tensor's layout in
the report."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from toolchain.passes.select_layout import INF, _min_cut_labels


def _objective(labels, unary, tensors):
    cost = sum(u[b] for u, b in zip(unary, labels))
    for p, cons, r in tensors:
        lp = 0 if p is None else labels[p]
        if any((0 if c is None else labels[c]) != lp for c in cons):
            cost += r
    return cost


def test_min_cut_is_exact():
    """Against brute force over every labelling, including tensors read by several consumers and
    graph inputs/outputs (None) fixed at the preferred layout."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(1, 8))
        unary = [(float(rng.integers(0, 50)), float(rng.integers(0, 50)) if rng.random() > 0.15 else INF)
                 for _ in range(n)]
        tensors = []
        for _ in range(int(rng.integers(0, 2 * n + 1))):
            p = None if rng.random() < 0.2 else int(rng.integers(0, n))
            cons = [None if rng.random() < 0.15 else int(c) for c in rng.integers(0, n, int(rng.integers(1, 4)))]
            tensors.append((p, cons, float(rng.integers(0, 40))))
        got = _min_cut_labels(unary, tensors)
        best = min(_objective(lab, unary, tensors) for lab in itertools.product((0, 1), repeat=n))
        assert _objective(got, unary, tensors) == pytest.approx(best), (trial, unary, tensors, got)


# ---- a small model where the choice must differ: an RGB stem conv and a 12-channel depthwise
# (no NHWC vector kernel takes 12 channels, the CHWN one vectorises across the batch: CHWN wins
# there with batch 8 on AArch64), then a pointwise conv, pooling and a classifier ----
def synthetic_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def w(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("w1", (12, 3, 3, 3), 0.3), w("b1", (12,), 0.1), w("w2", (12, 1, 3, 3), 0.3), w("b2", (12,), 0.1),
             w("w3", (16, 12, 1, 1), 0.3), w("b3", (16,), 0.1), w("w4", (4, 16), 0.3), w("b4", (4,), 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], group=12, pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w4", "b4"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "layout_case", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = folder / "layout_case.onnx"
    onnx.save(m, str(path))
    np.savez(folder / "data.npz", x=np.random.default_rng(1).uniform(0, 1, (16, 48, 48, 3)).astype(np.float32))
    return path


def _imported(tmp_path: Path, batch: int):
    from toolchain.config import load_config
    from toolchain.pipeline import import_model

    model = synthetic_model(tmp_path)
    cfg = load_config(None, {"model": str(model), "calibration": str(tmp_path / "data.npz"), "batch": batch})
    cfg = type(cfg)(**{**cfg.__dict__, "preprocess": type(cfg.preprocess)(layout="NHWC")})
    return import_model(cfg).graph_s8


def _relayouts(g):
    from toolchain.ops.registry import OpKind

    return [n for n in g.nodes if n.op is OpKind.RELAYOUT]


def test_layout_differs_by_board_and_batch(tmp_path):
    from targets import load_target
    from toolchain.interpret import interpret
    from toolchain.ops.registry import OpKind
    from toolchain.passes.select_layout import select_layout

    g8, g1 = _imported(tmp_path, 8), _imported(tmp_path, 1)
    a64 = select_layout(g8, load_target("aarch64"))
    m4 = select_layout(g1, load_target("mps2-an386"))
    # mps2-an386, batch 1: no kernel there knows CHWN: the graph is untouched, no relayout
    assert m4 is g1 and not _relayouts(m4) and "layouts" not in m4.meta
    # aarch64 with batch 1: CHWN needs a batch that is a multiple of 8: untouched too
    assert select_layout(g1, load_target("aarch64")) is g1
    # aarch64, batch 8: the input transpose writes CHWN directly, the 4-D chain runs in CHWN (a
    # 12-channel tensor would relayout element by element, so the pointwise conv and the pooling
    # stay there too), one relayout back to NHWC before the classifier's reshape
    lay = a64.meta["layouts"]
    for kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.AVG_POOL2D):
        assert [lay[n.outputs[0]] for n in a64.nodes if n.op is kind] in (["CHWN"], ["CHWN", "CHWN"]), kind
    assert [(n.attrs.src, n.attrs.dst) for n in _relayouts(a64)] == [("NHWC", "CHWN"), ("CHWN", "NHWC")]
    assert not [n for n in a64.nodes if n.op is OpKind.TRANSPOSE]
    assert sum(v == "CHWN" for v in lay.values()) == 5 and sum(v == "NHWC" for v in lay.values()) == 3
    # the same int8 outputs (relayouts are logically the identity)
    x = np.random.default_rng(5).integers(-128, 128, g8.t(g8.inputs[0]).shape).astype(np.int8)
    before, after = interpret(g8, {g8.inputs[0]: x}), interpret(a64, {a64.inputs[0]: x})
    for o in g8.outputs:
        np.testing.assert_array_equal(before[o], after[o])


def test_batched_chwn_runs_bit_exact(tmp_path, edgecc, need_board):
    """`batch: 8` end to end with CHWN chosen, on both AArch64 boards (one sweep)."""
    for b in ("aarch64", "aarch64-v80"):
        need_board(b)
    synthetic_model(tmp_path)
    (tmp_path / "b8.yaml").write_text("model: layout_case.onnx\ncalibration: data.npz\nverify: data.npz\nbatch: 8\n"
                                      "preprocess: {layout: NHWC}\n")
    out = tmp_path / "out"
    res = edgecc("run", tmp_path / "b8.yaml", "--board", "aarch64,aarch64-v80", "--out", out, "--quiet")
    assert res.code == 0, res.out + res.err
    for board in ("aarch64", "aarch64-v80"):
        r = json.loads((out / board / "report.json").read_text())
        assert r["status"] == "pass" and r["verification"]["bit_exact"] is True
        assert r["verification"]["samples"] == 2  # 16 images = 2 runs of a batch of 8
        assert r["batch"] == 8 and r["instructions_per_inference"] == pytest.approx(r["total_instructions"] / 8)
        chwn = [o for o in r["ops"] if o["layout"] == "CHWN"]
        assert {o["op_type"] for o in chwn} == {"Relayout", "Conv2D", "DepthwiseConv2D", "AveragePool2D"}
        assert all(o["kernel"].startswith("neon") for o in chwn)
        assert sum(o["op_type"] == "Relayout" for o in r["ops"]) == 2
        assert set(r["layouts"].values()) >= {"CHWN", "NHWC"}
