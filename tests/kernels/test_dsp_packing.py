"""The offline half of the dsp kernels, without a compiler: weight re-packing, zero-point folding,
the requantization rewrite (emulated in numpy, every mode, against TFLite's double rounding), the
predicates (BL-04 -128 weights, positive shifts, accumulator bounds) and per-node selection."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dsp_harness
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier
from toolchain.ops.packing import MODES, fold_bias, fold_layer, pack_gemm_blob
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


@pytest.mark.parametrize("mode", MODES)
def test_requantization_rewrite_is_exact(mode):
    rng = np.random.default_rng(1)
    for trial in range(300):
        e = int(rng.integers(1 if mode == "relu" else 0, 31))
        mult = int(rng.integers(1 << 30, 1 << 31)) if trial % 17 else 0
        off = -128 if mode == "relu" else int(rng.integers(-128, 128))
        lo, hi = ((-128, 127) if mode != "clamp" else (int(rng.integers(-128, 0)), int(rng.integers(0, 128))))
        acc = np.concatenate([rng.integers(-(1 << 26), 1 << 26, 400), np.arange(-2000, 2000)]).astype(np.int64)
        f = fold_layer(np.ones((1, 1), np.int8), np.zeros(1, np.int64), 0, [mult], [-e], off, (lo, hi))
        assert mode in f.modes
        want = np.clip(multiply_by_quantized_multiplier(acc, mult, -e) + off, lo, hi)
        got = _emulate(acc, mult, int(f.shift(mode)[0]), f.k, mode, lo, hi)
        assert np.array_equal(got, want), (trial, e, mult, off)


def test_fold_layer_predicates():
    w = np.full((2, 3), 5, np.int8)
    m, s = quantize_multiplier(0.01)
    ok = fold_layer(w, None, 128, [m], [s], -128, (-128, 127))
    assert ok is not None and ok.modes == ("relu", "full", "clamp")
    assert fold_layer(w, None, 128, [m], [s], 3, (-128, 127)).modes == ("full", "clamp")
    assert fold_layer(w, None, 128, [m], [s], -128, (-128, 100)).modes == ("clamp",)
    assert fold_layer(w, None, 128, [quantize_multiplier(0.75)[0]], [0], -128, (-128, 127)).modes == ("full", "clamp")
    bad = w.copy()
    bad[1, 2] = -128  # BL-04
    assert fold_layer(bad, None, 128, [m], [s], -128, (-128, 127)) is None
    assert fold_layer(w, None, 128, *quantize_multiplier(1.5), -128, (-128, 127)) is None  # multiplier >= 1
    assert fold_layer(w, np.array([2**30, 0]), 0, [m], [s], 0, (-128, 127)) is None  # 2 acc overflows
    dead = fold_layer(w, np.array([2**31 - 1, 0]), 0, [0, m], [0, s], 0, (-128, 127))  # multiplier 0: ignored
    assert dead is not None and dead.bias[0] == 0


def test_every_dsp_variant_is_wired():
    protos = dsp_harness.prototypes()
    for op in REGISTRY.values():
        dsp = [v for v in op.variants if v.isa == "dsp"]
        isas = [v.isa for v in op.variants]
        assert isas == sorted(isas, key=lambda i: i != "dsp"), f"{op.kind}: dsp variants must precede portable"
        for v in dsp:
            assert (dsp_harness.KERNELS / v.template).is_file(), v.template
            assert v.function in protos, v.function
            assert all((dsp_harness.KERNELS / h).is_file() for h in v.headers)
    names = [v.function for op in REGISTRY.values() for v in op.variants if v.isa == "dsp"]
    assert len(names) == len(set(names)) and set(protos) == set(names)


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
    # an imported weight of -128 (BL-04) sends that node back to the portable kernel
    conv = next(n for n in g.nodes if n.op is OpKind.CONV2D)
    t = g.t(conv.inputs[1])
    w = t.data.copy()
    w.flat[0] = -128
    g2 = g.with_tensor(Tensor(t.name, t.shape, t.dtype, t.quant, w))
    assert select_kernels(g2, ["dsp", "portable"])[conv.name].isa == "portable"


def test_scratch_is_declared():
    from toolchain.lower import scratch_sizes, select_kernels

    g = _digits_graph()
    sizes = scratch_sizes(g, select_kernels(g, ["dsp", "portable"]))
    for n in g.nodes:
        if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D, OpKind.FULLY_CONNECTED):
            assert sizes[n.name] > 0

