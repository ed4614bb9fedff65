"""Field fault cases of ../shared/design/int8-fault-cases.md handled with issue 4, each with the right
value as the assertion plus neighbours of the same kind: BL-04, BL-10, BL-11, BL-13, BL-14, BL-19,
BL-25, BL-26, BL-27, BL-29, BL-30. Values are checked on the numpy reference, on the portable C
kernels (ctypes, the code generator's argument lists) and, where TFLM is the reference, against TFLM
(one subprocess for the file). Rounding: TFLM's (gemmlowp double rounding); where a case lists the
ORT half-to-even value as well, the test says which one we give and why.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, float_graph, model
from onnx import helper

from quantize import quantize
from quantize.dequantize import dequantize_graph
from toolchain.data import quantize_inputs
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.lower import select_kernels
from toolchain.ops.add import AddAttrs, add_s8
from toolchain.ops.clamp import ClampAttrs
from toolchain.ops.common import NO_ACT, Window
from toolchain.ops.concat import ConcatAttrs, concat_s8, requant_params
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.fixed_point import add_params, quantize_multiplier, softmax_params
from toolchain.ops.registry import OpKind
from toolchain.ops.softmax import softmax_s8

HERE = Path(__file__).resolve().parent
I8, I32 = DType.INT8, DType.INT32


def _q(s, z):
    return QuantParams.per_tensor(s, z)


def _graph(nodes, tensors, inputs, outputs) -> Graph:
    return Graph("g", tuple(nodes), {t.name: t for t in tensors}, tuple(inputs), tuple(outputs))


def _both(lib, g: Graph, feeds: dict) -> np.ndarray:
    """The graph's first output from the interpreter, asserting the C kernels give the same bytes."""
    from _c_graph import run_graph_c

    want = interpret(g, feeds)[g.outputs[0]]
    assert np.array_equal(run_graph_c(lib, g, feeds)[g.outputs[0]], want), "C differs from the interpreter"
    return want


# ---- TFLM models of this file -------------------------------------------------------------------
def _tflm_models() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    from _tflite_cases import conv_case
    from tflite_op_cases import I8 as T8
    from tflite_op_cases import OP, OPT, Model, S, _ints, _one, unary

    rng = np.random.default_rng(404)
    out = {}
    x5 = np.array([10, 20, 30, 40, 50], np.int8).reshape(1, 1, 5, 1)
    for name, hw, ac, hp in [("bl30_up_asym", 8, False, False), ("bl30_up_half", 8, False, True),
                             ("bl30_up_align", 8, True, False), ("bl30_down_asym", 3, False, False),
                             ("bl30_down_half", 3, False, True)]:
        m = Model()
        ti = m.tensor((1, 1, 5, 1), T8, 1.0, 0)
        ts = _ints(m, [1, hw])
        to = m.tensor((1, 1, hw, 1), T8, 1.0, 0)
        o = S.ResizeNearestNeighborOptionsT()
        o.alignCorners, o.halfPixelCenters = ac, hp
        out[name] = (_one(m, OP.RESIZE_NEAREST_NEIGHBOR, OPT.ResizeNearestNeighborOptions, o, [ti, ts], to, [ti]), [x5])
    for name, s_in, x in [("bl25_a", 0.1, [5, -5, 15, 7]), ("bl25_b", 0.5, [1, 2, 3, 4])]:
        model_bytes, _ = unary(rng, "requantize", (4,), in_scale=np.float32(s_in), out_q=(np.float32(0.2), 0))
        m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(model_bytes, 0))
        m.subgraphs[0].tensors[0].quantization.zeroPoint = [0]
        import flatbuffers
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        out[name] = (bytes(b.Output()), [np.array(x, np.int8)])
    out["bl10_dw_mult9"] = conv_case(rng, h=4, w=6, cin=1, cout=9, k=(1, 3), depthwise=True)
    out["bl10_dw_mult2"] = conv_case(rng, h=3, w=3, cin=2, cout=4, k=(2, 2), depthwise=True, same=False)
    out["bl11_dw_3x1_s2"] = conv_case(rng, h=8, w=8, cin=2, cout=2, k=(3, 1), s=(2, 2), depthwise=True, bias="zeros")
    out["bl11_dw_1x2_s2"] = conv_case(rng, h=2, w=2, cin=3, cout=3, k=(1, 2), s=(2, 2), depthwise=True, bias="zeros")
    out["bl14_conv_dil2"] = conv_case(rng, h=1, w=8, cin=1, cout=1, k=(1, 3), d=(1, 2))
    out["bl14_conv_3x3_dil2"] = conv_case(rng, h=7, w=7, cin=2, cout=3, k=(3, 3), d=(2, 2))
    return out


