"""The offline half of the dsp kernels, without a compiler: weight re-packing, zero-point folding,
the requantization rewrite (emulated in numpy, every mode, against TFLite's double rounding), the
predicates (BL-04 -128 weights, positive shifts, accumulator bounds) and per-node selection."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dsp_harness
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier
from toolchain.isa.packing import (LIVE, MODES, fc_blocks, fold_bias, fold_layer, pack_fc_blob, pack_gemm_blob,
                                   pack_sparse_gemm_blob)
from toolchain.ops.registry import REGISTRY, OpKind

REPO = Path(__file__).resolve().parents[2]


def test_pack_gemm_blob_order():
    w = np.arange(5 * 6, dtype=np.int8).reshape(5, 6)  # 5 rows, K = 6 -> two 4-k groups (padded to 8)
    f = fold_layer(w, np.arange(5) * 1000, 0, np.arange(5) + (1 << 30), -np.arange(5) - 3, -7, (-128, 127))
    blob = pack_gemm_blob(w, f, "full")
    wp = np.zeros((5, 8), np.int8)
    wp[:, :6] = w

    def words(*v):
        return list(np.array(v, "<i4").view(np.int8))

    k16 = (2 * -7 + 1) & 0xFFFF
    want = []
    for r in (0, 2):
        want += words(f.bias[r], f.bias[r + 1])
        for g in range(2):
            want += [*wp[r, 4 * g:4 * g + 4], *wp[r + 1, 4 * g:4 * g + 4]]
        want += words(f.mult[r], f.mult[r + 1], (k16 << 16) - (1 << 32) * (k16 >= 1 << 15) | (r + 3) | (r + 4) << 8)
    want += words(f.bias[4]) + list(wp[4]) + words(f.mult[4], (k16 << 16) - (1 << 32) * (k16 >= 1 << 15) | 7)
    np.testing.assert_array_equal(blob, np.array(want, np.int8))


def test_fold_bias_is_the_zero_point_identity():
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (4, 9), dtype=np.int8)
    x = rng.integers(-128, 128, 9, dtype=np.int8)
    bias = rng.integers(-999, 999, 4)
    off = 77
    want = (x.astype(np.int64) + off) @ w.T.astype(np.int64) + bias
    np.testing.assert_array_equal(fold_bias(w, bias, off) + x.astype(np.int64) @ w.T.astype(np.int64), want)


def _emulate(acc, mult, shift, k, mode, lo, hi):
    """ecc_dsp_out of ecc_dsp.h in numpy (acc2 = 2 acc; SMMULR; the two shift forms; SSAT asr #1)."""
    h = (2 * acc * mult + (1 << 31)) >> 32
    y = (h >> shift) + k if mode == "relu" else ((2 * h + (h >> 63)) >> shift) + k
    y = np.clip(y >> 1, -128, 127)
    return np.clip(y, lo, hi) if mode == "clamp" else y


def _emulate_relu3(acc, mult, shift, k):
    """ECC_DSP_OUT3_RELU of ecc_dsp_gemm3.h in numpy: SMMLAR adds k << shift to the rounded high word in
    32 bits (asserted not to wrap), ASR shift, SSAT asr #1."""
    t = (((k << shift) << 32) + 2 * acc * mult + (1 << 31)) >> 32
    assert np.all((t >= -2**31) & (t < 2**31))
    return np.clip((t >> shift) >> 1, -128, 127)


def _emulate_full3(acc, mult, shift, k):
    """ECC_DSP_OUT3_FULL of ecc_dsp_gemm3.h in numpy (shift = e >= 1): SMMLAR adds (k << e) >> 1 plus the sign
    of acc to the rounded high word in 32 bits (asserted not to wrap), ASR e, SSAT."""
    kk = ((k << shift) >> 1) + (acc >> 63)
    t = ((kk << 32) + 2 * acc * mult + (1 << 31)) >> 32
    assert np.all((t >= -2**31) & (t < 2**31))
    return np.clip(t >> shift, -128, 127)


@pytest.mark.parametrize("mode", MODES)
def test_requantization_rewrite_is_exact(mode):
    rng = np.random.default_rng(1)
    for trial in range(300):
        e = int(rng.integers(1 if mode == "relu" else 0, 24 if mode == "relu" else 31))
        mult = int(rng.integers(1 << 30, 1 << 31)) if trial % 17 else 0
        off = -128 if mode == "relu" else int(rng.integers(-128, 128))
        lo, hi = ((-128, 127) if mode != "clamp" else (int(rng.integers(-128, 0)), int(rng.integers(0, 128))))
        acc = np.concatenate([rng.integers(-(1 << 26), 1 << 26, 400), np.arange(-2000, 2000)]).astype(np.int64)
        if mode == "relu":  # the accumulator bound of fold_layer: 2 |acc| + 512 < 2^31
            acc = np.concatenate([acc, [2**30 - 257, -(2**30 - 257)], rng.integers(-(2**30 - 257), 2**30 - 256, 200)])
        f = fold_layer(np.ones((1, 1), np.int8), np.zeros(1, np.int64), 0, [mult], [-e], off, (lo, hi))
        assert mode in f.modes
        want = np.clip(multiply_by_quantized_multiplier(acc, mult, -e) + off, lo, hi)
        got = _emulate(acc, mult, int(f.shift(mode)[0]), f.k, mode, lo, hi)
        assert np.array_equal(got, want), (trial, e, mult, off)
        if mode == "relu":
            assert np.array_equal(_emulate_relu3(acc, mult, int(f.shift(mode)[0]), f.k), want), (trial, e, mult)
        if mode == "full" and 1 <= e <= 23:  # the 2x3 GEMM's full entry points (dsp.conv2d_plan_why)
            big = np.concatenate([acc, [2**30 - 257, -(2**30 - 257)], rng.integers(-(2**30 - 257), 2**30 - 256, 200)])
            want = np.clip(multiply_by_quantized_multiplier(big, mult, -e) + off, lo, hi)
            assert np.array_equal(_emulate_full3(big, mult, e, f.k), want), (trial, e, mult, off)


def test_fold_layer_predicates():
    w = np.full((2, 3), 5, np.int8)
    m, s = quantize_multiplier(0.01)
    ok = fold_layer(w, None, 128, [m], [s], -128, (-128, 127))
    assert ok is not None and ok.modes == ("relu", "full", "clamp")
    assert fold_layer(w, None, 128, [m], [s], 3, (-128, 127)).modes == ("full", "clamp")
    assert fold_layer(w, None, 128, [m], [s], -128, (-128, 100)).modes == ("clamp",)
    assert fold_layer(w, None, 128, [quantize_multiplier(0.75)[0]], [0], -128, (-128, 127)).modes == ("full", "clamp")
    bad = w.copy()
    bad[1, 2] = -128  # BL-04: exact in the kernels using fold_layer (each product in its own lane)
    assert fold_layer(bad, None, 128, [m], [s], -128, (-128, 127)).modes == ("relu", "full", "clamp")
    assert fold_layer(w, None, 128, *quantize_multiplier(1.5), -128, (-128, 127)) is None  # multiplier >= 1
    assert fold_layer(w, np.array([2**30, 0]), 0, [m], [s], 0, (-128, 127)) is None  # 2 acc overflows
    dead = fold_layer(w, np.array([2**31 - 1, 0]), 0, [0, m], [0, s], 0, (-128, 127))  # multiplier 0: ignored
    assert dead is not None and dead.bias[0] == 0


def test_every_dsp_variant_is_wired():
    import toolchain.isa  # noqa: F401 - attaches the dsp variants (lowering picks by ISA, not list order)

    protos = dsp_harness.prototypes()
    for op in REGISTRY.values():
        dsp = [v for v in op.variants if v.isa == "dsp"]
        for v in dsp:
            assert (dsp_harness.KERNELS / v.template).is_file(), v.template
            assert v.function in protos, v.function
            assert all((dsp_harness.KERNELS / h).is_file() for h in v.headers)
    # an entry point is wired once per op (fully_connected also falls back on the conv2d GEMM ones)
    per_op = [[v.function for v in op.variants if v.isa == "dsp"] for op in REGISTRY.values()]
    assert all(len(names) == len(set(names)) for names in per_op)
    assert set(protos) == {f for names in per_op for f in names}


def _digits_graph():
    from toolchain.config import load_config
    from toolchain.data import load_data
    from toolchain.frontend.onnx import load_onnx
    from toolchain.passes import run_passes
    from quantize import quantize

    cfg = load_config(REPO / "examples" / "digits" / "pipeline.yaml", {})
    g = run_passes(load_onnx(cfg.model, cfg.input_shapes))
    return quantize(g, load_data(cfg.calibration, g, cfg.preprocess), cfg.calibration_method)


def test_selection_per_node():
    from toolchain.ir import Tensor
    from toolchain.lower import select_kernels

    g = _digits_graph()
    dsp = select_kernels(g, ["dsp", "portable"])
    assert all(v.isa == "portable" for v in select_kernels(g, ["portable"]).values())
    for n in g.nodes:
        if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED, OpKind.MAX_POOL2D):
            assert dsp[n.name].isa == "dsp", (n.name, dsp[n.name].name)
    # an imported weight of -128 (BL-04) keeps the conv on its dsp kernel (products in 32 bits); the
    # fully connected layer's 16-bit lane pairs step aside, saying why, for the conv2d GEMM
    conv = next(n for n in g.nodes if n.op is OpKind.CONV2D)
    fc = next(n for n in g.nodes if n.op is OpKind.FULLY_CONNECTED)
    g2 = g
    for node in (conv, fc):
        t = g2.t(node.inputs[1])
        w = t.data.copy()
        w.flat[0] = -128
        g2 = g2.with_tensor(Tensor(t.name, t.shape, t.dtype, t.quant, w))
    sel = select_kernels(g2, ["dsp", "portable"])
    assert sel[conv.name].isa == "dsp" and sel[fc.name].isa == "dsp"
    assert sel[fc.name].function.startswith("ecc_dsp_conv2d_"), sel[fc.name].function  # the GEMM fallback
    fc_dsp = next(v for v in REGISTRY[OpKind.FULLY_CONNECTED].variants if v.isa == "dsp" and v.name == "dsp")
    assert fc_dsp.why_not(fc, g2) == "weights hold -128"


