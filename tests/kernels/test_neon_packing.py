"""The offline half of the neon kernels, without a compiler: weight re-packing orders, the zero point
folded into the bias (wrapping like the accumulator), the requantization blob and the vectorised
requantization (ecc_neon_mbqm emulated in numpy lane by lane against TFLite's double rounding, over
every shift and the extreme accumulators), the predicates (BL-04 -128 weights, activation weights,
shift and multiplier ranges) and per-node selection by board features (dotprod)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toolchain.isa import neon as nv
from toolchain.ops.fixed_point import multiply_by_quantized_multiplier
from toolchain.ops.registry import REGISTRY, OpKind

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "c_templates" / "kernels"


def test_pack_dot_order():
    """SDOT order: tiles of 16, 8, then 4 channels; per 4-k group, per channel its 4 int8."""
    o, k = 30, 10  # tiles 16 + 8 + 4 + 4 (2 padded); K padded to 12
    w = np.arange(o * k).reshape(o, k).astype(np.int8)
    blob = nv.pack_dot(w)
    assert nv.dot_tiles(o) == [16, 8, 4, 4] and blob.size == 32 * 12
    wp = np.zeros((32, 12), np.int8)
    wp[:o, :k] = w
    want, oc = [], 0
    for t in (16, 8, 4, 4):
        for g in range(3):
            for c in range(oc, oc + t):
                want += list(wp[c, 4 * g:4 * g + 4])
        oc += t
    np.testing.assert_array_equal(blob, np.array(want, np.int8))


def test_pack_mla_order():
    """Armv8.0 order: tiles of 4 channels; per 16-k chunk the four rows' 16 int8, a last 8-k chunk 8 each."""
    o, k = 5, 21  # K padded to 24 = 16 + 8; channels padded to 8
    w = np.arange(o * k).reshape(o, k).astype(np.int8)
    blob = nv.pack_mla(w)
    wp = np.zeros((8, 24), np.int8)
    wp[:o, :k] = w
    want = []
    for t in range(2):
        rows = wp[4 * t:4 * t + 4]
        want += [*rows[:, :16].reshape(-1), *rows[:, 16:].reshape(-1)]
    np.testing.assert_array_equal(blob, np.array(want, np.int8))


def test_pack_depthwise_order():
    w = np.arange(3 * 3 * 40).reshape(1, 3, 3, 40).astype(np.int8)
    blob = nv.pack_depthwise(w)
    taps = w.reshape(9, 40)
    want = np.concatenate([taps[:, :16].reshape(-1), taps[:, 16:32].reshape(-1), taps[:, 32:].reshape(-1)])
    np.testing.assert_array_equal(blob, want)


def test_qblob_layout_and_folded_bias():
    w = np.array([[1, 2], [3, -4], [127, 127], [-127, 5], [0, 1]], np.int8)
    bias = np.array([10, -10, 2**31 - 1, 0, 7])
    b = nv.fold_bias(w, bias, 1000)
    want = bias + 1000 * w.astype(np.int64).sum(1)
    np.testing.assert_array_equal(b, ((want + 2**31) % 2**32 - 2**31).astype(np.int32))  # wraps like int32
    q = nv.qblob(b, np.arange(5) + (1 << 30), [-3, 0, 2, -31, -1], 5).reshape(2, 4, 4)
    np.testing.assert_array_equal(q[0, 0], b[:4])
    np.testing.assert_array_equal(q[1, 0], [b[4], 0, 0, 0])
    np.testing.assert_array_equal(q[0, 2], [0, 0, 2, 0])
    np.testing.assert_array_equal(q[0, 3], [-3, 0, 0, -31])
    np.testing.assert_array_equal(q[1, 1], [(1 << 30) + 4, 0, 0, 0])


def _mbqm_emulated(x: np.ndarray, mult: int, shift: int) -> np.ndarray:
    """ecc_neon_mbqm lane by lane: SQSHL, SQRDMULH, SSRA of (h & rsh) >> 31, SRSHL (int64 math)."""
    lsh, rsh = max(shift, 0), min(shift, 0)
    x = np.clip(x.astype(np.int64) << lsh, -(2**31), 2**31 - 1)  # SQSHL saturates
    h = np.clip((2 * x * mult + (1 << 31)) >> 32, -(2**31), 2**31 - 1)  # SQRDMULH
    h = h + (((h & rsh) >> 31) if rsh else 0)  # SSRA (h & rsh) >> 31: -1 iff h < 0 and rsh != 0
    assert h.min() >= -(2**31)  # the fix-up never wraps (mult >= 0)
    return (h + (1 << (-rsh - 1)) >> -rsh) if rsh else h  # SRSHL: round half up


@pytest.mark.parametrize("shift", [-31, -30, -17, -9, -1, 0, 1, 5, 30])
def test_vector_requantization_is_exact(shift):
    rng = np.random.default_rng(shift + 100)
    x = np.concatenate([rng.integers(-(2**31), 2**31, 20000), [-(2**31), 2**31 - 1, -1, 0, 1],
                        rng.integers(-4096, 4096, 5000) << max(-shift - 12, 0),  # ties at every scale
                        (rng.integers(-2000, 2000, 4000) << max(-shift, 0)) + (1 << max(-shift - 1, 0))])
    x = np.clip(x, -(2**31), 2**31 - 1)
    for mult in (0, 1 << 30, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31)), 1):
        want = multiply_by_quantized_multiplier(x, mult, shift)
        np.testing.assert_array_equal(_mbqm_emulated(x, mult, shift), want, err_msg=f"mult {mult}")