@pytest.fixture(scope="module")
def tflm(tmp_path_factory):
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    d = tmp_path_factory.mktemp("tflm_faults")
    cases = _tflm_models()
    for name, (m, inputs) in cases.items():
        (d / f"{name}.tflite").write_bytes(m)
        for k, a in enumerate(inputs):
            np.save(d / f"{name}.in{k}.npy", a)
    proc = subprocess.run([sys.executable, str(HERE / "_tflm_runner.py"), str(d)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]

    def get(name: str) -> tuple[Graph, list[np.ndarray], np.ndarray]:
        assert not (d / f"{name}.err").exists(), (d / f"{name}.err").read_text()
        return load_tflite(d / f"{name}.tflite"), cases[name][1], np.load(d / f"{name}.out.npy")
    return get


def _tflm_agrees(tflm, lib, name: str) -> np.ndarray:
    g, inputs, want = tflm(name)
    got = _both(lib, g, dict(zip(g.inputs, inputs, strict=True)))
    assert np.array_equal(got, want.reshape(got.shape)), f"{name}: ours {got.ravel()} TFLM {want.ravel()}"
    return got


# ---- BL-04: (-128) x (-128) products ------------------------------------------------------------
def test_bl04_quantizer_never_emits_minus_128_weights(tmp_path):
    rng = np.random.default_rng(4)
    w = rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0], w[1] = -1.0, -w[1]              # the most negative weight sets a channel's scale
    m = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Flatten", ["c"], ["f"]),
               helper.make_node("Gemm", ["f", "fw"], ["y"], transB=1)], {"x": (1, 3, 5, 5)}, ["y"],
              {"w": w, "fw": -np.abs(rng.uniform(0.5, 1, (4, 72)).astype(np.float32))})
    q = quantize(float_graph(m, tmp_path), {"x": rng.uniform(-1, 1, (2, 1, 3, 5, 5)).astype(np.float32)})
    weights = [t.data for t in q.tensors.values() if t.is_const and t.dtype == I8]
    assert len(weights) == 2 and min(int(a.min()) for a in weights) == -127


def _fc_graph(x_zp: int, w: np.ndarray, mult_shift) -> Graph:
    from toolchain.ops.fully_connected import FullyConnectedAttrs

    k = w.shape[1]
    ws = 1.0 / 64
    y_scale = (1.0 * ws) / np.ldexp(mult_shift[0] / 2**31, mult_shift[1])
    ts = [Tensor("x", (1, k), I8, _q(1.0, x_zp)), Tensor("w", w.shape, I8, QuantParams((ws,), (0,), None), w),
          Tensor("b", (w.shape[0],), I32, QuantParams((ws,), (0,), None), np.zeros(w.shape[0], np.int32)),
          Tensor("y", (1, w.shape[0]), I8, _q(float(y_scale), 0))]
    return _graph([Node("fc", OpKind.FULLY_CONNECTED, ("x", "w", "b"), ("y",), FullyConnectedAttrs(NO_ACT))], ts,
                  ["x"], ["y"])


def test_bl04_imported_minus_128_weights_accumulate_exactly(portable_lib):
    """K = 16, all activations and weights -128: the dot product is 262144 (an int16-lane kernel would
    wrap to -262144). With a real multiplier 2^-12 the output is 64, on every path; the dsp variant
    (16-bit lane pairs) is not chosen for weights holding -128 (packing.lane_safe)."""
    w = np.full((2, 16), -128, np.int8)
    g = _fc_graph(0, w, quantize_multiplier(2.0**-12))
    x = np.full((1, 16), -128, np.int8)
    assert _both(portable_lib, g, {"x": x}).tolist() == [[64, 64]]
    assert select_kernels(g, ["dsp", "portable"])["fc"].isa == "portable"
    # neighbour: K = 17 and mixed signs around the extreme
    w2 = np.where(np.arange(17) % 2, -128, 127).astype(np.int8).reshape(1, 17)
    g2 = _fc_graph(0, w2, quantize_multiplier(2.0**-12))
    acc = int((np.full(17, -128) * w2[0].astype(int)).sum())
    assert _both(portable_lib, g2, {"x": np.full((1, 17), -128, np.int8)}).tolist() == [[round(acc / 4096)]]


