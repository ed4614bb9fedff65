"""Concatenation (ops/concat.py): same-qparams inputs vs TFLM (a copy, through our interpreter and the
C kernel); inputs with their own qparams rescaled to the output's by the float32 ratio, rounded exactly
as the declared mode says (TFLM refuses or copies bytes there: BL-25, tested in
test_fault_cases_requant.py); ONNX Concat."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ir import QuantParams
from toolchain.ops.concat import COPY, concat_params, concat_s8
from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(11)


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "concat_", min_cases=4)


def test_same_qparams_is_a_plain_copy():
    q = QuantParams.per_tensor(0.0627, -3)
    p = concat_params(q, q)
    assert (p[1], p[2]) == COPY and p[0] + p[3] == 0
    x = RNG.integers(-128, 128, (2, 5)).astype(np.int8)
    assert np.array_equal(concat_s8([x, x[:, :2]], 1, [p, p]), np.concatenate([x, x[:, :2]], 1))


@pytest.mark.parametrize("axis, shapes", [(1, [(1, 3, 4, 5), (1, 2, 4, 5)]), (2, [(1, 3, 4, 5), (1, 3, 1, 5)]),
                                          (3, [(1, 3, 4, 2), (1, 3, 4, 5), (1, 3, 4, 1)]), (0, [(2, 3), (1, 3)])])
def test_onnx_concat(axis, shapes, tmp_path, portable_lib):
    names = [f"x{i}" for i in range(len(shapes))]
    # different ranges per input: the int8 inputs get different qparams and are requantized
    inputs = dict(zip(names, shapes, strict=True))
    m = model([helper.make_node("Concat", names, ["y"], axis=axis)], inputs, ["y"])
    calib = {n: RNG.uniform(-1, 1, (3, *s)).astype(np.float32) * (i + 1) for i, (n, s) in enumerate(inputs.items())}
    g, _ = check_float(m, {k: v[0] for k, v in calib.items()}, tmp_path)
    assert OpKind.CONCAT in [n.op for n in g.nodes]
    check_int8(g, calib, portable_lib, max_lsb=1.0)


def test_onnx_concat_with_a_constant_input(tmp_path, portable_lib):
    c = RNG.uniform(-1, 1, (1, 2, 3, 3)).astype(np.float32)
    m = model([helper.make_node("Concat", ["x", "c"], ["y"], axis=1)], {"x": (1, 4, 3, 3)}, ["y"], {"c": c})
    calib = {"x": RNG.uniform(-2, 2, (3, 1, 4, 3, 3)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.0)
