"""`rounding: onnx` in the NEON kernels: every `_onnx` entry point bit-exact under qemu-aarch64 against
the numpy oracle, which the portable `_onnx` C twins equal. Conv / depthwise / FC compute onnxruntime's
float32 output stage (F32_SPEC; fixed_point.requantize_s8_f32; ecc_neon_rq_f32 in
c_templates/kernels/neon/ecc_neon_requant.h: SCVTF, FMUL by the channel's float32 scale, FCVTNS); Add
keeps the exact product rounded once (ecc_neon_mbqm_rne), average pooling its rounding division.
Also: -128 weights (BL-04) exact on every entry point that accepts them; the `_onnx` kernels at least
as fast as the TFLM ones (instruction counts); no FMA in the `_onnx` code; the why_not reasons.

- Cases: neon_onnx_cases.py (random, tie-heavy and all-tie requantizations, tails, -128 weights, BL-04,
  Add and average pooling) and neon_f32_cases.py (float32 ties the exact rounding resolves the other
  way, both ways, with accumulators beyond 2^24 where SCVTF rounds, on every Conv / depthwise / FC
  entry point, the sparse constant rows and CHWN included).
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import ecc_kernel_harness as harness
import neon_f32_cases
import neon_harness
import neon_onnx_cases
from toolchain.isa import neon as nv
from toolchain.isa.neon_packing import RNE_MIN_MULT, qblob, requant_ok, rq_lanes
from toolchain.ops import conv2d, depthwise_conv2d, fully_connected
from toolchain.ops.common import Window
from toolchain.ops.fixed_point import f32_scale, quantize_multiplier, rounding_mode

CASES = neon_onnx_cases.onnx_cases()
F32_CASES, F32_INFO = neon_f32_cases.f32_tie_cases()
WEIGHTED = ("conv2d", "depthwise_conv2d", "fully_connected")


# ---- the offline half: the float32 scale in the blob --------------------------------------------------
def test_onnx_lanes_hold_the_f32_scale():
    """rq_lanes / qblob under onnx: the bits of fixed_point.f32_scale per channel (31-bit multipliers
    rounded as C's (float) does, shift 31 and -31 included), two zero lanes, padded channels +0.0."""
    rng = np.random.default_rng(3)
    mult = np.concatenate([rng.integers(2**30, 2**31, 20), [2**31 - 1, 2**30, 0, 5, 3 << 28]]).astype(np.int64)
    shift = np.concatenate([rng.integers(-31, 32, 20), [31, -31, 0, 7, -1]]).astype(np.int64)
    bits, z1, z2 = rq_lanes(mult, shift, mult.size, onnx=True)
    assert np.array_equal(np.asarray(bits, np.int64).astype(np.int32).view(np.float32), f32_scale(mult, shift))
    assert not z1.any() and not z2.any()
    q = qblob(np.arange(mult.size), mult, shift, mult.size, onnx=True).reshape(-1, 4, 4)
    assert np.array_equal(q[:, 1].reshape(-1)[:mult.size].view(np.float32), f32_scale(mult, shift))
    assert np.array_equal(q[:, 0].reshape(-1)[:mult.size], np.arange(mult.size))
    assert not q[:, 1].reshape(-1)[mult.size:].any() and not q[:, 2:].any()
    s = np.float32(0.011717591)  # F32_SPEC's example: 10113 * S is 118.5 in float32 (exact: above it)
    m, sh = neon_f32_cases.scale_pair(s)
    assert neon_f32_cases.f32_of(10113, m, sh) == 118.5 and np.rint(118.5) == 118
    assert quantize_multiplier(float(s)) == (m, sh)


def test_f32_tie_cases_discriminate():
    """Every float32-tie layer has ties resolved below and above the exact rounding and accumulators
    past 2^24; no real tie of the all-tie cases or of random products is lost in float32."""
    assert len(F32_INFO) == 7
    for info in F32_INFO:
        assert info["down"] >= 2 and info["up"] >= 2 and info["big"] >= 2, info
    rng = np.random.default_rng(4)
    shift = -(1 + np.arange(31))
    n = neon_f32_cases.assert_no_lost_real_tie(neon_onnx_cases.tie_bias(rng, shift), 2**30, shift)
    m = np.concatenate([np.full(64, 2**30), 3 * 2**29 + np.zeros(64, np.int64), rng.integers(1, 2**24, 64) << 7])
    sh = rng.integers(-20, 1, m.size)
    acc = (2 * rng.integers(-200, 200, m.size) + 1) << np.maximum(-sh, 0)
    n += neon_f32_cases.assert_no_lost_real_tie(acc, m, sh)
    assert n >= 80, n  # the 31 all-tie biases and the 64 products of multiplier 2^30 at least


def test_requant_ok_onnx_bounds():
    """neon/add's `_onnx` twin (ecc_neon_mbqm_rne) refuses output multipliers the saturation argument
    does not cover (a non-zero multiplier below 2^17 with a shift above -8), the tflm one does not care."""
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
_ELFS: dict = {}


def _board_cases(board: str, cases=None) -> list:
    dot = neon_harness.board_has_dotprod(board)
    return [c for c in (CASES if cases is None else cases) if dot or "_dot_" not in c.function]


@pytest.fixture(scope="module")
def run_board(tmp_path_factory, need_board):
    """board -> (cases, per-case results, instruction counts) of CASES + F32_CASES + speed_cases(), one
    build and run."""
    def get(board: str):
        if board not in _RUNS:
            need_board(board)
            out = tmp_path_factory.mktemp(f"neon_onnx_{board}")
            elf = _ELFS[board] = neon_harness.build(board, out)
            cases = _board_cases(board, CASES + F32_CASES + speed_cases())
            _RUNS[board] = (cases, *neon_harness.run(board, elf, cases, out / "run"))
        return _RUNS[board]
    return get


def test_cases_cover_every_onnx_entry_point():
    """Each `_onnx` prototype of ecc_neon_kernels.h has cases, tie-heavy ones included, and each Conv /
    depthwise / FC one float32-tie cases; BL-04's -128 x -128 shapes run on every entry point but the
    pairing ones."""
    onnx = {f for f in neon_harness.prototypes() if f.endswith("_onnx")}
    used = {c.function for c in CASES}
    assert onnx and onnx <= used, onnx - used
    for f in onnx - {"ecc_neon_conv2d_chwn_s8_onnx", "ecc_neon_depthwise_conv2d_chwn_s8_onnx",
                     "ecc_neon_avg_pool2d_chwn_s8_onnx"}:
        assert any(c.function == f and "ties" in c.name for c in CASES), f
    weighted = {f for f in onnx if any(f.startswith(f"ecc_neon_{op}_") for op in WEIGHTED)}
    f32 = {c.function for c in F32_CASES}
    assert len(weighted) == 18 and weighted <= f32, weighted - f32
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
    as its tflm twin on the same layer, ties or not (the epilogue is the only difference: SCVTF, FMUL,
    FCVTNS, 3 instructions a quad against TFLite's 5)."""
    cases, res, counts = run_board("aarch64")
    if not counts:
        pytest.skip("no instruction counts on this QEMU (tcount plugin)")
    by = {(c.name.split("-")[0].replace("_onnx_", "_tflm_"), c.function.removesuffix("_onnx")): n
          for c, n in zip(cases, counts) if c.name.startswith("speed_") and c.function.endswith("_onnx")}
    pairs = [(c.name.split("-")[0], c.function, n, by[(c.name.split("-")[0], c.function)])
             for c, n in zip(cases, counts) if c.name.startswith("speed_tflm")]
    assert len(pairs) >= 9, pairs
    print("\n".join(f"{tag} {f}: tflm {t} onnx {o} ({o / t - 1:+.1%})" for tag, f, t, o in pairs))
    slow = [p for p in pairs if p[3] > p[2]]
    assert not slow, slow


# ---- no FMA: the float32 product goes straight into the rounding conversion --------------------------
@pytest.mark.parametrize("board", neon_harness.BOARDS)
def test_onnx_kernels_have_no_fused_multiply_add(run_board, board):
    """The board's test program (the kernels as the board's flags compile them): no `_onnx` function
    holds an FMA-family instruction (a contracted fl32(acc) * S + c would round once, not twice) and
    each Conv / depthwise / FC one converts with FCVTNS (round to nearest, ties to even)."""
    run_board(board)
    from targets import load_target

    objdump = load_target(board).nm.replace("-nm", "-objdump")
    asm = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(_ELFS[board])], capture_output=True, text=True,
                         check=True).stdout
    bodies = dict(re.findall(r"^[0-9a-f]+ <(ecc_neon_\w+_onnx)>:\n(.*?)(?=\n\n)", asm, flags=re.M | re.S))
    weighted = [f for f in bodies if any(f.startswith(f"ecc_neon_{op}_") for op in WEIGHTED)]
    assert len(weighted) == (18 if neon_harness.board_has_dotprod(board) else 14), sorted(bodies)
    fused = [f for f, body in bodies.items() if re.search(r"\s(fml[as]|f[n]?m(add|sub))\s", body)]
    assert not fused, fused
    assert all("fcvtns" in bodies[f] and "fmul" in bodies[f] for f in weighted)


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
    assert nv.conv2d_refusal(low, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True, onnx=True) is None
    big = {**k, "out_mult": [2**30], "out_shift": [31]}  # a float32 scale of 2^30: only tflm's range refuses it
    assert "shift range" in nv.conv2d_refusal(big, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True)
    assert nv.conv2d_refusal(big, (1, 4, 4, 16), w, (1, 4, 4, 4), kind="dot", pointwise=True, onnx=True) is None
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
