"""16x8 SOFTMAX, LOGISTIC and TANH (int16 in, Q0.15 out; TFLM's int16 reference kernels): generated
models (tflite16_cases_lut.py: hundreds of input scales, powers of two and near misses, betas, rows of
1 to 4096 entries, every int16 value) through load_tflite + our interpreter bit for bit against TFLM,
and the portable C kernels against the interpreter; the tables the compiler computes (softmax's two
513-entry tables in float32 as TFLM's Prepare computes them, the uint16 sigmoid table) and the
float32 CheckedLog2 against glibc's expf / logf; the Prepare parameters on hand values; the output
quantization convention for 16x8 nodes; the refusals (TFLM's own checks, and the scales where its
int32 arithmetic would overflow)."""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite16_cases_lut import UNIT, lut_cases, unary16

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ir import DType, QuantParams
from toolchain.lower import select_kernels
from toolchain.ops.activation_s16 import (checked_log2, lut_lookup_s16, sigmoid_s16_params, sigmoid_table_u16,
                                          softmax_luts, softmax_s16_params)
from toolchain.ops.registry import opdef

F32 = np.float32
CASES = lut_cases()


@pytest.fixture(scope="module")
def tflm_lut(tmp_path_factory):
    """name -> (model path, inputs, TFLM outputs) for every case (one TFLM subprocess)."""
    return run_tflm(CASES, tmp_path_factory.mktemp("tflm16_lut"))


@pytest.mark.parametrize("op, min_cases", [("softmax", 25), ("logistic", 30), ("tanh", 30)])
def test_tflm_equals_interpreter_equals_c(tflm_lut, portable_lib, op, min_cases):
    """Every case of `op`: our interpreter == TFLM and the portable C == our interpreter, bit for bit."""
    assert check_tflm_and_c(tflm_lut, portable_lib, op, min_cases) >= min_cases


def test_cases_cover_the_tables_and_the_special_scales(tflm_lut):
    """The cases are not trivial: outputs span Q0.15, the power-of-two path of both sigmoid kernels and
    its near misses are there, and the sweep walks every segment of the exp table."""
    path, inputs, outs = tflm_lut["tanh_all_int16_0"]
    assert [int(v) for v in (outs[0].min(), outs[0].max())] == [-32767, 32767]
    g = load_tflite(path)
    params = [sigmoid_s16_params(g.t(n).quant.s, tanh=True) for n in g.inputs]
    assert params[:2] == [(3, 0), (6, 0)]  # 2^-12 and 2^-11: TFLM's power-of-two multipliers
    path, inputs, outs = tflm_lut["logistic_all_int16_1"]
    g = load_tflite(path)
    # 2^-15 is a power of two but not 2^-12: the general path; 2^-12 (1 + 5e-4) is 2^-12 to CheckedLog2
    assert [sigmoid_s16_params(g.t(n).quant.s, tanh=False) for n in g.inputs] == [(24576, 16), (3, 0), (20132, 14)]
    # the exp sweep: scaled differences cover [-65535, 0], i.e. all 512 segments of the exp table
    path, (pairs,), out = tflm_lut["softmax_exp_sweep"]
    # [x, x] -> 1/2 each; x - 65535 -> exp(-10) (the table's floor, 2) over a sum of about 32769
    assert out.shape == (65536, 2) and int(out[0, 0]) == 16384 and int(out[-1, 1]) == 2
    assert len(np.unique(out[:, 1])) > 10000


# ---- the tables -----------------------------------------------------------------------------------
def _libm():
    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no C math library to compare with")
    lib = ctypes.CDLL(name)
    for f in (lib.expf, lib.logf):
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return lib


def _round(v: np.float32) -> np.float32:
    return F32(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))


def _lut_scalar(fn, s_in, zp_in, s_out) -> list[int]:
    """TFLM's LUTPopulateInt16<float>, one float32 operation at a time (C's evaluation order)."""
    in_min, in_max = F32(s_in * F32(-32768 - zp_in)), F32(s_in * F32(32767 - zp_in))
    out_min, out_max = F32(s_out * F32(-32768)), F32(s_out * F32(32767))
    step = F32(F32(in_max - in_min) / F32(512))
    half, inv = F32(step / F32(2)), F32(F32(65536) / F32(out_max - out_min))
    lut = []
    for i in range(512):
        x = F32(in_min + F32(F32(i) * step))
        val, mid, nxt = fn(x), fn(F32(x + half)), fn(F32(in_min + F32(F32(i + 1) * step)))
        interp = _round(F32(F32(F32(nxt * inv) + _round(F32(val * inv))) / F32(2)))
        bias = _round(F32(F32(interp - _round(F32(mid * inv))) / F32(2)))
        lut.append(int(min(max(F32(_round(F32(val * inv)) - bias), F32(-32768)), F32(32767))))
    lut.append(int(min(max(_round(F32(fn(in_max) * inv)), F32(-32768)), F32(32767))))
    return lut


