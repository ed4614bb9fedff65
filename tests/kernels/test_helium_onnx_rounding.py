"""The Helium kernels under rounding "onnx" on the Cortex-M55 (Conv / depthwise / FC: onnxruntime's
float32 output stage, fixed_point.requantize_s8_f32, on the MVE FPU; Add and average pooling: one
rounding, ties to even) and the depthwise kernel with -128 weights.

- Offline: Add's vector formulation of ecc_helium.h (vqdmulh, vmul, vrshl, the tie test and the
  saturating pre-shift) emulated in numpy equals multiply_by_quantized_multiplier_rne on random,
  tie-heavy and extreme values; the built float32 ties of the cases really separate the float32
  stage from the exact product; the blob holds f32_scale's bits; the variants' names, why_not
  reasons and board feature (mve_fp).
- On QEMU (mps3-an547): every `_onnx` entry point (conv2d, conv2d_1x1, conv2d_1x1_sparse,
  depthwise_conv2d, fully_connected, add, avg_pool2d) bit-exact with the numpy oracle on random,
  tie-heavy, built float32-tie and int32-saturating cases (helium_onnx_cases.py), and the depthwise
  entry points of every mode with -128 weights against -128 inputs; no fused multiply-add in the
  firmware's onnx entry points.
- End to end: kws_dscnn_qdq.onnx (PPQ: -128 weights) with `rounding: onnx` runs helium*_onnx kernels
  for every conv / depthwise / FC, bit-exact with the interpreter and equal to onnxruntime; with
  `rounding: tflm` helium kernels too (the -128 depthwise layers included).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import helium_harness
import helium_onnx_cases
from toolchain.isa import helium as hv
from toolchain.isa.helium_rq import ONNX, ONNX_FEATURES_WHY
from toolchain.ops.fixed_point import f32_scale, multiply_by_quantized_multiplier_rne, requantize_s8_f32
from toolchain.ops.registry import REGISTRY, OpKind

CASES = helium_onnx_cases.random_cases()
ROOT = Path(__file__).resolve().parents[2]
KWS = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_qdq.onnx"


# ---- the formulation, emulated ----------------------------------------------------------------------
def _sat32(v):
    return np.clip(v, -2**31, 2**31 - 1)


def helium_rne(x, mult, shift, ties: bool = True) -> np.ndarray:
    """ecc_helium_mbqm's ECC_HELIUM_RNE_TIES (ties=True) or ECC_HELIUM_RNE (ties=False: shift <= -1),
    Add's onnx output stage, lane by lane on int64 arrays, with the instructions' own wrap-around and
    saturation."""
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


def test_built_f32_ties_separate_the_float_stage():
    """The built ties of helium_onnx_cases (the cases the kernels meet on QEMU): "above" / "below" /
    "wide" give requantize_s8_f32 outputs other than the exact product rounded once (1 LSB, both
    directions: the float32 stage is really what the kernels are held to), "real" ties the same."""
    mult, shift, acc, kinds = helium_onnx_cases.f32_tie_layers(np.random.default_rng(3), per_kind=4)
    f32 = requantize_s8_f32(acc, mult, shift, 0, -128, 127).astype(np.int64)
    exact = np.clip(multiply_by_quantized_multiplier_rne(acc, mult, shift), -128, 127)
    kinds = np.array(kinds)
    assert np.all(np.abs(f32 - exact) <= 1)
    for kind in ("above", "below", "wide"):
        assert np.all(f32[kinds == kind] != exact[kinds == kind]), kind
    assert np.all(f32[kinds == "real"] == exact[kinds == "real"])
    assert np.any(f32 < exact) and np.any(f32 > exact)
    assert np.all(np.abs(acc[kinds == "wide"]) > 2**24)


def test_onnx_record_holds_the_f32_scale():
    """The onnx entry points read the float32 scale f32_scale(mult, shift) in the record's multiplier
    words (bit for bit) and 0 in its shift words; the TFLM ones the (mult, shift) pair."""
    w = np.arange(-20, 20, dtype=np.int8).reshape(5, 8)
    mult, shift = np.array([1 << 30, 1234567891, 0, 2**31 - 1, 1 << 30]), np.array([-9, -3, 0, 2, 31])
    f = hv.fold_or_reason(w, None, 3, mult, shift, 0, (-128, 127))
    assert ONNX in f.modes and "full" not in f.modes  # shifts above 0: TFLM's kernels cannot, float32 can
    g = hv.as_mode(f, ONNX)
    np.testing.assert_array_equal(g.mult.view(np.float32), f32_scale(mult, shift))
    assert not g.shift.any() and hv.as_mode(f, "full") is f
    blob = hv.pack_gemm(w, g)
    rec = blob[64 * 1:64 * 1 + 48].view("<i4")  # the first quad's record after its one 16-k chunk
    np.testing.assert_array_equal(rec[4:8].view("<f4"), f32_scale(mult[:4], shift[:4]))
    assert not rec[8:].any()


def test_onnx_modes_of_a_layer():
    """The float32 onnx entry point takes every multiplier the fold accepts (power-of-two multipliers
    that tie, shift 0 unnormalised, shifts above 0), where TFLM's may not."""
    w = np.ones((4, 16), np.int8)
    for mult, shift in (([1234567891], [-9]), ([1 << 30], [-3]), ([1 << 29], [0]), ([1 << 30], [5])):
        f = hv.fold_or_reason(w, np.array([0, 0, 0, 500]), 0, mult, shift, 0, (-128, 127))
        assert ONNX in f.modes, (mult, shift)
    assert hv.MODES == ("relu", "full", ONNX)


