"""Requantization fault cases of ../shared/design/int8-fault-cases.md, each with the right value as the
assertion plus neighbours: BL-25 (Concat of inputs with different quantization), BL-26 (residual Add
with different scales), BL-27 (ReLU clamps at the zero point). Values are checked on the numpy
reference and on the portable C kernels (ctypes). Rounding: TFLM's (gemmlowp double rounding); where a
case lists the ORT half-to-even value as well, the test says which one we give and why. BL-25 is the
exception the file itself declares: Concat gives the file's values in both modes (half away under
`tflm`, half to even under `onnx`), not TFLM's QUANTIZE bytes."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from _fault_cases import I8, both, make_graph, qp, tflm_oracle
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.ir import Node, Tensor
from toolchain.ops.add import AddAttrs, add_s8
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import NO_ACT
from toolchain.ops.concat import COPY, ConcatAttrs, concat_params, concat_s8, float32_ratio
from toolchain.ops.fixed_point import add_params
from toolchain.ops.registry import OpKind

tflm = tflm_oracle("bl25_a", "bl25_b")


def _concat_graph(qa, qb, qy, shapes=((4,), (4,), (8,)), axis=0, rounding="tflm"):
    ts = [Tensor(n, s, I8, q) for n, s, q in zip("aby", shapes, (qa, qb, qy), strict=True)]
    g = make_graph([Node("c", OpKind.CONCAT, ("a", "b"), ("y",), ConcatAttrs(axis))], ts, ["a", "b"], ["y"])
    return replace(g, meta={**g.meta, "rounding": rounding})


# ---- BL-25: Concat of inputs with different quantization --------------------------------------------
@pytest.mark.parametrize("f32", [True, False])
@pytest.mark.parametrize("rounding, want", [("onnx", [2, -2, 8, 4, 2, 5, 8, 10]), ("tflm", [3, -3, 8, 4, 3, 5, 8, 10])])
def test_bl25_concat_requantizes_each_input(portable_lib, f32, rounding, want):
    """a [5, -5, 15, 7] at scale 0.1 and b [1, 2, 3, 4] at 0.5 into scale 0.2: the fault-case file's
    values, ORT half-to-even [2, -2, 8, 4, 2, 5, 8, 10] under `onnx` and half away from zero (TFLite's
    float path) [3, -3, 8, 4, 3, 5, 8, 10] under `tflm`, on the interpreter and the C kernel. The ratio
    is divided in float32 (0.5 / 0.2f is exactly 2.5 there, 2.4999999627 in double) and its product
    rounded exactly in integers, so the ties at +-2.5 and 7.5 are ties, with decimal or float32 scales
    alike. TFLM is not the oracle (its CONCATENATION refuses or copies; issue 4 takes the file's values)."""
    a, b = np.array([5, -5, 15, 7], np.int8), np.array([1, 2, 3, 4], np.int8)
    sc = (lambda v: float(np.float32(v))) if f32 else float
    g = _concat_graph(qp(sc(0.1), 0), qp(sc(0.5), 0), qp(sc(0.2), 0), rounding=rounding)
    assert both(portable_lib, g, {"a": a, "b": b}).tolist() == want


def test_bl25_tflm_quantize_differs_from_the_concat_rescale(tflm, portable_lib):
    """TFLM's int8 -> int8 QUANTIZE of the same numbers (Q31 multiplier of the double ratio, gemmlowp
    double rounding) gives [3, -2, 8, 4, 2, 5, 7, 10]; our standalone Requantize keeps exactly that under
    `tflm` (TFLM is its oracle, test_quantize_ops.py) while Concat takes the file's values above."""
    got = np.concatenate([tflm("bl25_a")[2], tflm("bl25_b")[2]]).tolist()
    assert got == [3, -2, 8, 4, 2, 5, 7, 10]


@pytest.mark.parametrize("rounding, want", [
    # (q - zp_in) * 0.5 = -3.5 -2.5 -1.5 -0.5 0.5 1.5 2.5 3.5 ; then + zp_out 4
    ("onnx", [0, 2, 2, 4, 4, 6, 6, 8]), ("tflm", [0, 1, 2, 3, 5, 6, 7, 8])])
def test_bl25_neighbours_negative_ties_and_zero_points(portable_lib, rounding, want):
    """Every tie from -3.5 to 3.5, non-zero zero points on both sides (zp_in -3, zp_out 4): to even under
    `onnx`, away from zero (symmetric) under `tflm`; the second input shares the output's qparams and
    is copied byte for byte (the C kernel's memcpy path), including -128 and 127."""
    a = np.arange(-10, 6, 2).astype(np.int8)                      # q - (-3) = -7 .. 7 step 2
    b = np.array([-128, -1, 0, 127], np.int8)
    g = _concat_graph(qp(0.1, -3), qp(0.2, 4), qp(0.2, 4), ((8,), (4,), (12,)), rounding=rounding)
    got = both(portable_lib, g, {"a": a, "b": b}).tolist()
    assert got == want + [-128, -1, 0, 127]


def test_bl25_neighbours_ratio_representation():
    """The float32 ratio as m * 2^-k: exact ties kept, copies recognised, saturating and vanishing ratios."""
    assert float32_ratio(float(np.float32(0.5)), float(np.float32(0.2))) == (5, 1)       # 2.5 exactly
    assert float32_ratio(0.1, 0.2) == (1, 1)                                              # 0.5
    assert float32_ratio(0.0627, 0.0627) == COPY
    assert float32_ratio(1e9, 1.0) == (1 << 24, 0)            # every non-zero difference saturates
    assert float32_ratio(1e-20, 1.0) == (0, 0)                # every difference rounds to 0
    m, k = float32_ratio(0.3, 0.7)
    assert m * 2.0**-k == float(np.float32(0.3) / np.float32(0.7)) and m % 2 == 1


def test_bl25_neighbours_channel_concat_and_a_shared_qparams_input(tmp_path, portable_lib):
    """4-D NCHW concat on the channel axis (axis 3 in NHWC), one input sharing the output's qparams
    (a plain copy) and one with its own: exact values on the interpreter and the C kernel, both modes,
    then an ONNX model through the frontend."""
    rng = np.random.default_rng(25)
    p_same = concat_params(qp(0.2, 3), qp(0.2, 3))
    x = rng.integers(-128, 128, (1, 2, 2, 3)).astype(np.int8)
    assert np.array_equal(concat_s8([x, x], 3, [p_same, p_same]), np.concatenate([x, x], 3))
    xa = np.array([-7, -5, -3, -1, 1, 3, 5, 7], np.int8).reshape(1, 2, 2, 2)        # scale 0.1 -> 0.2: ties
    xb = rng.integers(-128, 128, (1, 2, 2, 3)).astype(np.int8)                        # the output's qparams
    for rounding, half in (("onnx", [-4, -2, -2, 0, 0, 2, 2, 4]), ("tflm", [-4, -3, -2, -1, 1, 2, 3, 4])):
        g = _concat_graph(qp(0.1, 0), qp(0.2, 0), qp(0.2, 0), ((1, 2, 2, 2), (1, 2, 2, 3), (1, 2, 2, 5)), 3, rounding)
        got = both(portable_lib, g, {"a": xa, "b": xb})
        assert got[..., :2].reshape(-1).tolist() == half, rounding
        assert np.array_equal(got[..., 2:], xb)
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
