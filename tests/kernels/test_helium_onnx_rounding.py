"""Issue 13 item 1 on the Cortex-M55: the Helium kernels under rounding "onnx" (one rounding, ties to
even) and the depthwise kernel with -128 weights.

- Offline: the vector formulation of ecc_helium.h (vqdmulh, vmul, vrshl, the tie test and the
  saturating pre-shift) emulated in numpy equals multiply_by_quantized_multiplier_rne on random,
  tie-heavy and extreme values; the no-tie proof of helium_rq holds by brute force; the variants'
  why_not reasons and names.
- On QEMU (mps3-an547): every `_onnx` / `_onnx_ties` entry point (conv2d, conv2d_1x1,
  conv2d_1x1_sparse, depthwise_conv2d, fully_connected, add, avg_pool2d) bit-exact with the numpy
  oracle on random and tie-heavy cases (helium_onnx_cases.py), and the depthwise entry points of
  every mode with -128 weights against -128 inputs.
- End to end: kws_dscnn_qdq.onnx (PPQ: -128 weights) with `rounding: onnx` runs helium*_onnx kernels
  for every conv / depthwise / FC, bit-exact with the interpreter and equal to onnxruntime; with
  `rounding: tflm` helium kernels too (the -128 depthwise layers included).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import helium_harness
import helium_onnx_cases
from toolchain.isa import helium as hv
from toolchain.isa.helium_rq import ONNX, ONNX_TIES, accumulator_bound, tie_free
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier_rne
from toolchain.ops.registry import REGISTRY, OpKind

CASES = helium_onnx_cases.random_cases()
ROOT = Path(__file__).resolve().parents[2]
KWS = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_qdq.onnx"


# ---- the formulation, emulated ----------------------------------------------------------------------
def _sat32(v):
    return np.clip(v, -2**31, 2**31 - 1)


def helium_rne(x, mult, shift, ties: bool = True) -> np.ndarray:
    """ecc_helium_mbqm's ECC_HELIUM_RNE_TIES (ties=True) or ECC_HELIUM_RNE (ties=False: shift <= -1)
    lane by lane on int64 arrays, with the instructions' own wrap-around and saturation."""
    x, mult, shift = np.broadcast_arrays(*(np.asarray(v, np.int64) for v in (x, mult, shift)))
    ns = np.minimum(shift, -1) if ties else shift
    s = -ns
    x1 = _sat32(x << np.maximum(shift + 1, 0)) if ties else x       # vqshl
    p = x1 * mult
    h = _sat32(p >> 31)                                                # vqdmulh: floor(2 x m / 2^32)
    low = p & 0xFFFFFFFF                                               # vmul: the low 32 bits
    r = (h + (np.int64(1) << (s - 1))) >> s                            # vrshl by -s
    if ties:
        z = ((low << 1) & 0xFFFFFFFF) | (((h << (31 - s)) & 0xFFFFFFFF) ^ 0x40000000)
        r = r - (z == 0)
    return r


def _tie_heavy(rng, n):
    """x, mult, shift where x * mult * 2^(shift-31) is often exactly halfway."""
    mult = rng.choice(np.array([1 << 30, 3 << 29, 5 << 28, 7 << 28, (1 << 31) - (1 << 20)]), n)
    shift = rng.integers(-31, 0, n)
    s = -shift
    v = np.array([(int(m) & -int(m)).bit_length() - 1 for m in mult])
    e = np.clip(30 + s - v, 0, 30)                                     # ties: x an odd multiple of 2^e
    x = (2 * rng.integers(-(2 ** 10), 2 ** 10, n) + 1) << e
    return _sat32(x + rng.integers(-1, 2, n) * (rng.random(n) < 0.2)), mult, shift


def test_vector_formulation_equals_rne():
    """The tie-testing epilogue equals one rounding ties to even for shifts in [-31, -1] on random,
    tie-heavy and extreme int32 accumulators (both signs, multipliers with many trailing zeros)."""
    rng = np.random.default_rng(7)
    n = 200_000
    x = np.concatenate([rng.integers(-2**31, 2**31, n), rng.integers(-5000, 5000, n),
                        np.array([-2**31, 2**31 - 1, 0, 1, -1, 2**30, -2**30])])
    mult = np.concatenate([rng.integers(0, 2**31, n), rng.integers(2**30, 2**31, n), np.full(7, 1 << 30)])
    shift = np.concatenate([rng.integers(-31, 0, n), rng.integers(-12, 0, n), np.full(7, -1)])
    tx, tm, ts = _tie_heavy(rng, n)
    x, mult, shift = (np.concatenate(a) for a in ((x, tx), (mult, tm), (shift, ts)))
    want = multiply_by_quantized_multiplier_rne(x, mult, shift)
    np.testing.assert_array_equal(helium_rne(x, mult, shift), want)
    # the tie-heavy half really ties: rounding half up differs from ties to even there
    half_up = helium_rne(tx, tm, ts, ties=False)
    assert np.count_nonzero(half_up != multiply_by_quantized_multiplier_rne(tx, tm, ts)) > n // 10