def test_bl04_activation_times_activation_minus_128(portable_lib):
    """Mul of two activations that both hold -128 (no [-127, 127] guarantee there): exact products."""
    from toolchain.ops.binary import BinaryAttrs

    ts = [Tensor("a", (1, 16), I8, _q(1 / 128, 0)), Tensor("b", (1, 16), I8, _q(1 / 128, 0)),
          Tensor("y", (1, 16), I8, _q(1 / 128, 0))]
    g = _graph([Node("m", OpKind.MUL, ("a", "b"), ("y",), BinaryAttrs(NO_ACT))], ts, ["a", "b"], ["y"])
    a = np.full((1, 16), -128, np.int8)
    assert _both(portable_lib, g, {"a": a, "b": a}).ravel().tolist() == [127] * 16   # 1.0 saturates at 127/128


# ---- BL-10: depthwise with one input channel and multiplier 9 -----------------------------------
def test_bl10_conv_one_input_channel_nine_filters(tmp_path, portable_lib):
    np.random.seed(0)  # the recipe's weights: numpy seed 0 uniform(-1, 1) of (1, 3, 1, 9), HWIO -> OIHW
    w = np.random.uniform(-1, 1, (1, 3, 1, 9)).astype(np.float32).transpose(3, 2, 0, 1)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 1, 0, 1])], {"x": (1, 1, 4, 6)}, ["y"], {"w": w})
    x = (np.arange(24, dtype=np.float32) / 10).reshape(1, 1, 4, 6)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    np.testing.assert_allclose(want[0, :, 0, 0], [0.0556, 0.0740, 0.0957, 0.0598, -0.0077, 0.0561, -0.0763, 0.0280,
                                                  -0.0713], atol=5e-5)
    q = check_int8(g, {"x": np.stack([x, x * 0.5, -x])}, portable_lib, max_lsb=1.0)
    wq = next(q.t(n.inputs[1]) for n in q.nodes if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D))
    assert len(wq.quant.scale) == 9           # one scale per output channel


@pytest.mark.parametrize("name", ["bl10_dw_mult9", "bl10_dw_mult2"])
def test_bl10_tflite_depthwise_multiplier_vs_tflm(tflm, portable_lib, name):
    _tflm_agrees(tflm, portable_lib, name)


def test_bl10_group2_multiplier2_int8(tmp_path, portable_lib):
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=2)], {"x": (1, 2, 3, 3)}, ["y"],
              {"w": np.arange(16, dtype=np.float32).reshape(4, 1, 2, 2)})
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    assert want[0, :, 0, 0].tolist() == [19, 51, 425, 601]
    assert OpKind.DEPTHWISE_CONV2D in [n.op for n in g.nodes]
    check_int8(g, {"x": np.stack([x, x[:, ::-1] * 0.3])}, portable_lib, max_lsb=1.0)


# ---- BL-11: depthwise N x 1 kernel, stride 2, SAME --------------------------------------------------
@pytest.mark.parametrize("name", ["bl11_dw_3x1_s2", "bl11_dw_1x2_s2"])
def test_bl11_tflite_vs_tflm(tflm, portable_lib, name):
    g = tflm(name)[0]
    if name == "bl11_dw_3x1_s2":  # TF SAME: H total pad 1 (top 0, bottom 1), W 0
        assert g.nodes[0].attrs.window.pads == (0, 0, 1, 0) and g.t(g.outputs[0]).shape == (1, 4, 4, 2)
    _tflm_agrees(tflm, portable_lib, name)


def test_bl11_onnx_recipe_and_int8_with_nonzero_zero_point(tmp_path, portable_lib):
    w = (np.arange(6, dtype=np.float32) / 10).reshape(2, 1, 3, 1)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=2, strides=[2, 2], pads=[0, 0, 1, 0])],
              {"x": (1, 2, 8, 8)}, ["y"], {"w": w})
    x = np.random.default_rng(999).random((1, 2, 8, 8)).astype(np.float32)
    g, (want,) = check_float(m, {"x": x}, tmp_path)
    assert want.shape == (1, 2, 4, 4)
    # inputs in [0.2, 1.2]: the input zero point sits at -128 - 0.2/scale, far from a raw 0
    calib = {"x": np.stack([x + 0.2, x * 0.5 + 0.2])}
    q = check_int8(g, calib, portable_lib, max_lsb=1.0)
    assert q.t(q.inputs[0]).quant.zp != 0


