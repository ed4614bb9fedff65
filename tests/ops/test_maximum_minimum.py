"""Maximum / Minimum (ops/maximum_minimum.py): generated MAXIMUM / MINIMUM .tflite models vs TFLM
through our interpreter and the portable C kernels (broadcast shapes, constant operands, zero points
-128 and 127); the refusal of differing qparams; ONNX Max / Min (variadic) and Sum vs onnxruntime
through our quantizer (inputs with their own qparams are rescaled onto the output's)."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from tflite_op_cases import I8, OP, Model, _i8, _one, _scale

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.concat import concat_params
from toolchain.ir import QuantParams
from toolchain.ops.maximum_minimum import max_min_s8
from toolchain.ops.registry import OpKind

SHAPES = [((1, 5, 7, 3), (1, 5, 7, 3)), ((1, 4, 6, 13), (1, 1, 1, 13)), ((1, 1, 1, 13), (1, 4, 6, 13)),
          ((2, 3, 1, 7), (1, 1, 5, 1)), ((7,), (1,)), ((1, 3, 9), (3, 1)), ((), (2, 3)), ((3, 1, 5), (3, 4, 5))]


def _case(rng, op, a_shape, b_shape, zp, const_b=False, q_in=None, q_out=None):
    s = _scale(rng)
    a, b = _i8(rng, a_shape), _i8(rng, b_shape)
    if zp in (-128, 127):  # many values at the zero point and the extremes
        a.flat[::3], b.flat[::4] = zp, -zp - 1
    out = tuple(np.broadcast_shapes(a_shape, b_shape))
    m = Model()
    qi, qo = q_in or (s, zp), q_out or (s, zp)
    t1 = m.tensor(a_shape, I8, *qi)
    t2 = m.tensor(b_shape, I8, *qi, b if const_b else None)
    to = m.tensor(out, I8, *qo)
    code = {"max": OP.MAXIMUM, "min": OP.MINIMUM}[op]
    graph_in = [t1] if const_b else [t1, t2]
    return _one(m, code, 0, None, [t1, t2], to, graph_in), [a] if const_b else [a, b]


def _cases():
    rng = np.random.default_rng(41)
    out = {}
    for op in ("max", "min"):
        for i, (a, b) in enumerate(SHAPES):
            for zp in (-128, 127, int(rng.integers(-100, 100))):
                out[f"{op}_{i}_{zp}"] = _case(rng, op, a, b, zp)
        out[f"{op}_const"] = _case(rng, op, (1, 4, 4, 5), (5,), 3, const_b=True)
        out[f"{op}_const_scalar"] = _case(rng, op, (2, 9), (), -128, const_b=True)
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_max_min"))


@pytest.mark.parametrize("op", ["max", "min"])
def test_tflm_bit_exact(cases, portable_lib, op):
    assert check_tflm_and_c(cases, portable_lib, f"{op}_", min_cases=26) >= 26


def test_tflm_raw_compare_is_what_we_emit(cases):
    path, (a, b), want = cases["max_0_-128"]
    assert np.array_equal(want, np.maximum(a, b))
    g = load_tflite(path)
    assert [n.op for n in g.nodes] == [OpKind.MAXIMUM]


@pytest.mark.parametrize("q_out", [(0.05, 3), (0.1, 4)])
def test_differing_qparams_are_refused(tmp_path, q_out):
    rng = np.random.default_rng(1)
    data, _ = _case(rng, "max", (1, 4), (1, 4), 3, q_in=(0.05, 4), q_out=q_out)
    p = tmp_path / "m.tflite"
    p.write_bytes(data)
    with pytest.raises(UnsupportedModel, match="MAXIMUM with input1 quantization .* int8 spec requires them equal"):
        load_tflite(p)


def test_rescale_onto_output_before_compare():
    qa, qb, qy = QuantParams((0.1,), (3,)), QuantParams((0.02,), (-128,)), QuantParams((0.05,), (-20,))
    a = np.arange(-128, 128, dtype=np.int8)
    b = a[::-1].copy()
    got = max_min_s8(a, b, concat_params(qa, qy), concat_params(qb, qy), True)
    real = np.maximum(0.1 * (a.astype(float) - 3), 0.02 * (b.astype(float) + 128))
    want = np.clip(np.floor(real / 0.05 + 0.5 + 1e-9) - 20, -128, 127)  # no ties here: half up == half away
    assert np.max(np.abs(got - want)) <= 1
    same = concat_params(qy, qy)
    assert np.array_equal(max_min_s8(a, b, same, same, False), np.minimum(a, b))


RNG = np.random.default_rng(9)


@pytest.mark.parametrize("op, kind", [("Max", OpKind.MAXIMUM), ("Min", OpKind.MINIMUM)])
@pytest.mark.parametrize("n_inputs", [1, 2, 3])
def test_onnx_variadic(op, kind, n_inputs, tmp_path, portable_lib):
    names = [f"x{i}" for i in range(n_inputs)]
    shapes = [(1, 3, 4, 5), (1, 3, 1, 5), (5,)][:n_inputs]
    m = model([helper.make_node(op, names, ["y"])], dict(zip(names, shapes)), ["y"])
    # different ranges: each input gets its own qparams, the output others again
    calib = {n: RNG.uniform(-1 - i, 1 + 2 * i, (4, *s)).astype(np.float32) for i, (n, s) in enumerate(zip(names, shapes))}
    g, _ = check_float(m, {k: v[0] for k, v in calib.items()}, tmp_path)
    assert sum(n.op == kind for n in g.nodes) == n_inputs - 1
    q = check_int8(g, calib, portable_lib, max_lsb=2)
    for n in (n for n in q.nodes if n.op == kind):  # the rescaling path is the one exercised
        assert len({q.t(t).quant for t in (*n.inputs, *n.outputs)}) > 1


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_onnx_constant_operand(op, tmp_path, portable_lib):
    c = np.array([0.25, -0.5, 0.0, 1.0, -1.5], np.float32)
    m = model([helper.make_node(op, ["x", "c"], ["y"])], {"x": (1, 3, 4, 5)}, ["y"], {"c": c})
    calib = {"x": RNG.uniform(-2, 2, (4, 1, 3, 4, 5)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=2)


@pytest.mark.parametrize("n_inputs", [1, 2, 4])
def test_onnx_sum_is_an_add_chain(n_inputs, tmp_path, portable_lib):
    names = [f"x{i}" for i in range(n_inputs)]
    shapes = [(1, 2, 3, 4), (1, 2, 3, 4), (4,), (1, 2, 1, 1)][:n_inputs]
    m = model([helper.make_node("Sum", names, ["y"])], dict(zip(names, shapes)), ["y"])
    calib = {n: RNG.uniform(-1, 1 + i, (4, *s)).astype(np.float32) for i, (n, s) in enumerate(zip(names, shapes))}
    g, _ = check_float(m, {k: v[0] for k, v in calib.items()}, tmp_path)
    assert sum(n.op == OpKind.ADD for n in g.nodes) == n_inputs - 1
    check_int8(g, calib, portable_lib, max_lsb=2)
