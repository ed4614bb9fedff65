"""Reductions over axes that are not contiguous (in the file's order or in the NHWC IR): TFLite SUM,
MEAN, REDUCE_MAX vs TFLM and ONNX ReduceSum / ReduceMax / ReduceMean vs onnxruntime. The frontends
gather the reduced axes at the end with a Transpose (exact data movement), then reduce them in one
pass (TFLM's QuantizedMeanOrSum: one int32 sum, one requantization), keepdims by a Reshape view."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from test_reduce import reduce_case
from tflite_op_cases import I8, OP, OPT, S, Model, _i8, _ints, _one, _scale

from toolchain.frontend.tflite import load_tflite
from toolchain.ops.mean import gathering_perm
from toolchain.ops.registry import OpKind

# (shape, axes, keep_dims): the review's [0, 2] of [4, 3, 5] and [-1, 1, -3] of rank 4, then more
SPECS = [((4, 3, 5), [0, 2], False), ((4, 3, 5), [0, 2], True), ((2, 3, 4, 5), [-1, 1, -3], False),
         ((2, 3, 4, 5), [-1, 1, -3], True), ((1, 5, 7, 3), [1, 3], True), ((3, 5, 1, 7), [0, 3], False),
         ((2, 3, 5, 7), [0, 2], True)]


def mean_case(rng, shape, axes, keep_dims, zp=None):
    s, z = _scale(rng, 0.01, 0.2), zp if zp is not None else int(rng.integers(-128, 128))
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    ax = {a % len(shape) for a in axes}
    out = [1 if i in ax else d for i, d in enumerate(shape)] if keep_dims else [d for i, d in enumerate(shape) if i not in ax]
    to = m.tensor(out, I8, _scale(rng, 0.01, 0.2), int(rng.integers(-128, 128)))
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    return _one(m, OP.MEAN, OPT.ReducerOptions, o, [ti, _ints(m, axes)], to, [ti]), [_i8(rng, shape)]


def _cases():
    r = np.random.default_rng(77)
    cases = {}
    for i, (shape, axes, keep) in enumerate(SPECS):
        for op in ("max", "sum"):
            cases[f"{op}_{i}"] = reduce_case(r, op, shape, axes, keep)
        cases[f"mean_{i}"] = mean_case(r, shape, axes, keep)
    for zp in (-128, 127):
        for op in ("max", "sum"):
            cases[f"{op}_zp{zp}"] = reduce_case(r, op, (3, 4, 5, 2), [0, 2], True, zp=zp)
        cases[f"mean_zp{zp}"] = mean_case(r, (3, 4, 5, 2), [0, 2], False, zp=zp)
    return cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_reduce_nc"))


@pytest.mark.parametrize("op", ["max", "sum", "mean"])
def test_tflm_bit_exact(cases, portable_lib, op):
    assert check_tflm_and_c(cases, portable_lib, f"{op}_") == len(SPECS) + 2


def test_lowered_as_transpose_then_one_reduction(tmp_path):
    (buf, _), = [reduce_case(np.random.default_rng(1), "sum", (4, 3, 5), [0, 2], True)]
    p = tmp_path / "s.tflite"
    p.write_bytes(buf)
    g = load_tflite(p)
    assert [n.op for n in g.nodes] == [OpKind.TRANSPOSE, OpKind.SUM, OpKind.RESHAPE]
    assert gathering_perm((4, 3, 5), (0, 2)) == (1, 0, 2) and gathering_perm((1, 4, 5, 6), (1, 2)) is None


ONNX = [("ReduceSum", (1, 4, 5, 6), [1, 3], 1), ("ReduceSum", (1, 4, 5, 6), [1, 3], 0), ("ReduceMax", (1, 4, 5, 6), [1, 3], 1),
        ("ReduceMax", (1, 4, 5, 6), [0, 2], 0), ("ReduceMean", (2, 4, 5, 6), [0, 2], 1), ("ReduceMean", (1, 4, 5, 6), [1, 3], 0),
        ("ReduceSum", (2, 3, 4, 5), [0, 1, 3], 0), ("ReduceMax", (2, 3, 4), [0, 2], 1)]


@pytest.mark.parametrize("op,shape,axes,keep", ONNX)
@pytest.mark.parametrize("conv", [False, True])
def test_onnx_vs_onnxruntime(op, shape, axes, keep, conv, tmp_path, portable_lib):
    rng = np.random.default_rng(len(shape) * 7 + sum(axes))
    nodes, inits, src = [], {}, "x"
    if conv and len(shape) == 4:  # an NHWC producer: the axes are mapped to the IR's first
        inits["w"] = rng.normal(0, 0.3, (shape[1], shape[1], 1, 1)).astype(np.float32)
        nodes.append(helper.make_node("Conv", ["x", "w"], ["c"]))
        src = "c"
    ins = [src]
    if op == "ReduceMax":
        nodes.append(helper.make_node(op, ins, ["y"], axes=axes, keepdims=keep))
        m = model(nodes, {"x": shape}, ["y"], inits, opset=17)
    else:
        inits["ax"] = np.array(axes, np.int64)
        nodes.append(helper.make_node(op, [src, "ax"], ["y"], keepdims=keep))
        m = model(nodes, {"x": shape}, ["y"], inits, opset=18)
    calib = {"x": rng.uniform(-1, 1, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path, atol=1e-4)
    check_int8(g, calib, portable_lib, max_lsb=2.0)
