"""Validation at the door, attribute values and operator schemas: the converters' shared helpers
(onnx.py spatial_attrs, Builder.axis / axes / ints / scalar) and the schema checks of
toolchain/frontend/onnx_validate.py refuse out-of-range attributes, wrongly typed or missing ones,
wrong input counts and malformed constant inputs in ONE line naming the file and the node; a model
whose shapes make onnx's C++ shape inference abort is refused instead of killing the process."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _validate_cases import X_SHAPE, assert_rejected, build, float_model, mutate, qdq_model, single, with_const
from onnx import helper, numpy_helper

from toolchain.errors import InputError
from toolchain.frontend.onnx_validate import validate


# ---- attribute values (converters' shared helpers) ---------------------------------------------
ATTRS = {
    "group 0": ({"group": 0}, ["conv1 (Conv)", "group 0"]),
    "group 3 on 2 channels": ({"group": 3}, ["conv1 (Conv)", "group 3"]),
    "short pads": ({"pads": [1, 1]}, ["conv1 (Conv)", "pads [1, 1]"]),
    "5 strides on 2-D": ({"strides": [1, 1, 1, 1, 1]}, ["conv1 (Conv)", "strides", "5 values"]),
    "kernel_shape vs weights": ({"kernel_shape": [5, 5]}, ["conv1 (Conv)", "kernel_shape [5, 5]"]),
    "dilations 0": ({"dilations": [0, 1]}, ["conv1 (Conv)", "dilations [0, 1]"]),
    "strides -1": ({"strides": [-1, 1]}, ["conv1 (Conv)", "strides [-1, 1]"]),
    "negative pads": ({"pads": [-1, 0, 0, 0]}, ["conv1 (Conv)", "pads"]),
}


@pytest.mark.parametrize("case", ATTRS, ids=list(ATTRS))
def test_conv_attribute_out_of_range_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    attrs, needles = ATTRS[case]
    build(tmp_path, edgecc, float_model(attrs), *needles)


@pytest.mark.parametrize("case", ["5 strides on 2-D", "group 0", "kernel_shape vs weights"])
def test_qdq_conv_attribute_out_of_range_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    attrs, needles = ATTRS[case]
    build(tmp_path, edgecc, qdq_model(**attrs), "qconv (Conv)", *needles[1:])


AXES = {
    "Softmax axis 4": (dict(op="Softmax", axis=4), "axis 4"),
    "Concat axis -5": (dict(op="Concat", axis=-5), "axis -5"),
    "Flatten axis 5": (dict(op="Flatten", axis=5), "axis 5"),
    "Transpose perm": (dict(op="Transpose", perm=[0, 1, 1, 3]), "perm [0, 1, 1, 3]"),
    "MaxPool no kernel_shape": (dict(op="MaxPool"), "kernel_shape"),
    "MaxPool strides 0": (dict(op="MaxPool", kernel_shape=[2, 2], strides=[0, 1]), "strides [0, 1]"),
    "AveragePool 3 kernel dims": (dict(op="AveragePool", kernel_shape=[2, 2, 2]), "kernel_shape [2, 2, 2]"),
    "DepthToSpace blocksize 0": (dict(op="DepthToSpace", blocksize=0), "blocksize 0"),
    "Unsqueeze repeated axes": (dict(op="Unsqueeze", axes=[0, 0]), "repeat"),
}


@pytest.mark.parametrize("case", AXES, ids=list(AXES))
def test_axis_like_attribute_out_of_range_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    attrs, needle = AXES[case]
    attrs = dict(attrs)
    op = attrs.pop("op")
    m = single(op, **attrs)
    if op == "Unsqueeze":  # opset 11: axes is an attribute
        m.opset_import[0].version = 11
    build(tmp_path, edgecc, m, f"n1 ({op})", needle)




# ---- operator schemas: attribute types, required attributes, input counts ------------------------
SCHEMAS = {
    "group as float": (lambda m: m.graph.node[0].attribute.append(helper.make_attribute("group", 1.5)),
                       ["conv1 (Conv)", "attribute group of type FLOAT"]),
    "pads as string": (lambda m: m.graph.node[0].attribute[0].CopyFrom(helper.make_attribute("pads", "1")),
                       ["conv1 (Conv)", "attribute pads of type STRING"]),
    "too many inputs": (lambda m: m.graph.node[1].input.extend(["x", "x"]), ["relu1 (Relu)", "3 inputs"]),
    "required input empty": (lambda m: m.graph.node[0].input.__setitem__(1, ""), ["conv1 (Conv)", "input 1 (W)"]),
    "op_type not a name": (lambda m: setattr(m.graph.node[1], "op_type", "Re\nlu"), ["op_type 'Re\\nlu'"]),
}


@pytest.mark.parametrize("case", SCHEMAS, ids=list(SCHEMAS))
def test_node_breaking_its_operator_schema_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    fn, needles = SCHEMAS[case]
    build(tmp_path, edgecc, mutate(fn), *needles)


def test_missing_required_attribute_is_refused(tmp_path: Path, edgecc) -> None:
    build(tmp_path, edgecc, single("Concat"), "n1 (Concat)", "no attribute axis")


# ---- constant inputs the spec types (Reshape shape, Slice starts, Resize scales) -----------------
CONST_INPUTS = {
    "Reshape two -1": (with_const("Reshape", np.array([-1, -1], np.int64)), "shape [-1, -1]"),
    "Reshape wrong count": (with_const("Reshape", np.array([1, 5], np.int64)), "32 elements"),
    "Reshape 0 past the rank": (with_const("Reshape", np.array([1, 32, 1, 1, 0], np.int64)), "shape [1, 32, 1, 1, 0]"),
    "Slice 2-D starts": (with_const("Slice", np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64)),
                         "starts input 'c0' of shape [1, 1]"),
    "Slice step 0": (with_const("Slice", np.array([0], np.int64), np.array([2], np.int64), np.array([2], np.int64),
                                 np.array([0], np.int64)), "step 0"),
    "Resize NaN scale": (with_const("Resize", np.array([1, 1, np.nan, 2], np.float32)), "scales [1.0, 1.0, nan"),
}


@pytest.mark.parametrize("case", CONST_INPUTS, ids=list(CONST_INPUTS))
def test_constant_input_breaking_the_spec_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    m, needle = CONST_INPUTS[case]
    op = m.graph.node[0].op_type
    build(tmp_path, edgecc, m, f"n1 ({op})", needle)


def test_shape_inference_abort_is_a_one_line_error(tmp_path: Path, edgecc) -> None:
    # Pad cropping 20 rows off a 4-row input makes a negative dimension; onnx's C++ Slice inference
    # then fails an assertion (SIGABRT), which used to kill the whole process
    m = with_const("Pad", np.array([0, 0, -20, 0, 0, 0, 0, 0], np.int64))
    m.graph.node[0].output[0] = "p"
    m.graph.node.append(helper.make_node("Slice", ["p", "s0", "s1", "s2"], ["y"], name="crop"))
    bounds = enumerate((0, 2, 2))  # starts, ends, axes
    m.graph.initializer.extend(numpy_helper.from_array(np.array([v], np.int64), f"s{k}") for k, v in bounds)
    build(tmp_path, edgecc, m, "shape inference aborts")


def test_input_named_like_an_attribute_it_never_was_is_refused(tmp_path: Path, edgecc) -> None:
    m = with_const("Pad", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    m.graph.node[0].attribute.append(helper.make_attribute("axes", [2, 3]))  # Pad-18 axes is an input
    path = tmp_path / "pad.onnx"
    onnx.save(m, str(path))
    np.save(tmp_path / "calib.npy", np.zeros((2, *X_SHAPE), np.float32))
    res = edgecc("build", "--model", path, "--calibration", tmp_path / "calib.npy", "--board", "host",
                 "--out", tmp_path / "out")
    assert_rejected(res, tmp_path / "out", "attribute(s) axes (Pad-", "n1", max_lines=3)


def test_sparse_initializer_and_bad_input_shapes_are_refused(tmp_path: Path) -> None:
    from toolchain.frontend.onnx_canonical import canonical_onnx

    m = float_model()
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "sp"),
                                       numpy_helper.from_array(np.zeros(1, np.int64), "idx"), [4])
    m.graph.sparse_initializer.append(sparse)
    with pytest.raises(InputError, match="sparse initializer 'sp'"):
        validate(m, "m.onnx")
    onnx.save(float_model(), str(tmp_path / "m.onnx"))
    with pytest.raises(InputError, match=r"input_shapes for 'x': \[1, 2, -4, 4\]"):
        canonical_onnx(tmp_path / "m.onnx", {"x": (1, 2, -4, 4)})


@pytest.mark.parametrize("op, attrs, needle", [("LeakyRelu", {"alpha": float("nan")}, "alpha = [nan]"),
                                               ("HardSigmoid", {"beta": float("inf")}, "beta = [inf]"),
                                               ("Elu", {"alpha": float("-inf")}, "alpha = [-inf]")])
def test_float_attribute_that_is_not_a_number_is_refused(tmp_path: Path, edgecc, op, attrs, needle) -> None:
    build(tmp_path, edgecc, single(op, **attrs), f"n1 ({op})", needle)


def test_clip6_infinite_bounds_stay_valid() -> None:
    m = single("Clip", min=float("-inf"), max=6.0)
    m.opset_import[0].version = 6
    validate(m, "clip6.onnx")


def test_batch_norm_parameters_of_the_wrong_shape_are_refused(tmp_path: Path, edgecc) -> None:
    m = single("BatchNormalization")
    m.graph.node[0].input.extend(["s", "b", "mean", "var"])
    for k, name in enumerate(["s", "b", "mean", "var"]):
        shape = (2, 1) if name == "mean" else (2,)
        m.graph.initializer.append(numpy_helper.from_array(np.full(shape, 1.0 + k, np.float32), name))
    build(tmp_path, edgecc, m, "n1 (BatchNormalization)", "mean of shape [2, 1] for 2 channels")


def test_empty_spatial_attribute_on_a_qdq_conv_is_refused(tmp_path: Path, edgecc) -> None:
    m = qdq_model().model()
    conv = next(n for n in m.graph.node if n.name == "qconv")
    conv.attribute[0].CopyFrom(helper.make_attribute("pads", [], attr_type=onnx.AttributeProto.INTS))
    build(tmp_path, edgecc, m, "qconv (Conv)", "pads [] has 0 values")
