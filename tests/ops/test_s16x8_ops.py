"""16x8 (int16 activations, zero point 0) element-wise, pooling and data-movement ops: generated
single-op .tflite models (tflite16_cases_ops.py) of MUL, SUB, ADD with broadcasting, AVERAGE_POOL_2D,
MAX_POOL_2D, CONCATENATION, PAD, PADV2, MEAN and SUM through load_tflite + our interpreter, bit for bit
against TFLM's int16 reference kernels and against the portable C kernels (*_s16.c.j2); the kernel
choice; int16 buffers in the memory plan (2 bytes per element, in-place only between equal sizes);
and the refusals TFLM's kernels imply (named, with what to do)."""
from __future__ import annotations

import numpy as np
import pytest
from _op_checks import run_tflm
from tflite16_cases import I16
from tflite16_cases_ops import binary16, concat16, mean16, op_cases, pad16, pool16
from tflite_op_cases import OP, OPT, Model, S

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ir import DType
from toolchain.lower import select_kernels
from toolchain.ops.binary import mul_s16, sub_s16
from toolchain.ops.fixed_point import AddParams, MulParams
from toolchain.ops.mean import mean_s16
from toolchain.ops.pool2d import avg_pool2d_s16, max_pool2d_s16

F32 = np.float32
CASES = op_cases()
KERNELS = {"mul": "ecc_mul_s16", "sub": "ecc_sub_s16", "add": "ecc_add_broadcast_s16", "avgpool": "ecc_avg_pool2d_s16",
           "maxpool": "ecc_max_pool2d_s16", "concat": "ecc_concat_s16", "pad": "ecc_pad_s16",
           "padv2": "ecc_pad_s16", "mean": "ecc_mean_s16", "sum": "ecc_mean_s16"}


def _load(tmp_path, model: bytes, name: str = "m"):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    return load_tflite(path)


