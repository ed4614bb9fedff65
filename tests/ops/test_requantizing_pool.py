"""MAX_POOL_2D / AVERAGE_POOL_2D whose output qparams differ from the input's, vs TFLM.

TFLM's PoolingPrepare (micro/kernels/pooling_common.cc) refuses int8 pooling whose output scale is more
than 1e-6 from the input's or whose zero point differs, so TFLM computes nothing to be bit-exact
with: edgecc refuses the same models by name. Within 1e-6 TFLM pools the raw int8 values (the output
scale is never read) and so do we, bit for bit, on all 256 int8 values."""
from __future__ import annotations

import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import I8, OP, OPT, Model, S, _one

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite

F = np.float32
ALL = np.arange(-128, 128, dtype=np.int8).reshape(1, 8, 8, 4)   # every int8 value once
# (s_in, zp_in), (s_out, zp_out) that requantize: ratios below and above 1, zero points at both ends
REQUANT = [((0.05, 0), (0.1, -20)), ((0.1, 127), (0.03, -128)), ((0.02, -128), (0.02, 127)),
           ((0.5, 3), (0.01, 3))]
# within TFLM's 1e-6: the raw values pass
NEAR = [((0.05, 0), (0.05 + 9e-7, 0)), ((0.01, -128), (0.01 - 5e-7, -128))]
CODES = {"max": OP.MAX_POOL_2D, "avg": OP.AVERAGE_POOL_2D}


def _pool(code, q_in, q_out, k: int, s: int, same: bool) -> tuple[bytes, list[np.ndarray]]:
    oh = -(-8 // s) if same else (8 - k) // s + 1
    m = Model()
    ti = m.tensor(ALL.shape, I8, F(q_in[0]), q_in[1])
    to = m.tensor((1, oh, oh, 4), I8, F(q_out[0]), q_out[1])
    o = S.Pool2DOptionsT()
    o.padding = S.Padding.SAME if same else S.Padding.VALID
    o.strideH = o.strideW = s
    o.filterHeight = o.filterWidth = k
    return _one(m, code, OPT.Pool2DOptions, o, [ti], to, [ti]), [ALL]


def _cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    out = {}
    for kind, code in CODES.items():
        for i, (qi, qo) in enumerate(REQUANT):
            out[f"{kind}_requant_{i}"] = _pool(code, qi, qo, 2 + i % 2, 2, bool(i % 2))
        for i, (qi, qo) in enumerate(NEAR):
            out[f"{kind}_near_{i}"] = _pool(code, qi, qo, 3, 1 + i, bool(i % 2))
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_requant_pool"))


@pytest.mark.parametrize("kind", list(CODES))
def test_tflm_refuses_requantizing_pooling_and_so_do_we(cases, kind):
    for i in range(len(REQUANT)):
        path, _inputs, tflm = cases[f"{kind}_requant_{i}"]
        assert isinstance(tflm, str) and "TFLM" in tflm, f"TFLM ran {kind}_requant_{i}: {tflm}"
        with pytest.raises(UnsupportedModel, match=r"_POOL_2D x1 \(pooling from scale .* \(TFLM refuses int8 pooling"):
            load_tflite(path)


@pytest.mark.parametrize("kind", list(CODES))
def test_scales_within_tflm_tolerance_pool_the_raw_values(cases, portable_lib, kind):
    assert check_tflm_and_c(cases, portable_lib, f"{kind}_near_", min_cases=len(NEAR)) == len(NEAR)
