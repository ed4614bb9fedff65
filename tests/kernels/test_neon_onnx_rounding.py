"""`rounding: onnx` in the NEON kernels (issue 13 item 1): every `_onnx` entry point (one rounding, ties to
even: ecc_neon_mbqm_rne in c_templates/kernels/neon/ecc_neon_requant.h) bit-exact under qemu-aarch64
against the numpy oracle, which the portable `_onnx` C twins equal; -128 weights (BL-04) exact on every
entry point that accepts them; the `_onnx` kernels as fast as the TFLM ones (instruction counts); the
why_not reasons of the variants.

- The vector formulation is modelled lane by lane in numpy (SQSHL on the low byte of the shift lane,
  SQDMULH, MUL, CMTST, ORR, SUB, SRSHL) and held to multiply_by_quantized_multiplier_rne on random,
  extreme and constructed tie / near-tie products for every shift in [-31, 30].
- Cases: neon_onnx_cases.py (random, tie-heavy and all-tie requantizations, tails, -128 weights, BL-04).
"""
from __future__ import annotations

import numpy as np
import pytest

import ecc_kernel_harness as harness
import neon_harness
import neon_onnx_cases
from toolchain.isa import neon as nv
from toolchain.isa.neon_packing import RNE_MIN_MULT, requant_ok, rq_lanes
from toolchain.ops import conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier_rne, rounding_mode

CASES = neon_onnx_cases.onnx_cases()
I32 = 2**31


# ---- the lane-level model of ecc_neon_mbqm_rne --------------------------------------------------------
def _wrap(v):
    return (np.asarray(v, object) + I32) % 2**32 - I32


def _sat(v):
    return np.clip(np.asarray(v, object), -I32, I32 - 1)


def _shift_byte(lane):
    """The shift SQSHL / SRSHL read: the low byte of the lane, signed."""
    b = np.asarray(lane, object) & 0xFF
    return np.where(b >= 128, b - 256, b)