@pytest.fixture(scope="module")
def tflm16ops(tmp_path_factory):
    """name -> (model path, inputs, TFLM output) for every case (one TFLM subprocess)."""
    return run_tflm(CASES, tmp_path_factory.mktemp("tflm16ops"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter_bit_exact_with_tflm(tflm16ops, name):
    path, inputs, theirs = tflm16ops[name]
    assert not isinstance(theirs, str), theirs
    g = load_tflite(path)
    ours = interpret(g, dict(zip(g.inputs, inputs, strict=True)))[g.outputs[0]]
    assert ours.dtype == np.int16 and theirs.dtype == np.int16
    np.testing.assert_array_equal(ours, theirs.reshape(ours.shape))
    big = np.abs(ours.astype(np.int32))
    assert big.max() > 2000, "the case should exercise the int16 range"
    if "saturating" in name:
        assert np.mean(big >= 32767) > 0.1  # a real share of the outputs saturates


@pytest.mark.parametrize("name", sorted(CASES))
def test_portable_c_equals_interpreter(portable_lib, tmp_path, name):
    from _c_graph import run_graph_c

    model, inputs = CASES[name]
    g = _load(tmp_path, model)
    feeds = dict(zip(g.inputs, inputs, strict=True))
    ours = interpret(g, feeds)[g.outputs[0]]
    np.testing.assert_array_equal(run_graph_c(portable_lib, g, feeds)[g.outputs[0]], ours)
    (v,) = select_kernels(g, ["dsp", "portable"], ("dsp",)).values()  # never an int8 / ISA kernel
    assert (v.dtype, v.isa, v.function) == ("s16", "portable", KERNELS[name.split("_")[0]])


# ---- the numpy references on hand values (TFLM's arithmetic) ----------------------------------
def test_mul_s16_hand_values():
    # mult 2^30 shift -14: x * 0.5 * 2^-14 = x / 2^15, double rounding (SRDHM, then RoundingDivideByPOT)
    p = MulParams(0, 0, 0, 1 << 30, -14)
    y = mul_s16(np.array([-32768, 32767, 3, -3, 181]), np.array([-32768, 32767, 16384, 16384, 181]), p)
    assert y.tolist() == [32767, 32766, 2, -2, 1]  # 2^30 / 2^15 = 32768 saturates; ties away from zero
    assert mul_s16(np.array([[1000], [-1000]]), np.array([100, 200, 300]), p).shape == (2, 3)  # broadcast


def test_sub_s16_hand_values():
    # equal scales: multipliers 0.5, output 2 * s / (2^15 * s_out) = 2^-14 with s_out = s: x1 - x2
    p = AddParams(0, 1 << 30, 0, 0, 1 << 30, 0, 15, 0, 1 << 30, -13)
    y = sub_s16(np.array([100, -32768, 32767, 5]), np.array([-50, 32767, -32768, 5]), p)
    assert y.tolist() == [150, -32768, 32767, 0]


def test_pool_s16_hand_values():
    x = np.array([[1, 2], [3, 5]], np.int16).reshape(1, 2, 2, 1)
    kw = dict(kernel=(2, 2), stride=(1, 1), pad=(1, 1), out_hw=(2, 2))
    # windows at the corner hold 1, 2 or 4 cells; sums 1, 3 (-> 1.5 rounds to 2), 4 (2), 11 (2.75 -> 3)
    assert avg_pool2d_s16(x, **kw).reshape(-1).tolist() == [1, 2, 2, 3]
    assert avg_pool2d_s16(-x, **kw).reshape(-1).tolist() == [-1, -2, -2, -3]  # half away from zero
    assert max_pool2d_s16(-x, **kw, act_min=-2).reshape(-1).tolist() == [-1, -1, -1, -1]
    assert max_pool2d_s16(x, **kw, act_max=4).reshape(-1).tolist() == [1, 2, 3, 4]


def test_mean_s16_hand_values():
    x = np.array([32767, 32767, 32767, 32766], np.int16).reshape(1, 2, 2, 1)
    assert mean_s16(x, (1, 2), 1e-3, 1e-3).reshape(-1).tolist() == [32767]
    assert mean_s16(x, (1, 2), 1e-3, 5e-4).reshape(-1).tolist() == [32767]  # saturates (x2)
    assert mean_s16(-x, (1, 2), 1e-3, 2e-3).reshape(-1).tolist() == [-16383]
    with pytest.raises(ValueError, match="int32"):
        mean_s16(np.zeros((1, 256, 257, 1), np.int16), (1, 2), 1e-3, 1e-3)  # > 2^16 cells of 2^15


# ---- graph, buffers, memory plan ---------------------------------------------------------------
def test_int16_buffers_are_two_bytes_in_the_plan(tmp_path):
    """The planner sizes every int16 activation of the mixed net by its dtype (2 bytes per element,
    views included) and places no two live buffers on one byte."""
    from tflite16_cases_ops import mixed_net16

    from toolchain.memory import plan_for_kernels

    g = _load(tmp_path, mixed_net16()[0])
    variants = select_kernels(g, ["portable"])
    g2, plan = plan_for_kernels(g, variants, 4)
    sizes = {b.name: b.size for b in plan.buffers}
    int16 = [t for t in plan.tensor_buffer if g2.t(t).dtype == DType.INT16]
    assert len(int16) >= 10
    for t in int16:
        assert sizes[plan.tensor_buffer[t]] == 2 * g2.t(t).size == g2.t(t).nbytes, t
    conv = next(n for n in g2.nodes if n.op.value == "Conv2D")  # its int16 output: 8 * 8 * 6 * 2 bytes
    assert sizes[plan.tensor_buffer[conv.outputs[0]]] == 768


def test_same_shape_int16_add_runs_in_place(tmp_path):
    """A same-shape int16 ADD writes its output over its dying first input (two equal 2-byte buffers,
    ecc_add_s16 allows output == input); the broadcast kernel never does."""
    from tflite16_cases import add16

    from toolchain.memory import plan_for_kernels

    for model, inplace in ((add16(np.random.default_rng(3))[0], True), (CASES["add_bcast_channel"][0], False)):
        g = _load(tmp_path, model)
        variants = select_kernels(g, ["portable"])
        (node,) = g.nodes
        _, plan = plan_for_kernels(g, variants, 4)
        same = plan.tensor_buffer[node.outputs[0]] == plan.tensor_buffer[node.inputs[0]]
        assert same == inplace and bool(variants[node.name].inplace_inputs) == inplace
        assert {b.size for b in plan.buffers} == {g.t(n).nbytes for n in (*node.inputs, *node.outputs)}


# ---- refusals ----------------------------------------------------------------------------------
def _mixed_concat() -> bytes:
    m = Model()
    a, b = m.tensor((1, 2, 2, 3), I16, F32(1e-3), 0), m.tensor((1, 2, 2, 3), S.TensorType.INT8, F32(1e-2), 0)
    y = m.tensor((1, 2, 2, 6), I16, F32(1e-3), 0)
    o = S.ConcatenationOptionsT()
    o.axis = 3
    return m.build_ops([(OP.CONCATENATION, OPT.ConcatenationOptions, o, [a, b], [y])], [a, b], [y])


def _pool_requant() -> bytes:
    m = Model()
    x, y = m.tensor((1, 4, 4, 2), I16, F32(1e-3), 0), m.tensor((1, 2, 2, 2), I16, F32(3e-3), 0)
    o = S.Pool2DOptionsT()
    o.padding, o.strideH, o.strideW, o.filterHeight, o.filterWidth = S.Padding.VALID, 2, 2, 2, 2
    return m.build_ops([(OP.MAX_POOL_2D, OPT.Pool2DOptions, o, [x], [y])], [x], [y])


def _pad_requant() -> bytes:
    from tflite_op_cases import _ints

    m = Model()
    x, y = m.tensor((1, 2, 2, 1), I16, F32(1e-3), 0), m.tensor((1, 4, 4, 1), I16, F32(2e-3), 0)
    p = _ints(m, [(0, 0), (1, 1), (1, 1), (0, 0)])
    return m.build_ops([(OP.PAD, OPT.PadOptions, S.PadOptionsT(), [x, p], [y])], [x], [y])


def _case(fn, **kw):
    return lambda: fn(np.random.default_rng(0), **kw)[0]


@pytest.mark.parametrize("build, words", [
    (_case(binary16, op="mul", a_shape=(2, 3), b_shape=(2, 3), scales=(F32(1e-2), F32(1e-2), F32(1e-5))),
     ["MUL", "real multiplier", ">= 1", "larger output scale"]),
    (_case(binary16, op="sub", a_shape=(2, 3), b_shape=(2, 3), scales=(F32(1e-2), F32(1e-2), F32(1e-7))),
     ["SUB", "QuantizeMultiplierSmallerThanOneExp"]),
    (_case(binary16, op="add", a_shape=(2, 3), b_shape=(3,), scales=(F32(1e-2), F32(1e-2), F32(1e-7))),
     ["ADD", "QuantizeMultiplierSmallerThanOneExp"]),
    (_case(binary16, op="add", a_shape=(2, 3, 1, 4, 1, 5), b_shape=(1, 3, 2, 1, 3, 5)), ["ADD", "loop levels"]),
    (_case(concat16, shapes=[(1, 2, 3), (1, 2, 3)], axis=2, scales=[F32(1e-3), F32(2e-3)]),
     ["CONCATENATION", "!= output scale", "requantize the input first"]),
    (_mixed_concat, ["CONCATENATION", "input1", "int8", "16x8"]),
    (_pool_requant, ["MAX_POOL_2D", "TFLM refuses"]),
    (_pad_requant, ["PAD", "one scale"]),
    (_case(pad16, shape=(1, 2, 2, 1), pads=[(0, 0), (1, 1), (1, 1), (0, 0)], v2=True), None),
    (_case(mean16, shape=(1, 4, 5, 3), axes=[1, 3]), ["MEAN", "non-contiguous"]),
    (_case(mean16, shape=(1, 2, 2, 3), axes=[1, 2], scales=(F32(1e-2), F32(1e-8))), ["MEAN", "int32"]),
    (_case(mean16, shape=(1, 64, 64, 1), axes=[1, 2], op="sum", scales=(F32(1e-3), F32(5e-5))), ["SUM", "int32"]),
    (_case(pool16, kind="avg", shape=(1, 300, 300, 1), k=(300, 300), s=(1, 1)), ["AVERAGE_POOL_2D", "65536"]),
])
def test_unsupported_16x8_refused_by_name(tmp_path, build, words):
    path = tmp_path / "m.tflite"
    path.write_bytes(build())
    if words is None:  # a control: the same builder converts when nothing is wrong
        load_tflite(path)
        return
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(path)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_padv2_constant_on_another_scale_refused(tmp_path):
    from tflite_op_cases import _ints

    m = Model()
    x, y = m.tensor((1, 2, 2, 1), I16, F32(1e-3), 0), m.tensor((1, 4, 4, 1), I16, F32(1e-3), 0)
    c = m.tensor([1], I16, F32(2e-3), 0, np.array([7], np.int16))
    p = _ints(m, [(0, 0), (1, 1), (1, 1), (0, 0)])
    (tmp_path / "m.tflite").write_bytes(m.build_ops([(OP.PADV2, OPT.PadV2Options, S.PadV2OptionsT(), [x, p, c], [y])],
                                                    [x], [y]))
    with pytest.raises(UnsupportedModel, match="constant_values.*int16 constant with the output's scale"):
        load_tflite(tmp_path / "m.tflite")


def test_mixed_net_interpreter_and_c_bit_exact_with_tflm(portable_lib, tmp_path):
    """The mixed 16x8 net (conv, pad, max / avg pool, concat, mul, add, mean, fc between float
    edges) on four samples: our interpreter == TFLM and the portable C == our interpreter."""
    from _c_graph import run_graph_c
    from tflite16_cases_ops import mixed_net16

    model, samples = mixed_net16()
    cases = {f"net{i}": (model, [s]) for i, s in enumerate(samples)}
    theirs = run_tflm(cases, tmp_path / "tflm")
    g = _load(tmp_path, model)
    assert [n.op.value for n in g.nodes] == ["Quantize", "Conv2D", "Pad", "MaxPool2D", "AveragePool2D",
                                             "Concatenation", "Mul", "Add", "Mean", "FullyConnected", "Dequantize"]
    for i, s in enumerate(samples):
        feeds = {g.inputs[0]: s}
        env = interpret(g, feeds, keep_all=True)
        ours = env[g.outputs[0]]
        assert not isinstance(theirs[f"net{i}"][2], str), theirs[f"net{i}"][2]
        np.testing.assert_array_equal(ours, theirs[f"net{i}"][2].reshape(ours.shape))
        np.testing.assert_array_equal(run_graph_c(portable_lib, g, feeds)[g.outputs[0]], ours)
        for n in g.nodes[1:-1]:  # every int16 activation uses a good part of the int16 range
            v = env[n.outputs[0]]
            assert v.dtype == np.int16 and np.abs(v.astype(np.int32)).max() > 1000, n.name
    assert len({np.asarray(theirs[f"net{i}"][2]).tobytes() for i in range(4)}) == 4  # samples differ
