"""Requantizing QDQ ops exactly as onnxruntime computes them (issue 13 item 3), every int8 input value:

- element-wise single-input ops between two grids (Clip, Relu, Sigmoid with output scale 1/255, Tanh
  1/127, LeakyRelu with positive and negative alpha, HardSigmoid) and Add / Sub / Mul with a constant
  scalar in either position become LOOKUP_TABLE, onnxruntime's own outputs: 0 LSB against ORT with
  graph optimisations off (its float simulation) and with its default options (which fuse DQ -> op ->
  Q into QLinearSigmoid / QLinearLeakyRelu / QLinearAdd / QLinearMul where it can), in both rounding
  modes; the portable C equals the interpreter;
- Reshape / Squeeze / Transpose / Flatten whose output grid differs from the input's become the
  movement + a REQUANTIZE, which under rounding onnx is ORT's float32 DequantizeLinear ->
  QuantizeLinear table: 0 LSB on scales that make near-ties (0.03 -> 0.02: 0.27f / 0.02f is
  13.499999), where the exact float32 ratio was 1 LSB off on 5-6 of 256 values;
- a per-channel constant as input 0 of Add / Sub / Mul is kept (it was refused), computed with
  TFLite's integer arithmetic (at most 1 LSB from ORT's float one, as with the constant second).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder, import_int8, on_grid, ort_run, ours

from toolchain.ops.fixed_point import quantize_real

sys.path.append(str(Path(__file__).resolve().parents[1] / "ops"))
from _c_graph import build_portable_library, run_graph_c  # noqa: E402

ort = pytest.importorskip("onnxruntime")

N = 256
# (x grid, y grid): a plain pair, tie makers (s_in / s_out = 1.5 and 2.5), zero points at the ends
GRIDS = [((0.05, 3), (0.03, -7)), ((0.03, 0), (0.02, -5)), ((0.05, -128), (0.02, 7)), ((0.025, 127), (0.01, 0))]


def unary(op: str, qx, qy, consts=(), dtype=np.int8, **attrs) -> ModelBuilder:
    """x float [1, 256] -> Q/DQ (qx) -> op(x, *consts) -> Q/DQ (qy) -> y float."""
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, N)), *qx, "xq", dtype), *qx, "xd", dtype)
    ins = [xd] + [m.const(f"c{i}", np.float32(v)) if v is not None else "" for i, v in enumerate(consts)]
    m.dq(m.q(m.node(op, ins, "f", **attrs), *qy, "yq", dtype), *qy, "y", dtype)
    m.output("y")
    return m


def with_const(op: str, qx, qy, qc=(0.02, 1), first: bool = True, shape=(1, 1)) -> ModelBuilder:
    """op(c, x) (first) or op(x, c) with c an int8 constant DequantizeLinear'd on qc."""
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, N)), *qx, "xq"), *qx, "xd")
    c = m.dq(m.const("c", (np.arange(np.prod(shape)) * 37 % 200 - 90).reshape(shape), np.int8), *qc, "cd")
    m.dq(m.q(m.node(op, [c, xd] if first else [xd, c], "f"), *qy, "yq"), *qy, "y")
    m.output("y")
    return m


def movement(op: str, qx, qy) -> ModelBuilder:
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, N)), *qx, "xq"), *qx, "xd")
    f = {"Reshape": lambda: m.node("Reshape", [xd, m.const("shp", [1, 16, 16], np.int64)], "f"),
         "Transpose": lambda: m.node("Transpose", [xd], "f", perm=[1, 0]),
         "Flatten": lambda: m.node("Flatten", [xd], "f", axis=0),
         "Squeeze": lambda: m.node("Squeeze", [xd, m.const("ax", [0], np.int64)], "f")}[op]()
    m.dq(m.q(f, *qy, "yq"), *qy, "y")
    m.output("y")
    return m


def every_value(qx) -> np.ndarray:
    """A float input whose QuantizeLinear gives every int8 value once, in a shuffled order."""
    v = (np.arange(-128, 128, dtype=np.float32) - qx[1]) * np.float32(qx[0])
    return np.random.default_rng(0).permutation(v).reshape(1, N)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_portable_library(tmp_path_factory.mktemp("portable_tables"))