def test_scratch_is_declared():
    from toolchain.lower import scratch_sizes, select_kernels

    g = _digits_graph()
    sizes = scratch_sizes(g, select_kernels(g, ["dsp", "portable"]))
    for n in g.nodes:
        if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED):
            assert sizes[n.name] > 0



def _sat_layer(rng, o=12, kdim=40):
    """A layer with saturated-bias channels (every third) next to ordinary ones (dsp_cases)."""
    import dsp_cases

    return dsp_cases.saturated_weights_bias(rng, o, kdim)


@pytest.mark.parametrize("mode", MODES)
def test_constant_channels_are_exact(mode):
    """Channels whose accumulator cannot be doubled but whose output is one value for every input are
    rewritten (zero weights, bias 4 (c - off), multiplier 2^30, shift -1): the emulated kernel equals
    TFLite's requantization of the original layer on random inputs and at both ends of the int8 range;
    without `constants` the layer is refused, and a channel that is not constant is refused."""
    rng = np.random.default_rng(11)
    w, bias, mult, shift = _sat_layer(rng)
    off, (lo, hi) = (-128, (-128, 127)) if mode != "clamp" else (5, (-20, 90))
    x = np.concatenate([rng.integers(-128, 128, (300, w.shape[1])), np.full((1, w.shape[1]), -128),
                        np.full((1, w.shape[1]), 127), np.where(w[:1] > 0, 127, -128), np.where(w[:1] > 0, -128, 127)])
    assert fold_layer(w, bias, 128, mult, shift, off, (lo, hi)) is None
    f = fold_layer(w, bias, 128, mult, shift, off, (lo, hi), constants=True)
    assert f is not None and mode in f.modes
    sat = np.arange(0, w.shape[0], 3)
    assert np.all(f.w[sat] == 0) and np.array_equal(f.w[1::3], w[1::3]) and np.all(f.mult[sat] == 1 << 30)
    acc = (x + 128) @ w.T.astype(np.int64) + bias
    want = np.clip(multiply_by_quantized_multiplier(acc, mult, shift) + off, lo, hi)
    assert np.all(want[:, sat] == want[0, sat])  # the saturated channels are constant indeed
    got = _emulate(f.bias + x @ f.w.T.astype(np.int64), f.mult.astype(np.int64), f.shift(mode).astype(np.int64),
                   f.k, mode, lo, hi)
    np.testing.assert_array_equal(got, want)
    # channel 0 at a rounding boundary: acc / 2^24 = 64.5 +- 0.02 (2 acc overflows), the output
    # moves with the input (-64 or -63): not constant, refused; at 64.75 +- 0.02 it is constant again
    b2, m2, shift2 = bias.copy(), mult.copy(), shift.copy()
    b2[0], m2[0], shift2[0] = 2**30 + 2**23 - 128 * int(w[0].astype(np.int64).sum()), 1 << 30, -23
    assert fold_layer(w, b2, 128, m2, shift2, -128, (-128, 127), constants=True) is None
    b2[0] += 2**22
    f2 = fold_layer(w, b2, 128, m2, shift2, -128, (-128, 127), constants=True)
    assert f2 is not None and not f2.w[0].any() and f2.bias[0] == 4 * (-63 + 128)


