"""Weights with zero points, as onnxruntime's quantize_static U8U8 writes them (uint8 weights, per
tensor, zero points far from 128) and as QLinearConv / QLinearMatMul / ConvInteger / MatMulInteger
allow: exact against onnxruntime (graph optimisations off) under `rounding: onnx`.

Two exact routes, both tested: weights whose w - zw all lie in [-128, 127] become int8 weights with
zero point 0 (no run-time cost); the others keep a per-tensor zero point that the portable Conv,
depthwise Conv and fully connected kernels take as filter_offset (sum (x - zx)(w - zw), padding
taps adding nothing), with the ISA variants stepping aside and saying why. Per-channel zero points
whose w - zw leave int8 are refused in one line naming the file's own tensor and zero point."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder, conv_integer, import_int8, on_grid, ort_run, ours
from onnx import TensorProto

from toolchain.errors import UnsupportedModel
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.lower import select_kernels
from toolchain.ops.registry import OpKind, opdef

pytest.importorskip("onnxruntime")
P2 = [2.0 ** -k for k in range(12)]  # power-of-two scales: ORT's float32 simulation is exact on them


def _weights(g, kind):
    node = next(n for n in g.nodes if n.op == kind)
    return node, g.t(node.inputs[1])


def _exact(p: Path, shape, seed: int, n: int = 4, dtype=np.float32, lo=-4.0, hi=4.0) -> None:
    g, rng = import_int8(p), np.random.default_rng(seed)
    for _ in range(n):
        x = rng.integers(0, 256, shape).astype(np.uint8) if dtype == np.uint8 else \
            rng.uniform(lo, hi, shape).astype(np.float32)
        ref, got = on_grid(ort_run(p, {"x": x})[0], g), ours(p, {"x": x}, "onnx", g)[0]
        assert np.array_equal(ref, got), np.abs(ref.astype(int) - got).max()
        assert len(np.unique(got)) > 4  # not clamped to a constant


def _qdq_conv(w_u8: np.ndarray, w_zp: int, w_scale: float, group: int = 1, **attrs) -> ModelBuilder:
    """x float -> Q/DQ (uint8, zp 120) -> Conv (uint8 weights with w_zp, int32 bias) -> Q/DQ (uint8) -> y."""
    rng = np.random.default_rng(1)
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 4, 6, 5)), P2[5], 120, "xq", np.uint8), P2[5], 120, "xd", np.uint8)
    wd = m.dq(m.const("w_u8", w_u8, np.uint8), w_scale, w_zp, "wd", np.uint8)
    bd = m.dq(m.const("b", rng.integers(-300, 300, w_u8.shape[0]), np.int32), P2[5] * w_scale, 0, "bd", np.int32)
    y = m.node("Conv", [xd, wd, bd], "c", group=group, **attrs)
    m.dq(m.q(y, P2[2], 131, "yq", np.uint8), P2[2], 131, "y", np.uint8)
    m.output("y")
    return m


def test_weights_within_int8_of_their_zero_point_become_symmetric(tmp_path: Path) -> None:
    w = np.random.default_rng(0).integers(100, 160, (3, 4, 3, 3))
    p = _qdq_conv(w, 134, P2[7], pads=[1, 1, 1, 1]).save(tmp_path / "fit.onnx")
    _, t = _weights(import_int8(p), OpKind.CONV2D)
    assert t.quant.zero_point == (0,) and np.array_equal(np.sort(t.data.ravel()), np.sort((w - 134).ravel()))
    _exact(p, (1, 4, 6, 5), 2)


@pytest.mark.parametrize("group, attrs", [
    (1, dict(pads=[1, 1, 1, 1])),                                  # 3x3, padding on every side
    (1, dict(pads=[0, 1, 2, 1], strides=[2, 2])),                  # uneven padding, stride 2
    (4, dict(pads=[1, 1, 1, 1])),                                  # depthwise
    (2, dict(pads=[1, 0, 1, 0], dilations=[2, 1])),                # grouped, dilated
])
def test_conv_weights_beyond_int8_of_their_zero_point_keep_it(tmp_path: Path, group, attrs) -> None:
    w = np.random.default_rng(3).integers(0, 256, (4 if group == 4 else 6, 4 // group, 3, 3))
    w.flat[:2] = (0, 255)  # w - zw reaches -30 and 225
    p = _qdq_conv(w, 30, P2[8], group, **attrs).save(tmp_path / "far.onnx")
    g = import_int8(p)
    node, t = _weights(g, OpKind.DEPTHWISE_CONV2D if group == 4 else OpKind.CONV2D)
    assert t.quant.zero_point == (30 - 128,) and not t.quant.is_per_channel
    _exact(p, (1, 4, 6, 5), 4)
    for prefs in (("dsp", "portable"), ("helium", "portable"), ("neon", "portable")):
        assert select_kernels(g, prefs)[node.name].isa == "portable"
    isa = [v for v in opdef(node).variants if v.isa != "portable" and v.dtype == "s8"]  # the int8 ISA kernels
    assert isa and all(v.why_not(node, g) == "weights have a zero point (-98)" for v in isa)


def _qlinear_conv_u8(w_u8, w_zp, bias, **attrs) -> ModelBuilder:
    """uint8 x -> QLinearConv (uint8 weights with w_zp) -> uint8 y: ORT computes it in integers."""
    m = ModelBuilder(13)
    ins = [m.input("x", (1, 3, 5, 4), np.uint8), m.const("xs", 0.02), m.const("xz", 117, np.uint8),
           m.const("w", w_u8, np.uint8), m.const("ws", 0.004), m.const("wz", w_zp, np.uint8),
           m.const("ys", 0.9), m.const("yz", 125, np.uint8), m.const("bias", bias, np.int32)]
    m.node("QLinearConv", ins, "y", **attrs)
    m.output("y", np.uint8)
    return m


@pytest.mark.parametrize("w_zp, attrs", [(200, dict(pads=[1, 1, 1, 1])), (3, dict(pads=[2, 0, 0, 1], strides=[1, 2])),
                                         (128, dict(pads=[1, 1, 1, 1]))])
def test_qlinear_conv_with_uint8_weight_zero_points(tmp_path: Path, w_zp, attrs) -> None:
    rng = np.random.default_rng(w_zp)
    w = rng.integers(0, 256, (5, 3, 3, 3))
    p = _qlinear_conv_u8(w, w_zp, rng.integers(-2000, 2000, 5), **attrs).save(tmp_path / "ql.onnx")
    _, t = _weights(import_int8(p), OpKind.CONV2D)
    assert t.quant.zero_point == ((0,) if w_zp == 128 else (w_zp - 128,))
    _exact(p, (1, 3, 5, 4), 5, dtype=np.uint8)


def test_gemm_and_matmul_weights_with_zero_points(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (2, 24)), P2[4], 128, "xq", np.uint8), P2[4], 128, "xd", np.uint8)
    wd = m.dq(m.const("wg", rng.integers(0, 256, (7, 24)), np.uint8), P2[8], 250, "wgd", np.uint8)  # Gemm transB
    y = m.node("Gemm", [xd, wd], "g", transB=1)
    yd = m.dq(m.q(y, P2[1], 128, "gq", np.uint8), P2[1], 128, "gd", np.uint8)
    w2 = m.dq(m.const("wm", rng.integers(0, 256, (7, 5)), np.uint8), P2[7], 7, "wmd", np.uint8)   # MatMul B
    m.dq(m.q(m.node("MatMul", [yd, w2], "mm"), P2[0], 128, "mq", np.uint8), P2[0], 128, "y", np.uint8)
    m.output("y")
    p = m.save(tmp_path / "fc.onnx")
    g = import_int8(p)
    fcs = [g.t(n.inputs[1]).quant.zero_point for n in g.nodes if n.op == OpKind.FULLY_CONNECTED]
    assert fcs == [(250 - 128,), (7 - 128,)]
    _exact(p, (2, 24), 7)


def test_integer_ops_with_weight_zero_points(tmp_path: Path) -> None:
    """ConvInteger (uint8 w, zp 30: beyond int8) and MatMulInteger (int8 b, zp -100)."""
    mc = conv_integer()
    wz = next(i for i in mc.inits if i.name == "wz")
    wz.int32_data[:] = []
    wz.raw_data = np.array(30, np.uint8).tobytes()
    p = mc.save(tmp_path / "ci.onnx")
    g, rng = import_int8(p), np.random.default_rng(8)
    assert set(_weights(g, OpKind.CONV2D)[1].quant.zero_point) == {30 - 128}  # per-channel scales, one zero point
    for _ in range(3):
        x = {"x": rng.uniform(-1, 12, (1, 2, 5, 5)).astype(np.float32)}
        assert np.array_equal(on_grid(ort_run(p, x)[0], g), ours(p, x, "onnx", g)[0])
    m = ModelBuilder(13)
    xq = m.q(m.input("x", (2, 6)), 0.05, 3, "xq")
    b = np.random.default_rng(9).integers(-128, 128, (6, 4))
    mi = m.node("MatMulInteger", [xq, m.const("b", b, np.int8), m.const("az", 3, np.int8), m.const("bz", -100, np.int8)],
                "acc")
    mul = m.node("Mul", [m.node("Cast", [mi], "accf", to=TensorProto.FLOAT), m.const("sc", 0.05 * 0.002)], "mul")
    m.dq(m.q(mul, 0.2, -2, "yq"), 0.2, -2, "y")
    m.output("y")
    p = m.save(tmp_path / "mi.onnx")
    g = import_int8(p)
    assert set(_weights(g, OpKind.FULLY_CONNECTED)[1].quant.zero_point) == {-100}
    for _ in range(3):
        x = {"x": rng.uniform(-1, 6, (2, 6)).astype(np.float32)}
        assert np.array_equal(on_grid(ort_run(p, x)[0], g), ours(p, x, "onnx", g)[0])


def test_per_channel_zero_points_beyond_int8_are_refused_naming_the_file_tensor(tmp_path: Path) -> None:
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 2, 4, 4)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w = m.dq(m.const("w_u8", np.array([0, 255] * 2).reshape(2, 2, 1, 1), np.uint8), np.array([0.01, 0.02], np.float32),
             np.array([20, 240]), "wd", np.uint8, axis=0)
    m.dq(m.q(m.node("Conv", [xd, w], "c"), 0.05, 0, "cq"), 0.05, 0, "y")
    m.output("y")
    p = m.save(tmp_path / "pc.onnx")
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(p)
    assert str(e.value) == (f"{p}: 1 weight tensor with different zero points per channel and values beyond int8 of them (e.g. "
                            "'w_u8' (zero points 20, 240 (per channel), uint8)): not supported; quantize weights "
                            "symmetric (onnxruntime: weight_type=QInt8) or per tensor")


def test_per_channel_zero_points_within_int8_become_symmetric(tmp_path: Path) -> None:
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 2, 4, 4)), P2[5], 0, "xq"), P2[5], 0, "xd")
    w = m.dq(m.const("w", np.array([[5, -7], [100, 127]]).reshape(2, 2, 1, 1), np.int8),
             np.array([P2[6], P2[7]], np.float32), np.array([3, 90]), "wd", np.int8, axis=0)
    m.dq(m.q(m.node("Conv", [xd, w], "c"), P2[3], 0, "cq"), P2[3], 0, "y")
    m.output("y")
    p = m.save(tmp_path / "pcs.onnx")
    _, t = _weights(import_int8(p), OpKind.CONV2D)
    assert t.quant.zero_point == (0, 0) and sorted(t.data.ravel().tolist()) == [-10, 2, 10, 37]
    _exact(p, (1, 2, 4, 4), 10)


def test_zero_points_on_weights_of_other_ops_are_refused_naming_the_file_tensor(tmp_path: Path) -> None:
    """ConvTranspose's kernels take symmetric weights only: its uint8 weights with zero point 30 (w - zw
    beyond int8) are refused by the file's own name and zero point as written, not the shifted -98."""
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 2, 3, 3)), 0.05, 0, "xq"), 0.05, 0, "xd")
    w = m.dq(m.const("w_u8", np.array([0, 255, 30, 31] * 4).reshape(2, 2, 2, 2), np.uint8), 0.01, 30, "wd", np.uint8)
    m.dq(m.q(m.node("ConvTranspose", [xd, w], "c"), 0.05, 0, "cq"), 0.05, 0, "y")
    m.output("y")
    p = m.save(tmp_path / "ct.onnx")
    with pytest.raises(UnsupportedModel, match=r"weights 'w_u8' \(zero point 30, uint8\) with a zero point: this op's "
                                               r"int8 kernels take symmetric weights"):
        import_int8(p)