def neon_mbqm_rne(x, nmult, lshb, rsh):
    """ecc_neon_rq3 under ECC_NEON_RNE instruction by instruction on int32 lanes (Python ints: no
    overflow): ecc_neon_mbqm_rne where the rsh lane is negative (ecc_neon_ties), else the tie-free
    form SRSHL(MVN(SQDMULH(SQSHL(x))))."""
    x, nmult, lshb, rsh = (np.asarray(a, object) for a in (x, nmult, lshb, rsh))
    xs = _sat(x * np.vectorize(lambda e: 2**e if e >= 0 else None, otypes=[object])(_shift_byte(lshb)))
    h = _sat((2 * xs * nmult) // 2**32)                                    # SQDMULH: floor, saturating
    low = _wrap(xs * nmult)                                                # MUL
    n = np.where(((h & _wrap(lshb)) != 0) | ((low & (I32 - 1)) != 0) | (rsh >= 0), -1, 0)  # CMTST, CMTST, ORR
    v = _wrap(n - h)                                                       # SUB
    s = -_shift_byte(rsh)                                                  # SRSHL by a negative shift
    return np.array([(vi + (1 << (si - 1))) >> si for vi, si in zip(v, s)], object)


def _products(rng, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, mult) pairs for one shift: random and extreme values, exact ties (x * mult an odd multiple
    of 2^(t-1), t = 31 - shift) and their neighbours x +- 1."""
    mults = np.concatenate([rng.integers(2**30, 2**31, 40), [2**30, 3 * 2**29, 2**31 - 1, RNE_MIN_MULT, 0]])
    xs = [rng.integers(-I32, I32, 40), [0, 1, -1, I32 - 1, -I32, 255 << 20, -(255 << 20)],
          rng.integers(-4096, 4096, 40)]
    t = 31 - shift
    for m in (2**30, 3 * 2**29, 5 * 2**28):
        tz = (m & -m).bit_length() - 1           # m = odd * 2^tz
        if t - 1 - tz >= 0:
            odd = 2 * np.concatenate([rng.integers(-2**20, 2**20, 20), rng.integers(-8, 8, 20)]) + 1
            x_tie = odd * 2 ** (t - 1 - tz)
            x_tie = x_tie[(x_tie >= -I32) & (x_tie < I32)]
            xs += [x_tie, x_tie + 1, x_tie - 1]
    x = np.concatenate([np.asarray(a, np.int64) for a in xs])
    x = x[(x >= -I32) & (x < I32)]
    xx, mm = np.meshgrid(x, mults)
    return xx.reshape(-1), mm.reshape(-1)


@pytest.mark.parametrize("shift", range(-31, 31))
def test_lane_model_equals_the_oracle(shift):
    """The NEON formula equals the oracle exactly where x * 2^lsh does not saturate, and after the int8
    clamp (+- any output offset) where it does; exact ties are present for every shift <= 0. Lanes per
    multiplier (rq_lanes of a one-channel layer): the tie-free form where the multiplier allows it."""
    rng = np.random.default_rng(1000 + shift)
    x, m = _products(rng, shift)
    lanes = {int(v): rq_lanes([v], [shift], 1, onnx=True) for v in np.unique(m)}
    nm, lshb, rsh = (np.array([int(lanes[int(v)][i][0]) for v in m], np.int64) for i in range(3))
    assert (rsh >= 0).any() and (rsh < 0).any()
    got = neon_mbqm_rne(x, _wrap(nm), _wrap(lshb), _wrap(rsh)).astype(np.int64)
    want = multiply_by_quantized_multiplier_rne(x, m, shift)
    lsh = np.asarray(_shift_byte(_wrap(lshb)), np.int64)
    exact = (np.abs(x.astype(object) * 2 ** lsh.astype(object)) < I32 - 1) & ((rsh < 0) | (np.abs(want) < 500))
    assert np.array_equal(got[exact], want[exact]), shift
    assert np.array_equal(np.clip(got, -300, 300), np.clip(want, -300, 300)), shift
    if shift <= 0:
        p = x.astype(object) * m.astype(object)
        assert any(pi % 2 ** (31 - shift) == 2 ** (30 - shift) for pi in p), "no exact tie built"


def test_requant_ok_onnx_bounds():
    """The onnx twins refuse multipliers the saturation argument does not cover (a non-zero multiplier
    below 2^17 with a shift above -8), the tflm ones do not care."""
    assert requant_ok([-7], [RNE_MIN_MULT - 1]) and not requant_ok([-7], [RNE_MIN_MULT - 1], onnx=True)
    assert requant_ok([-8], [5], onnx=True) and requant_ok([3], [0], onnx=True)
    assert requant_ok([0, -3], [2**30, 2**31 - 1], onnx=True) and not requant_ok([31], [2**30], onnx=True)


# ---- the portable `_onnx` twins equal the numpy oracle the NEON cases use --------------------------
class _OnnxTwins:
    """A PortableKernels `lib` whose ecc_<op> are the `_onnx` twins."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name: str):
        return getattr(self._lib, f"{name}_onnx")


def test_portable_onnx_twins_equal_the_oracle(portable):
    twins = object.__new__(harness.PortableKernels)
    twins.lib = _OnnxTwins(portable.lib)
    rng = np.random.default_rng(5)
    for kind in neon_onnx_cases.REQUANTS:
        for j in (0, 2):
            x, w, bias, mult, shift = neon_onnx_cases._operands(rng, kind, j, (2, 6, 5, 16), (12, 3, 3, 16), 3, 12,
                                                                 8e5, 4000)
            k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(6, 5), input_offset=-3, output_offset=0,
                     out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
            with rounding_mode("onnx"):
                assert np.array_equal(twins.conv2d_s8(x, w, bias, **k), conv2d.conv2d_s8(x, w, bias, **k)), kind
            x, w, bias, mult, shift = neon_onnx_cases._operands(rng, kind, j, (1, 5, 5, 16), (1, 3, 3, 16), 3, 16,
                                                                 2e4, 3000)
            kd = {**k, "out_hw": (5, 5), "depth_multiplier": 1, "out_mult": mult, "out_shift": shift}
            with rounding_mode("onnx"):
                assert np.array_equal(twins.depthwise_conv2d_s8(x, w, bias, **kd),
                                      depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **kd)), kind
            x, w, bias, mult, shift = neon_onnx_cases._operands(rng, kind, j, (3, 40), (9, 40), 3, 9, 3e4, 3000)
            kf = dict(input_offset=-3, filter_offset=0, output_offset=0, out_mult=mult, out_shift=shift,
                      act_min=-128, act_max=127)
            with rounding_mode("onnx"):
                assert np.array_equal(twins.fully_connected_s8(x, w, bias, **kf),
                                      fully_connected.fully_connected_s8(x, w, bias, **kf)), kind


# ---- the NEON `_onnx` entry points under QEMU -----------------------------------------------------------
_RUNS: dict[str, tuple] = {}


def _board_cases(board: str, cases=None) -> list:
    dot = neon_harness.board_has_dotprod(board)
    return [c for c in (CASES if cases is None else cases) if dot or "_dot_" not in c.function]


@pytest.fixture(scope="module")
def run_board(tmp_path_factory, need_board):
    """board -> (per-case results, instruction counts) of CASES + speed_cases(), one build and run."""
    def get(board: str):
        if board not in _RUNS:
            need_board(board)
            out = tmp_path_factory.mktemp(f"neon_onnx_{board}")
            elf = neon_harness.build(board, out)
            cases = _board_cases(board, CASES + speed_cases())
            _RUNS[board] = (cases, *neon_harness.run(board, elf, cases, out / "run"))
        return _RUNS[board]
    return get