def _check(p: Path, qx, lib, modes=("onnx", "tflm"), default_options: bool = True) -> list[str]:
    """0 LSB against ORT on every int8 input value (optimisations off, and default options), in
    `modes`; the portable C == the interpreter under onnx. Returns the IR op names."""
    g = import_int8(p)
    x = {"x": every_value(qx)}
    refs = [on_grid(ort_run(p, x)[0], g)]
    if default_options:
        refs.append(on_grid(ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, x)[0], g))
    for mode in modes:
        got = ours(p, x, mode, g)[0]
        for ref in refs:
            assert np.array_equal(got.ravel(), ref.ravel()), (mode, np.count_nonzero(got.ravel() != ref.ravel()))
    go = replace(g, meta={**g.meta, "rounding": "onnx"})
    qp = g.t(g.inputs[0]).quant
    feeds = {g.inputs[0]: quantize_real(x["x"], qp.s, qp.zp, "onnx").reshape(g.t(g.inputs[0]).shape)}
    c = run_graph_c(lib, go, feeds)[g.outputs[0]]
    assert np.array_equal(c.ravel(), ours(p, x, "onnx", g)[0].ravel()), "C differs from the interpreter"
    return [n.op.name for n in g.nodes]


UNARY = {
    "clip": dict(op="Clip", consts=(-1.0, 2.0)),
    "clip_no_max": dict(op="Clip", consts=(0.0, None)),
    "relu": dict(op="Relu"),
    "leaky_relu": dict(op="LeakyRelu", alpha=0.1),
    "leaky_relu_negative_alpha": dict(op="LeakyRelu", alpha=-0.3),
    "hard_sigmoid": dict(op="HardSigmoid", alpha=0.2, beta=0.5),
}


