"""fold_constants: every node whose inputs are all constants is evaluated with its float
reference and replaced by a constant; a node that produces a graph output is kept."""
import numpy as np
import pytest

from graph_builder import GraphBuilder, assert_equivalent, assert_same_structure, ops
from toolchain.ir import DType
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes
from toolchain.passes.fold_constants import fold_constants


def g_clamp_const():
    gb = GraphBuilder(seed=0)
    x = gb.input("x", (1, 4, 4, 3))
    c = gb.clamp(gb.rand((1, 4, 4, 3), -2, 2), -0.5, 0.5)
    return gb.build(gb.add(x, c))


def g_const_chain():
    """const -> Reshape -> Transpose -> Clamp -> Add(x, .): the whole chain is constant."""
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 3, 2, 4))
    c = gb.rand((24,), -3, 3)
    c = gb.clamp(gb.transpose(gb.reshape(c, (1, 2, 4, 3)), (0, 3, 1, 2)), 0.0, 1.0)
    return gb.build(gb.add(x, c))


def g_const_conv():
    """A Conv whose data input is itself a constant (e.g. a learned positional map)."""
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 4, 4, 2))
    c = gb.conv(gb.rand((1, 6, 6, 3)), 2, 3)
    return gb.build(gb.add(x, c))


def g_const_output():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (1, 4))
    c = gb.clamp(gb.rand((1, 4)), 0.0, 0.5)
    return gb.build(gb.relu(x), c)


def g_no_consts():
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 4, 4, 3))
    return gb.build(gb.relu(gb.conv(x, 2, 3)))


GRAPHS = {"clamp_const": g_clamp_const, "chain": g_const_chain, "const_conv": g_const_conv,
          "const_output": g_const_output, "no_consts": g_no_consts}


def test_clamp_of_constant_is_folded():
    before = g_clamp_const()
    after = fold_constants(before)
    assert ops(after) == [OpKind.ADD]
    clamp = before.nodes[0]
    c = after.t(after.nodes[0].inputs[1])
    assert c.is_const and c.dtype == DType.FLOAT32
    np.testing.assert_array_equal(c.data, np.clip(before.t(clamp.inputs[0]).data, -0.5, 0.5))
    assert not any(t.is_const and t.name == clamp.inputs[0] for t in after.tensors.values())  # old const dropped

    eb = GraphBuilder()
    ex = eb.input("x", (1, 4, 4, 3))
    expected = eb.build(eb.add(ex, eb.const(np.clip(before.t(clamp.inputs[0]).data, -0.5, 0.5))))
    assert_same_structure(after, expected)
    assert_equivalent(before, after)


def test_constant_chain_is_folded_completely():
    before = g_const_chain()
    after = fold_constants(before)
    assert ops(after) == [OpKind.ADD]
    raw = before.t(before.nodes[0].inputs[0]).data
    want = np.clip(raw.reshape(1, 2, 4, 3).transpose(0, 3, 1, 2), 0.0, 1.0)
    np.testing.assert_array_equal(after.t(after.nodes[0].inputs[1]).data, want)
    assert_equivalent(before, after)


def test_conv_of_constant_is_folded():
    before = g_const_conv()
    after = fold_constants(before)
    assert ops(after) == [OpKind.ADD]
    assert after.t(after.nodes[0].inputs[1]).shape == (1, 4, 4, 2)
    assert_equivalent(before, after)


def test_node_producing_a_graph_output_is_kept():
    before = g_const_output()
    after = fold_constants(before)
    assert ops(after) == [OpKind.CLAMP, OpKind.CLAMP]
    assert_same_structure(after, before)


def test_graph_without_constant_nodes_is_unchanged():
    before = g_no_consts()
    assert_same_structure(fold_constants(before), before)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_passes_verifies_and_preserves_semantics(name):
    before = GRAPHS[name]()
    after = run_passes(before, check=True)
    assert_equivalent(before, after)
