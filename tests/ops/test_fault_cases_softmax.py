"""Softmax fault case BL-29 of ../shared/design/int8-fault-cases.md (rows whose sum of exponentials
reaches 512) with its neighbours, on the numpy reference and the portable C kernels (ctypes)."""
from __future__ import annotations

import numpy as np
import pytest
from _fault_cases import I8, both, make_graph, qp

from toolchain.ir import Node, Tensor
from toolchain.ops.fixed_point import softmax_params
from toolchain.ops.registry import OpKind
from toolchain.ops.softmax import softmax_s8


# ---- BL-29: softmax rows whose sum of exponentials reaches 512 --------------------------------------
@pytest.mark.parametrize("n, want", [(256, -127), (511, -127), (512, -128), (1000, -128)])
def test_bl29_wide_rows_do_not_abort(n, want, portable_lib):
    """quantize(1/n) at scale 1/256, zp -128; n = 512 is an exact tie (0.5 LSB) that the gemmlowp
    arithmetic rounds down, like ORT's half-to-even. TFLM aborts for n >= 512 (our exception: the
    value of the fault-case file is the reference)."""
    p = softmax_params(0.1)
    assert set(softmax_s8(np.zeros((1, n), np.int8), p).ravel().tolist()) == {want}
    from toolchain.ops.softmax import SoftmaxAttrs

    ts = [Tensor("x", (1, n), I8, qp(0.1, -20)), Tensor("y", (1, n), I8, qp(1 / 256, -128))]
    g = make_graph([Node("s", OpKind.SOFTMAX, ("x",), ("y",), SoftmaxAttrs(1.0))], ts, ["x"], ["y"])
    assert set(both(portable_lib, g, {"x": np.full((1, n), -20, np.int8)}).ravel().tolist()) == {want}


def test_bl29_neighbours_many_maxima_and_large_beta_scale():
    x = np.full((1, 1000), -100, np.int8)
    x[0, :600] = 0
    assert set(softmax_s8(x, softmax_params(0.1)).ravel().tolist()) == {-128}   # 1/600 -> 0.43 LSB
    y = softmax_s8(np.array([[0, 1, 2, 3]], np.int8), softmax_params(2.0))
    real = np.exp(2.0 * np.arange(4)) / np.exp(2.0 * np.arange(4)).sum()
    assert np.max(np.abs((y.astype(float) + 128) / 256 - real)) <= 1 / 256
