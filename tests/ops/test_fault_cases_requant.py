"""Requantization fault cases of ../shared/design/int8-fault-cases.md, each with the right value as the
assertion plus neighbours: BL-25 (Concat of inputs with different quantization), BL-26 (residual Add
with different scales), BL-27 (ReLU clamps at the zero point). Values are checked on the numpy
reference, on the portable C kernels (ctypes) and, for BL-25, against TFLM's QUANTIZE. Rounding:
TFLM's (gemmlowp double rounding); where a case lists the ORT half-to-even value as well, the test
says which one we give and why."""
from __future__ import annotations

import numpy as np
import pytest
from _fault_cases import I8, both, make_graph, qp, tflm_oracle
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.ir import Node, Tensor
from toolchain.ops.add import AddAttrs, add_s8
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import NO_ACT
from toolchain.ops.concat import ConcatAttrs, concat_s8, requant_params
from toolchain.ops.fixed_point import add_params
from toolchain.ops.registry import OpKind

tflm = tflm_oracle("bl25_a", "bl25_b")


# ---- BL-25: Concat of inputs with different quantization --------------------------------------------
@pytest.mark.parametrize("f32, want", [(True, [3, -2, 8, 4, 2, 5, 7, 10]), (False, [3, -2, 8, 4, 3, 5, 8, 10])])
def test_bl25_concat_requantizes_each_input(tflm, portable_lib, f32, want):
    """a [5, -5, 15, 7] at scale 0.1 and b [1, 2, 3, 4] at 0.5 into scale 0.2, each input requantized
    with TFLite's integer Requantize (the declared `tflm` rounding). With the float32 scales a model file
    holds, b's ratio 0.5 / 0.2f is 2.4999999627 < 2.5, so 2.5 -> 2 and 7.5 -> 7, exactly TFLM's QUANTIZE
    (int8 -> int8) of the same numbers; with exact decimal scales the ties go up (gemmlowp rounds the
    high multiply toward +inf): [3, -2, 8, 4, 3, 5, 8, 10]. For reference, the fault-case file lists
    ORT half-to-even [2, -2, 8, 4, 2, 5, 8, 10] and TFLite's float path [3, -3, 8, 4, 3, 5, 8, 10];
    TFLM's own CONCATENATION would copy the bytes (BL-25, our documented exception)."""
    a, b = np.array([5, -5, 15, 7], np.int8), np.array([1, 2, 3, 4], np.int8)
    sc = (lambda v: float(np.float32(v))) if f32 else float
    ts = [Tensor("a", (4,), I8, qp(sc(0.1), 0)), Tensor("b", (4,), I8, qp(sc(0.5), 0)), Tensor("y", (8,), I8, qp(sc(0.2), 0))]
    g = make_graph([Node("c", OpKind.CONCAT, ("a", "b"), ("y",), ConcatAttrs(0))], ts, ["a", "b"], ["y"])
    got = both(portable_lib, g, {"a": a, "b": b})
    assert got.tolist() == want
    if f32:
        assert got.tolist() == np.concatenate([tflm("bl25_a")[2], tflm("bl25_b")[2]]).tolist()


def test_bl25_neighbours_channel_concat_and_a_shared_qparams_input(tmp_path, portable_lib):
    """4-D NCHW concat on the channel axis (axis 3 in NHWC), one input sharing the output's qparams
    (a plain copy) and one with its own."""
    rng = np.random.default_rng(25)
    p_same = requant_params(qp(0.2, 3), qp(0.2, 3))
    x = rng.integers(-128, 128, (1, 2, 2, 3)).astype(np.int8)
    assert np.array_equal(concat_s8([x, x], 3, [p_same, p_same]), np.concatenate([x, x], 3))
    convs = [helper.make_node("Conv", ["a", "wa"], ["ca"]), helper.make_node("Conv", ["b", "wb"], ["cb"])]
    inits = {"wa": rng.uniform(-1, 1, (3, 3, 1, 1)).astype(np.float32), "wb": rng.uniform(-1, 1, (5, 5, 1, 1)).astype(np.float32)}
    m = model([*convs, helper.make_node("Concat", ["ca", "cb"], ["y"], axis=1)], {"a": (1, 3, 4, 4), "b": (1, 5, 4, 4)},
              ["y"], inits)
    calib = {"a": rng.uniform(-1, 1, (3, 1, 3, 4, 4)).astype(np.float32),
             "b": rng.uniform(-4, 4, (3, 1, 5, 4, 4)).astype(np.float32)}
    g, _ = check_float(m, {k: v[0] for k, v in calib.items()}, tmp_path)
    (node,) = [n for n in g.nodes if n.op == OpKind.CONCAT]
    assert node.attrs.axis == 3
    check_int8(g, calib, portable_lib, max_lsb=2.0)   # conv, then concat: two roundings


