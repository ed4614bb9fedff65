"""The offline half of the sparse 1x1 kernels of helium and neon (output channels proven constant
neither stored nor computed), without a compiler: the shared live/constant split and skipped-bytes
accounting of packing.py, the helium blob (constant row, live quads with their output channels),
the neon map (constant row, TBL indices, block starts) replayed in numpy, and the plans: the
sparse entry points apply only with a constant channel, count the parameters they leave out, and
leave the dense plans as they were."""
from __future__ import annotations

import numpy as np
import pytest

import dsp_cases
from toolchain.isa import helium as hv
from toolchain.isa import neon as nv
from toolchain.ops.conv2d import conv2d_s8
from toolchain.isa.packing import LIVE, fold_layer, layer_constants, split_constants


def _layer(seed: int, o: int, kdim: int, const: tuple[int, ...]):
    rng = np.random.default_rng(seed)
    w, bias, mult, shift = dsp_cases.constant_weights_bias(rng, o, kdim, const)
    k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(3, 3), input_offset=128, output_offset=-128,
             out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
    return w, bias, k


def test_split_constants_and_skipped_bytes():
    """ConstantSplit: the live channels in order, the row with each constant's value (0 at live
    channels), padding with zeros, the dead rows' int8 weights and int32 biases; None without a
    constant channel (or without a proof)."""
    const = np.array([LIVE, 5, LIVE, -128, 127, LIVE, 0], np.int64)
    s = split_constants(const)
    np.testing.assert_array_equal(s.live, [0, 2, 5])
    np.testing.assert_array_equal(s.row, np.array([0, 5, 0, -128, 127, 0, 0], np.int8))
    np.testing.assert_array_equal(s.row_padded(16), np.r_[s.row, np.zeros(9, np.int8)])
    assert s.row_padded(7).size == 7
    assert s.skipped(20, True) == (4 * 20, 4 * 4) and s.skipped(20, False) == (80, 0)
    assert split_constants(np.full(5, LIVE)) is None and split_constants(None) is None
    every = split_constants(np.arange(4))
    assert every.live.size == 0 and every.skipped(8, True) == (32, 16)


def test_layer_constants_is_fold_layers_proof():
    """layer_constants (the raw layer: bias not folded, per-tensor or per-channel requantization) gives
    the same proof as fold_layer(constants=True), and its constants are the outputs of conv2d_s8 for
    the extreme inputs and a random one."""
    const = (0, 1, 4, 5, 6, 10)
    w, bias, k = _layer(3, 11, 20, const)
    got = layer_constants(w, bias, 128, k["out_mult"], k["out_shift"], -128, (-128, 127))
    f = fold_layer(w, bias, 128, k["out_mult"], k["out_shift"], -128, (-128, 127), constants=True)
    np.testing.assert_array_equal(got, f.const)
    assert [c for c in range(11) if got[c] != LIVE] == list(const)
    rng = np.random.default_rng(0)
    x = np.stack([np.full((3, 3, 20), -128), np.full((3, 3, 20), 127),
                  rng.integers(-128, 128, (3, 3, 20))]).astype(np.int8)
    y = conv2d_s8(x, w.reshape(11, 1, 1, 20), bias, **k)
    for c in const:
        assert np.all(y[..., c] == got[c]), c
    per_tensor = layer_constants(w, bias, 128, [1 << 30], [-20], -128, (-128, 127))
    assert per_tensor.shape == (11,)


