"""toolchain.ir.verify: graph invariants (defined-before-use, single producer, inferred shapes,
produced outputs); the error names the pass it ran after."""
import math

import numpy as np
import pytest

from graph_builder import GraphBuilder
from toolchain.ir import DType, Graph, Node, Tensor
from toolchain.ir.verify import verify as _verify
from toolchain.ops.registry import opdef
from toolchain.ops.add import AddAttrs
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import ReshapeAttrs

F = DType.FLOAT32
RELU = ClampAttrs(0.0, math.inf)


def verify(graph, after=""):
    return _verify(graph, lambda node, g: opdef(node).infer_shapes(node, g), after=after)


def _t(name, shape=(1, 4), data=None):
    return Tensor(name, shape, F, None, data)


def test_a_good_graph_passes():
    gb = GraphBuilder()
    x = gb.input("x", (1, 6, 6, 3))
    h = gb.relu(gb.conv(x, 4, 3))
    h = gb.add(h, gb.conv(h, 4, 1))
    g = gb.build(gb.softmax(gb.fc(gb.reshape(gb.maxpool(h), (1, 16)), 5)))
    verify(g)
    verify(g, after="test")


def test_reading_an_undefined_tensor():
    ts = {n: _t(n) for n in ("x", "ghost", "y")}
    g = Graph("g", (Node("r", OpKind.CLAMP, ("ghost",), ("y",), RELU),), ts, ("x",), ("y",))
    with pytest.raises(AssertionError, match="r reads 'ghost' before it is defined"):
        verify(g, after="my_pass")
    with pytest.raises(AssertionError, match="after my_pass"):
        verify(g, after="my_pass")


def test_reading_a_tensor_before_its_producer_runs():
    ts = {n: _t(n) for n in ("x", "a", "y")}
    nodes = (Node("second", OpKind.CLAMP, ("a",), ("y",), RELU), Node("first", OpKind.CLAMP, ("x",), ("a",), RELU))
    with pytest.raises(AssertionError, match="second reads 'a' before it is defined"):
        verify(Graph("g", nodes, ts, ("x",), ("y",)))


def test_tensor_with_two_producers():
    ts = {n: _t(n) for n in ("x", "y")}
    nodes = (Node("a", OpKind.CLAMP, ("x",), ("y",), RELU), Node("b", OpKind.CLAMP, ("x",), ("y",), RELU))
    with pytest.raises(AssertionError, match="'y' has two producers"):
        verify(Graph("g", nodes, ts, ("x",), ("y",)))


def test_node_overwriting_a_graph_input_or_constant():
    ts = {"x": _t("x"), "c": _t("c", data=np.zeros((1, 4), np.float32))}
    for target in ("x", "c"):
        g = Graph("g", (Node("a", OpKind.CLAMP, ("x",), (target,), RELU),), ts, ("x",), (target,))
        with pytest.raises(AssertionError, match="two producers"):
            verify(g)


def test_wrong_output_shape():
    ts = {"x": _t("x", (1, 4)), "y": _t("y", (1, 5))}
    g = Graph("g", (Node("r", OpKind.CLAMP, ("x",), ("y",), RELU),), ts, ("x",), ("y",))
    with pytest.raises(AssertionError, match=r"r output shapes \[\(1, 5\)\] != inferred \[\(1, 4\)\]"):
        verify(g)


def test_wrong_conv_output_shape():
    gb = GraphBuilder()
    x = gb.input("x", (1, 6, 6, 3))
    g = gb.build(gb.conv(x, 4, 3, stride=(2, 2)))
    bad = g.with_tensor(Tensor(g.outputs[0], (1, 3, 3, 4), F))  # stride 2, no pad: 2x2, not 3x3
    with pytest.raises(AssertionError, match="inferred"):
        verify(bad)


def test_wrong_reshape_target_shape():
    ts = {"x": _t("x", (1, 4)), "y": _t("y", (2, 2))}
    g = Graph("g", (Node("r", OpKind.RESHAPE, ("x",), ("y",), ReshapeAttrs((4, 1))),), ts, ("x",), ("y",))
    with pytest.raises(AssertionError, match="inferred"):
        verify(g)


def test_mismatched_input_shapes_raise_from_shape_inference():
    ts = {"a": _t("a", (1, 4)), "b": _t("b", (1, 5)), "y": _t("y", (1, 4))}
    g = Graph("g", (Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs()),), ts, ("a", "b"), ("y",))
    with pytest.raises((AssertionError, ValueError)):
        verify(g)


def test_output_never_produced():
    ts = {"x": _t("x"), "y": _t("y"), "z": _t("z")}
    g = Graph("g", (Node("r", OpKind.CLAMP, ("x",), ("y",), RELU),), ts, ("x",), ("z",))
    with pytest.raises(AssertionError, match="output 'z' is never produced"):
        verify(g)


def test_graph_input_may_be_an_output_and_constants_are_defined():
    ts = {"x": _t("x"), "c": _t("c", data=np.ones((1, 4), np.float32)), "y": _t("y")}
    g = Graph("g", (Node("add", OpKind.ADD, ("x", "c"), ("y",), AddAttrs()),), ts, ("x",), ("y", "x"))
    verify(g)
