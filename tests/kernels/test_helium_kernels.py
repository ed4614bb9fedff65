"""Every Helium (MVE) kernel entry point is bit-exact with the reference on the Cortex-M55
(mps3-an547) under QEMU: one test firmware runs all cases (CMSIS-NN conformance sets of the
families the helium kernels implement + seeded random cases), fed through a semihosting file;
outputs, return codes and guard bytes after every output and scratch buffer (scratch_bytes is
exact) come back in another. See helium_harness.py and helium_cases.py. Also the offline half
without a compiler: blob layouts, the zero-point fold, the predicates (BL-04) and that helium
variants are chosen only on boards with the `mve` feature."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import helium_cases
import helium_harness
from toolchain.isa import helium as hv
from toolchain.ops.registry import REGISTRY, OpKind

SETS = helium_cases.conformance_sets()
CASES = [c for fam, name in SETS for c in helium_cases.conformance_cases(fam, name)] + helium_cases.random_cases()



@pytest.fixture(scope="module")
def firmware(tmp_path_factory, need_board):
    need_board(helium_harness.BOARD)
    out = tmp_path_factory.mktemp("helium_fw")
    return out, helium_harness.build(out)


@pytest.fixture(scope="module")
def results(firmware):
    """per-case (rc, guards intact, output): one firmware build and one QEMU run."""
    out, elf = firmware
    return helium_harness.run(elf, CASES, out / "run")


def test_cases_cover_every_entry_point():
    """Each helium entry point of ecc_helium_kernels.h is exercised by at least one case, and the
    prototypes match the variants the op modules list."""
    import helium_onnx_cases  # the rounding-onnx entry points: test_helium_onnx_rounding.py runs them

    used = {c.function for c in CASES} | {c.function for c in helium_onnx_cases.random_cases()}
    protos = set(helium_harness.prototypes())
    assert protos <= used, protos - used
    names = {v.function for op in REGISTRY.values() for v in op.variants if v.isa == "helium"}
    assert names == protos


@pytest.mark.parametrize("family,name", SETS, ids=[s for _, s in SETS])
def test_conformance_set_has_a_helium_kernel(family, name):
    """Every conformance set runs on at least one helium entry point, except grouped convolution and
    depthwise multipliers above 1 (the dsp or portable kernels take those)."""
    cases = helium_cases.conformance_cases(family, name)
    d = dict(np.load(helium_cases.CONF / f"{name}.npz"))
    if family == "grouped_conv" and d["weights"].shape[3] != d["input"].shape[3]:
        assert not cases
        pytest.skip("grouped convolution: no helium kernel")
    if family == "depthwise_conv" and d["weights"].shape[3] != d["input"].shape[3]:
        assert not cases
        pytest.skip("depth multiplier > 1: no helium kernel")
    assert cases, f"{name}: no helium entry point accepts this conformance set"


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_helium_bit_exact(results, index):
    helium_harness.assert_exact(CASES[index], results[index])


def test_kernels_have_no_static_data(firmware):
    """Kernels keep state in the arena scratch only: no .data/.bss in any helium kernel object."""
    out, _ = firmware
    objs = sorted(out.glob("fw/obj/*ecc_helium_*.o"))
    assert objs
    for o in objs:
        syms = subprocess.run(["arm-none-eabi-nm", str(o)], capture_output=True, text=True, check=True).stdout
        assert not [ln for ln in syms.splitlines() if ln.split()[-2:-1] and ln.split()[-2] in "bBdDCgGsS"], o.name


# ---- offline parts --------------------------------------------------------------------------------
def test_minus_128_weights():
    """BL-04: the GEMM kernels (VMLADAV: every product exact in 32 bits, none shares a 16-bit lane)
    accept -128 weights; the depthwise kernel, which sums two products in one int16 lane, takes them
    with tap_pairs = 0 (every tap widened alone; argument 7), and 1 once the -128 is replaced."""
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 5, 5, 8), dtype=np.int8)
    w = rng.integers(-127, 128, (4, 3, 3, 8), dtype=np.int8)
    w[2, 1, 1, 3] = -128
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(5, 5), input_offset=128, output_offset=-128,
             out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -12), act_min=-128, act_max=127)
    assert hv.conv_plan(k, x.shape, w, None, (1, 5, 5, 4), mode="relu", pointwise=False) is not None
    kf = dict(input_offset=1, filter_offset=0, output_offset=0, out_mult=[1 << 30], out_shift=[-10], act_min=-128,
              act_max=127)
    assert hv.fc_plan(kf, (1, 8), w[:, 0, 0, :], None, (1, 4), mode="full") is not None
    wd = rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8)
    kd = {**k, "depth_multiplier": 1, "out_mult": np.full(8, 1 << 30), "out_shift": np.full(8, -12)}
    assert hv.dw_plan(kd, x.shape, wd, None, (1, 5, 5, 8), mode="relu")[0][7].value == 1
    wd[0, 0, 2, 5] = -128
    assert hv.dw_plan(kd, x.shape, wd, None, (1, 5, 5, 8), mode="relu")[0][7].value == 0


def test_predicates_reject_inexact_requantization():
    """A shift below -31 has no helium kernel; a multiplier >= 1 (positive shift) only the onnx one
    (float32, any scale); the relu entry point (no round-half-away fix-up) is offered only where the
    fix-up cannot change an output."""
    w = np.ones((4, 16), np.int8)
    assert hv.fold(w, None, 0, [1 << 29], [1], 0, (-128, 127)).modes == ("onnx",)
    assert hv.fold(w, None, 0, [1 << 30], [1], 0, (-128, 127)).modes == ("onnx",)
    assert hv.fold(w, None, 0, [1 << 30], [-32], 0, (-128, 127)) is None
    assert hv.fold(w, None, 0, [1 << 30], [-5], 3, (-128, 127)).modes == ("full", "onnx")
    assert hv.fold(w, None, 0, [1 << 30], [-5], 3, (3, 127)).modes == ("relu", "full", "onnx")
    assert hv.fold(w, None, 0, [1 << 30], [0], 3, (-128, 127)).modes == ("relu", "full", "onnx")
    assert hv.fold(w, None, 0, [1234567891], [-9], 3, (-128, 127)).modes == ("full", "onnx")


def test_fold_wraps_like_the_accumulator():
    """bias' = bias + offset * sum(w) modulo 2^32: the int32 accumulator wraps the same way."""
    w = np.full((1, 4096), 127, np.int8)
    f = hv.fold(w, np.array([2**31 - 1]), 128, [1 << 30], [-1], 0, (-128, 127))
    assert int(f.bias[0]) == ((2**31 - 1 + 128 * 127 * 4096 + 2**31) % 2**32) - 2**31


