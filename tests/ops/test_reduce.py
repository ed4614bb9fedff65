"""SUM (ops/sum.py, the MEAN kernel with compute_sum) and REDUCE_MAX (ops/reduce_max.py) vs TFLM
through our interpreter and the portable C kernels (axes, keep_dims, zero points -128/127, odd
sizes); REDUCE_MAX with different qparams is refused; ONNX ReduceSum, ReduceMax (attribute and input
axes) and GlobalMaxPool vs onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import I8, OP, OPT, S, Model, _i8, _ints, _one, _scale

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ir import QuantParams
from toolchain.ops.mean import mean_s8, sum_multiplier
from toolchain.ops.reduce_max import reduce_max_s8

RNG = np.random.default_rng(31)


def reduce_case(rng, op, shape, axes, keep_dims, zp=None, out_q=None):
    s, z = _scale(rng, 0.01, 0.2), zp if zp is not None else int(rng.integers(-128, 128))
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    ta = _ints(m, axes)
    ax = {a % len(shape) for a in axes}
    out = [1 if i in ax else d for i, d in enumerate(shape)] if keep_dims else \
        [d for i, d in enumerate(shape) if i not in ax]
    if out_q is None:
        out_q = (s, z) if op == "max" else (_scale(rng, 0.05, 2.0), int(rng.integers(-128, 128)))
    to = m.tensor(out, I8, *out_q)
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    code = OP.REDUCE_MAX if op == "max" else OP.SUM
    return _one(m, code, OPT.ReducerOptions, o, [ti, ta], to, [ti]), [x]


SPECS = [((1, 5, 7, 3), [1, 2], True), ((1, 5, 7, 3), [1, 2], False), ((2, 3, 4, 5), [3], False),
         ((1, 6, 6, 13), [-1], True), ((1, 9, 1, 4), [1], False), ((3, 7), [0], True), ((1, 4, 5, 6), [0, 1, 2, 3], False),
         ((1, 3, 5, 7), [2, 3], True)]


def _cases():
    r = np.random.default_rng(5)
    cases = {}
    for op in ("max", "sum"):
        for i, (shape, axes, keep) in enumerate(SPECS):
            cases[f"{op}_{i}"] = reduce_case(r, op, shape, axes, keep)
        cases[f"{op}_zp_min"] = reduce_case(r, op, (1, 4, 4, 5), [1, 2], True, zp=-128)
        cases[f"{op}_zp_max"] = reduce_case(r, op, (1, 4, 4, 5), [1, 2], True, zp=127)
    cases["sum_saturates"] = reduce_case(r, "sum", (1, 8, 8, 3), [1, 2], False, out_q=(0.01, 0))
    return cases


@pytest.fixture(scope="module")
def reduce_cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_reduce"))


def test_reduce_max_tflm_bit_exact(reduce_cases, portable_lib):
    assert check_tflm_and_c(reduce_cases, portable_lib, "max_") == 10


def test_sum_tflm_bit_exact(reduce_cases, portable_lib):
    assert check_tflm_and_c(reduce_cases, portable_lib, "sum_") == 11
    # the saturating case really saturates
    _path, _ins, want = reduce_cases["sum_saturates"]
    assert {-128, 127} & set(want.reshape(-1).tolist())


def test_sum_multiplier_has_no_one_over_n():
    assert sum_multiplier(0.1, 0.1, 6, mean=False) == (1 << 30, 1)
    q_in, q_out = QuantParams.per_tensor(0.1, 3), QuantParams.per_tensor(0.2, -5)
    x = np.array([[1, 2, 3, 10]], np.int8)  # sum - 4 * 3 = 4 -> 4 * 0.5 = 2 -> -3
    assert mean_s8(x, (1,), q_in, q_out, keep_dims=False, mean=False).tolist() == [-3]


def test_reduce_max_raw():
    x = np.array([[[-128, 5], [127, -7]]], np.int8)
    assert reduce_max_s8(x, (1,), keep_dims=False).tolist() == [[127, 5]]


def test_reduce_max_other_qparams_refused(tmp_path):
    model, _ = reduce_case(np.random.default_rng(1), "max", (1, 4, 4, 3), [1, 2], True, out_q=(0.5, 0))
    p = tmp_path / "m.tflite"
    p.write_bytes(model)
    with pytest.raises(UnsupportedModel, match="needs equal input and output quantization"):
        load_tflite(p)