def _fc_emulate(blob: np.ndarray, x: np.ndarray, o: int, kdim: int, mode: str, k: int, lo: int, hi: int):
    """dsp/fully_connected in numpy, 32-bit wrap-around and all: input lanes L = 256 xe - xo + 127
    and Xo per 4-k group, per row SMLAD(SXTB16(W), L) + SMLAD(W as int16 lanes, Xo), then
    ecc_dsp_out of (256 acc) >> 7."""
    nb = fc_blocks(kdim)
    xp = np.zeros(8 * nb, np.int64)
    xp[:kdim] = x
    g = xp.reshape(-1, 4)
    lanes_l = np.stack([256 * g[:, 0] - g[:, 1] + 127, 256 * g[:, 2] - g[:, 3] + 127], 1)
    lanes_o = g[:, [1, 3]]
    assert lanes_l.min() >= -(1 << 15) and lanes_l.max() < 1 << 15
    rec, out = 36 + 32 * nb, []
    for q in range(-(-o // 4)):
        r = blob[q * rec:(q + 1) * rec]
        acc = r[:16].view("<i4").astype(np.int64)
        wq = r[16:16 + 32 * nb].reshape(nb, 4, 8).transpose(1, 0, 2).reshape(4, -1, 4).astype(np.int64)
        raw = wq[:, :, [0, 2]] % 256 + 256 * wq[:, :, [1, 3]]  # W read as two int16 lanes
        acc = acc + (wq[:, :, [0, 2]] * lanes_l).sum((1, 2)) + (raw * lanes_o).sum((1, 2))
        acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)
        mult = r[16 + 32 * nb:32 + 32 * nb].view("<i4").astype(np.int64)
        sh = r[32 + 32 * nb:].astype(np.int64)
        out += list(_emulate(acc >> 8, mult, sh, k, mode, lo, hi))
    return np.array(out[:o])


@pytest.mark.parametrize("o,kdim", [(1, 1), (3, 5), (4, 8), (6, 13), (9, 64), (8, 640)])
def test_fc_blob_is_exact(o, kdim):
    """The quad blob of dsp/fully_connected with its adjusted odd weights and 256-scaled bias,
    emulated, equals fully_connected_s8 (every mode, zero points -128 and 127, saturated-bias
    channels included); a layer whose accumulator bound reaches 2^23 gets no blob."""
    from toolchain.ops.fully_connected import fully_connected_s8

    rng = np.random.default_rng(o * 100 + kdim)
    w, bias, mult, shift = _sat_layer(rng, o, kdim)
    for zin, off, (lo, hi) in ((-128, -128, (-128, 127)), (127, 127, (-128, 127)), (-128, 3, (-50, 60))):
        x = np.concatenate([rng.integers(-128, 128, (20, kdim)), np.full((1, kdim), -128), np.full((1, kdim), 127)])
        want = fully_connected_s8(x.astype(np.int8), w, bias, input_offset=-zin, output_offset=off, out_mult=mult,
                                  out_shift=shift, act_min=lo, act_max=hi)
        f = fold_layer(w, bias, -zin, mult, shift, off, (lo, hi), constants=True)
        for mode in f.modes:
            blob = pack_fc_blob(f, mode)
            got = np.array([_fc_emulate(blob, row, o, kdim, mode, f.k, lo, hi) for row in x])
            np.testing.assert_array_equal(got, want)
    big = np.full((2, 600), 127, np.int8)  # 128 * 600 * 127 > 2^23
    assert pack_fc_blob(fold_layer(big, None, 0, [1 << 30], [-20], 0, (-128, 127)), "full") is None
    assert pack_fc_blob(fold_layer(big[:, :500], None, 0, [1 << 30], [-20], 0, (-128, 127)), "full") is not None


def test_sparse_blob_drops_the_constant_rows():
    """pack_sparse_gemm_blob: the constant row (each constant channel's value, 0 at live channels,
    padded to 4), then the dense blob of the live rows only, each record ending in its output
    channels (c0 | c1 << 16): the dead rows' weights are gone, the blob is exactly that long; a
    layer without a constant channel gets no sparse blob (it keeps the dense one)."""
    import dsp_cases

    rng = np.random.default_rng(3)
    const = (0, 1, 4, 5, 6, 10)  # both ends, adjacent; 5 live rows (odd), K = 20 -> 6 groups (padded to 24)
    w, bias, mult, shift = dsp_cases.constant_weights_bias(rng, 11, 20, const)
    f = fold_layer(w, bias, 128, mult, shift, -128, (-128, 127), constants=True)
    assert f is not None and [c for c in range(11) if f.const[c] != LIVE] == list(const)
    live = [2, 3, 7, 8, 9]
    for mode in f.modes:
        blob = pack_sparse_gemm_blob(f, mode)
        g = 6
        assert blob.size == 12 + 2 * (8 + 8 * g + 12 + 4) + (4 + 4 * g + 8 + 4)  # vs 11 rows dense
        assert pack_gemm_blob(f.w, f, mode).size == 5 * (8 + 8 * g + 12) + (4 + 4 * g + 8)
        row = np.where(f.const == LIVE, 0, f.const)
        np.testing.assert_array_equal(blob[:11], row.astype(np.int8))
        assert not blob[11:12].any()
        sub = fold_layer(w[live], bias[live], 128, mult[live], shift[live], -128, (-128, 127))
        dense_live = pack_gemm_blob(w[live], sub, mode)
        recs, at = [], 0
        for n in (2, 2, 1):  # split the dense records of the live rows and add the channel word
            size = (8 + 8 * g + 12) if n == 2 else (4 + 4 * g + 8)
            recs.append(dense_live[at:at + size])
            at += size
        idx = [live[0] | live[1] << 16, live[2] | live[3] << 16, live[4]]
        want = np.concatenate([np.concatenate([r, np.array([i], "<i4").view(np.int8)]) for r, i in zip(recs, idx)])
        np.testing.assert_array_equal(blob[12:], want)
    plain = fold_layer(w[live], bias[live], 128, mult[live], shift[live], -128, (-128, 127), constants=True)
    assert plain is not None and pack_sparse_gemm_blob(plain, "full") is None
    assert sub.const is None and pack_sparse_gemm_blob(sub, "full") is None  # no proof asked, no skipping


def test_sparse_plan_counts_the_skipped_parameters():
    """dsp.conv2d_plan(sparse=True): the live count before the blob, and the blob's CArg.skipped names
    the int8 weights and int32 biases of the dead rows (the report's weights_skipped_bytes)."""
    import dsp_cases
    from toolchain.isa import dsp

    rng = np.random.default_rng(5)
    w, bias, mult, shift = dsp_cases.constant_weights_bias(rng, 9, 16, (0, 1, 8))
    k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(3, 3), input_offset=128, output_offset=-128,
             out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
    args, scratch = dsp.conv2d_plan(k, (1, 3, 3, 16), w.reshape(9, 1, 1, 16), bias, (1, 3, 3, 9), mode="full",
                                    pointwise=True, sparse=True)
    blob = next(a for a in args if a.kind == "array")
    assert blob.skipped == (3 * 16, 3 * 4) and args[args.index(blob) - 1].value == 6
    dense, _ = dsp.conv2d_plan(k, (1, 3, 3, 16), w.reshape(9, 1, 1, 16), bias, (1, 3, 3, 9), mode="full",
                               pointwise=True)
    assert next(a for a in dense if a.kind == "array").skipped == (0, 0)
    assert dsp.conv2d_plan(k, (1, 3, 3, 16), w.reshape(9, 1, 1, 16), bias, (1, 3, 3, 9), mode="full",
                           pointwise=False, sparse=True) is None  # the general kernel has no sparse form


def test_selection_follows_the_rounding():
    """rounding onnx (graph.meta): the conv / depthwise / FC nodes take the dsp `_onnx` entry points
    (kernel dsp*_onnx*) on a board with the FPU, the TFLM ones give no reason there (not candidates),
    and the reverse; without `fpu` the onnx nodes fall back to portable, the reason naming the FPU."""
    from dataclasses import replace

    from toolchain.isa.packing import F32_WHY
    from toolchain.lower import kernel_reasons, select_kernels

    g = _digits_graph()
    for rounding in ("tflm", "onnx"):
        gr = replace(g, meta={**g.meta, "rounding": rounding})
        bare = select_kernels(gr, ["dsp", "portable"], ("dsp",))
        why = kernel_reasons(gr, bare, ["dsp", "portable"], ("dsp",))
        for n in gr.nodes:
            if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED):
                assert (bare[n.name].isa == "portable") == (rounding == "onnx"), n.name
                assert (F32_WHY in (why[n.name] or "")) == (rounding == "onnx"), why[n.name]
        sel = select_kernels(gr, ["dsp", "portable"], ("dsp", "fpu"))
        for n in gr.nodes:
            if n.op not in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED):
                continue
            assert sel[n.name].isa == "dsp" and ("_onnx" in sel[n.name].name) == (rounding == "onnx"), n.name
            for v in REGISTRY[n.op].variants:
                if v.isa == "dsp" and ("_onnx" in v.name) != (rounding == "onnx"):
                    assert v.why_not(n, gr) is None and not v.applies(n, gr)