# ---- BL-13: MaxPool ceil_mode with padding ------------------------------------------------------------
@pytest.mark.parametrize("op, want", [("MaxPool", [6, 9, 21, 24]), ("AveragePool", None)])
def test_bl13_ceil_mode_drops_the_window_in_the_padding_int8(op, want, tmp_path, portable_lib):
    m = model([helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1],
                                ceil_mode=1)], {"x": (1, 1, 5, 5)}, ["y"])
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    g, (ref,) = check_float(m, {"x": x}, tmp_path)
    assert ref.shape == (1, 1, 2, 2)
    if want:
        assert ref.ravel().tolist() == want
    q = check_int8(g, {"x": np.stack([x, 24 - x])}, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).shape == (1, 1, 2, 2)


# ---- BL-14: dilated convolution padded with the zero point -----------------------------------------
def test_bl14_dilated_conv_pads_with_the_zero_point(portable_lib):
    """Conv1D as 1x3, dilation 2, pads 2, x = 2.0 everywhere stored as q = 50 with zp -50 (scale 0.02),
    W = [1, 2, 3] exactly (scale 1/32): real output 2 * [5, 5, 6, 6, 6, 6, 3, 3]; padding with a raw 0
    (real 1.0) would give 7, 9 and 12 at the borders instead."""
    ts = [Tensor("x", (1, 1, 8, 1), I8, _q(0.02, -50)),
          Tensor("w", (1, 1, 3, 1), I8, QuantParams((1 / 32,), (0,), 0), np.array([32, 64, 96], np.int8).reshape(1, 1, 3, 1)),
          Tensor("b", (1,), I32, QuantParams((0.02 / 32,), (0,), 0), np.zeros(1, np.int32)),
          Tensor("y", (1, 1, 8, 1), I8, _q(0.1, 0))]
    win = Window((1, 3), (1, 1), (1, 2), (0, 2, 0, 2))
    g = _graph([Node("c", OpKind.CONV2D, ("x", "w", "b"), ("y",), Conv2DAttrs(win, 1, NO_ACT))], ts, ["x"], ["y"])
    y = _both(portable_lib, g, {"x": np.full((1, 1, 8, 1), 50, np.int8)})
    assert y.ravel().tolist() == [100, 100, 120, 120, 120, 120, 60, 60]


@pytest.mark.parametrize("name", ["bl14_conv_dil2", "bl14_conv_3x3_dil2"])
def test_bl14_dilated_conv_vs_tflm(tflm, portable_lib, name):
    _tflm_agrees(tflm, portable_lib, name)


# ---- BL-19: depthwise multiplier 8, per-channel parameters over the output channels ------------------
def test_bl19_depthwise_multiplier_8_has_24_scales(tmp_path, portable_lib):
    rng = np.random.default_rng(19)
    w = (rng.uniform(-1, 1, (24, 1, 3, 3)) * (2.0 ** (np.arange(24) % 8))[:, None, None, None]).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=3, pads=[1, 1, 1, 1])], {"x": (1, 3, 5, 5)}, ["y"],
              {"w": w})
    x = rng.uniform(-1, 1, (3, 1, 3, 5, 5)).astype(np.float32)
    g, _ = check_float(m, {"x": x[0]}, tmp_path)
    q = check_int8(g, {"x": x}, portable_lib, max_lsb=None)
    (node,) = [n for n in q.nodes if n.op == OpKind.DEPTHWISE_CONV2D]
    wq = q.t(node.inputs[1])
    assert wq.shape == (1, 3, 3, 24) and wq.quant.axis == 3 and len(wq.quant.scale) == 24
    ratio = np.array(wq.quant.scale) / np.array(wq.quant.scale)[np.arange(24) // 8 * 8]
    assert np.allclose(np.log2(ratio), np.arange(24) % 8, atol=0.6)   # the 2^(o % 8) pattern survives
    # QDQ semantics: float conv of the dequantized input and weights, quantized once: within 1 LSB
    qin = quantize_inputs({"x": x}, q)
    twin = dequantize_graph(q)
    yq = q.t(q.outputs[0]).quant
    for i in range(3):
        feeds = {k: v[i] for k, v in qin.items()}
        got = interpret(q, feeds)[q.outputs[0]].astype(int)
        qdq = yq.quantize(interpret(twin, {k: q.t(k).quant.dequantize(v) for k, v in feeds.items()})[q.outputs[0]])
        assert np.max(np.abs(got - qdq.astype(int))) <= 1


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
    ts = [Tensor("a", (4,), I8, _q(sc(0.1), 0)), Tensor("b", (4,), I8, _q(sc(0.5), 0)), Tensor("y", (8,), I8, _q(sc(0.2), 0))]
    g = _graph([Node("c", OpKind.CONCAT, ("a", "b"), ("y",), ConcatAttrs(0))], ts, ["a", "b"], ["y"])
    got = _both(portable_lib, g, {"a": a, "b": b})
    assert got.tolist() == want
    if f32:
        assert got.tolist() == np.concatenate([tflm("bl25_a")[2], tflm("bl25_b")[2]]).tolist()


def test_bl25_neighbours_channel_concat_and_a_shared_qparams_input(tmp_path, portable_lib):
    """4-D NCHW concat on the channel axis (axis 3 in NHWC), one input sharing the output's qparams
    (a plain copy) and one with its own."""
    rng = np.random.default_rng(25)
    p_same = requant_params(_q(0.2, 3), _q(0.2, 3))
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
    ts = [Tensor("a", (6,), I8, _q(0.052, 0)), Tensor("b", (6,), I8, _q(0.099, 0)), Tensor("y", (6,), I8, _q(0.049, 0))]
    g = _graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs(act))], ts, ["a", "b"], ["y"])
    assert _both(portable_lib, g, {"a": A26, "b": B26}).tolist() == want


