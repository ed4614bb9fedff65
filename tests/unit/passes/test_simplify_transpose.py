"""simplify_transpose: back-to-back Transposes compose (and cancel), a Transpose that moves only
size-1 axes becomes a Reshape; a model that starts with its own NHWC->NCHW Transpose ends up
with no Transpose at all. Structure plus numerical equivalence."""
import numpy as np
import pytest
from onnx import helper

from graph_builder import GraphBuilder, assert_equivalent, load, onnx_model, ops, outputs_in_order, run_ort
from toolchain.ops.registry import OpKind
from toolchain.ops.shape_ops import ReshapeAttrs, TransposeAttrs
from toolchain.passes import run_passes
from toolchain.passes.remove_dead import remove_dead
from toolchain.passes.simplify_transpose import simplify_transpose

NHWC, NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


def g_cancel():
    gb = GraphBuilder(seed=0)
    x = gb.input("x", (1, 5, 6, 3))
    t = gb.transpose(gb.transpose(x, NCHW), NHWC)
    return gb.build(gb.conv(t, 4, 3))


def g_compose():
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (2, 3, 4, 5))
    return gb.build(gb.transpose(gb.transpose(x, (0, 2, 3, 1)), (0, 2, 1, 3)))


def g_unit_axes():
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 1, 1, 8))
    return gb.build(gb.relu(gb.transpose(x, NCHW)))  # [1,1,1,8] -> [1,8,1,1]: same bytes


def g_two_readers():
    gb = GraphBuilder(seed=3)
    x = gb.input("x", (1, 2, 3, 4))
    t = gb.transpose(x, NCHW)
    return gb.build(gb.add(gb.transpose(t, NHWC), x), t)


def g_real_transpose():
    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 2, 3, 4))
    return gb.build(gb.relu(gb.transpose(x, NCHW)))


GRAPHS = {"cancel": g_cancel, "compose": g_compose, "unit_axes": g_unit_axes, "two_readers": g_two_readers,
          "real_transpose": g_real_transpose}


def test_inverse_transposes_cancel():
    before = g_cancel()
    after = simplify_transpose(before)
    assert OpKind.TRANSPOSE not in ops(after)
    # the composed identity permutation is left as a no-op Reshape that remove_dead drops
    assert ops(after) == [OpKind.RESHAPE, OpKind.CONV2D]
    assert after.nodes[0].inputs == ("x",)
    assert ops(remove_dead(after)) == [OpKind.CONV2D]
    assert remove_dead(after).nodes[0].inputs[0] == "x"
    assert_equivalent(before, after)
    assert_equivalent(before, remove_dead(after))


def test_back_to_back_transposes_compose_into_one():
    before = g_compose()
    after = simplify_transpose(before)
    assert ops(after) == [OpKind.TRANSPOSE]
    node = after.nodes[0]
    assert node.inputs == ("x",)
    # x[2,3,4,5] -(0,2,3,1)-> [2,4,5,3] -(0,2,1,3)-> [2,5,4,3]: one transpose with perm (0,3,2,1)
    assert node.attrs == TransposeAttrs((0, 3, 2, 1))
    assert after.t(node.outputs[0]).shape == (2, 5, 4, 3)
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(outputs_in_order(after, {"x": x})[0], x.transpose(0, 3, 2, 1))
    assert_equivalent(before, after)


@pytest.mark.parametrize("shape,perm,is_view", [
    ((1, 1, 1, 8), NCHW, True),
    ((1, 8, 1, 1), NHWC, True),
    ((1, 1, 5, 1), (0, 3, 1, 2), True),
    ((1, 3, 1, 7), (0, 2, 1, 3), True),    # the 1 moves past a 3: big axes keep their order
    ((1, 3, 1, 7), (0, 3, 2, 1), False),   # 7 and 3 swap
    ((1, 2, 3, 4), NCHW, False),
    ((2, 1, 3), (1, 0, 2), True),
])
def test_transpose_of_unit_axes_becomes_reshape(shape, perm, is_view):
    gb = GraphBuilder()
    x = gb.input("x", shape)
    before = gb.build(gb.relu(gb.transpose(x, perm)))
    after = simplify_transpose(before)
    if is_view:
        assert ops(after) == [OpKind.RESHAPE, OpKind.CLAMP]
        out_shape = tuple(shape[p] for p in perm)
        assert after.nodes[0].attrs == ReshapeAttrs(out_shape)
    else:
        assert ops(after) == [OpKind.TRANSPOSE, OpKind.CLAMP]
    assert_equivalent(before, after)


def test_not_composed_when_first_output_has_another_reader():
    before = g_two_readers()
    after = simplify_transpose(before)
    assert ops(after) == [OpKind.TRANSPOSE, OpKind.TRANSPOSE, OpKind.ADD]
    assert_equivalent(before, after)


def test_real_transpose_is_kept():
    before = g_real_transpose()
    assert ops(simplify_transpose(before)) == ops(before)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_passes_verifies_and_preserves_semantics(name):
    before = GRAPHS[name]()
    after = run_passes(before, check=True)
    assert_equivalent(before, after)


# ---- through the ONNX frontend --------------------------------------------------------------
def _nhwc_model():
    """An ONNX model whose graph input is NHWC: Transpose -> Conv -> Relu -> Transpose back."""
    rng = np.random.default_rng(5)
    inits = {"W": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
             "B": rng.standard_normal(4).astype(np.float32)}
    nodes = [helper.make_node("Transpose", ["x"], ["xc"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xc", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]
    return onnx_model(nodes, {"x": (1, 6, 7, 3)}, ["y"], inits)


def test_onnx_model_starting_with_nhwc_transpose_has_no_transpose_after_passes(tmp_path):
    model = _nhwc_model()
    g = load(model, tmp_path)
    assert OpKind.TRANSPOSE in ops(g)
    after = run_passes(g, check=True)
    assert OpKind.TRANSPOSE not in ops(after)
    # the fused Conv does all the work; the only other node allowed is the no-op Reshape that keeps
    # the ONNX output name (a view: no kernel, no copy)
    assert [k for k in ops(after) if k != OpKind.RESHAPE] == [OpKind.CONV2D]
    for n in after.nodes[1:]:
        assert after.t(n.inputs[0]).shape == after.t(n.outputs[0]).shape
    assert after.nodes[0].attrs.act == (0.0, float("inf"))
    x = np.random.default_rng(6).standard_normal((1, 6, 7, 3)).astype(np.float32)
    np.testing.assert_allclose(outputs_in_order(after, {"x": x})[0], run_ort(model, {"x": x})[0], atol=1e-4)


def test_onnx_flatten_after_global_pool_leaves_only_views(tmp_path):
    """GlobalAveragePool -> Flatten: the NHWC->NCHW transpose of a [1,1,1,C] value moves only unit
    axes, so it becomes a Reshape (no copy kernel)."""
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "W"], ["y"], transB=1)]
    model = onnx_model(nodes, {"x": (1, 5, 4, 4)}, ["y"], {"W": rng.standard_normal((3, 5)).astype(np.float32)})
    after = run_passes(load(model, tmp_path), check=True)
    # the input transpose NCHW->NHWC is real work; the one after the pool is not
    assert ops(after).count(OpKind.TRANSPOSE) == 1 and ops(after)[0] == OpKind.TRANSPOSE
    x = rng.standard_normal((1, 5, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(outputs_in_order(after, {"x": x})[0], run_ort(model, {"x": x})[0], atol=1e-4)