def test_pack_gemm_layout():
    """Per quad: each 16-k chunk of the four channels, then bias', mult, shift; K and O zero-padded."""
    w = np.arange(5 * 20, dtype=np.int64).reshape(5, 20).astype(np.int8)
    f = hv.fold(w, np.arange(5) * 10, 0, np.arange(5) + (1 << 30), -np.arange(5) - 1, 0, (-128, 127))
    blob = hv.pack_gemm(w, f)
    wp = np.zeros((8, 32), np.int8)
    wp[:5, :20] = w
    quad = 4 * 32 + 48
    assert blob.size == 2 * quad
    for q in range(2):
        b = blob[q * quad:(q + 1) * quad]
        for chunk in range(2):
            for r in range(4):
                np.testing.assert_array_equal(b[64 * chunk + 16 * r:64 * chunk + 16 * r + 16],
                                              wp[4 * q + r, 16 * chunk:16 * chunk + 16])
        words = b[128:].view("<i4").reshape(3, 4)
        n = min(4, 5 - 4 * q)
        np.testing.assert_array_equal(words[0, :n], f.bias[4 * q:4 * q + n])
        np.testing.assert_array_equal(words[1, :n], f.mult[4 * q:4 * q + n])
        np.testing.assert_array_equal(words[2, :n], f.shift[4 * q:4 * q + n])
        assert not words[:, n:].any()


def test_depthwise_lanes():
    """Pixels per 16-lane vector: 16 / C for C in 1, 2, 4, 8 at stride_w 1; the blob repeats the
    channels' weights and parameters across the pixels."""
    assert [hv.lanes_px(c, 1) for c in (1, 2, 3, 4, 8, 16)] == [16, 8, 1, 4, 2, 1]
    assert hv.lanes_px(8, 2) == 1
    w = np.arange(9 * 8).reshape(1, 3, 3, 8).astype(np.int8)
    f = hv.fold(w.reshape(-1, 8).T, np.arange(8), 0, np.full(8, 1 << 30), np.full(8, -3), 0, (-128, 127))
    blob = hv.pack_depthwise(w, f, 2)
    assert blob.size == 192 + 9 * 16
    np.testing.assert_array_equal(blob[192:208], np.tile(w[0, 0, 0], 2))
    np.testing.assert_array_equal(blob[:64].view("<i4"), np.tile(np.arange(8), 2)[hv.DW_LANES])