def test_bl26_neighbours_zero_points_and_broadcast(portable_lib):
    rng = np.random.default_rng(26)
    for za, zb, zo in [(-128, 127, 0), (17, -3, -40), (127, -128, 127)]:
        a = rng.integers(-128, 128, (1, 3, 4, 5)).astype(np.int8)
        b = rng.integers(-128, 128, (1, 1, 1, 5)).astype(np.int8)     # [1,C,1,1] of ONNX, NHWC here
        ts = [Tensor("a", a.shape, I8, _q(0.052, za)), Tensor("b", b.shape, I8, _q(0.099, zb)),
              Tensor("y", a.shape, I8, _q(0.049, zo))]
        g = _graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs(NO_ACT))], ts, ["a", "b"], ["y"])
        got = _both(portable_lib, g, {"a": a, "b": b}).astype(int)
        real = ((a.astype(float) - za) * 0.052 + (b.astype(float) - zb) * 0.099) / 0.049 + zo
        assert np.max(np.abs(got - np.clip(np.round(real), -128, 127))) <= 1
        assert np.array_equal(got, add_s8(a, b, add_params(0.052, za, 0.099, zb, 0.049, zo)))


# ---- BL-27: ReLU clamps at the zero point -------------------------------------------------------------
@pytest.mark.parametrize("lo, hi, want", [(0.0, np.inf, [-20, -20, -20, -10, 0, 127]),
                                          (-1.0, 1.0, [-30, -30, -20, -10, -10, -10]),
                                          (0.0, 6.0, [-20, -20, -20, -10, 0, 40])])
def test_bl27_clamp_at_the_zero_point(lo, hi, want, portable_lib):
    ts = [Tensor("x", (6,), I8, _q(0.1, -20)), Tensor("y", (6,), I8, _q(0.1, -20))]
    g = _graph([Node("r", OpKind.CLAMP, ("x",), ("y",), ClampAttrs(lo, hi))], ts, ["x"], ["y"])
    assert _both(portable_lib, g, {"x": np.array([-128, -30, -20, -10, 0, 127], np.int8)}).tolist() == want


