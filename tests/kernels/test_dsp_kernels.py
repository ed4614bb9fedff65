"""Every dsp kernel entry point is bit-exact with the reference, on the Cortex-M4 (mps2-an386),
M7 (mps2-an500) and M33 (mps2-an505) under QEMU: one test firmware per board runs all cases
(CMSIS-NN conformance sets of the families the dsp kernels implement + seeded random cases), fed
through a semihosting file; outputs, return codes and guard bytes after every output and scratch
buffer (scratch_bytes is exact) come back in another. See dsp_harness.py and dsp_cases.py."""
from __future__ import annotations


import numpy as np
import pytest

import dsp_cases
import dsp_harness
import dsp_onnx_cases
from toolchain.isa import dsp

SETS = dsp_cases.conformance_sets()
CASES = ([c for fam, name in SETS for c in dsp_cases.conformance_cases(fam, name)] + dsp_cases.random_cases()
         + dsp_cases.paired_cases())



@pytest.fixture(scope="session")
def results(tmp_path_factory, need_board):
    """board -> per-case (rc, guards intact, output), one firmware build and one QEMU run per board."""
    return dsp_harness.results_getter(tmp_path_factory, need_board, CASES, "dsp")


def test_cases_cover_every_entry_point():
    """Each dsp entry point of ecc_dsp_kernels.h is exercised by at least one case (the onnx-rounding
    ones in dsp_onnx_cases.py, run by test_dsp_onnx_rounding.py, the 16x8 ones in dsp_s16_cases.py, run
    by test_dsp_s16_kernels.py: one firmware run each keeps QEMU's time limit)."""
    import dsp_s16_cases

    used = {c.function for c in CASES + dsp_onnx_cases.onnx_cases() + dsp_s16_cases.all_cases()}
    assert set(dsp_harness.prototypes()) <= used, set(dsp_harness.prototypes()) - used


@pytest.mark.parametrize("family,name", SETS, ids=[s for _, s in SETS])
def test_conformance_set_has_a_dsp_kernel(family, name):
    """Every conformance set runs on at least one dsp entry point, except grouped convolution."""
    cases = dsp_cases.conformance_cases(family, name)
    d = dict(np.load(dsp_cases.CONF / f"{name}.npz"))
    if family == "grouped_conv" and d["weights"].shape[3] != d["input"].shape[3]:
        assert not cases  # the predicate rejects it; the portable kernel takes it
        pytest.skip("grouped convolution (filter channels < input channels): no dsp kernel, portable only")
    assert cases, f"{name}: no dsp entry point accepts this conformance set"


@pytest.mark.parametrize("board", dsp_harness.BOARDS)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_dsp_bit_exact(results, board, index):
    dsp_harness.check_result(results(board)[index], CASES[index])


def test_minus_128_weights_keep_the_entry_points():
    """BL-04 (issue 13): the conv2d and depthwise entry points accept weights holding -128 exactly as
    they accept the same call without it (each product in its own int16 lane, SMLAD / SMLABB sum in 32
    bits; bit-exactness: dsp_onnx_cases' minus128 layers); only dsp/fully_connected, which pairs two
    weights in one 16-bit lane, steps aside (its conv2d GEMM fallback takes them, dsp.fc_as_conv_plan_why)."""
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 5, 5, 8), dtype=np.int8)
    w = rng.integers(-127, 128, (4, 3, 3, 8), dtype=np.int8)
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(5, 5), input_offset=128, output_offset=-128,
             out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -12), act_min=-128, act_max=127)
    y = np.zeros((1, 5, 5, 4), np.int8)
    fns = lambda cases: [c.function for c in cases]  # noqa: E731
    ok = fns(dsp_cases.conv_cases("ok", x, w, None, k, y))
    w[2, 1, 1, 3] = -128
    assert ok and fns(dsp_cases.conv_cases("m128", x, w, None, k, y)) == ok
    wd = rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8)
    kd = {**k, "depth_multiplier": 1, "out_mult": np.full(8, 1 << 30), "out_shift": np.full(8, -12)}
    ok = fns(dsp_cases.depthwise_cases("ok", x, wd, None, kd, np.zeros((1, 5, 5, 8), np.int8)))
    wd[0, 0, 2, 5] = -128
    assert ok and fns(dsp_cases.depthwise_cases("m128", x, wd, None, kd, np.zeros((1, 5, 5, 8), np.int8))) == ok
    wf = rng.integers(-127, 128, (3, 8), dtype=np.int8)
    kf = dict(input_offset=1, filter_offset=0, output_offset=0, out_mult=[1 << 30], out_shift=[-10], act_min=-128,
              act_max=127)
    assert dsp_cases.fc_cases("ok", x[0, 0, :1], wf, None, kf, np.zeros((1, 3), np.int8))
    wf[1, 1] = -128
    assert not dsp_cases.fc_cases("m128", x[0, 0, :1], wf, None, kf, np.zeros((1, 3), np.int8))
    assert dsp.fc_as_conv_plan_why(kf, (1, 8), wf, None, (1, 3), mode="full", pointwise=True)[1] > 0


def test_kernels_have_no_static_data(results, tmp_path_factory):
    """Kernels keep state in the arena scratch only: no .data/.bss in any dsp kernel object."""
    import subprocess

    results("mps2-an386")
    objs = sorted(tmp_path_factory.getbasetemp().glob("dsp_mps2-an386*/fw/obj/*ecc_dsp_*.o"))
    assert objs
    for o in objs:
        syms = subprocess.run(["arm-none-eabi-nm", str(o)], capture_output=True, text=True, check=True).stdout
        assert not [ln for ln in syms.splitlines() if ln.split()[-2:-1] and ln.split()[-2] in "bBdDCgGsS"], o.name


def test_saturated_bias_layers_take_dsp_kernels():
    """Layers holding channels with biases saturated near +-2^30 whose output is constant (MobileNet VWW's
    pointwise convolutions) get the dsp entry points, the 1x1 ones included, in every mode their
    output range allows (dsp_cases.saturated_bias_cases; the outputs are checked by test_dsp_bit_exact)."""
    names = {c.name for c in CASES if c.name.startswith("sat_")}
    for i in range(4):
        for j, fns in enumerate((("conv2d_relu", "conv2d", "conv2d_clamp"), ("conv2d", "conv2d_clamp"),
                                 ("conv2d_clamp",))):
            want = {f"sat_conv{i}_{j}-{fn}" for fn in fns}
            if i < 2:
                want |= {f"sat_conv{i}_{j}-{fn.replace('conv2d', 'conv2d_1x1')}" for fn in fns}
            assert want <= names, want - names
    assert {f"sat_fc{i}-fully_connected" for i in range(3)} <= names


def test_constant_channel_layers_take_the_sparse_kernel():
    """Every 1x1 layer of dsp_cases.CONSTANT_LAYERS with a constant channel (all constant, a single
    live one, odd live counts, constants at both ends and adjacent) gets the sparse entry points in
    every mode of its relu-range variant, next to the dense ones; the layer without one gets no
    sparse case (it keeps the dense kernel and its C). Outputs: test_dsp_bit_exact."""
    names = {c.name for c in CASES if c.name.startswith("const_")}
    for i, layer in enumerate(dsp_cases.CONSTANT_LAYERS):
        sparse = {f"const_conv{i}_0-conv2d_1x1_sparse{t}" for t in ("_relu", "", "_clamp")}
        assert {f"const_conv{i}_0-conv2d_1x1{t}" for t in ("_relu", "", "_clamp")} <= names
        assert (sparse <= names) if layer[-1] else not any("sparse" in n for n in names if n.startswith(f"const_conv{i}_"))