def test_softmax_tables_equal_tflm_prepare_with_glibc_expf():
    """The compiler's tables == LUTPopulate computed the way TFLM's Prepare computes them, one float32
    operation at a time with the C library's expf; entry by entry. (glibc's expf is not correctly
    rounded: at one of the 1,537 points the exp table samples, -2.2167969, it is one ulp above the
    float32 nearest exp, which ours takes; no entry changes.)"""
    libm = _libm()
    r = F32(65535)
    exp_lut, recip_lut = softmax_luts()
    want_exp = _lut_scalar(lambda v: F32(libm.expf(float(v))), F32(10.0) / r, 32767, F32(2.0) / r)
    want_recip = _lut_scalar(lambda v: F32(F32(1.0) / F32(F32(1.0) + v)), F32(1.0) / r, -32768, F32(2.0) / r)
    assert exp_lut.tolist() == want_exp
    assert recip_lut.tolist() == want_recip
    # hand values: exp(0) = 1 -> 32768 saturates; exp(-10) * 32768 = 1.49; 1/(1+0) saturates, 1/(1+1) = 16384
    assert (exp_lut[512], exp_lut[0], recip_lut[0], recip_lut[512]) == (32767, 2, 32767, 16384)
    assert np.all(np.diff(exp_lut.astype(int)) >= 0) and np.all(np.diff(recip_lut.astype(int)) <= 0)


def test_lut_lookup_interpolates_on_the_low_7_bits():
    lut = np.arange(513, dtype=np.int16) * 64  # 64 per segment: lookup(v) = (v + 32768) / 2, rounded half up
    assert lut_lookup_s16([-32768, -32767, -1, 0, 127, 32766], lut).tolist() == [0, 1, 16384, 16384, 16448, 32767]
    # the int16 slope and sum wrap as C's int16_t does: 32704 + 64 -> -32768; slope 0 - (-32768) -> -32768,
    # delta (-32768 * 64 + 64) >> 7 = -16384, -32768 - 16384 -> 16384
    assert lut_lookup_s16([32767], lut).tolist() == [-32768]
    wide = np.zeros(513, np.int16)
    wide[257] = -32768
    assert lut_lookup_s16([128 + 64], wide).tolist() == [16384]


def test_sigmoid_table():
    """The uint16 table of TFLM's int16 LOGISTIC / TANH (every entry reached through TFLM by the
    all-int16 cases at 2^-10 and the large scales): 65536 sigmoid(i / 24) up to the half-error bias."""
    t = sigmoid_table_u16().astype(np.int64)
    assert t.shape == (256,) and (t[0], t[1], t[128], t[254], t[255]) == (32768, 33451, 65221, 65534, 65535)
    ideal = 65536 / (1 + np.exp(-np.arange(256) / 24))
    assert np.all(np.abs(t - ideal) <= 1.2) and np.all(np.diff(t) >= 0)


def test_checked_log2_equals_glibc_logf_near_every_decision_boundary():
    """CheckedLog2 in float32 with the correctly rounded logf == with glibc's logf (which is not always
    correctly rounded), on 30 float32 scales either side of each decision (|frac| = 1e-3, and the
    rounding at .5) for exponents -24..2, and on 20,000 random scales."""
    libm = _libm()

    def glibc(x):
        x_log2 = F32(F32(libm.logf(float(x))) * F32(F32(1) / F32(libm.logf(2.0))))
        rounded = _round(x_log2)
        return bool(abs(F32(x_log2 - rounded)) < F32(1e-3)), int(rounded)

    xs = list(np.exp(np.random.default_rng(3).uniform(np.log(1e-9), np.log(4.0), 20000)).astype(F32))
    for e in range(-24, 3):
        for off in (1e-3, -1e-3, 0.5):
            c = F32(2.0 ** (e + off))
            xs += [F32(c + k * np.spacing(c)) for k in range(-30, 31)]
    bad = [float(x) for x in xs if checked_log2(x) != glibc(x)]
    assert not bad, bad[:10]


