"""16x8 quantization (int16 activations, zero point 0, int8 weights, int64 biases; TFLite's 16x8 spec):
generated single-op .tflite models (tflite16_cases.py) of CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
ADD, QUANTIZE and DEQUANTIZE through load_tflite + our interpreter, bit for bit against TFLM's reference
kernels and against the portable C kernels (*_s16.c.j2); the 64-bit requantization on hand values;
the kernel choice (no int8 or ISA kernel ever runs an int16 node); and the refusals: every other op with
an int16 tensor, int32 biases, non-zero int16 zero points, mixed int8 / int16 ops (the element-wise,
pooling and data-movement ops: test_s16x8_ops.py; SOFTMAX, LOGISTIC and TANH: test_s16x8_lut.py)."""
from __future__ import annotations

import numpy as np
import pytest
from _op_checks import run_tflm
from tflite16_cases import I16, I64, single_op_cases
from tflite_op_cases import ACT, I8, OP, OPT, Model, S, _tc

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ir import DType
from toolchain.lower import kernel_reasons, select_kernels
from toolchain.ops.quant16 import multiply_by_quantized_multiplier_s64, requantize_s16

F32 = np.float32
CASES = single_op_cases()


@pytest.fixture(scope="module")
def tflm16(tmp_path_factory):
    """name -> (model path, inputs, TFLM output) for every single-op 16x8 case (one TFLM subprocess)."""
    return run_tflm(CASES, tmp_path_factory.mktemp("tflm16"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter_bit_exact_with_tflm(tflm16, name):
    path, inputs, theirs = tflm16[name]
    assert not isinstance(theirs, str), theirs
    g = load_tflite(path)
    ours = interpret(g, dict(zip(g.inputs, inputs, strict=True)))[g.outputs[0]]
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs.reshape(ours.shape))
    # the cases exercise the int16 range, not only values near 0
    if ours.dtype == np.int16 and name != "conv_relu_n1_to_1":
        assert int(np.abs(ours.astype(np.int32)).max()) > 1000


@pytest.mark.parametrize("name", sorted(CASES))
def test_portable_c_equals_interpreter(portable_lib, tmp_path, name):
    from _c_graph import run_graph_c

    model, inputs = CASES[name]
    (tmp_path / "m.tflite").write_bytes(model)
    g = load_tflite(tmp_path / "m.tflite")
    feeds = dict(zip(g.inputs, inputs, strict=True))
    ours = interpret(g, feeds)[g.outputs[0]]
    np.testing.assert_array_equal(run_graph_c(portable_lib, g, feeds)[g.outputs[0]], ours)


def test_graph_holds_int16_activations_and_int64_bias(tmp_path):
    (tmp_path / "m.tflite").write_bytes(CASES["conv_same"][0])
    g = load_tflite(tmp_path / "m.tflite")
    (node,) = g.nodes
    x, w, b = (g.t(n) for n in node.inputs)
    y = g.t(node.outputs[0])
    assert (x.dtype, w.dtype, b.dtype, y.dtype) == (DType.INT16, DType.INT8, DType.INT64, DType.INT16)
    assert x.nbytes == 2 * x.size and b.nbytes == 8 * b.size  # the planner sizes buffers by dtype
    assert x.quant.zp == 0 and y.quant.zp == 0


# the dsp 16x8 kernel each weighted case takes on a DSP board (toolchain/isa/dsp_s16.py)
DSP_S16 = {"conv_same": "dsp_s16", "conv_1x1_no_bias": "dsp_1x1_s16", "dw_same": "dsp_s16", "fc": "dsp_s16"}


def test_int16_nodes_take_the_s16_kernels_on_every_isa(tmp_path):
    """No int8 kernel ever runs an int16 node, whatever the board prefers: on a DSP board Conv2D,
    DepthwiseConv2D and FullyConnected take the dsp 16x8 kernels, every other int16 node (and every
    int16 node on helium or neon boards) the portable _s16 ones, and the report says why."""
    for name in ("conv_same", "conv_1x1_no_bias", "dw_same", "fc", "add", "quantize_int8_int16",
                 "quantize_int16_int8", "quantize_float_int16", "dequantize_int16"):
        (tmp_path / f"{name}.tflite").write_bytes(CASES[name][0])
        g = load_tflite(tmp_path / f"{name}.tflite")
        for prefs, feats in ((["portable"], ()), (["dsp", "portable"], ("dsp",)), (["helium", "portable"], ("mve", "mve_fp")),
                             (["neon", "portable"], ("dotprod",))):
            chosen = select_kernels(g, prefs, feats)
            kernels = [chosen[n.name] for n in g.nodes if n.name in chosen]
            assert kernels and all(v.dtype == "s16" for v in kernels), (name, prefs)
            reasons = kernel_reasons(g, chosen, prefs, feats)
            last = g.nodes[-1].name
            if prefs[0] == "dsp" and name in DSP_S16:
                assert (kernels[-1].isa, kernels[-1].name, reasons[last]) == ("dsp", DSP_S16[name], None)
                continue
            assert all(v.isa == "portable" for v in kernels), (name, prefs)
            if prefs[0] != "portable" and name in ("conv_same", "fc", "add"):
                assert "int16" in reasons[last], reasons[last]


def test_16x8_nodes_the_dsp_kernels_refuse_say_why(tmp_path):
    """A 16x8 node no dsp 16x8 kernel takes (a grouped convolution) keeps the portable kernel, and its
    kernel_reason is the dsp 16x8 kernels' (not the int8 kernels' "no kernel for int16 activations")."""
    rng = np.random.default_rng(5)
    m = Model()
    x = m.tensor((1, 4, 4, 4), I16, F32(1e-3), 0)
    w = m.tensor((4, 3, 3, 2), I8, [F32(0.01)] * 4, [0] * 4, rng.integers(-127, 128, (4, 3, 3, 2)).astype(np.int8))
    b = m.tensor([4], I64, [1e-5] * 4, [0] * 4, np.zeros(4, np.int64))
    y = m.tensor((1, 4, 4, 4), I16, F32(1e-2), 0)
    o = S.Conv2DOptionsT()
    o.padding, o.strideH, o.strideW = S.Padding.SAME, 1, 1
    (tmp_path / "m.tflite").write_bytes(m.build_ops([(OP.CONV_2D, OPT.Conv2DOptions, o, [x, w, b], [y])], [x], [y]))
    g = load_tflite(tmp_path / "m.tflite")
    chosen = select_kernels(g, ["dsp", "portable"], ("dsp",))
    (v,) = chosen.values()
    assert (v.isa, v.dtype) == ("portable", "s16")
    assert kernel_reasons(g, chosen, ["dsp", "portable"], ("dsp",))[g.nodes[0].name] == "dsp: grouped convolution"


def test_int8_models_keep_their_kernels(tmp_path):
    """An int8 conv still takes the int8 kernel (the dtype guard changes nothing for int8)."""
    model, _ = _tc.conv_case(np.random.default_rng(0), h=5, w=5, cin=3, cout=4, k=(3, 3))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    g = load_tflite(path)
    (v,) = select_kernels(g, ["portable"]).values()
    assert (v.dtype, v.function) == ("s8", "ecc_conv2d_s8")


# ---- the 64-bit requantization (TFLite common.cc MultiplyByQuantizedMultiplier(int64_t ...)) -------
def test_mbqm_s64_hand_values():
    # mult 2^30 (0.5 in Q31) -> Q15 16384; shift 0: (x * 16384 + 2^14) >> 15 = round half up of x / 2
    assert multiply_by_quantized_multiplier_s64([3, -3, 5, -5, 1, -1], 1 << 30, 0).tolist() == [2, -1, 3, -2, 1, 0]
    # the reduced multiplier rounds: 0x40008000 -> 0x4001, 0x40007FFF -> 0x4000
    assert multiply_by_quantized_multiplier_s64(1 << 20, 0x40008000, 0) == (0x4001 << 20) >> 15
    assert multiply_by_quantized_multiplier_s64(1 << 20, 0x40007FFF, 0) == (0x4000 << 20) >> 15
    # from 0x7FFF0000 up the Q15 multiplier saturates at 0x7FFF (not 0x8000)
    assert multiply_by_quantized_multiplier_s64(1 << 15, 0x7FFFFFFF, 0) == 0x7FFF
    # positive shift (real multiplier > 1) and a large accumulator near 2^46
    assert multiply_by_quantized_multiplier_s64(3, 1 << 30, 7) == 192
    assert multiply_by_quantized_multiplier_s64(-(1 << 46), 1 << 30, -20) == -(1 << 25)
    # the int32 cast wraps as C's does
    assert multiply_by_quantized_multiplier_s64(1 << 40, 1 << 30, 0) == 0
    with pytest.raises(ValueError, match="shift"):
        multiply_by_quantized_multiplier_s64(1, 1 << 30, 15)
    assert requantize_s16([1 << 34, -(1 << 34), 7], 1 << 30, -4, -32768, 100).tolist() == [100, -32768, 0]


# ---- refusals: by name, never computed in int8 ------------------------------------------------
def _int16_reduce_max() -> bytes:
    """REDUCE_MAX on int16: TFLM's reduce kernels take float32 and int8 only (reduce_common.cc)."""
    from tflite_op_cases import _ints

    m = Model()
    x, y = m.tensor((1, 4, 4, 2), I16, F32(1e-3), 0), m.tensor((1, 1, 1, 2), I16, F32(1e-3), 0)
    o = S.ReducerOptionsT()
    o.keepDims = True
    return m.build_ops([(OP.REDUCE_MAX, OPT.ReducerOptions, o, [x, _ints(m, [1, 2])], [y])], [x], [y])


def _int16_softmax() -> bytes:
    m = Model()
    # int16 softmax is mapped (test_s16x8_lut.py); its output must be Q0.15, 1/256 is refused
    x, y = m.tensor((1, 10), I16, F32(1e-3), 0), m.tensor((1, 10), I16, F32(1 / 256), 0)
    o = S.SoftmaxOptionsT()
    o.beta = 1.0
    return m.build_ops([(OP.SOFTMAX, OPT.SoftmaxOptions, o, [x], [y])], [x], [y])


def _conv_with(bias_type=I64, x_zp=0, out_type=I16) -> bytes:
    rng = np.random.default_rng(1)
    m = Model()
    x = m.tensor((1, 4, 4, 2), I16, F32(1e-3), x_zp)
    w = m.tensor((3, 1, 1, 2), I8, [F32(0.01)] * 3, [0] * 3, rng.integers(-127, 128, (3, 1, 1, 2)).astype(np.int8))
    bias = np.zeros(3, np.int64 if bias_type == I64 else np.int32)
    b = m.tensor([3], bias_type, [1e-5] * 3, [0] * 3, bias)
    y = m.tensor((1, 4, 4, 3), out_type, F32(1e-2), 0)
    o = S.Conv2DOptionsT()
    o.padding, o.strideH, o.strideW, o.fusedActivationFunction = S.Padding.SAME, 1, 1, ACT["none"]
    return m.build_ops([(OP.CONV_2D, OPT.Conv2DOptions, o, [x, w, b], [y])], [x], [y])


def _big_bias() -> bytes:
    m = Model()
    x = m.tensor((1, 3, 3, 1), I16, F32(1e-3), 0)
    w = m.tensor((1, 1, 1, 1), I8, [F32(0.01)], [0], np.ones((1, 1, 1, 1), np.int8))
    b = m.tensor([1], I64, [1e-5], [0], np.array([1 << 50], np.int64))
    y = m.tensor((1, 3, 3, 1), I16, F32(1e3), 0)
    o = S.Conv2DOptionsT()
    o.padding, o.strideH, o.strideW = S.Padding.SAME, 1, 1
    return m.build_ops([(OP.CONV_2D, OPT.Conv2DOptions, o, [x, w, b], [y])], [x], [y])


@pytest.mark.parametrize("build, words", [
    (_int16_reduce_max, ["REDUCE_MAX", "16x8 (int16 activations) is supported for CONV_2D"]),
    (_int16_softmax, ["SOFTMAX", "1/32768"]),
    (lambda: _conv_with(bias_type=S.TensorType.INT32), ["CONV_2D", "int32", "int64 biases"]),
    (lambda: _conv_with(x_zp=5), ["CONV_2D", "zero point 5"]),
    (lambda: _conv_with(out_type=I8), ["CONV_2D", "output", "int8", "16x8"]),
    (_big_bias, ["CONV_2D", "2^47"]),
])
def test_unsupported_16x8_refused_by_name(tmp_path, build, words):
    (tmp_path / "m.tflite").write_bytes(build())
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(tmp_path / "m.tflite")
    for w in words:
        assert w in str(e.value), str(e.value)
