"""Add (broadcast, constant operands), Sub and Mul (ops/add.py, ops/binary.py): generated .tflite
models vs TFLM through our interpreter and through the portable C kernels; the broadcast loop plan;
ONNX Add/Sub/Mul/Div with broadcast and constants vs onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.errors import UnsupportedModel
from toolchain.ops.binary import broadcast_plan, sub_params, sub_s8
from toolchain.ops.registry import OpKind


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_tflm_bit_exact(tflm_cases, portable_lib, op):
    check_tflm_and_c(tflm_cases, portable_lib, f"{op}_", min_cases=6)


@pytest.mark.parametrize("a, b, dims, sa, sb", [
    ((1, 4, 6, 13), (1, 1, 1, 13), [1, 1, 24, 13], [0, 0, 13, 1], [0, 0, 0, 1]),
    ((2, 3, 1, 7), (1, 1, 5, 1), [1, 6, 5, 7], [0, 7, 0, 1], [0, 0, 1, 0]),   # 2x3 merged
    ((7,), (1,), [1, 1, 1, 7], [0, 0, 0, 1], [0, 0, 0, 0]),
    ((1, 3, 9), (3, 1), [1, 1, 3, 9], [0, 0, 9, 1], [0, 0, 1, 0]),
    ((5, 6), (5, 6), [1, 1, 1, 30], [0, 0, 0, 1], [0, 0, 0, 1]),       # equal shapes: one flat loop
    ((), (2, 3), [1, 1, 1, 6], [0, 0, 0, 0], [0, 0, 0, 1]),            # scalar operand
])
def test_broadcast_plan(a, b, dims, sa, sb):
    assert broadcast_plan(a, b) == (dims, sa, sb)
    x, y = np.arange(int(np.prod(a))).reshape(a), 1000 * np.arange(int(np.prod(b))).reshape(b)
    want = (x + y).ravel()
    got = [x.ravel()[i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3]] + y.ravel()[i0 * sb[0] + i1 * sb[1] + i2 * sb[2] +
           i3 * sb[3]] for i0 in range(dims[0]) for i1 in range(dims[1]) for i2 in range(dims[2]) for i3 in range(dims[3])]
    assert got == want.tolist()


def test_broadcast_of_five_alternating_groups_is_unsupported(tmp_path):
    with pytest.raises(ValueError, match="5 loop levels"):
        broadcast_plan((2, 1, 3, 1, 5), (1, 4, 3, 2, 1))
    m = model([helper.make_node("Mul", ["a", "b"], ["y"])], {"a": (2, 1, 3, 1, 5), "b": (1, 4, 3, 2, 1)}, ["y"])
    with pytest.raises(UnsupportedModel, match="Mul.*5 loop levels"):
        check_float(m, {}, tmp_path)


def test_sub_params_are_float32_ratios():
    """TFLM SUB computes its ratios in float32 (sub_common.cc), unlike ADD (double)."""
    p = sub_params(0.1, 3, 0.3, -2, 0.05, 7)
    f = np.float32
    tm = f(2) * f(0.3)
    from toolchain.ops.fixed_point import quantize_multiplier
    assert (p.input1_mult, p.input1_shift) == quantize_multiplier(float(f(0.1) / tm))
    assert (p.output_mult, p.output_shift) == quantize_multiplier(float(tm / (f(1 << 20) * f(0.05))))
    assert (p.input1_offset, p.input2_offset, p.output_offset, p.left_shift) == (-3, 2, 7, 20)


def test_sub_of_equal_inputs_is_the_zero_point():
    p = sub_params(0.05, -128, 0.05, -128, 0.1, 127)
    x = np.arange(-128, 128, dtype=np.int8)
    assert np.all(sub_s8(x, x, p) == 127)


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("b_shape, const", [((1, 6, 5, 7), False), ((1, 6, 1, 1), True), ((6, 1, 1), True),
                                            ((7,), True), ((), True), ((1, 1, 5, 7), False)])
def test_onnx_broadcast_and_constants(op, b_shape, const, tmp_path, portable_lib):
    if op == "Div" and not const:
        pytest.skip("Div is supported by a constant only")
    b = (RNG.uniform(0.5, 2.0, b_shape) * (1 if op == "Div" else RNG.choice([-1, 1]))).astype(np.float32)
    inits = {"b": b} if const else {}
    inputs = {"a": (1, 6, 5, 7), **({} if const else {"b": b_shape})}
    conv_w = RNG.uniform(-1, 1, (6, 6, 1, 1)).astype(np.float32)   # a conv first: the activation is NHWC
    nodes = [helper.make_node("Conv", ["a", "w"], ["c"]), helper.make_node(op, ["c", "b"], ["y"])]
    m = model(nodes, inputs, ["y"], {**inits, "w": conv_w})
    calib = {k: RNG.uniform(-2, 2, (4, *s)).astype(np.float32) for k, s in inputs.items()}
    g, _ = check_float(m, {k: v[0] for k, v in calib.items()}, tmp_path)
    kind = {"Add": OpKind.ADD, "Sub": OpKind.SUB, "Mul": OpKind.MUL, "Div": OpKind.MUL}[op]
    assert [n.op for n in g.nodes if n.op != OpKind.TRANSPOSE][-1] == kind
    check_int8(g, calib, portable_lib, max_lsb=3.0)


def test_onnx_constant_only_arithmetic_is_folded(tmp_path):
    nodes = [helper.make_node("Mul", ["k", "k"], ["k2"]), helper.make_node("Add", ["x", "k2"], ["y"])]
    m = model(nodes, {"x": (2, 3)}, ["y"], {"k": np.full((3,), 1.5, np.float32)})
    g, _ = check_float(m, {"x": np.ones((2, 3), np.float32)}, tmp_path)
    assert [n.op for n in g.nodes] == [OpKind.ADD]
