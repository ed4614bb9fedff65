"""fold_batchnorm: BN after Conv / DepthwiseConv / FullyConnected is folded into the producer's
weights and bias; BN is kept when its input has another reader, is a graph output, or does not
come from a conv/FC. Before/expected structure plus numerical equivalence (architecture P7)."""
import math

import numpy as np
import pytest

from graph_builder import GraphBuilder, assert_equivalent, assert_same_structure, ops
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes
from toolchain.passes.fold_batchnorm import fold_batchnorm


def _bn_affine(graph, bn_out):
    """(a, shift) of the BN producing bn_out, computed here independently of the product code."""
    bn = graph.producer(bn_out)
    g, beta, mean, var = (graph.t(n).data.astype(np.float64) for n in bn.inputs[1:5])
    a = g / np.sqrt(var + bn.attrs.epsilon)
    return a, beta - a * mean


# ---- test graphs ----------------------------------------------------------------------------
def g_conv_bn(eps=1e-5):
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 6, 5, 3))
    return gb.build(gb.batchnorm(gb.conv(x, 4, 3, pads=(1, 1, 1, 1)), eps=eps))


def g_dw_bn(mult=1):
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 5, 5, 3))
    return gb.build(gb.batchnorm(gb.dwconv(x, 3, mult, pads=(1, 1, 1, 1))))


def g_fc_bn():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (2, 7))
    return gb.build(gb.batchnorm(gb.fc(x, 5)))


def g_two_readers():
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 4, 4, 2))
    c = gb.conv(x, 2, 1)
    return gb.build(gb.add(gb.batchnorm(c), c))  # the unnormalised conv output is read again


def g_conv_out_is_graph_output():
    gb = GraphBuilder(seed=5)
    x = gb.input("x", (1, 4, 4, 2))
    c = gb.conv(x, 2, 1)
    return gb.build(gb.batchnorm(c), c)


def g_non_foldable(producer):
    gb = GraphBuilder(seed=6)
    x = gb.input("x", (1, 4, 4, 3))
    src = {"input": lambda: x, "avgpool": lambda: gb.avgpool(x), "add": lambda: gb.add(x, x)}[producer]()
    return gb.build(gb.batchnorm(src))


def g_chain():
    gb = GraphBuilder(seed=7)
    x = gb.input("x", (1, 6, 6, 2))
    c1 = gb.batchnorm(gb.conv(x, 3, 3))
    return gb.build(gb.batchnorm(gb.conv(c1, 4, 1)))


def g_conv_bn_relu():
    gb = GraphBuilder(seed=9)
    x = gb.input("x", (1, 5, 5, 3))
    return gb.build(gb.relu(gb.batchnorm(gb.conv(x, 4, 3, pads=(1, 1, 1, 1)))))


GRAPHS = {
    "conv_bn": g_conv_bn, "conv_bn_eps": lambda: g_conv_bn(1e-2), "dw_bn": g_dw_bn, "dw3_bn": lambda: g_dw_bn(3),
    "fc_bn": g_fc_bn, "two_readers": g_two_readers, "graph_output": g_conv_out_is_graph_output,
    "bn_on_input": lambda: g_non_foldable("input"), "bn_after_pool": lambda: g_non_foldable("avgpool"),
    "bn_after_add": lambda: g_non_foldable("add"), "chain": g_chain, "conv_bn_relu": g_conv_bn_relu,
}


# ---- tests ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_bn_after_conv_is_folded(eps):
    before = g_conv_bn(eps)
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.CONV2D]
    assert after.outputs == before.outputs  # the BN's output name survives

    conv = before.nodes[0]
    a, shift = _bn_affine(before, before.outputs[0])
    w = before.t(conv.inputs[1]).data * a[:, None, None, None]  # OHWI: channel axis 0
    b = before.t(conv.inputs[2]).data * a + shift
    eb = GraphBuilder()
    expected = eb.build(eb.conv(eb.input("x", (1, 6, 5, 3)), 4, 3, pads=(1, 1, 1, 1), w=w, b=b))
    assert_same_structure(after, expected)
    assert_equivalent(before, after)


@pytest.mark.parametrize("mult", [1, 3])
def test_bn_after_depthwise_is_folded(mult):
    before = g_dw_bn(mult)
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.DEPTHWISE_CONV2D]
    dw, new = before.nodes[0], after.nodes[0]
    a, shift = _bn_affine(before, before.outputs[0])
    # depthwise weights are [1, KH, KW, C*mult]: the output channel is the last axis
    np.testing.assert_allclose(after.t(new.inputs[1]).data, before.t(dw.inputs[1]).data * a, rtol=1e-6)
    np.testing.assert_allclose(after.t(new.inputs[2]).data, before.t(dw.inputs[2]).data * a + shift,
                               rtol=1e-5, atol=1e-6)
    assert new.attrs == dw.attrs
    assert_equivalent(before, after)


def test_bn_after_fully_connected_is_folded():
    before = g_fc_bn()
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.FULLY_CONNECTED]
    fc = before.nodes[0]
    a, shift = _bn_affine(before, before.outputs[0])
    eb = GraphBuilder()
    ex = eb.input("x", (2, 7))
    wn = eb.const(before.t(fc.inputs[1]).data * a[:, None])  # [O, K]: channel axis 0
    bn = eb.const(before.t(fc.inputs[2]).data * a + shift)
    expected = eb.build(eb.node(OpKind.FULLY_CONNECTED, [ex, wn, bn], fc.attrs))
    assert_same_structure(after, expected)
    assert_equivalent(before, after)


def test_bn_not_folded_when_conv_output_has_two_readers():
    before = g_two_readers()
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.BATCH_NORM, OpKind.ADD]
    assert_same_structure(after, before)
    assert_equivalent(before, after)


def test_bn_not_folded_when_conv_output_is_graph_output():
    before = g_conv_out_is_graph_output()
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.BATCH_NORM]
    assert_equivalent(before, after)


@pytest.mark.parametrize("producer", ["input", "avgpool", "add"])
def test_bn_after_non_foldable_producer_is_kept(producer):
    before = g_non_foldable(producer)
    after = fold_batchnorm(before)
    assert ops(after) == ops(before)
    assert_same_structure(after, before)


def test_two_bns_in_a_chain_are_both_folded():
    before = g_chain()
    after = fold_batchnorm(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.CONV2D]
    assert_equivalent(before, after)


def test_fold_does_not_mutate_the_input_graph():
    before = g_conv_bn()
    w_before = before.t(before.nodes[0].inputs[1]).data.copy()
    fold_batchnorm(before)
    assert ops(before) == [OpKind.CONV2D, OpKind.BATCH_NORM]
    np.testing.assert_array_equal(before.t(before.nodes[0].inputs[1]).data, w_before)


def test_bn_not_folded_through_a_fused_activation():
    gb = GraphBuilder(seed=8)
    x = gb.input("x", (1, 4, 4, 2))
    before = gb.build(gb.batchnorm(gb.conv(x, 3, 1, act=(0.0, math.inf))))
    assert_equivalent(before, fold_batchnorm(before))


def test_conv_bn_relu_pipeline_becomes_one_conv():
    before = g_conv_bn_relu()
    after = run_passes(before, check=True)
    assert ops(after) == [OpKind.CONV2D]
    assert after.nodes[0].attrs.act == (0.0, math.inf)
    assert_equivalent(before, after)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_passes_verifies_and_preserves_semantics(name):
    before = GRAPHS[name]()
    after = run_passes(before, check=True)
    assert_equivalent(before, after)
