"""ONNX canonicalisation (toolchain/frontend/onnx_canonical.py) on the patterns real exporters write,
built with onnx.helper: for each, the canonical model has no Constant / Identity / Shape nodes left,
onnxruntime gives the same outputs on the canonical model as on the original file, and (where the
model is supported) our float frontend + interpreter matches onnxruntime."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder
from onnx import TensorProto, helper, numpy_helper

_OPS = str(Path(__file__).resolve().parents[1] / "ops")
if _OPS not in sys.path:
    sys.path.append(_OPS)

from _onnx_checks import check_float, model  # tests/ops, on the path above
from graph_builder import run_ort  # tests/unit, on the path _onnx_checks sets

from toolchain import progress
from toolchain.errors import UnsupportedModel
from toolchain.frontend.onnx_canonical import canonical_onnx, canonicalize
from toolchain.frontend.onnx_qdq import load_qdq

RNG = np.random.default_rng(11)
GONE = {"Constant", "Identity", "Shape", "Size", "Gather", "Unsqueeze", "Dropout", "Cast", "Slice", "Range",
        "ConstantOfShape", "Expand", "Concat"}


def const(name: str, value, dtype=np.float32, **attr_form) -> onnx.NodeProto:
    """A Constant node (value=tensor unless an attribute form like value_ints=[...] is given)."""
    if attr_form:
        return helper.make_node("Constant", [], [name], **attr_form)
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype)))


def canonical(m: onnx.ModelProto, tmp_path: Path, feeds: dict, shapes=None) -> tuple[onnx.ModelProto, list[str]]:
    """Save m, canonicalise the file's model; assert onnxruntime agrees on both and nothing of GONE is left."""
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    c, notes = canonicalize(onnx.load(str(path)), path, shapes)
    left = [n.op_type for n in c.graph.node if n.op_type in GONE]
    assert not left, left
    for want, got in zip(run_ort(m, feeds), run_ort(c, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    return c, notes


def ops(m: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in m.graph.node]


def inits(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def x_of(*shape: int) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal(shape).astype(np.float32)}


def test_clip_bounds_from_constant_nodes(tmp_path: Path) -> None:
    m = model([const("lo", 0.0), const("hi", 6.0), helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
              {"x": (1, 8)}, ["y"], opset=13)
    feeds = {"x": (RNG.standard_normal((1, 8)) * 5).astype(np.float32)}
    c, notes = canonical(m, tmp_path, feeds)
    assert ops(c) == ["Clip"] and inits(c) == {"lo": 0.0, "hi": 6.0} and notes == []
    check_float(m, feeds, tmp_path)


def test_identity_before_a_conv_bias_and_a_graph_output(tmp_path: Path) -> None:
    w, b = RNG.standard_normal((3, 2, 1, 1)).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("Identity", ["b0"], ["b1"]), helper.make_node("Conv", ["x", "w", "b1"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Identity", ["r"], ["y"])]
    m = model(nodes, {"x": (1, 2, 3, 3)}, ["y"], {"w": w, "b0": b}, opset=13)
    c, _ = canonical(m, tmp_path, x_of(1, 2, 3, 3))
    assert ops(c) == ["Conv", "Relu"]
    assert list(c.graph.node[0].input) == ["x", "w", "b0"]          # the bias read where it is
    assert list(c.graph.node[1].output) == ["y"] == [o.name for o in c.graph.output]  # output name kept
    check_float(m, x_of(1, 2, 3, 3), tmp_path)


def test_shape_gather_unsqueeze_concat_reshape_with_a_symbolic_batch(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Shape", ["r"], ["s"]),
             const("zero", 0, np.int64), helper.make_node("Gather", ["s", "zero"], ["g"], axis=0),
             const("ax", [0], np.int64), helper.make_node("Unsqueeze", ["g", "ax"], ["u"]),
             const("rest", [-1], np.int64), helper.make_node("Concat", ["u", "rest"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["y"])]
    m = model(nodes, {"x": ("batch", 4, 2, 2)}, ["y"], opset=13)
    c, notes = canonical(m, tmp_path, x_of(1, 4, 2, 2))
    assert ops(c) == ["Relu", "Reshape"] and inits(c)["shape"].tolist() == [1, -1]
    assert [d.dim_value for d in c.graph.input[0].type.tensor_type.shape.dim] == [1, 4, 2, 2]
    assert len(notes) == 1 and "symbolic batch axis 'batch' taken as 1" in notes[0]
    g, _ = check_float(m, x_of(1, 4, 2, 2), tmp_path)
    assert g.t(g.outputs[0]).shape == (1, 16)
    c4, notes4 = canonicalize(m, tmp_path / "m.onnx", {"x": (4, 4, 2, 2)})  # input_shapes choose the batch
    assert inits(c4)["shape"].tolist() == [4, -1] and notes4 == []


def test_paddle_style_cast_slice_range_constantofshape_expand_chain(tmp_path: Path) -> None:
    """Channel count from Shape -> Slice -> Squeeze -> Cast; Range / ConstantOfShape / Expand build
    per-channel constants of shape [1, C, 1, 1] from it."""
    bias = RNG.standard_normal((3, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             const("st", [1], np.int64), const("en", [2], np.int64),
             helper.make_node("Slice", ["s", "st", "en"], ["c1"]),                   # [C]
             helper.make_node("Squeeze", ["c1", "ax0"], ["c"]),                       # C
             helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
             helper.make_node("Range", ["f0", "cf", "f1"], ["ramp"]),                 # [0, 1, .., C-1]
             helper.make_node("Concat", ["one", "c1", "one", "one"], ["shape4"], axis=0),  # [1, C, 1, 1]
             helper.make_node("Reshape", ["ramp", "shape4"], ["ramp4"]),
             helper.make_node("ConstantOfShape", ["shape4"], ["twos"],
                              value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Expand", ["bias", "shape4"], ["bias4"]),
             helper.make_node("Mul", ["x", "ramp4"], ["a"]), helper.make_node("Add", ["a", "twos"], ["b"]),
             helper.make_node("Add", ["b", "bias4"], ["y"])]
    consts = {"ax0": np.array([0], np.int64), "one": np.array([1], np.int64), "f0": np.float32(0),
              "f1": np.float32(1), "bias": bias}
    m = model(nodes, {"x": (1, 3, 4, 4)}, ["y"], consts, opset=13)
    c, _ = canonical(m, tmp_path, x_of(1, 3, 4, 4))
    assert ops(c) == ["Mul", "Add", "Add"]
    values = inits(c)
    assert values["ramp4"].reshape(-1).tolist() == [0, 1, 2] and values["twos"].shape == (1, 3, 1, 1)
    np.testing.assert_array_equal(values["bias4"], bias.reshape(1, 3, 1, 1))
    assert set(values) == {"ramp4", "twos", "bias4"}  # the chain's own constants are dropped once used up
    check_float(m, x_of(1, 3, 4, 4), tmp_path)


@pytest.mark.parametrize("opset", [9, 10])
def test_old_opset_clip_attributes_are_upgraded(tmp_path: Path, opset: int) -> None:
    nodes = [helper.make_node("Clip", ["x"], ["c"], min=-1.0, max=0.5), helper.make_node("Dropout", ["c"], ["y"])]
    m = model(nodes, {"x": (1, 6)}, ["y"], opset=opset)
    m.ir_version = 4
    feeds = {"x": np.linspace(-2, 2, 6, dtype=np.float32).reshape(1, 6)}
    c, notes = canonical(m, tmp_path, feeds)
    assert [o.version for o in c.opset_import if o.domain in ("", "ai.onnx")] == [13]
    assert ops(c) == ["Clip"] and sorted(inits(c).values()) == [-1.0, 0.5]
    assert notes == [f"{tmp_path / 'm.onnx'}: opset {opset} upgraded to 13 with onnx.version_converter"]
    _, want = check_float(m, feeds, tmp_path)
    np.testing.assert_array_equal(want[0], np.float32([[-1, -1, -0.4, 0.4, 0.5, 0.5]]))


def test_dropout_in_inference_is_removed(tmp_path: Path) -> None:
    nodes = [const("ratio", 0.3), const("train", False, np.bool_),
             helper.make_node("Dropout", ["x", "ratio", "train"], ["d"]), helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("Dropout", ["r"], ["y"])]
    m = model(nodes, {"x": (1, 5)}, ["y"], opset=13)
    c, _ = canonical(m, tmp_path, x_of(1, 5))
    assert ops(c) == ["Relu"] and list(c.graph.node[0].input) == ["x"] and not c.graph.initializer
    check_float(m, x_of(1, 5), tmp_path)


def test_constant_attribute_forms(tmp_path: Path) -> None:
    nodes = [const("shape", None, value_ints=[1, -1]), const("k", None, value_float=0.25),
             const("bias", None, value_floats=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
             helper.make_node("Reshape", ["x", "shape"], ["f"]), helper.make_node("Mul", ["f", "k"], ["a"]),
             helper.make_node("Add", ["a", "bias"], ["y"])]
    m = model(nodes, {"x": (1, 2, 3)}, ["y"], opset=13)
    c, _ = canonical(m, tmp_path, x_of(1, 2, 3))
    values = inits(c)
    assert ops(c) == ["Reshape", "Mul", "Add"] and values["shape"].dtype == np.int64
    assert values["shape"].tolist() == [1, -1] and values["k"].dtype == np.float32 and values["k"] == 0.25
    check_float(m, x_of(1, 2, 3), tmp_path)
    strings = model([const("s", None, value_strings=[b"a"]), helper.make_node("Relu", ["x"], ["y"])],
                    {"x": (1, 2)}, ["y"], opset=13)
    with pytest.raises(UnsupportedModel, match=r"m\.onnx: node s \(Constant\): unsupported value kind"):
        canonicalize(strings, tmp_path / "m.onnx")


def test_qdq_nodes_survive_and_the_unused_constants_go(tmp_path: Path) -> None:
    b = ModelBuilder(13)
    x = b.dq(b.q(b.input("x", (1, 2, 4, 4)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w = b.dq(b.const("w", RNG.integers(-127, 128, (3, 2, 1, 1)), np.int8), 0.02, 0, "wd")
    b.nodes.append(helper.make_node("Conv", [x, w], ["c"]))
    b.dq(b.q("c", 0.1, 0, "cq"), 0.1, 0, "y")
    b.output("y")
    b.nodes.insert(0, const("unused", [6.0]))  # as onnxruntime's quantizer leaves them
    m = b.model()
    feeds = {"x": RNG.uniform(-3, 3, (1, 2, 4, 4)).astype(np.float32)}
    c, _ = canonical(m, tmp_path, feeds)
    assert ops(c) == [n.op_type for n in m.graph.node[1:]]  # every Q / DQ kept, in order
    assert "unused" not in inits(c)
    q = load_qdq(tmp_path / "m.onnx")
    assert len(q.graph.nodes) >= 1 and q.given  # the model's grids read from the kept Q / DQ nodes


def test_huge_outputs_stay_nodes(tmp_path: Path) -> None:
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["big"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("ReduceSum", ["big"], ["s"], keepdims=0), helper.make_node("Add", ["x", "s"], ["y"])]
    m = model(nodes, {"x": (1, 2)}, ["y"], {"shape": np.array([1024, 1025], np.int64)}, opset=13)
    c, _ = canonicalize(m, tmp_path / "m.onnx")
    assert ops(c) == ["ConstantOfShape", "ReduceSum", "Add"]  # 1M+ elements from 2: not materialised


def test_canonical_file_is_cached_by_content(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("n", 3)}, ["y"], opset=13), str(path))
    first = canonical_onnx(path)
    assert canonical_onnx(path) is first and canonical_onnx(path, {}) is first
    assert canonical_onnx(path, {"x": (2, 3)}) is not first
    assert len(first.notes) == 1 and "symbolic batch axis 'n' taken as 1" in first.notes[0]
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("n", 4)}, ["y"], opset=13), str(path))
    second = canonical_onnx(path)  # rewritten within the same millisecond: new bytes, new model
    assert second is not first and second.notes == first.notes
    assert [d.dim_value for d in second.model.graph.input[0].type.tensor_type.shape.dim] == [1, 4]


def test_a_settled_file_is_read_once_and_a_rewritten_one_again(tmp_path: Path, monkeypatch) -> None:
    """A file whose status says it was not written since it was hashed (its ctime older than
    SETTLED_NS then) is not read and hashed again for every caller; a file replaced since (here a new
    inode: a write in place moves the ctime past the settled one) is read again."""
    import toolchain.frontend.onnx_canonical as oc

    path = tmp_path / "m.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], {"x": (1, 3)}, ["y"], opset=13), str(path))
    monkeypatch.setattr(oc, "SETTLED_NS", -1)  # a file just written counts as settled here
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    first = oc.read_onnx(path)
    assert oc.read_onnx(path) is first and oc.canonical_onnx(path).notes == () and len(reads) == 1
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], {"x": (1, 4)}, ["y"], opset=13), str(tmp_path / "n"))
    (tmp_path / "n").replace(path)
    second = oc.read_onnx(path)
    assert len(reads) == 2 and second is not first
    assert [d.dim_value for d in second.graph.input[0].type.tensor_type.shape.dim] == [1, 4]


def test_notes_print_one_line_each_unless_quiet(capsys) -> None:
    progress.show_notes(["f.onnx: opset 9 upgraded to 13 with onnx.version_converter"])
    assert capsys.readouterr().err == "edgecc: note: f.onnx: opset 9 upgraded to 13 with onnx.version_converter\n"
    with progress.notes_shown(False):  # --quiet
        progress.show_notes(["anything"])
    assert capsys.readouterr().err == ""


def test_a_model_that_computes_nothing_is_refused_in_one_line(edgecc, tmp_path):
    """x -> Identity -> y canonicalises to no operation: exit 2 naming the file on every board (the
    Cortex-M harness had no op to mark), nothing written."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    from e2e_helpers import assert_rejected

    vi = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])]
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "t", vi,
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "id.onnx"))
    np.save(tmp_path / "x.npy", np.zeros((2, 1, 4), np.float32))
    res = edgecc("run", "--model", tmp_path / "id.onnx", "--board", "host", "--calibration", tmp_path / "x.npy",
                 "--out", tmp_path / "out", "--quiet")
    assert_rejected(res, tmp_path / "out", "id.onnx", "computes nothing")


def test_a_dynamic_inner_dimension_is_named_before_the_shape_nodes_it_leaves(tmp_path):
    """[1, 4, 'H', 6] feeding x.view(x.size(0), -1): the Shape chain cannot fold, and the error names
    the dynamic dimension and input_shapes (not `Shape (unknown op)`)."""
    from toolchain.errors import InputError
    from toolchain.frontend.onnx import load_onnx

    vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", 6])]
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]), helper.make_node("Concat", ["n1", "m1"], ["shp"], axis=0),
             helper.make_node("Reshape", ["x", "shp"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "i0"), numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.array([-1], np.int64), "m1")]
    g = helper.make_graph(nodes, "t", vi, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "dyn.onnx"))
    with pytest.raises(InputError, match=r"dynamic dimension .*input_shapes") as e:
        load_onnx(tmp_path / "dyn.onnx")
    assert "Shape" not in str(e.value)
    g2 = load_onnx(tmp_path / "dyn.onnx", {"x": (1, 4, 5, 6)})
    assert [n.op.value for n in g2.nodes][-1] == "Reshape" and g2.t(g2.outputs[0]).shape == (1, 120)
