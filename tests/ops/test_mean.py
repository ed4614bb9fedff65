"""Mean (ops/mean.py): MEAN vs TFLM (every int8 MEAN goes through QuantizedMeanOrSum, shared qparams
included) through our interpreter and the C kernel; ONNX ReduceMean (attribute and input axes,
keepdims) vs onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ir import QuantParams
from toolchain.ops.mean import mean_multiplier, mean_s8, reduce_layout
from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(13)


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "mean_", min_cases=5)


def test_mean_multiplier_folds_one_over_n():
    assert mean_multiplier(0.1, 0.1, 6) == (715827882, -1)   # (2^30 << 2) // 6, shift 1 - 2
    assert mean_multiplier(0.1, 0.1, 1) == (1 << 30, 1)


def test_shared_qparams_round_not_truncate():
    """The values that told the two TFLM paths apart: -308 over 6 with zp 127 -> -52 (truncation: -51)."""
    q = QuantParams.per_tensor(0.18107682466506958, 127)
    x = np.array([[-52, -51, -51, -51, -51, -52]], np.int8)   # sum -308
    assert mean_s8(x, (1,), q, q, keep_dims=False).tolist() == [-52]


@pytest.mark.parametrize("shape, axes, layout", [((1, 7, 5, 13), (1, 2), (1, 35, 13)), ((2, 5, 3, 8), (3,), (30, 8, 1)),
                                                 ((1, 1, 1, 9), (1, 2), (9, 1, 1)), ((4, 6), (0,), (1, 4, 6))])
def test_reduce_layout(shape, axes, layout):
    assert reduce_layout(shape, axes) == layout


def test_non_contiguous_axes_are_rejected():
    with pytest.raises(ValueError, match="not contiguous"):
        reduce_layout((2, 3, 4, 5), (1, 3))


@pytest.mark.parametrize("axes, keepdims, opset", [([2, 3], 1, 13), ([2, 3], 0, 13), ([1], 1, 18), ([1], 0, 18),
                                                   ([-1], 1, 18), ([0, 1, 2, 3], 0, 13)])
def test_onnx_reduce_mean(axes, keepdims, opset, tmp_path, portable_lib):
    w = RNG.uniform(-1, 1, (6, 3, 1, 1)).astype(np.float32)
    inits = {"w": w}
    if opset >= 18:
        inits["axes"] = np.array(axes, np.int64)
        mean = helper.make_node("ReduceMean", ["c", "axes"], ["y"], keepdims=keepdims)
    else:
        mean = helper.make_node("ReduceMean", ["c"], ["y"], axes=axes, keepdims=keepdims)
    m = model([helper.make_node("Conv", ["x", "w"], ["c"]), mean], {"x": (1, 3, 5, 7)}, ["y"], inits, opset=opset)
    calib = {"x": RNG.uniform(-1, 1, (3, 1, 3, 5, 7)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert OpKind.MEAN in [n.op for n in g.nodes]
    # the conv output rounds to its own (wider) scale first: 0.5 of its LSB is several LSB of a mean
    check_int8(g, calib, portable_lib, max_lsb=4.0)