def test_predicates():
    k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(4, 4), input_offset=3, output_offset=0,
             out_mult=np.full(8, 1 << 30), out_shift=np.full(8, -5), act_min=-128, act_max=127)
    w = np.ones((8, 1, 1, 16), np.int8)
    xs, ys = (1, 4, 4, 16), (1, 4, 4, 8)
    for kind in ("dot", "pair", "nopair"):
        assert nv.conv2d_plan(k, xs, w, None, ys, kind=kind, pointwise=True) is not None
        assert nv.conv2d_plan(k, xs, None, None, ys, kind=kind, pointwise=True) is None  # activation weights
    w[3, 0, 0, 2] = -128  # one -128: (-128)(-128) + (-128) w' fits int16, the pairing kernel stays exact
    assert nv.conv2d_plan(k, xs, w, None, ys, kind="pair", pointwise=True) is not None
    w[3, 0, 0, 10] = -128  # BL-04: k 2 and k 10 share an int16 lane of the same channel
    assert nv.conv2d_plan(k, xs, w, None, ys, kind="pair", pointwise=True) is None
    assert nv.conv2d_plan(k, xs, w, None, ys, kind="nopair", pointwise=True) is not None
    assert nv.conv2d_plan(k, xs, w, None, ys, kind="dot", pointwise=True) is not None
    for bad in ({"out_shift": np.full(8, -32)}, {"out_shift": np.full(8, 31)}, {"out_mult": np.full(8, -5)}):
        assert nv.conv2d_plan({**k, **bad}, xs, w, None, ys, kind="dot", pointwise=False) is None
    # Armv8.0 pointwise needs in_c % 8, SDOT in_c % 4; the general kernel takes anything
    w12 = np.ones((8, 1, 1, 12), np.int8)
    assert nv.conv2d_plan(k, (1, 4, 4, 12), w12, None, ys, kind="dot", pointwise=True) is not None
    assert nv.conv2d_plan(k, (1, 4, 4, 12), w12, None, ys, kind="pair", pointwise=True) is None
    assert nv.conv2d_plan(k, (1, 4, 4, 12), w12, None, ys, kind="pair", pointwise=False) is not None


def test_every_neon_variant_has_its_template_and_prototype():
    import neon_harness

    protos = neon_harness.prototypes()
    names = set()
    for op in REGISTRY.values():
        mine = [v for v in op.variants if v.isa == "neon"]
        assert len({v.function for v in mine}) == len(mine), op.kind  # one entry point per variant
        for v in mine:
            assert (KERNELS / v.template).is_file(), v.template
            assert all((KERNELS / h).is_file() for h in v.headers)
            assert v.requires == (frozenset({"dotprod"}) if "_dot_" in v.function else frozenset()), v.function
            assert ("_chwn_" in v.function) == (v.layouts == frozenset({"CHWN"})), v.function
            names.add(v.function)
    assert set(protos) == names  # (Transpose and Relayout share ecc_neon_relayout_s8)


def _digits_graph():
    from quantize import quantize
    from toolchain.config import load_config
    from toolchain.data import load_data
    from toolchain.frontend.onnx import load_onnx
    from toolchain.passes import run_passes

    cfg = load_config(REPO / "examples" / "digits" / "pipeline.yaml", {})
    g = run_passes(load_onnx(cfg.model, cfg.input_shapes))
    return quantize(g, load_data(cfg.calibration, g, cfg.preprocess), cfg.calibration_method)


def test_selection_follows_board_features():
    """The dotprod variants only where the board declares `dotprod`; -128 weights move an Armv8.0
    GEMM to its `_nopair` twin only when two share an int16 lane (BL-04), and leave the dotprod choice alone."""
    from targets import load_target
    from toolchain.ir import Tensor
    from toolchain.lower import select_kernels

    g = _digits_graph()
    a64, v80 = load_target("aarch64"), load_target("aarch64-v80")
    dot = select_kernels(g, [i.value for i in a64.kernel_preference], a64.isa_features)
    base = select_kernels(g, [i.value for i in v80.kernel_preference], v80.isa_features)
    no_features = select_kernels(g, ["neon", "portable"])
    gemm = [n for n in g.nodes if n.op in (OpKind.CONV2D, OpKind.FULLY_CONNECTED)]
    assert gemm
    for n in gemm:
        assert dot[n.name].isa == "neon" and dot[n.name].function.endswith("_dot_s8"), dot[n.name].function
        assert base[n.name].isa == "neon" and "_dot_" not in base[n.name].function
        assert no_features[n.name] == base[n.name]
    conv = gemm[0]
    t = g.t(conv.inputs[1])
    w = t.data.copy()
    w.reshape(w.shape[0], -1)[0, [0, 8]] = -128  # k 0 and k 8: one int16 lane of the pairing GEMM (BL-04)
    g2 = g.with_tensor(Tensor(t.name, t.shape, t.dtype, t.quant, w))
    assert select_kernels(g2, ["neon", "portable"], v80.isa_features)[conv.name].function.endswith("_nopair_s8")
    w.reshape(w.shape[0], -1)[0, 8] = 5  # a single -128: the pairing kernel stays exact and is kept
    g3 = g.with_tensor(Tensor(t.name, t.shape, t.dtype, t.quant, w))
    assert select_kernels(g3, ["neon", "portable"], v80.isa_features)[conv.name] == base[conv.name]
    assert select_kernels(g2, ["neon", "portable"], a64.isa_features)[conv.name].function.endswith("_dot_s8")