def test_depthwise_3x3_blob_and_reasons():
    """depthwise_conv2d_3x3: the column offsets {0, 4, 8, 12} * C, then per block of four channels
    W0 of channels 0, 2, 1, 3 (byte 4 kx + ky, the rest zero) and bias', mult, shift; it takes -128
    weights (no int16 pair sums) and leaves stride_w 2, fewer than 16 channels and other windows to
    depthwise_conv2d."""
    rng = np.random.default_rng(9)
    c = 18
    w = rng.integers(-128, 128, (1, 3, 3, c), dtype=np.int8)
    w[0, 1, 2, 5] = -128
    f = hv.fold(w.reshape(-1, c).T, np.arange(c), 3, np.full(c, 1 << 30), np.full(c, -3), 0, (-128, 127))
    blob = hv.pack_depthwise_3x3(w, f)
    assert blob.size == 16 + 5 * (64 + 48)
    np.testing.assert_array_equal(blob[:16].view("<u4"), [0, 4 * c, 8 * c, 12 * c])
    for q in range(5):
        b = blob[16 + 112 * q:16 + 112 * (q + 1)]
        for slot, ch in enumerate(4 * q + np.array([0, 2, 1, 3])):
            v = b[16 * slot:16 * slot + 16].reshape(4, 4)  # [column, row]
            want = np.zeros((4, 4), np.int8)
            if ch < c:
                want[:3, :3] = w[0, :, :, ch].T
            np.testing.assert_array_equal(v, want)
        words = b[64:].view("<i4").reshape(3, 4)
        n = min(4, c - 4 * q)
        np.testing.assert_array_equal(words[0, :n], f.bias[4 * q:4 * q + n])
        assert not words[:, n:].any()
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), depth_multiplier=1, input_offset=128, output_offset=-128,
             out_mult=np.full(c, 1 << 30), out_shift=np.full(c, -12), act_min=-128, act_max=127)
    assert hv.dw3_plan(k, (1, 5, 5, c), w, None, (1, 5, 5, c), mode="relu") is not None
    assert "stride_w 2" in hv.dw3_plan_or_reason({**k, "stride": (1, 2)}, (1, 5, 5, c), w, None, (1, 5, 3, c),
                                                  mode="relu")
    assert "16 channels" in hv.dw3_plan_or_reason(k, (1, 5, 5, 8), w[..., :8], None, (1, 5, 5, 8), mode="relu")
    assert "3x3" in hv.dw3_plan_or_reason(k, (1, 5, 5, c), np.zeros((1, 5, 5, c), np.int8), None, (1, 5, 5, c),
                                          mode="relu")


def test_helium_needs_the_mve_feature():
    """Helium variants carry requires={"mve"} (the onnx ones of Conv / depthwise / FC also "mve_fp"):
    select_kernels never picks one for a board without it, even when "helium" is in the preference
    list, and picks them on the M55."""
    from targets import load_target
    from toolchain.lower import select_kernels

    helium = [v for op in REGISTRY.values() for v in op.variants if v.isa == "helium"]
    assert helium and all(v.requires in (frozenset({"mve"}), frozenset({"mve", "mve_fp"})) for v in helium)
    assert all("mve" in v.requires for v in helium)
    g = _digits_graph()
    m55 = load_target("mps3-an547")
    on = select_kernels(g, [i.value for i in m55.kernel_preference], m55.isa_features)
    off = select_kernels(g, ["helium", "dsp", "portable"], {"dsp", "fpu"})
    for n in g.nodes:
        if n.op in (OpKind.CONV2D, OpKind.FULLY_CONNECTED, OpKind.MAX_POOL2D):
            assert on[n.name].isa == "helium", (n.name, on[n.name].name)
            assert off[n.name].isa == "dsp", (n.name, off[n.name].name)


def _digits_graph():
    from pathlib import Path

    from quantize import quantize
    from toolchain.config import load_config
    from toolchain.data import load_data
    from toolchain.frontend.onnx import load_onnx
    from toolchain.passes import run_passes

    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "examples" / "digits" / "pipeline.yaml", {})
    g = run_passes(load_onnx(cfg.model, cfg.input_shapes))
    return quantize(g, load_data(cfg.calibration, g, cfg.preprocess), cfg.calibration_method)