# ---- Prepare parameters on hand values ------------------------------------------------------------
def test_sigmoid_params():
    assert sigmoid_s16_params(2.0**-12, tanh=False) == (3, 0)  # power of two: 3 << 0
    assert sigmoid_s16_params(2.0**-11, tanh=True) == (6, 0)  # tanh also takes 2^-11: 3 << 1
    assert sigmoid_s16_params(2.0**-11, tanh=False) == (24576, 12)  # logistic: 6 doubled 12 times
    assert sigmoid_s16_params(float(F32(2.0**-12 * 1.0005)), tanh=False) == (3, 0)  # inside CheckedLog2's 1e-3
    near = float(F32(2.0**-12 * 1.002))
    assert sigmoid_s16_params(near, tanh=False) == (int(near * 12288 * 2**13), 13)
    assert sigmoid_s16_params(1.0, tanh=True) == (12288 * 2, 1)  # 12288 <= 16383.5: one doubling
    assert sigmoid_s16_params(2.6, tanh=False) == (int(float(F32(2.6)) * 12288), 0)
    with pytest.raises(ValueError, match="32767 / 12288"):
        sigmoid_s16_params(2.7, tanh=False)


def test_softmax_params():
    # 10 / 65535: differences map 1:1 onto the table's units: multiplier 1.0 = 2^30 * 2^1 / 2^31
    s = float(F32(10 / 65535))
    mult, shift = softmax_s16_params(s, 1.0)
    assert shift == 1 and abs(mult - 2**30) < 2**30 * 1e-6
    assert softmax_s16_params(1e-3, 2.0) == softmax_s16_params(2e-3, 1.0)
    assert softmax_s16_params(4.9, 1.0)[1] == 15
    assert softmax_s16_params(5.0, 1.0)[1] == 15  # 5 * 65535 / 10 = 32767.5 < 2^15
    with pytest.raises(ValueError, match="overflows"):
        softmax_s16_params(5.0002, 1.0)


def test_output_qparams_of_16x8_nodes_are_q015():
    """The convention the 16x8 quantizer relies on: an int16 input gives Q0.15 (1/32768, zero point
    0) for all three ops; an int8 input keeps the int8 spec's fixed output."""
    for name, int8_out in (("softmax_ranks", (1 / 256, -128)), ("logistic_scales_00", (1 / 256, -128)),
                           ("tanh_scales_00", (1 / 128, 0))):
        g = _load(CASES[name][0])
        node = g.nodes[0]
        observed = QuantParams.per_tensor(0.1, 3)
        assert opdef(node).output_qparams(node, g, observed) == QuantParams.per_tensor(1 / 32768, 0)
        x = g.t(node.inputs[0])
        g8 = g.with_tensor(replace(x, dtype=DType.INT8))
        assert opdef(node).output_qparams(node, g8, observed) == QuantParams.per_tensor(*int8_out)


def _load(model: bytes):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.tflite"
        p.write_bytes(model)
        return load_tflite(p)


def test_16x8_nodes_take_the_s16_kernels_on_every_isa():
    for name in ("softmax_ranks", "logistic_scales_00", "tanh_scales_00"):
        g = _load(CASES[name][0])
        for prefs, feats in ((["portable"], ()), (["dsp", "portable"], ("dsp",)),
                             (["helium", "portable"], ("mve", "mve_fp")), (["neon", "portable"], ("dotprod",))):
            chosen = select_kernels(g, prefs, feats)
            assert {(v.name, v.dtype) for v in chosen.values()} == {("portable_s16", "s16")}, (name, prefs)