@pytest.mark.parametrize("grids", GRIDS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_between_two_grids_is_onnxruntimes_table(name: str, grids, lib, tmp_path: Path) -> None:
    kw = dict(UNARY[name])
    p = unary(kw.pop("op"), *grids, **kw).save(tmp_path / f"{name}.onnx")
    assert _check(p, grids[0], lib) == ["LOOKUP_TABLE"]


@pytest.mark.parametrize("op, qy, dtype", [("Sigmoid", (1 / 255, -128), np.int8), ("Sigmoid", (1 / 256, 0), np.uint8),
                                           ("Tanh", (1 / 127, 0), np.int8), ("Tanh", (1 / 128, 128), np.uint8)])
@pytest.mark.parametrize("qx", [(0.05, 3), (0.1, -20), (0.02, 0)])
def test_sigmoid_and_tanh_with_any_output_grid(op: str, qx, qy, dtype, lib, tmp_path: Path) -> None:
    if dtype == np.uint8:
        qx = (qx[0], qx[1] + 128)
    p = unary(op, qx, qy, dtype=dtype).save(tmp_path / f"{op}.onnx")
    assert _check(p, (qx[0], qx[1] - (128 if dtype == np.uint8 else 0)), lib) == ["LOOKUP_TABLE"]


def test_clip_within_one_grid_stays_a_clamp(lib, tmp_path: Path) -> None:
    p = unary("Clip", (0.05, 3), (0.05, 3), consts=(-1.0, 2.0)).save(tmp_path / "c.onnx")
    assert _check(p, (0.05, 3), lib) == ["CLAMP"]


@pytest.mark.parametrize("grids", GRIDS[:2])
@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_binary_with_a_constant_scalar_is_a_table(op: str, first: bool, grids, lib, tmp_path: Path) -> None:
    p = with_const(op, *grids, first=first).save(tmp_path / f"{op}.onnx")
    assert _check(p, grids[0], lib) == ["LOOKUP_TABLE"]


@pytest.mark.parametrize("op, worst", [("Mul", 1), ("Add", 1), ("Sub", 1)])
def test_per_channel_constant_as_input_0_is_kept(op: str, worst: int, tmp_path: Path) -> None:
    qx, qy, qc = (0.05, 3), (0.06, -7), (0.02, 1)
    p = with_const(op, qx, qy, qc, first=True, shape=(1, N)).save(tmp_path / f"{op}.onnx")
    g = import_int8(p)  # refused before: "quantized constant 'cd' as input 0"
    node = next(n for n in g.nodes if n.op.value in ("Add", "Sub", "Mul"))
    c = g.t(node.inputs[0])
    assert c.is_const and c.quant.zero_point == (1,) and c.quant.scale == pytest.approx((0.02,))
    x = {"x": every_value(qx)}
    d = np.abs(ours(p, x, "onnx", g)[0].astype(int).ravel() - on_grid(ort_run(p, x)[0], g).astype(int).ravel())
    assert d.max() == worst, d.max()  # TFLite's integer add / mul vs ORT's float ones (either operand order)
    flipped = with_const(op, qx, qy, qc, first=False, shape=(1, N)).save(tmp_path / f"{op}_x_first.onnx")
    if op != "Sub":  # commutative: the same int8 result as with the constant second
        assert np.array_equal(ours(p, x, "onnx", g)[0], ours(flipped, x, "onnx")[0])


@pytest.mark.parametrize("grids", GRIDS)
@pytest.mark.parametrize("op", ["Reshape", "Transpose", "Flatten", "Squeeze"])
def test_movement_with_another_output_grid(op: str, grids, lib, tmp_path: Path) -> None:
    p = movement(op, *grids).save(tmp_path / f"{op}.onnx")
    ops = _check(p, grids[0], lib, modes=("onnx",))
    assert ops[-1] == "REQUANTIZE" and set(ops[:-1]) <= {"RESHAPE", "TRANSPOSE"}, ops


def test_near_ties_make_the_exact_ratio_miss_onnxruntime() -> None:
    """Why Requantize under onnx is a table: on 0.03 -> 0.02 the exact float32 ratio rounds 6 of 256
    values the other way than ORT's float32 arithmetic, the table none."""
    from toolchain.ir import QuantParams
    from toolchain.ops.concat import concat_params, onnx_rescale_table, rescale_exact_s8

    src, dst = QuantParams.per_tensor(0.03, 0), QuantParams.per_tensor(0.02, -5)
    q = np.arange(-128, 128, dtype=np.int8)
    exact = rescale_exact_s8(q, *concat_params(src, dst), rounding="onnx")
    ort_values = np.clip(np.rint((q.astype(np.float32) * np.float32(0.03)) / np.float32(0.02)) - 5, -128, 127)
    assert np.array_equal(onnx_rescale_table(src, dst), ort_values.astype(np.int8))
    assert np.count_nonzero(exact != ort_values) == 6


@pytest.mark.parametrize("grids", GRIDS)
def test_concat_near_ties_every_value(grids, lib, tmp_path: Path) -> None:
    """Concat of two inputs on other grids than the output's: under rounding onnx each input goes through
    ORT's float32 DequantizeLinear -> QuantizeLinear table (was the exact float32 ratio: 1 LSB off on up
    to 15 of 256 values); the portable C `_onnx` twin equals the interpreter."""
    (sx, zx), qy = grids
    qb = (sx * 1.5, -zx // 2)
    m = ModelBuilder(13)
    a = m.dq(m.q(m.input("x", (1, N)), sx, zx, "aq"), sx, zx, "ad")
    b = m.dq(m.q(m.input("x2", (1, N)), *qb, "bq"), *qb, "bd")
    m.dq(m.q(m.node("Concat", [a, b], "cat", axis=1), *qy, "yq"), *qy, "y")
    m.output("y")
    p = m.save(tmp_path / "cat.onnx")
    g = import_int8(p)
    x = {"x": every_value((sx, zx)), "x2": every_value(qb)}
    ref = on_grid(ort_run(p, x)[0], g)
    got = ours(p, x, "onnx", g)[0]
    assert np.array_equal(got.ravel(), ref.ravel()), np.count_nonzero(got.ravel() != ref.ravel())
    go = replace(g, meta={**g.meta, "rounding": "onnx"})
    feeds = {n: quantize_real(x[n], g.t(n).quant.s, g.t(n).quant.zp, "onnx").reshape(g.t(n).shape) for n in g.inputs}
    assert np.array_equal(run_graph_c(lib, go, feeds)[g.outputs[0]].ravel(), got.ravel())


def test_leaky_relu_op_under_onnx_is_onnxruntimes_arithmetic() -> None:
    """The IR LEAKY_RELU (a float ONNX model under `rounding: onnx`) uses ORT's float32 table too: equal
    to onnxruntime's own DQ -> LeakyRelu -> Q on every value, where the two Q31 rescales were 1 LSB
    off on near-ties (counted here so the case keeps testing something)."""
    from onnx import helper

    from toolchain.frontend.onnx_qdq_tables import ort_table
    from toolchain.ir import QuantParams
    from toolchain.ops.fixed_point import rounding_mode
    from toolchain.ops.leaky_relu import leaky_relu_params, leaky_relu_s8, onnx_leaky_relu_table

    q, missed = np.arange(-128, 128, dtype=np.int8), 0
    for (sx, zx), (sy, zy) in GRIDS:
        for alpha in (0.1, 0.01, -0.3, 0.5):
            node = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=alpha)
            want = ort_table(node, {}, 13, QuantParams.per_tensor(sx, zx), QuantParams.per_tensor(sy, zy))
            assert np.array_equal(onnx_leaky_relu_table(sx, zx, sy, zy, np.float32(alpha)), want), (sx, sy, alpha)
            with rounding_mode("onnx"):
                old = leaky_relu_s8(q, zx, zy, leaky_relu_params(sx, sy, np.float32(alpha)))
            missed += int(np.count_nonzero(old != want))
    assert missed > 0
