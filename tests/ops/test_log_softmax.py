"""LogSoftmax (ops/log_softmax.py): TFLite LOG_SOFTMAX int8 vs TFLM bit for bit through our
interpreter and the C kernel (fixed output qparams 16/256, zp 127; TFLM's fixed-point pipeline with
log_x_for_x_greater_than_or_equal_to_1), over scales from tiny to capped multipliers, zero points
-128/127, constant rows, single-element rows and long rows; ONNX LogSoftmax-13 (last axis, and other
axes via transposes) vs onnxruntime and through our quantizer, whose output qparams are TFLite's."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from tflite_op_cases import F32, I8, OP, OPT, Model, S, _i8, _one, _zp

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.log_softmax import LOG_SOFTMAX_OUT, log_softmax_params, log_softmax_s8, log_x_q5

RNG = np.random.default_rng(31)


def _case(rng, shape, scale, zp=None, x=None, out_q=(F32(16 / 256), 127)):
    m = Model()
    ti = m.tensor(shape, I8, F32(scale), _zp(rng) if zp is None else zp)
    to = m.tensor(shape, I8, *out_q)
    x = _i8(rng, shape) if x is None else x
    return _one(m, OP.LOG_SOFTMAX, OPT.LogSoftmaxOptions, S.LogSoftmaxOptionsT(), [ti], to, [ti]), [x]


CASES = [((1, 10), 0.1, None), ((2, 3, 7), 0.05, -128), ((1, 4, 4, 13), 0.02, 127), ((5, 1), 0.1, None),
         ((3, 300), 0.08, None), ((2, 16), 0.5, None), ((2, 16), 2.0, 0), ((4, 33), 0.004, None),
         ((2, 9), 1e-3, -128), ((1, 2, 1, 40), 0.25, 127), ((3, 1000), 0.03, None), ((2, 5), 8.0, None)]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    rng = np.random.default_rng(5)
    out = {f"log_softmax_{k}": _case(rng, shape, s, zp) for k, (shape, s, zp) in enumerate(CASES)}
    out["log_softmax_const_rows"] = _case(rng, (3, 12), 0.1, 0, np.array([[5] * 12, [-128] * 12, [127] * 12], np.int8))
    spikes = np.full((4, 20), -128, np.int8)
    spikes[:, 3] = 127
    spikes[1, 7] = 126
    spikes[2, :10] = 127
    out["log_softmax_spikes"] = _case(rng, (4, 20), 0.2, -10, spikes)
    ramp = np.tile(np.arange(-128, 128, dtype=np.int16)[None, :], (2, 1)).astype(np.int8)
    out["log_softmax_ramp_fine"] = _case(rng, (2, 256), 0.01, 0, ramp)
    out["log_softmax_ramp_coarse"] = _case(rng, (2, 256), 0.3, 0, ramp)
    return run_tflm(out, tmp_path_factory.mktemp("log_softmax_tflm"))


def test_tflm_bit_exact(cases, portable_lib):
    assert check_tflm_and_c(cases, portable_lib, "log_softmax_", min_cases=len(CASES) + 4) == len(CASES) + 4


def test_log_x_is_close_to_log():
    """log_x_q5 on Q12.19 inputs 1 .. 4000 is log(x) within a few Q5.26 ulps of 2^-20."""
    xs = np.array([1.0, 1.5, 2.0, 2.718281828, 10.0, 100.0, 1234.5, 4000.0])
    raw = np.round(xs * 2 ** 19).astype(np.int64)
    got = log_x_q5(raw) / 2 ** 26
    np.testing.assert_allclose(got, np.log(raw / 2 ** 19), atol=2e-6)


def test_reference_is_close_to_float():
    p = log_softmax_params(0.05)
    x = RNG.integers(-128, 128, (50, 17)).astype(np.int8)
    got = LOG_SOFTMAX_OUT.dequantize(log_softmax_s8(x, p))
    xf = x.astype(np.float64) * 0.05
    want = xf - xf.max(-1, keepdims=True)
    want = want - np.log(np.exp(want).sum(-1, keepdims=True))
    ok = want > -16   # below -16 the output saturates at -128 (real -15.94)
    assert np.abs(got - want)[ok].max() <= 0.5 * 16 / 256 + 1e-6
    assert (got[~ok] == LOG_SOFTMAX_OUT.dequantize(np.int8(-128))).all()


def test_tflite_log_softmax_with_other_output_qparams_is_rejected(tmp_path):
    model_bytes, _ = _case(RNG, (1, 8), 0.1, 0, out_q=(F32(1 / 16), 0))
    (tmp_path / "m.tflite").write_bytes(model_bytes)
    with pytest.raises(UnsupportedModel, match="16/256, 127"):
        load_tflite(tmp_path / "m.tflite")


# ---- ONNX LogSoftmax-13 through our quantizer (output qparams forced to TFLite's) --------------
@pytest.mark.parametrize("shape, axis", [((2, 10), -1), ((3, 4, 7), 2), ((1, 6, 3, 5), -1), ((1, 6, 3, 5), 1),
                                         ((2, 5, 4), 1), ((4, 3, 5), 0)])
def test_onnx_log_softmax(shape, axis, tmp_path, portable_lib):
    nodes = [helper.make_node("LogSoftmax", ["x"], ["y"], axis=axis)]
    m = model(nodes, {"x": shape}, ["y"], opset=13)
    calib = {"x": RNG.uniform(-4, 4, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    q = check_int8(g, calib, portable_lib, max_lsb=2.0)
    assert q.t(q.outputs[0]).quant == LOG_SOFTMAX_OUT


def test_onnx_log_softmax_opset11_coerces_to_2d(tmp_path, portable_lib):
    m = model([helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], {"x": (2, 3, 4)}, ["y"], opset=11)
    calib = {"x": RNG.uniform(-3, 3, (2, 2, 3, 4)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=2.0)