def test_helium_sparse_blob_layout():
    """Constant row padded to 16, then per live quad the dense record (chunks, bias', mult, shift) of
    its rows and their output channels (uint32); a last quad of 2 repeats its last channel."""
    const = (0, 1, 4, 5, 6, 10)  # live 2, 3, 7, 8, 9: one quad and a quad of 1 padded by repeating 9
    w, bias, k = _layer(4, 11, 20, const)
    f = hv.fold(w, bias, 128, k["out_mult"], k["out_shift"], -128, (-128, 127))
    s = split_constants(layer_constants(w, bias, 128, k["out_mult"], k["out_shift"], -128, (-128, 127)))
    blob = hv.pack_sparse_gemm(w, f, s)
    rec = 64 * hv.n_chunks(20) + 48
    assert blob.size == 16 + 2 * (rec + 16)  # vs 3 * rec dense (11 channels)
    np.testing.assert_array_equal(blob[:11], s.row)
    assert not blob[11:16].any()
    for q, rows in enumerate(([2, 3, 7, 8], [9, 9, 9, 9])):
        r = blob[16 + q * (rec + 16):16 + (q + 1) * (rec + 16)]
        sub = hv.fold(w[rows], bias[rows], 128, k["out_mult"][rows], k["out_shift"][rows], -128, (-128, 127))
        np.testing.assert_array_equal(r[:rec], hv.pack_gemm(w[rows], sub))
        np.testing.assert_array_equal(r[rec:].view("<u4"), rows)
    only_const = split_constants(np.arange(5))
    np.testing.assert_array_equal(hv.pack_sparse_gemm(w[:5], f, only_const), np.r_[np.arange(5), np.zeros(11)])