# ---- BL-26: residual Add with different scales -----------------------------------------------------
A26 = np.array([-128, -50, 0, 37, 100, 127], np.int8)
B26 = np.array([127, 60, -3, -20, 10, -128], np.int8)


@pytest.mark.parametrize("act, want", [(NO_ACT, [121, 68, -6, -1, 126, -124]), ((0.0, np.inf), [121, 68, 0, 0, 126, 0])])
def test_bl26_add_of_different_scales(act, want, portable_lib):
    ts = [Tensor("a", (6,), I8, qp(0.052, 0)), Tensor("b", (6,), I8, qp(0.099, 0)), Tensor("y", (6,), I8, qp(0.049, 0))]
    g = make_graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs(act))], ts, ["a", "b"], ["y"])
    assert both(portable_lib, g, {"a": A26, "b": B26}).tolist() == want


def test_bl26_neighbours_zero_points_and_broadcast(portable_lib):
    rng = np.random.default_rng(26)
    for za, zb, zo in [(-128, 127, 0), (17, -3, -40), (127, -128, 127)]:
        a = rng.integers(-128, 128, (1, 3, 4, 5)).astype(np.int8)
        b = rng.integers(-128, 128, (1, 1, 1, 5)).astype(np.int8)     # [1,C,1,1] of ONNX, NHWC here
        ts = [Tensor("a", a.shape, I8, qp(0.052, za)), Tensor("b", b.shape, I8, qp(0.099, zb)),
              Tensor("y", a.shape, I8, qp(0.049, zo))]
        g = make_graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs(NO_ACT))], ts, ["a", "b"], ["y"])
        got = both(portable_lib, g, {"a": a, "b": b}).astype(int)
        real = ((a.astype(float) - za) * 0.052 + (b.astype(float) - zb) * 0.099) / 0.049 + zo
        assert np.max(np.abs(got - np.clip(np.round(real), -128, 127))) <= 1
        assert np.array_equal(got, add_s8(a, b, add_params(0.052, za, 0.099, zb, 0.049, zo)))


# ---- BL-27: ReLU clamps at the zero point -------------------------------------------------------------
@pytest.mark.parametrize("lo, hi, want", [(0.0, np.inf, [-20, -20, -20, -10, 0, 127]),
                                          (-1.0, 1.0, [-30, -30, -20, -10, -10, -10]),
                                          (0.0, 6.0, [-20, -20, -20, -10, 0, 40])])
def test_bl27_clamp_at_the_zero_point(lo, hi, want, portable_lib):
    ts = [Tensor("x", (6,), I8, qp(0.1, -20)), Tensor("y", (6,), I8, qp(0.1, -20))]
    g = make_graph([Node("r", OpKind.CLAMP, ("x",), ("y",), ClampAttrs(lo, hi))], ts, ["x"], ["y"])
    assert both(portable_lib, g, {"x": np.array([-128, -30, -20, -10, 0, 127], np.int8)}).tolist() == want


def test_bl27_add_with_fused_relu_and_onnx_relu(tmp_path, portable_lib):
    """Add + Relu (fused: bounds from the output qparams) and a standalone Relu/Clip after a conv."""
    ts = [Tensor("a", (4,), I8, qp(0.1, -20)), Tensor("b", (4,), I8, qp(0.1, -20)), Tensor("y", (4,), I8, qp(0.1, -20))]
    g = make_graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs((0.0, np.inf)))], ts, ["a", "b"], ["y"])
    got = both(portable_lib, g, {"a": np.array([-30, -20, -10, 0], np.int8), "b": np.array([-20, -30, -20, 0], np.int8)})
    assert got.tolist() == [-20, -20, -10, 20]
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (1, 8)}, ["y"],
              {"lo": np.array(-1, np.float32), "hi": np.array(1, np.float32)})
    calib = {"x": np.linspace(-3, 0.5, 16, dtype=np.float32).reshape(2, 1, 8)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    q = check_int8(g, calib, portable_lib, max_lsb=0.5)
    assert q.t(q.inputs[0]).quant.zp != 0