def test_outputs_are_the_exact_table_arithmetic_on_hand_values():
    """Logistic at 2^-12 (multiplier 3): 0 -> 1/2 (16384), +-8 -> 32768 sigmoid(+-8) = 32757 / 11, and
    beyond the table (2^-8: +-128) 32767 / 1; tanh(0) = 0, saturating at +-32767; softmax of two equal
    entries is 1/2 each, of one entry 1, of a far smaller entry the table's floor."""
    x = np.array([[0, 32767, -32768]], np.int16)
    g = _load(unary16("logistic", [(x, 2.0**-12, 0.0)])[0])
    assert interpret(g, {g.inputs[0]: x})[g.outputs[0]].tolist() == [[16384, 32757, 11]]
    g = _load(unary16("logistic", [(x, 2.0**-8, 0.0)])[0])
    assert interpret(g, {g.inputs[0]: x})[g.outputs[0]].tolist() == [[16384, 32767, 1]]
    g = _load(unary16("tanh", [(np.array([[0, 32767, -32768]], np.int16), 2.0**-11, 0.0)])[0])
    assert interpret(g, {g.inputs[0]: np.array([[0, 32767, -32768]], np.int16)})[g.outputs[0]].tolist() == \
        [[0, 32767, -32767]]
    x = np.array([[5, 5], [7, -30000]], np.int16)
    g = _load(unary16("softmax", [(np.zeros((2, 2), np.int16), 1e-3, 1.0)])[0])
    y = interpret(g, {g.inputs[0]: x})[g.outputs[0]]
    # 30 below the maximum still weighs exp(-10): TFLM's table stops there (2 / 32768), it does not reach 0
    assert y.tolist() == [[16384, 16384], [32766, 2]]
    g = _load(unary16("softmax", [(np.zeros((3, 1), np.int16), 1e-3, 1.0)])[0])
    assert interpret(g, {g.inputs[0]: np.array([[-32768], [0], [32767]], np.int16)})[g.outputs[0]].ravel().tolist() \
        == [32767] * 3


# ---- refusals ----------------------------------------------------------------------------------------
def _softmax_model(out_scale=UNIT, out_zp=0, in_scale=1e-3, beta=1.0, width=10):
    return unary16("softmax", [(np.zeros((1, width), np.int16), in_scale, beta)], out_scale, out_zp)


def _sigmoid_model(op, out_scale=UNIT, out_zp=0, in_scale=2.0**-12):
    return unary16(op, [(np.zeros((1, 8), np.int16), in_scale, 0.0)], out_scale, out_zp)


REFUSED = {  # name -> ((model, inputs), words of our message, whether TFLM's Prepare refuses it too)
    "softmax_out_1_256": (_softmax_model(out_scale=F32(1 / 256)), ["SOFTMAX", "1/32768"], True),
    "softmax_out_near_miss": (_softmax_model(out_scale=F32(1 / 32768 * 1.0011)), ["SOFTMAX", "1/32768"], True),
    "softmax_out_zp": (_softmax_model(out_zp=3), ["SOFTMAX", "zero point 3"], True),
    "softmax_big_scale": (_softmax_model(in_scale=2.5, beta=2.1), ["SOFTMAX", "5.25", "overflows"], False),
    "softmax_long_row": (_softmax_model(width=65537), ["SOFTMAX", "65537 entries"], False),
    "logistic_out_2_14": (_sigmoid_model("logistic", out_scale=F32(2.0**-14)), ["LOGISTIC", "1/32768"], True),
    "logistic_out_not_pot": (_sigmoid_model("logistic", out_scale=F32(1 / 30000)), ["LOGISTIC", "1/32768"], True),
    "tanh_out_zp": (_sigmoid_model("tanh", out_zp=-1), ["TANH", "zero point -1"], True),
    "tanh_big_scale": (_sigmoid_model("tanh", in_scale=3.0), ["TANH", "32767 / 12288"], False),
}
ACCEPTED_NEAR = {  # inside TFLM's tolerances: these outputs count as 1/32768
    "softmax_out_near": _softmax_model(out_scale=F32(1 / 32768 * 1.0009)),
    "logistic_out_near": _sigmoid_model("logistic", out_scale=F32(2.0**-15 * 1.0005)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_by_name(tmp_path, name):
    (model, _), words, _ = REFUSED[name]
    (tmp_path / "m.tflite").write_bytes(model)
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(tmp_path / "m.tflite")
    for w in words:
        assert w in str(e.value), str(e.value)


def test_tflm_refuses_and_accepts_the_same_output_quantization(tmp_path):
    """Where TFLM's Prepare checks the output (scale, zero point) it refuses what we refuse and runs
    what we accept (the near-1/32768 scales inside its tolerances, which we load)."""
    cases = {**{n: case for n, (case, _, tflm) in REFUSED.items() if tflm}, **ACCEPTED_NEAR}
    got = run_tflm(cases, tmp_path)
    for name in cases:
        assert isinstance(got[name][2], str) == (name in REFUSED), (name, got[name][2])
    for name in ACCEPTED_NEAR:
        g = load_tflite(got[name][0])
        assert g.t(g.outputs[0]).dtype == DType.INT16