def test_bl27_add_with_fused_relu_and_onnx_relu(tmp_path, portable_lib):
    """Add + Relu (fused: bounds from the output qparams) and a standalone Relu/Clip after a conv."""
    ts = [Tensor("a", (4,), I8, _q(0.1, -20)), Tensor("b", (4,), I8, _q(0.1, -20)), Tensor("y", (4,), I8, _q(0.1, -20))]
    g = _graph([Node("add", OpKind.ADD, ("a", "b"), ("y",), AddAttrs((0.0, np.inf)))], ts, ["a", "b"], ["y"])
    got = _both(portable_lib, g, {"a": np.array([-30, -20, -10, 0], np.int8), "b": np.array([-20, -30, -20, 0], np.int8)})
    assert got.tolist() == [-20, -20, -10, 20]
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (1, 8)}, ["y"],
              {"lo": np.array(-1, np.float32), "hi": np.array(1, np.float32)})
    calib = {"x": np.linspace(-3, 0.5, 16, dtype=np.float32).reshape(2, 1, 8)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    q = check_int8(g, calib, portable_lib, max_lsb=0.5)
    assert q.t(q.inputs[0]).quant.zp != 0


# ---- BL-29: softmax rows whose sum of exponentials reaches 512 --------------------------------------
@pytest.mark.parametrize("n, want", [(256, -127), (511, -127), (512, -128), (1000, -128)])
def test_bl29_wide_rows_do_not_abort(n, want, portable_lib):
    """quantize(1/n) at scale 1/256, zp -128; n = 512 is an exact tie (0.5 LSB) that the gemmlowp
    arithmetic rounds down, like ORT's half-to-even. TFLM aborts for n >= 512 (our exception: the
    value of the fault-case file is the reference)."""
    p = softmax_params(0.1)
    assert set(softmax_s8(np.zeros((1, n), np.int8), p).ravel().tolist()) == {want}
    from toolchain.ops.softmax import SoftmaxAttrs

    ts = [Tensor("x", (1, n), I8, _q(0.1, -20)), Tensor("y", (1, n), I8, _q(1 / 256, -128))]
    g = _graph([Node("s", OpKind.SOFTMAX, ("x",), ("y",), SoftmaxAttrs(1.0))], ts, ["x"], ["y"])
    assert set(_both(portable_lib, g, {"x": np.full((1, n), -20, np.int8)}).ravel().tolist()) == {want}


def test_bl29_neighbours_many_maxima_and_large_beta_scale():
    x = np.full((1, 1000), -100, np.int8)
    x[0, :600] = 0
    assert set(softmax_s8(x, softmax_params(0.1)).ravel().tolist()) == {-128}   # 1/600 -> 0.43 LSB
    y = softmax_s8(np.array([[0, 1, 2, 3]], np.int8), softmax_params(2.0))
    real = np.exp(2.0 * np.arange(4)) / np.exp(2.0 * np.arange(4)).sum()
    assert np.max(np.abs((y.astype(float) + 128) / 256 - real)) <= 1 / 256


# ---- BL-30: Resize nearest honours half_pixel_centers ----------------------------------------------
@pytest.mark.parametrize("name, want", [("bl30_up_asym", [10, 10, 20, 20, 30, 40, 40, 50]),
                                        ("bl30_up_half", [10, 10, 20, 30, 30, 40, 50, 50]),
                                        ("bl30_up_align", [10, 20, 20, 30, 30, 40, 40, 50]),
                                        ("bl30_down_asym", [10, 20, 40]), ("bl30_down_half", [10, 30, 50])])
def test_bl30_tflite_resize_nearest(tflm, portable_lib, name, want):
    assert _tflm_agrees(tflm, portable_lib, name).ravel().tolist() == want


@pytest.mark.parametrize("coord, mode, size, want", [
    ("asymmetric", "floor", 8, [10, 10, 20, 20, 30, 40, 40, 50]),
    ("tf_half_pixel_for_nn", "floor", 8, [10, 10, 20, 30, 30, 40, 50, 50]),
    ("half_pixel", "round_prefer_floor", 8, [10, 10, 20, 30, 30, 40, 50, 50]),
    ("align_corners", "round_prefer_ceil", 8, [10, 20, 20, 30, 30, 40, 40, 50]),
    ("asymmetric", "floor", 3, [10, 20, 40]), ("tf_half_pixel_for_nn", "floor", 3, [10, 30, 50])])
def test_bl30_onnx_resize_nearest(coord, mode, size, want, tmp_path, portable_lib):
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest", coordinate_transformation_mode=coord,
                            nearest_mode=mode)
    m = model([node], {"x": (1, 1, 1, 5)}, ["y"], {"s": np.array([1, 1, 1, size], np.int64)}, opset=13)
    x = np.array([10, 20, 30, 40, 50], np.float32).reshape(1, 1, 1, 5)
    g, (ref,) = check_float(m, {"x": x}, tmp_path)
    assert ref.ravel().tolist() == want
    q = check_int8(g, {"x": np.stack([x, x - 30])}, portable_lib, max_lsb=0.5)
    assert q.t(q.outputs[0]).quant == q.t(q.inputs[0]).quant    # nearest copies integers