def _merge(blob: np.ndarray, staging: np.ndarray, out_c: int) -> np.ndarray:
    """ecc_neon_sparse_merge (ecc_neon_requant.h) in numpy: per block TBL(staging[start:start + 16], perm) | row."""
    nb = -(-out_c // 16)
    starts = blob[32 * nb:32 * nb + 4 * nb].view("<i4")
    st = np.r_[staging, np.zeros(16, np.int8)]  # the kernel's 16 bytes of load slack
    out = []
    for b in range(nb):
        row, perm = blob[32 * b:32 * b + 16], blob[32 * b + 16:32 * b + 32].view(np.uint8)
        window = st[starts[b]:starts[b] + 16]
        out.append(np.where(perm < 16, window[np.minimum(perm, 15)], 0).astype(np.int8) | row)
    return np.concatenate(out)[:out_c]


@pytest.mark.parametrize("out_c,const", [(37, tuple(range(20)) + (30, 31, 36)), (16, tuple(range(1, 15))),
                                         (5, (0, 1, 2, 3, 4)), (64, tuple(range(0, 64, 3)))])
def test_neon_sparse_map_rebuilds_the_output(out_c, const):
    """The map's size (ecc_neon_sparse_map_bytes), and merging the live outputs (in channel order) with
    it rebuilds every channel: the live values in place, the constants from the row."""
    rng = np.random.default_rng(out_c)
    c = np.full(out_c, LIVE)
    c[list(const)] = rng.integers(-128, 128, len(const))
    s = split_constants(c)
    blob = nv.pack_sparse_map(s)
    nb = -(-out_c // 16)
    assert blob.size == 32 * nb + ((4 * nb + 15) & ~15)
    live_vals = rng.integers(-128, 128, s.live.size).astype(np.int8)
    want = s.row.copy()
    want[s.live] = live_vals
    np.testing.assert_array_equal(_merge(blob, live_vals, out_c), want)


def test_sparse_plans_apply_only_with_a_constant_channel():
    """helium conv_plan / neon conv2d_plan with sparse=True: None for a layer without a constant
    channel (the dense plan, unchanged, takes it) and for a non-1x1 layer; otherwise the live count
    before the blob, whose CArg.skipped is the dead rows' weights and biases, and a smaller blob."""
    w, bias, k = _layer(5, 9, 16, (0, 1, 8))
    w4 = w.reshape(9, 1, 1, 16)
    xs, ys = (1, 3, 3, 16), (1, 3, 3, 9)
    plans = {"helium": lambda sp, ww=w4, b=bias: hv.conv_plan(k, xs, ww, b, ys, mode="full", pointwise=True,
                                                               sparse=sp),
             "dot": lambda sp, ww=w4, b=bias: nv.conv2d_plan(k, xs, ww, b, ys, kind="dot", pointwise=True, sparse=sp),
             "pair": lambda sp, ww=w4, b=bias: nv.conv2d_plan(k, xs, ww, b, ys, kind="pair", pointwise=True,
                                                              sparse=sp)}
    for name, plan in plans.items():
        args, scratch = plan(True)
        blob = next(a for a in args if a.kind == "array")
        dense = next(a for a in plan(False)[0] if a.kind == "array")
        assert blob.skipped == (3 * 16, 3 * 4) and dense.skipped == (0, 0), name
        assert args[args.index(blob) - 1].value == 6 and blob.value.size < dense.value.size, name
        assert scratch == (4 * 6 + 16 if name != "helium" else 0), name
    live_w, live_b, lk = _layer(5, 9, 16, ())
    k.update(out_mult=lk["out_mult"], out_shift=lk["out_shift"])
    for name, plan in plans.items():
        assert plan(True, live_w.reshape(9, 1, 1, 16), live_b) is None, name
        assert plan(False, live_w.reshape(9, 1, 1, 16), live_b) is not None, name
    k3 = dict(k, pad=(1, 1))
    assert hv.conv_plan(k3, (1, 3, 3, 16), np.zeros((9, 3, 3, 16), np.int8), None, ys, mode="full",
                        pointwise=False, sparse=True) is None


def test_sparse_variants_come_first():
    """Selection tries the sparse entry points before the dense 1x1 ones of the same path (they apply
    only to layers with a constant channel, which they run faster) and every SDOT kernel before the
    Armv8.0 ones (where the sparse SDOT kernel does not pay, a dotprod board keeps the dense SDOT one);
    they need the same features."""
    names = [v.name for v in hv.CONV2D]
    assert names.index("helium_1x1_sparse") < names.index("helium_1x1")
    assert names.index("helium_1x1_sparse_relu") < names.index("helium_1x1_relu")
    assert names.index("helium_1x1_sparse_onnx") < names.index("helium_1x1_onnx")
    names = [v.name for v in nv.CONV2D]
    order = ["neon_1x1_sparse_dot", "neon_1x1_dot", "neon_dot", "neon_1x1_sparse", "neon_1x1_sparse_nopair",
             "neon_1x1", "neon_1x1_nopair"]
    assert [names.index(n) for n in order] == sorted(names.index(n) for n in order), names
    sparse = {v.function: v for v in nv.CONV2D if "sparse" in v.name and not v.name.endswith("_onnx")}
    assert set(sparse) == {"ecc_neon_conv2d_1x1_sparse_dot_s8", "ecc_neon_conv2d_1x1_sparse_s8",
                           "ecc_neon_conv2d_1x1_sparse_nopair_s8"}
    assert sparse["ecc_neon_conv2d_1x1_sparse_dot_s8"].requires == frozenset({"dotprod"})
    assert {v.function for v in hv.CONV2D if "sparse" in v.name} == {
        "ecc_helium_conv2d_1x1_sparse_s8", "ecc_helium_conv2d_1x1_sparse_relu_s8",
        "ecc_helium_conv2d_1x1_sparse_onnx_s8"}


def test_sparse_dot_only_where_it_pays():
    """The SDOT sparse kernel is chosen for a model node only when it skips at least
    SPARSE_DOT_MIN_SAVING weights per 16-channel block (VWW's 4 dead of 64 at K 64 ran slower);
    the kernel-level plan (conv2d_plan) applies whenever a channel is constant."""
    w, bias, k = _layer(6, 64, 64, (0, 1, 2, 3))
    args, _ = nv.conv2d_plan(k, (1, 3, 3, 64), w.reshape(64, 1, 1, 64), bias, (1, 3, 3, 64), kind="dot",
                             pointwise=True, sparse=True)
    assert next(a for a in args if a.kind == "array").skipped[0] == 4 * 64
    assert not nv.sparse_dot_pays(args, 64)
    w, bias, k = _layer(6, 64, 64, tuple(range(16)))
    args, _ = nv.conv2d_plan(k, (1, 3, 3, 64), w.reshape(64, 1, 1, 64), bias, (1, 3, 3, 64), kind="dot",
                             pointwise=True, sparse=True)
    assert nv.sparse_dot_pays(args, 64) and not nv.sparse_dot_pays(args, 80)  # 1024 = 256 * 4 blocks, not 5