def test_depthwise_takes_minus_128_weights():
    """BL-04 without leaving the fast path: a -128 weight switches tap_pairs off (argument 7) and
    keeps every entry point."""
    rng = np.random.default_rng(4)
    wd = rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8)
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(5, 5), input_offset=128, output_offset=-128,
             depth_multiplier=1, out_mult=np.full(8, 1234567891), out_shift=np.full(8, -12), act_min=-128, act_max=127)
    for mode in ("relu", "full", ONNX):
        assert hv.dw_plan(k, (1, 5, 5, 8), wd, None, (1, 5, 5, 8), mode=mode)[0][7].value == 1
    wd[0, 0, 2, 5] = -128
    for mode in ("relu", "full", ONNX):
        assert hv.dw_plan(k, (1, 5, 5, 8), wd, None, (1, 5, 5, 8), mode=mode)[0][7].value == 0


def test_variant_names_and_why_not():
    """Under rounding onnx the onnx variants are named helium*_onnx; each helium variant of a
    requantizing op has a why_not, and the TFLM ones give none under onnx (their twin does). The
    weighted ops' onnx variants need mve_fp, Add's and the pools' do not."""
    from types import SimpleNamespace

    for kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED, OpKind.ADD, OpKind.AVG_POOL2D):
        hel = [v for v in REGISTRY[kind].variants if v.isa == "helium"]
        assert {v.name.endswith("_onnx") for v in hel} == {True, False}, kind
        assert all(v.why_not is not None for v in hel)
        weighted = kind in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED)
        for v in hel:
            fp = weighted and v.name.endswith("_onnx")
            assert v.requires == ({"mve", "mve_fp"} if fp else {"mve"}), v.name
            assert v.requires_why == (ONNX_FEATURES_WHY if fp else None), v.name
    # graph_rounding reads graph.meta; the weights' quantization (no zero point) is asked first
    from toolchain.ir import DType

    g = SimpleNamespace(meta={"rounding": "onnx"},
                        t=lambda name: SimpleNamespace(quant=None, dtype=DType.INT8, is_const=name == "w"))
    conv = next(v for v in REGISTRY[OpKind.CONV2D].variants if v.name == "helium_relu")
    assert conv.why_not(SimpleNamespace(inputs=["x", "w"], outputs=["y"]), g) is None  # its onnx twin gives the reason


def test_board_without_mve_fp_keeps_the_portable_twin():
    """A board with MVE but no MVE float: under rounding onnx a 1x1 conv runs the portable _onnx twin
    and kernel_reason says why (the helium onnx variants' features); with mve_fp it runs helium."""
    from dataclasses import replace

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from graph_builder import GraphBuilder, random_inputs

    from quantize import quantize
    from toolchain.lower import kernel_reasons, select_kernels

    b = GraphBuilder()
    g = b.build(b.conv(b.input("x", (1, 4, 4, 16)), 8, 1))
    q = replace(quantize(g, {"x": random_inputs(g)["x"][None]}, "minmax"), meta={**g.meta, "rounding": "onnx"})
    conv, prefs = q.nodes[-1].name, ("helium", "portable")
    for feats, isa in (({"mve"}, "portable"), ({"mve", "mve_fp"}, "helium")):
        chosen = select_kernels(q, prefs, feats)
        assert chosen[conv].isa == isa and chosen[conv].name.endswith("_onnx"), chosen[conv].name
        reason = kernel_reasons(q, chosen, prefs, feats)[conv]
        assert reason == (f"helium: {ONNX_FEATURES_WHY} (mve_fp, which this board lacks)" if isa == "portable"
                          else None), reason


# ---- on the M55 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def firmware(tmp_path_factory, need_board):
    need_board(helium_harness.BOARD)
    out = tmp_path_factory.mktemp("helium_onnx_fw")
    return helium_harness.build(out), out


@pytest.fixture(scope="module")
def results(firmware):
    elf, out = firmware
    return helium_harness.run(elf, CASES, out / "run")


def test_cases_cover_the_onnx_entry_points():
    """Every _onnx entry point of ecc_helium_kernels.h has cases here, built float32 ties included
    for every GEMM and depthwise kernel."""
    protos = {f for f in helium_harness.prototypes() if "_onnx" in f}
    assert protos <= {c.function for c in CASES}, protos - {c.function for c in CASES}
    ties = {c.function for c in CASES if c.name.startswith("onnx_f32tie")}
    assert {f"ecc_helium_{k}_onnx_s8" for k in ("conv2d", "conv2d_1x1", "conv2d_1x1_sparse", "depthwise_conv2d",
                                                 "fully_connected")} <= ties, ties


def test_no_fma_in_the_onnx_entry_points(firmware):
    """The float32 product goes straight into the rounding conversion: no VFMA / VFMS (a contracted
    a * b + c would skip the product's rounding) in any helium _onnx entry point of the firmware,
    and each weighted one has its VCVTN."""
    elf, _ = firmware
    dis = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    funcs = dict(re.findall(r"^[0-9a-f]+ <(ecc_helium_\w+_onnx_s8)>:\n(.*?)(?=\n\n)", dis, flags=re.M | re.S))
    weighted = [f for f in funcs if not f.startswith(("ecc_helium_add", "ecc_helium_avg"))]
    assert len(weighted) == 6, sorted(funcs)  # conv2d x3, depthwise x2, fully_connected
    for name, body in funcs.items():
        assert not re.search(r"\bv?fm[as]\b|vfma|vfms", body), name
    for name in weighted:
        assert "vcvtn.s32.f32" in funcs[name], name


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