def test_pre_shift_saturates_only_past_the_int8_range():
    """Shifts 0..30 with a normalised multiplier: exact where x * 2^(shift+1) fits, and where it
    saturates, the clamped int8 output is still the oracle's (ecc_helium.h's proof)."""
    rng = np.random.default_rng(8)
    n = 100_000
    x = np.concatenate([rng.integers(-2**31, 2**31, n), rng.integers(-300, 300, n)])
    mult = rng.integers(2**30, 2**31, 2 * n)
    shift = rng.integers(0, 31, 2 * n)
    off = rng.integers(-128, 128, 2 * n)
    got = np.clip(helium_rne(x, mult, shift) + off, -128, 127)
    np.testing.assert_array_equal(got, np.clip(multiply_by_quantized_multiplier_rne(x, mult, shift) + off, -128, 127))


def test_no_tie_proof_by_brute_force():
    """helium_rq.tie_free: where it says no accumulator up to the bound ties, none does (every x in
    [-bound, bound] checked: half up equals ties to even), and for the tightest bound it refuses
    there is a tie."""
    for mult, shift in ((1 << 30, -8), (3 << 29, -3), (5 << 28, -2), (1 << 30, -1), (12345 << 12, -5)):
        v = (mult & -mult).bit_length() - 1
        first = 2 ** (30 - shift - v)       # the smallest |x| that can tie
        if first > 2**20:
            assert tie_free([mult], [shift], [2**20])
            continue
        x = np.arange(-first + 1, first)
        assert tie_free([mult], [shift], [first - 1])
        np.testing.assert_array_equal(helium_rne(x, mult, shift, ties=False),
                                      multiply_by_quantized_multiplier_rne(x, mult, shift))
        assert not tie_free([mult], [shift], [first])
        ties = first * np.array([1, -1, 3, -3])  # ties; half of them have an even lower neighbour
        rne = multiply_by_quantized_multiplier_rne(ties, mult, shift)
        assert np.any(helium_rne(ties, mult, shift, ties=False) != rne)


def test_accumulator_bound():
    """The bound is |bias| + max|x + input_offset| * sum|w| per channel, exact Python ints."""
    w = np.array([[1, -2, 3], [-128, -128, -128]], np.int8)
    b = accumulator_bound(w, np.array([-10, 2**31 - 1]), 128)
    assert list(b) == [10 + 255 * 6, 2**31 - 1 + 255 * 384]


def test_onnx_modes_of_a_layer():
    """A layer of real scale: both onnx entry points; power-of-two multipliers with accumulators that
    reach a tie: only onnx_ties (the reason says why); shift 0 with a multiplier below 2^30: neither."""
    w = np.ones((4, 16), np.int8)
    f = hv.fold_or_reason(w, None, 0, [1234567891], [-9], 0, (-128, 127))
    assert ONNX in f.modes and ONNX_TIES in f.modes
    f = hv.fold_or_reason(w, np.array([0, 0, 0, 500]), 0, [1 << 30], [-3], 0, (-128, 127))
    assert ONNX not in f.modes and "halfway" in f.why[ONNX] and ONNX_TIES in f.modes
    f = hv.fold_or_reason(w, None, 0, [1 << 29], [0], 0, (-128, 127))
    assert ONNX not in f.modes and ONNX_TIES not in f.modes and "full" in f.modes


def test_depthwise_takes_minus_128_weights():
    """BL-04 without leaving the fast path: a -128 weight switches tap_pairs off (argument 7) and
    keeps every entry point."""
    rng = np.random.default_rng(4)
    wd = rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8)
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(5, 5), input_offset=128, output_offset=-128,
             depth_multiplier=1, out_mult=np.full(8, 1234567891), out_shift=np.full(8, -12), act_min=-128, act_max=127)
    for mode in ("relu", "full", ONNX, ONNX_TIES):
        assert hv.dw_plan(k, (1, 5, 5, 8), wd, None, (1, 5, 5, 8), mode=mode)[0][7].value == 1
    wd[0, 0, 2, 5] = -128
    for mode in ("relu", "full", ONNX, ONNX_TIES):
        assert hv.dw_plan(k, (1, 5, 5, 8), wd, None, (1, 5, 5, 8), mode=mode)[0][7].value == 0