def test_cases_cover_every_onnx_entry_point():
    """Each `_onnx` prototype of ecc_neon_kernels.h has cases, tie-heavy ones included; BL-04's -128 x
    -128 shapes run on every entry point but the pairing ones."""
    onnx = {f for f in neon_harness.prototypes() if f.endswith("_onnx")}
    used = {c.function for c in CASES}
    assert onnx and onnx <= used, onnx - used
    for f in onnx - {"ecc_neon_conv2d_chwn_s8_onnx", "ecc_neon_depthwise_conv2d_chwn_s8_onnx",
                     "ecc_neon_avg_pool2d_chwn_s8_onnx"}:
        assert any(c.function == f and "ties" in c.name for c in CASES), f
    bl04 = {c.function for c in CASES if c.name.startswith("bl04_")}
    assert not any(("_nopair" not in f and "_dot" not in f) for f in bl04), bl04
    assert {"ecc_neon_fully_connected_nopair_s8_onnx", "ecc_neon_fully_connected_dot_s8",
            "ecc_neon_conv2d_1x1_nopair_s8", "ecc_neon_depthwise_conv2d_3x3_nopair_s8_onnx"} <= bl04


@pytest.mark.parametrize("board", neon_harness.BOARDS)
def test_neon_onnx_bit_exact(run_board, board):
    """Every case of the board, bit for bit (one assertion listing every failing case)."""
    cases, res, _ = run_board(board)
    assert len(res) == len(cases)
    bad = [f"{c.name} ({c.function}): rc {rc}, guards {'ok' if ok else 'BROKEN'}, "
           f"{int(np.sum(np.frombuffer(out, np.int8) != np.frombuffer(c.expected, np.int8)))} values differ"
           for c, (rc, ok, out) in zip(cases, res) if rc != 0 or not ok or out != c.expected]
    assert not bad, f"{len(bad)} of {len(cases)} cases fail:\n" + "\n".join(bad[:40])


# ---- same speed: the same layer through the tflm and the onnx entry point -----------------------------
def speed_cases() -> list:
    """Layers of a keyword-spotting DS-CNN's sizes (3x3 depthwise and 1x1 conv on 25x5x64, a 10x4 conv,
    an FC) through every NEON entry point of both roundings, on the same data."""
    from isa_cases import planned_cases

    out = []
    for rounding in ("tflm", "onnx"):
        onnx, tail = rounding == "onnx", ("_onnx" if rounding == "onnx" else "")
        r = np.random.default_rng(9)
        x = r.integers(-128, 128, (1, 25, 5, 64), dtype=np.int8)
        w = r.integers(-127, 128, (1, 3, 3, 64), dtype=np.int8)
        bias = r.integers(-3000, 3000, 64).astype(np.int32)
        k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(25, 5), depth_multiplier=1, input_offset=5,
                 output_offset=-3, out_mult=r.integers(2**30, 2**31, 64).astype(np.int32),
                 out_shift=np.full(64, -9, np.int32), act_min=-128, act_max=127)
        for tag, kk in (("dw", k), ("dwties", {**k, "out_mult": np.full(64, 3 << 28)})):  # ties: the tested form
            with rounding_mode(rounding):
                y = depthwise_conv2d.depthwise_conv2d_s8(x, w, bias, **kk)
            out += planned_cases("neon", f"speed_{rounding}_{tag}", x, y, (
                (f"ecc_neon_depthwise_conv2d_3x3{'' if pair else '_nopair'}_s8{tail}",
                 nv.depthwise_plan(kk, x.shape, w, bias, y.shape, pair=pair, three=True, onnx=onnx))
                for pair in (True, False)))
        for kh, kw, cin, shape in ((1, 1, 64, (1, 25, 5, 64)), (10, 4, 1, (1, 49, 10, 1))):
            x = r.integers(-128, 128, shape, dtype=np.int8)
            w = r.integers(-127, 128, (64, kh, kw, cin), dtype=np.int8)
            pads = (0, 0, 0, 0) if kh == 1 else (4, 1, 5, 2)
            hw = Window((kh, kw), (1, 1) if kh == 1 else (2, 2), (1, 1), pads).out_hw(*shape[1:3])
            kc = dict(stride=(1, 1) if kh == 1 else (2, 2), pad=pads[:2], dilation=(1, 1), out_hw=hw, input_offset=5,
                      output_offset=-3, out_mult=k["out_mult"], out_shift=np.full(64, -10, np.int32), act_min=-128,
                      act_max=127)
            with rounding_mode(rounding):
                y = conv2d.conv2d_s8(x, w, bias, **kc)
            out += planned_cases("neon", f"speed_{rounding}_conv{kh}x{kw}", x, y, (
                (f"ecc_neon_conv2d{'_1x1' if pw else ''}{'' if kd == 'pair' else '_' + kd}_s8{tail}",
                 nv.conv2d_plan(kc, x.shape, w, bias, y.shape, kind=kd, pointwise=pw, onnx=onnx))
                for pw in (True, False) for kd in ("dot", "pair", "nopair")))
    return out