def test_relu_and_full_modes_of_the_2x3_gemm_need_shift_1_to_23():
    """dsp/conv2d and conv2d_1x1 `relu` / `full` (ECC_DSP_OUT3_RELU / _FULL fold k << (e - 1) into SMMLAR):
    shifts e in [1, 23] only, other layers take the next entry point (full, clamp); the sparse kernel
    (2x2 GEMM) keeps them."""
    from toolchain.isa import dsp
    w = np.full((4, 1, 1, 8), 3, np.int8)
    for e, ok in ((0, False), (1, True), (23, True), (24, False)):
        for mode, off in (("relu", -128), ("full", 3)):
            k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(2, 2), input_offset=5, output_offset=off,
                     out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -e), act_min=-128, act_max=127)
            for pointwise in (True, False):
                plan = dsp.conv2d_plan_why(k, (1, 2, 2, 8), w, None, (1, 2, 2, 4), mode=mode, pointwise=pointwise)
                assert isinstance(plan, str) != ok, (e, mode, pointwise, plan)
                assert not isinstance(dsp.conv2d_plan_why(k, (1, 2, 2, 8), w, None, (1, 2, 2, 4), mode="clamp",
                                                          pointwise=pointwise), str)
            if e >= 1:  # no shift limit there, e = 24 included
                sparse = dsp.conv2d_plan_why(k, (1, 2, 2, 8), w, None, (1, 2, 2, 4), mode=mode, pointwise=True,
                                             sparse=True)
                assert not isinstance(sparse, str) or "shift" not in sparse, (e, mode, sparse)