def test_variant_names_and_why_not():
    """Under rounding onnx the onnx variants are named helium*_onnx / *_onnx_ties; each helium variant
    of a requantizing op has a why_not, and the TFLM ones give none under onnx (their twin does)."""
    from types import SimpleNamespace

    for kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED, OpKind.ADD, OpKind.AVG_POOL2D):
        hel = [v for v in REGISTRY[kind].variants if v.isa == "helium"]
        assert {v.name.endswith(("_onnx", "_onnx_ties")) for v in hel} == {True, False}, kind
        assert all(v.why_not is not None for v in hel)
    # graph_rounding reads graph.meta; the weights' quantization (no zero point) is asked first
    g = SimpleNamespace(meta={"rounding": "onnx"}, t=lambda name: SimpleNamespace(quant=None))
    conv = next(v for v in REGISTRY[OpKind.CONV2D].variants if v.name == "helium_relu")
    assert conv.why_not(SimpleNamespace(inputs=["x", "w"]), g) is None  # under onnx its onnx twin gives the reason


# ---- on the M55 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def results(tmp_path_factory, need_board):
    need_board(helium_harness.BOARD)
    out = tmp_path_factory.mktemp("helium_onnx_fw")
    return helium_harness.run(helium_harness.build(out), CASES, out / "run")


def test_cases_cover_the_onnx_entry_points():
    """Every _onnx / _onnx_ties entry point of ecc_helium_kernels.h has cases here, tie-heavy ones
    included for the GEMM and depthwise kernels."""
    protos = {f for f in helium_harness.prototypes() if "_onnx" in f}
    assert protos <= {c.function for c in CASES}, protos - {c.function for c in CASES}
    tie_layers = ("onnx_conv0_2", "onnx_conv1_2", "onnx_dw0_1", "onnx_fc1_1")  # tie_requant's layers
    ties = {c.function for c in CASES if c.name.split("-")[0] in tie_layers}
    assert {"ecc_helium_conv2d_onnx_ties_s8", "ecc_helium_conv2d_1x1_onnx_ties_s8",
            "ecc_helium_depthwise_conv2d_onnx_ties_s8", "ecc_helium_fully_connected_onnx_ties_s8"} <= ties, ties


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_helium_onnx_bit_exact(results, index):
    helium_harness.assert_exact(CASES[index], results[index])


# ---- end to end ---------------------------------------------------------------------------------------
@pytest.mark.needs_gcc
@pytest.mark.skipif(not KWS.is_file(), reason=f"{KWS} not present")
@pytest.mark.parametrize("rounding", ["onnx", "tflm"])
def test_kws_dscnn_qdq_on_helium(tmp_path: Path, edgecc, need_board, rounding: str) -> None:
    """kws_dscnn_qdq.onnx (PPQ: depthwise weights holding -128) on mps3-an547, 2 samples: every conv /
    depthwise / FC runs a helium kernel (helium*_onnx under `rounding: onnx`, bit-exact and 0 LSB from
    onnxruntime; under `tflm` the depthwise layers too, no portable kernel left)."""
    need_board("mps3-an547")
    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from _qdq_cases import import_int8

    qi = import_int8(KWS).t("input_1").quant
    x = np.random.default_rng(0).uniform((-128 - qi.zp) * qi.s, (127 - qi.zp) * qi.s, (2, 1, 490))
    np.save(tmp_path / "x.npy", x.astype(np.float32))
    out = tmp_path / "out"
    (tmp_path / "p.yaml").write_text(f"model: {KWS}\nboard: mps3-an547\nrounding: {rounding}\n"
                                     f"verify: {tmp_path / 'x.npy'}\n")
    res = edgecc("run", tmp_path / "p.yaml", "--out", out, "--quiet")
    report = json.loads((out / "report.json").read_text())
    assert res.code == 0 and report["status"] == "pass", res.err
    v = report["verification"]
    assert v["bit_exact"] and v["samples"] == 2 and (rounding == "tflm" or v["ort_max_abs_diff_lsb"] == 0)
    kernels = {op["op_type"]: set() for op in report["ops"]}
    for op in report["ops"]:
        kernels[op["op_type"]].add(op["kernel"])
    for t in ("Conv2D", "DepthwiseConv2D", "FullyConnected"):
        assert kernels[t] and all(k.startswith("helium") and k.endswith("_onnx") == (rounding == "onnx")
                                  for k in kernels[t]), kernels