def test_onnx_entry_points_as_fast_as_tflm(run_board):
    """On `aarch64` (instruction counts): each `_onnx` entry point retires at most as many instructions
    as its tflm twin on the same layer (the epilogue is the only difference: 4 instructions a quad
    against 5), and at most 15% more on a layer whose multipliers can make exact ties (8 a quad)."""
    cases, res, counts = run_board("aarch64")
    if not counts:
        pytest.skip("no instruction counts on this QEMU (tcount plugin)")
    by = {(c.name.split("-")[0].replace("_onnx_", "_tflm_"), c.function.removesuffix("_onnx")): n
          for c, n in zip(cases, counts) if c.name.startswith("speed_") and c.function.endswith("_onnx")}
    pairs = [(c.name.split("-")[0], c.function, n, by[(c.name.split("-")[0], c.function)])
             for c, n in zip(cases, counts) if c.name.startswith("speed_tflm")]
    assert len(pairs) >= 9, pairs
    print("\n".join(f"{tag} {f}: tflm {t} onnx {o} ({o / t - 1:+.1%})" for tag, f, t, o in pairs))
    slow = [p for p in pairs if p[3] > (1.15 if p[0].endswith("ties") else 1.0) * p[2]]
    assert not slow, slow


# ---- why_not ------------------------------------------------------------------------------------------
def test_refusals_in_the_users_words():
    """The first reason a NEON entry point steps aside (KernelVariant.why_not builds on these)."""
    w = np.ones((4, 1, 1, 16), np.int8)
    k = dict(stride=(1, 1), pad=(0, 0), out_mult=[2**30], out_shift=[-3], input_offset=0)
    assert nv.conv2d_refusal(k, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="pair", pointwise=True) is None
    w[0, 0, 0, 3] = -128  # alone in its int16 lane: exact on the pairing kernel
    assert nv.conv2d_refusal(k, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="pair", pointwise=True) is None
    w[0, 0, 0, 11] = -128  # k 3 and 11: one lane (BL-04)
    assert "-128" in nv.conv2d_refusal(k, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="pair", pointwise=True)
    assert nv.conv2d_refusal(k, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="nopair", pointwise=True) is None
    assert nv.conv2d_refusal(k, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True) is None
    assert "multiple of 8" in nv.conv2d_refusal(k, (1, 4, 4, 12), w[..., :12], (1, 4, 4, 4), kind="nopair",
                                                pointwise=True)
    assert nv.conv2d_refusal(k, (1, 4, 4, 16), w[..., :8], (1, 4, 4, 4), kind="dot", pointwise=False) == \
        "grouped convolution"
    assert "1x1" in nv.conv2d_refusal(k, (1, 4, 4, 16), np.ones((4, 3, 3, 16), np.int8), (1, 2, 2, 4), kind="dot",
                                      pointwise=True)
    low = {**k, "out_mult": [1000], "out_shift": [0]}
    assert nv.conv2d_refusal(low, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True) is None
    assert "rounding: onnx" in nv.conv2d_refusal(low, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True,
                                                 onnx=True)
    kd = dict(depth_multiplier=1, out_mult=[2**30], out_shift=[-3])
    assert nv.depthwise_refusal(kd, (1, 5, 5, 12), np.ones((1, 3, 3, 12), np.int8), pair=False, three=True) == \
        "channels not a multiple of 8"
    assert nv.depthwise_refusal(kd, (1, 5, 5, 8), np.ones((1, 5, 5, 8), np.int8), pair=False, three=True) == \
        "window is not 3x3"
    assert nv.depthwise_refusal({**kd, "depth_multiplier": 2}, (1, 5, 5, 8), np.ones((1, 3, 3, 16), np.int8),
                                pair=False, three=False) == "depth multiplier is not 1"
    kf = dict(filter_offset=3, out_mult=[2**30], out_shift=[-3])
    assert "zero point" in nv.fc_refusal(kf, np.ones((2, 8), np.int8), kind="dot")


def test_every_neon_variant_gives_a_reason():
    """Each NEON variant of ours (not the shared lut / maximum kernels) has a why_not."""
    import toolchain.isa  # noqa: F401 - registers every ISA variant
    from toolchain.ops.registry import REGISTRY

    missing = [(k.name, v.name) for k, op in REGISTRY.items() for v in op.variants
               if v.isa == "neon" and v.why_not is None and "lut" not in v.template and "maximum" not in v.template]
    assert not missing, missing
