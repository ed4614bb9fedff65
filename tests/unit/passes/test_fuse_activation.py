"""fuse_activation: a Clamp (ONNX Relu/Clip) becomes its producer's `act` range when nothing else
reads the unclamped value; consecutive clamps intersect. Structure plus numerical equivalence."""
import math

import pytest

from graph_builder import GraphBuilder, assert_equivalent, assert_same_structure, ops
from toolchain.ops.common import NO_ACT
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes
from toolchain.passes.fuse_activation import fuse_activation

INF = math.inf


def _producer(gb, kind, x, act=NO_ACT):
    """One fusable op of `kind` reading the 4-D input x (or its flattening for FC)."""
    if kind == "conv":
        return gb.conv(x, 3, 3, pads=(1, 1, 1, 1), act=act)
    if kind == "dwconv":
        return gb.dwconv(x, 3, 2, act=act)
    if kind == "fc":
        return gb.fc(gb.reshape(x, (1, 48)), 6, act=act)
    if kind == "add":
        return gb.add(x, x, act=act)
    if kind == "avgpool":
        return gb.avgpool(x, act=act)
    if kind == "maxpool":
        return gb.maxpool(x, act=act)
    raise AssertionError(kind)


KINDS = {"conv": OpKind.CONV2D, "dwconv": OpKind.DEPTHWISE_CONV2D, "fc": OpKind.FULLY_CONNECTED,
         "add": OpKind.ADD, "avgpool": OpKind.AVG_POOL2D, "maxpool": OpKind.MAX_POOL2D}


def g_single(kind, lo=0.0, hi=INF, seed=0):
    gb = GraphBuilder(seed=seed)
    x = gb.input("x", (1, 4, 4, 3))
    return gb.build(gb.clamp(_producer(gb, kind, x), lo, hi))


def g_double(kind, first, second):
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 4, 4, 3))
    return gb.build(gb.clamp(gb.clamp(_producer(gb, kind, x), *first), *second))


def g_two_readers():
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 4, 4, 3))
    c = gb.conv(x, 3, 1)
    return gb.build(gb.add(gb.relu(c), c))


def g_producer_is_graph_output():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (1, 4, 4, 3))
    c = gb.conv(x, 3, 1)
    return gb.build(gb.relu(c), c)


def g_not_fusable(src):
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 4, 4, 3))
    s = {"input": lambda: x, "reshape": lambda: gb.reshape(x, (1, 48)),
         "transpose": lambda: gb.transpose(x, (0, 3, 1, 2))}[src]()
    return gb.build(gb.clamp(s, -1.0, 1.0))


GRAPHS = {
    **{f"{k}_relu": (lambda k=k: g_single(k)) for k in KINDS},
    **{f"{k}_clip": (lambda k=k: g_single(k, -0.5, 0.5)) for k in KINDS},
    "relu_then_clip": lambda: g_double("conv", (0.0, INF), (-1.0, 0.7)),
    "two_readers": g_two_readers, "graph_output": g_producer_is_graph_output,
    **{f"after_{s}": (lambda s=s: g_not_fusable(s)) for s in ("input", "reshape", "transpose")},
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("lo,hi", [(0.0, INF), (0.0, 6.0), (-0.5, 0.5), (-INF, 0.25)])
def test_clamp_fuses_into_producer(kind, lo, hi):
    before = g_single(kind, lo, hi)
    after = fuse_activation(before)
    assert ops(after) == [k for k in ops(before) if k != OpKind.CLAMP]
    assert after.nodes[-1].op == KINDS[kind]
    assert after.nodes[-1].attrs.act == (lo, hi)
    assert after.outputs == before.outputs  # the clamp's output name is now the producer's
    assert after.nodes[-1].outputs == before.outputs
    assert_equivalent(before, after)


@pytest.mark.parametrize("first,second,expected", [
    ((0.0, INF), (-1.0, 6.0), (0.0, 6.0)),      # Relu then Clip(-1, 6) -> Relu6
    ((-1.0, 6.0), (0.0, INF), (0.0, 6.0)),      # Clip then Relu
    ((-2.0, 2.0), (-1.0, 3.0), (-1.0, 2.0)),    # overlapping clips
    ((0.0, 6.0), (0.0, 6.0), (0.0, 6.0)),       # idempotent
])
def test_ranges_intersect(first, second, expected):
    before = g_double("conv", first, second)
    after = fuse_activation(before)
    assert ops(after) == [OpKind.CONV2D]
    assert after.nodes[0].attrs.act == expected
    assert_equivalent(before, after)


def test_fusing_into_an_already_fused_producer_intersects():
    gb = GraphBuilder(seed=5)
    x = gb.input("x", (1, 4, 4, 3))
    before = gb.build(gb.clamp(gb.conv(x, 3, 1, act=(0.0, INF)), -3.0, 1.5))
    after = fuse_activation(before)
    assert ops(after) == [OpKind.CONV2D]
    assert after.nodes[0].attrs.act == (0.0, 1.5)
    assert_equivalent(before, after)


def test_expected_graph_structure():
    before = g_single("conv", 0.0, 6.0)
    after = fuse_activation(before)
    conv = before.nodes[0]
    eb = GraphBuilder()
    ex = eb.input("x", (1, 4, 4, 3))
    expected = eb.build(eb.conv(ex, 3, 3, pads=(1, 1, 1, 1), act=(0.0, 6.0), w=before.t(conv.inputs[1]).data,
                                b=before.t(conv.inputs[2]).data))
    assert_same_structure(after, expected)


def test_not_fused_when_producer_output_is_read_elsewhere():
    before = g_two_readers()
    after = fuse_activation(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.CLAMP, OpKind.ADD]
    assert after.nodes[0].attrs.act == NO_ACT
    assert_equivalent(before, after)


def test_not_fused_when_producer_output_is_a_graph_output():
    before = g_producer_is_graph_output()
    after = fuse_activation(before)
    assert ops(after) == [OpKind.CONV2D, OpKind.CLAMP]
    assert after.nodes[0].attrs.act == NO_ACT
    assert_equivalent(before, after)


@pytest.mark.parametrize("src", ["input", "reshape", "transpose"])
def test_not_fused_into_non_fusable_producer(src):
    before = g_not_fusable(src)
    after = fuse_activation(before)
    assert_same_structure(after, before)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_passes_verifies_and_preserves_semantics(name):
    before = GRAPHS[name]()
    after = run_passes(before, check=True)
    assert OpKind.CLAMP not in ops(after) or name in ("two_readers", "graph_output", "after_input",
                                                      "after_reshape", "after_transpose")
    assert_equivalent(before, after)
