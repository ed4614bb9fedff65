"""QDQ Max / Min / Sum where the input -> output rescale makes exact ties common (s_in / s_out = 1.5,
0.5, 2.5, ...), against onnxruntime (InferenceSession, default options) under `rounding: onnx`.

ORT runs Max / Min in float32 between DequantizeLinear and QuantizeLinear: float32((q - zp) * s_in)
/ s_out, ties to even. That float32 arithmetic moves real ties to one side (0.27f / 0.02f is
13.499999), so the exact-ratio rescale was 1 LSB off; ours now maps each input through a 256-entry
table of ORT's arithmetic (concat.onnx_rescale_table): 0 LSB, every int8 input value covered, and
the portable C twin == the interpreter. Sum (-> ADD) is TFLite's integer add in both modes; ORT
fuses DQ -> Add -> Q into QLinearAdd (MLAS float32 FMA arithmetic), which we do not emulate: at
most 1 LSB, pinned below.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder, import_int8, on_grid, ours

from toolchain.ops.fixed_point import quantize_real

sys.path.append(str(Path(__file__).resolve().parents[1] / "ops"))
from _c_graph import build_portable_library, run_graph_c  # noqa: E402

ort = pytest.importorskip("onnxruntime")

SHAPE = (1, 4, 16, 16)  # 256 values per channel: every int8 input value meets every constant
# (s_x, zp_x, s_c, zp_c, s_y, zp_y): the review's case (ratios 1.5 and 0.5), then other tie makers
QPARAMS = [(0.03, 0, 0.01, 3, 0.02, -5), (0.05, -128, 0.01, 127, 0.02, 7), (0.025, 127, 0.0125, -128, 0.01, 0),
           (0.015, 3, 0.045, -7, 0.01, -128), (0.07, -9, 0.02, 11, 0.04, 127)]
CONST = np.array([10, -7, 3, 100], np.int8).reshape(1, 4, 1, 1)
# op: max LSB from ORT under rounding onnx (Sum: ORT's QLinearAdd float arithmetic, not emulated)
OPS = {"Max": 0, "Min": 0, "Sum": 1}


def build(op: str, q: tuple) -> ModelBuilder:
    sx, zx, sc, zc, sy, zy = q
    m = ModelBuilder(17)
    x = m.input("x", SHAPE)
    xd = m.dq(m.q(x, sx, zx, "xq"), sx, zx, "xd")
    c = m.dq(m.const("c", CONST, np.int8), sc, zc, "cd")
    m.dq(m.q(m.node(op, [xd, c], "y0"), sy, zy, "yq"), sy, zy, "y")
    m.output("y")
    return m


def all_values(q: tuple) -> np.ndarray:
    """Float inputs whose QuantizeLinear gives every int8 value once per channel."""
    sx, zx = q[0], q[1]
    v = (np.arange(-128, 128, dtype=np.float32) - zx) * np.float32(sx)
    return np.broadcast_to(np.random.default_rng(0).permutation(v).reshape(1, 1, 16, 16), SHAPE).astype(np.float32)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_portable_library(tmp_path_factory.mktemp("portable_ties"))


@pytest.mark.parametrize("op", list(OPS))
def test_ties_match_onnxruntime_and_c(op: str, lib, tmp_path: Path) -> None:
    worst, ties = 0, 0
    for i, q in enumerate(QPARAMS):
        p = build(op, q).save(tmp_path / f"{op}_{i}.onnx")
        g = import_int8(p)
        x = all_values(q)
        ref = on_grid(ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0], g)
        got = ours(p, {"x": x}, "onnx", g)[0]
        worst = max(worst, int(np.abs(got.astype(int) - ref.reshape(got.shape).astype(int)).max()))
        # the case has exact real ties (else it would not test the fix)
        real = (np.rint(x / np.float32(q[0])) * q[0]) / q[4]
        ties += int(np.isclose(real - np.floor(real), 0.5, atol=1e-6).sum())
        # the generated C (the `_onnx` twin) == the interpreter, bit for bit
        go = replace(g, meta={**g.meta, "rounding": "onnx"})
        qp = g.t(g.inputs[0]).quant
        feeds = {g.inputs[0]: quantize_real(x, qp.s, qp.zp, "onnx").reshape(g.t(g.inputs[0]).shape)}
        c_out = run_graph_c(lib, go, feeds)[g.outputs[0]]
        assert np.array_equal(c_out, got.reshape(c_out.shape)), (op, q)
    assert ties > 100
    assert worst == OPS[op], (op, worst)


def test_max_min_onnx_table_is_ort_arithmetic() -> None:
    """The table reproduces the float32 tie that the exact ratio rounds the other way."""
    from toolchain.ir import QuantParams
    from toolchain.ops.concat import concat_params, onnx_rescale_table, rescale_exact_s8

    src, dst = QuantParams.per_tensor(0.03, 0), QuantParams.per_tensor(0.02, -5)
    t = onnx_rescale_table(src, dst)
    assert t[9 + 128] == 8          # 0.27f / 0.02f = 13.499999 -> 13, + zp -5
    assert int(rescale_exact_s8(np.array([9], np.int8), *concat_params(src, dst), rounding="onnx")[0]) == 9
