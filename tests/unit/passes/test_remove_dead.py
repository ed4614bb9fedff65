"""remove_dead: drop nodes whose outputs nobody reads and Reshapes that keep the shape (their
readers read the input instead); a no-op Reshape that is a graph output stays."""
import numpy as np
import pytest
from onnx import helper

from graph_builder import (GraphBuilder, assert_equivalent, assert_same_structure, load, onnx_model, ops,
                           outputs_in_order, run_ort)
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes
from toolchain.passes.remove_dead import remove_dead


def g_dead_branch():
    gb = GraphBuilder(seed=0)
    x = gb.input("x", (1, 4, 4, 3))
    gb.relu(gb.conv(x, 2, 1))           # nobody reads this branch
    return gb.build(gb.avgpool(x))


def g_identity_reshape():
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 4, 4, 3))
    return gb.build(gb.relu(gb.reshape(gb.conv(x, 2, 1), (1, 4, 4, 2))))


def g_identity_reshape_is_output():
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 6))
    return gb.build(gb.reshape(gb.relu(x), (1, 6)))


def g_real_reshape():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (1, 2, 2, 3))
    return gb.build(gb.fc(gb.reshape(x, (1, 12)), 4))


def g_two_identity_reshapes():
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 6))
    return gb.build(gb.relu(gb.reshape(gb.reshape(gb.relu(x), (1, 6)), (1, 6))))


GRAPHS = {"dead_branch": g_dead_branch, "identity_reshape": g_identity_reshape,
          "identity_reshape_output": g_identity_reshape_is_output, "real_reshape": g_real_reshape}


def test_unread_nodes_are_dropped():
    before = g_dead_branch()
    after = remove_dead(before)
    assert ops(after) == [OpKind.AVG_POOL2D]
    # the dead conv's weights go with it
    assert all(not t.is_const for t in after.tensors.values())
    eb = GraphBuilder()
    expected = eb.build(eb.avgpool(eb.input("x", (1, 4, 4, 3))))
    assert_same_structure(after, expected)
    assert_equivalent(before, after)


def test_identity_reshape_is_removed_and_readers_rewired():
    before = g_identity_reshape()
    after = remove_dead(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.CLAMP]
    assert after.nodes[1].inputs == after.nodes[0].outputs
    assert_equivalent(before, after)


def test_identity_reshape_that_is_a_graph_output_stays():
    before = g_identity_reshape_is_output()
    after = remove_dead(before)
    assert ops(after) == [OpKind.CLAMP, OpKind.RESHAPE]
    assert after.outputs == before.outputs
    assert_equivalent(before, after)


def test_shape_changing_reshape_stays():
    before = g_real_reshape()
    assert_same_structure(remove_dead(before), before)


def test_graph_inputs_and_outputs_are_kept_even_if_unused():
    gb = GraphBuilder()
    x, _ = gb.input("x", (1, 3)), gb.input("unused", (1, 2))
    after = remove_dead(gb.build(gb.relu(x)))
    assert after.inputs == ("x", "unused")
    assert "unused" in after.tensors


def test_two_consecutive_identity_reshapes():
    before = g_two_identity_reshapes()
    after = remove_dead(before)
    assert ops(after) == [OpKind.CLAMP, OpKind.CLAMP]
    assert_equivalent(before, after)


def test_onnx_two_noop_reshapes(tmp_path):
    shape = np.array([1, 6], np.int64)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "s"], ["a"]),
             helper.make_node("Reshape", ["a", "s"], ["b"]), helper.make_node("Relu", ["b"], ["y"])]
    model = onnx_model(nodes, {"x": (1, 6)}, ["y"], {"s": shape})
    after = run_passes(load(model, tmp_path), check=True)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 6)
    np.testing.assert_allclose(outputs_in_order(after, {"x": x})[0], run_ort(model, {"x": x})[0])


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_passes_verifies_and_preserves_semantics(name):
    before = GRAPHS[name]()
    after = run_passes(before, check=True)
    assert_equivalent(before, after)
