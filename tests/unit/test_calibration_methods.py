"""calibration_method values (quantize.observers, quantize.auto), bias correction
(quantize.bias_correct) and cross-layer equalisation (quantize.equalize): known best ranges on
synthetic distributions, determinism, auto blind to the verification data."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from graph_builder import GraphBuilder, assert_equivalent
from quantize import quantize, quantize_ranges
from quantize.bias_correct import channel_errors, correct_bias
from quantize.calibrate import collect_observers, observe_ranges, select_ranges
from quantize.equalize import equalizable_pairs, equalize
from quantize.observers import (FRACTIONS, RANGE_METHODS, Observer, auto_range, grid_error, kl_range, mse_range,
                                percentile_range)
from toolchain.config import load_config
from toolchain.errors import InputError
from toolchain.ir import DType
from toolchain.ops.common import NO_ACT
from toolchain.ops.registry import opdef

MODELS = Path(__file__).resolve().parents[3] / "shared" / "models" / "mlperf_tiny"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _observer(values: np.ndarray, samples: int = 8, seed: int = 0) -> Observer:
    o = Observer(seed)
    for part in np.array_split(values, samples):
        o.update(part)
    return o


# ---- observers on distributions with a known best range -----------------------------------------
def test_minmax_is_the_exact_extremes():
    v = np.random.default_rng(0).uniform(-1.0, 3.0, 100_000).astype(np.float32)
    assert _observer(v).range("minmax") == (float(v.min()), float(v.max()))


def test_percentile_clips_rare_outliers_only():
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.uniform(0, 1, 99_995), np.full(5, 1000.0)]).astype(np.float32)
    lo, hi = percentile_range(v, float(v.min()), float(v.max()))
    assert lo == float(v.min())           # nothing below 0: the exact bound is kept
    assert 0.999 <= hi <= 1.0              # 5 outliers are 0.005% of the values: 99.99th is inside [0, 1]


def test_mse_finds_the_least_squared_error_shrink():
    rng = np.random.default_rng(2)
    v = np.concatenate([rng.uniform(0, 1, 200_000), [4.0]]).astype(np.float32)
    lo, hi = mse_range(v, 0.0, 4.0)
    # brute force on the raw values: clipping the outlier to hi costs (4 - hi)^2 once, the grid
    # (hi / 255)^2 / 12 per value; the optimum is about hi = 3.2 (a 0.8 clip against 200k finer steps)
    errs = {f: grid_error(v.astype(np.float64), np.ones(v.size), 0.0, 4.0 * f) for f in FRACTIONS}
    best = min(errs, key=errs.get)
    assert lo == 0.0 and hi == pytest.approx(4.0 * best, abs=0.02 * 4.0) and 3.0 <= hi <= 3.4


def test_kl_keeps_a_uniform_range_and_clips_a_far_outlier():
    rng = np.random.default_rng(3)
    u = rng.uniform(0, 1, 200_000).astype(np.float32)
    assert kl_range(u, 0.0, 1.0)[1] >= 0.95  # clipping a flat distribution only loses information
    g = np.concatenate([rng.standard_normal(200_000), [60.0]]).astype(np.float32)
    lo, hi = kl_range(g, float(g.min()), 60.0)
    assert 3.0 <= hi <= 20.0 and lo == -hi  # symmetric, far below the outlier, above the bulk


def test_kl_ignores_the_relu_zero_spike():
    rng = np.random.default_rng(4)
    v = np.maximum(rng.uniform(-1, 1, 200_000), 0).astype(np.float32)  # half exact zeros, then flat to 1
    assert kl_range(v, 0.0, float(v.max()))[1] >= 0.95


def test_every_method_is_deterministic():
    v = np.random.default_rng(5).standard_normal(300_000).astype(np.float32) ** 3
    for m in RANGE_METHODS:
        assert _observer(v).range(m) == _observer(v).range(m), m
    assert auto_range(_observer(v)) == auto_range(_observer(v))


def test_auto_range_picks_the_least_held_out_error():
    rng = np.random.default_rng(6)
    v = np.concatenate([rng.laplace(0, 1, 400_000), rng.uniform(-40, 40, 8)]).astype(np.float32)
    o = _observer(rng.permutation(v), samples=16)
    chosen, rng_ = auto_range(o)
    halves = (list(range(0, 16, 2)), list(range(1, 16, 2)))
    err = {m: sum(o.heldout_error(o.range(m, f), h) for f, h in (halves, halves[::-1])) for m in RANGE_METHODS}
    assert chosen == min(err, key=err.get) and rng_ == o.range(chosen)
    assert chosen != "minmax"  # the 8 outliers are not worth the resolution


def test_unknown_method_is_refused():
    g = _conv_graph()
    with pytest.raises(ValueError, match="unknown calibration method 'entropy'"):
        observe_ranges(g, _calib(g), "entropy")
    with pytest.raises(InputError, match="calibration_method must be mse or minmax or percentile or kl or auto"):
        load_config(None, {"model": "m.onnx", "calibration_method": "entropy"})


# ---- bias correction --------------------------------------------------------------------------
def _conv_graph(act=(0.0, math.inf), seed=7):
    gb = GraphBuilder(seed=seed)
    x = gb.input("x", (1, 6, 6, 4))
    # weights with a constant offset per channel: int8 rounding errors do not average out over the taps
    w = (np.random.default_rng(seed).uniform(-1, 1, (5, 3, 3, 4)) * 0.3 + 0.0123).astype(np.float32)
    y = gb.conv(x, 5, 3, pads=(1, 1, 1, 1), w=w, act=act)
    return gb.build(gb.conv(y, 3, 1))


def _calib(g, n=16, seed=0):
    rng = np.random.default_rng(seed)
    return {i: rng.uniform(0, 1, (n, *g.t(i).shape)).astype(np.float32) for i in g.inputs}


def _errors(fg, qg, node, data):
    """Per-channel mean pre-activation error of first-layer `node`: the int8 graph's dequantized input,
    weights and int32 bias against the float graph's, over the samples of `data`."""
    pre = replace(node, attrs=replace(node.attrs, act=NO_ACT))
    op, diffs = opdef(node), []
    for x in data["x"]:
        xq = qg.t("x").quant.dequantize(qg.t("x").quant.quantize(x))
        ins_q = [xq.astype(np.float32)] + [qg.t(i).quant.dequantize(qg.t(i).data).astype(np.float32)
                                           for i in node.inputs[1:]]
        ins_f = [x] + [fg.t(i).data for i in node.inputs[1:]]
        diffs.append((op.reference_f32(pre, qg, ins_q)[0] - op.reference_f32(pre, fg, ins_f)[0]).reshape(-1, 5))
    return np.concatenate(diffs).mean(axis=0)


def test_bias_correction_removes_the_mean_channel_error_of_a_conv():
    g = _conv_graph()
    data = _calib(g)
    ranges = observe_ranges(g, data, "minmax")
    q = quantize_ranges(g, ranges)
    node = g.nodes[0]
    before = _errors(g, q, node, data)
    g2 = correct_bias(g, q, data)
    q2 = quantize_ranges(g2, ranges)
    after = _errors(g, q2, node, data)
    assert np.abs(before).max() > 1e-3  # the hand-made weights do have a systematic error
    assert np.abs(after).max() < 0.1 * np.abs(before).max()
    # the shift is the error measured with the float bias (channel_errors), the int32 rounding aside
    xs = [[x, None, None] for x in data["x"]]
    xq = [[q.t("x").quant.quantize(x), None, None] for x in data["x"]]
    np.testing.assert_allclose(g2.t(node.inputs[2]).data, g.t(node.inputs[2]).data - channel_errors(node, g, q, xs, xq),
                               rtol=0, atol=1e-6)
    assert q2.t(node.inputs[2]).dtype == DType.INT32


def test_bias_correction_is_deterministic():
    g = _conv_graph()
    data = _calib(g)
    q = quantize_ranges(g, observe_ranges(g, data, "mse"))
    a, b = correct_bias(g, q, data), correct_bias(g, q, data)
    for n in g.nodes:
        np.testing.assert_array_equal(a.t(n.inputs[2]).data, b.t(n.inputs[2]).data)


def _same_graph(a, b):
    assert a.meta.get("calibration_auto") == b.meta.get("calibration_auto")
    for name, t in a.tensors.items():
        assert t.dtype == b.t(name).dtype and t.quant == b.t(name).quant, name
        if t.data is not None:
            assert t.data.tobytes() == b.t(name).data.tobytes(), name


def _one_at_a_time(monkeypatch):
    """Every reference run on single samples: interpret_each, correct_bias and the held-out scoring."""
    import quantize.bias_correct as bc
    import toolchain.interpret as interp

    monkeypatch.setattr(bc, "stack_size", lambda graph, samples: 1)
    for f in (interp.interpret_each, interp.interpret_chunks):  # max_bytes=0, wherever they were imported
        monkeypatch.setattr(f, "__defaults__", (*f.__defaults__[:-1], 0))


def test_bias_correction_on_stacked_samples_is_that_of_single_samples(monkeypatch):
    g = _dw_separable((0.0, math.inf))
    data = _calib(g, n=11)
    q = quantize_ranges(g, observe_ranges(g, data, "mse"))
    stacked = correct_bias(g, q, data)
    with monkeypatch.context() as m:
        _one_at_a_time(m)
        single = correct_bias(g, q, data)
    for n in g.nodes:
        assert stacked.t(n.inputs[2]).data.tobytes() == single.t(n.inputs[2]).data.tobytes()


@pytest.mark.parametrize("make", [lambda: _dw_separable((0.0, math.inf)), _conv_graph])
def test_auto_on_stacked_samples_is_auto_on_single_samples(monkeypatch, make):
    g = make()
    data = _calib(g, n=10)
    stacked = quantize(g, data, "auto")
    with monkeypatch.context() as m:
        _one_at_a_time(m)
        single = quantize(g, data, "auto")
    _same_graph(stacked, single)


def test_weighted_ops_output_their_activated_pre_activation_output():
    """bias_correct.pre_float: a correctable op's float output is apply_act_f32 of its output without
    the fused activation (so correct_bias computes the convolution once)."""
    from quantize.bias_correct import correctable, pre_float
    from toolchain.ops.common import apply_act_f32

    g = _dw_separable((0.0, 6.0))
    gb = GraphBuilder(seed=2)
    x = gb.input("x", (1, 12))
    fc = gb.build(gb.fc(x, 5, act=(0.0, 6.0)))
    for graph in (g, fc):
        data = _calib(graph, n=3)
        env = {graph.inputs[0]: data[graph.inputs[0]][0]}
        for node in graph.nodes:
            ins = [graph.t(i).data if graph.t(i).is_const else env[i] for i in node.inputs]
            out = opdef(node).reference_f32(node, graph, ins)[0]
            if correctable(node, graph):
                assert apply_act_f32(pre_float(node, graph, ins), node.attrs.act).tobytes() == out.tobytes()
            env[node.outputs[0]] = out


def test_a_non_finite_activation_names_the_first_sample_then_the_first_tensor():
    gb = GraphBuilder(seed=1)
    x = gb.input("x", (1, 1, 1, 4))
    g = gb.build(gb.conv(x, 3, 1, w=np.full((3, 1, 1, 4), 1e20, np.float32)))
    data = {"x": np.ones((5, 1, 1, 1, 4), np.float32)}
    data["x"][3] = np.inf             # the input itself at sample 3
    data["x"][1] = 1e30               # finite input, the FC overflows float32 at sample 1
    out = g.outputs[0]
    with np.errstate(over="ignore", invalid="ignore"):  # (import_model silences numpy the same way)
        with pytest.raises(InputError, match=rf"tensor '{out}': NaN or inf values on calibration sample 1 "):
            collect_observers(g, data)    # (the samples run stacked, one chunk of 5: 1e30 * 1e20 overflows)
        data["x"][1] = 1.0
        with pytest.raises(InputError, match=r"tensor 'x': NaN or inf values on calibration sample 3 "):
            collect_observers(g, data)    # sample 3: the input, first in order, though the conv is inf there too


def test_ops_that_ignore_the_observed_range_do():
    """OpDef.ignores_observed_range (calibration keeps only the extremes of those outputs): any range
    for those tensors gives the same int8 graph."""
    from quantize.calibrate import _extremes_only
    from toolchain.ops.pad import PadAttrs
    from toolchain.ops.registry import OpKind

    gb = GraphBuilder(seed=4)
    x = gb.input("x", (1, 6, 6, 3))
    y = gb.conv(x, 4, 3, pads=(1, 1, 1, 1))
    y = gb.node(OpKind.PAD, [y], PadAttrs(((0, 0), (1, 1), (0, 1), (0, 0))))
    y = gb.clamp(gb.avgpool(gb.maxpool(y, 2, 1), 2, 1), -1.0, 2.0)
    y = gb.reshape(gb.transpose(y, (0, 3, 1, 2)), (1, 4 * 6 * 5))
    g = gb.build(gb.softmax(gb.fc(y, 3)))
    flagged = {o for n in g.nodes if opdef(n).ignores_observed_range for o in n.outputs}
    assert {n.op.value for n in g.nodes if opdef(n).ignores_observed_range} == {
        "Pad", "MaxPool2D", "AveragePool2D", "Clamp", "Transpose", "Reshape", "Softmax"}
    assert _extremes_only(g) == {"x", *flagged}
    data = _calib(g, n=6)
    ranges = observe_ranges(g, data, "mse")
    rng = np.random.default_rng(5)
    other = {k: ((-float(rng.uniform(0, 9)), float(rng.uniform(0, 9))) if k in flagged else r)
             for k, r in ranges.items()}
    _same_graph(quantize_ranges(g, ranges), quantize_ranges(g, other))


# ---- cross-layer equalisation -----------------------------------------------------------------
def _dw_separable(act):
    gb = GraphBuilder(seed=9)
    x = gb.input("x", (1, 6, 6, 4))
    # output channel c of the first conv spans 4^(c-2): ranges 1024x apart, what CLE evens out
    w = np.random.default_rng(9).uniform(-1, 1, (6, 1, 1, 4)) * (4.0 ** (np.arange(6) - 2))[:, None, None, None]
    y = gb.conv(x, 6, 1, act=act, w=w.astype(np.float32))
    y = gb.dwconv(y, 3, pads=(1, 1, 1, 1), act=act)
    return gb.build(gb.conv(y, 3, 1))


def test_equalisation_keeps_the_function_and_evens_channel_ranges():
    g = _dw_separable((0.0, math.inf))
    assert len(equalizable_pairs(g)) == 2
    e = equalize(g)
    assert_equivalent(g, e)
    first = e.nodes[0].inputs[1]

    def spread(graph):
        r = np.abs(graph.t(first).data).reshape(6, -1).max(axis=1)
        return r.max() / r.min()

    assert spread(g) > 500 and spread(e) < spread(g) / 16


def test_equalisation_skips_relu6_pairs():
    g = _dw_separable((0.0, 6.0))
    assert equalizable_pairs(g) == [] and equalize(g) is g


# ---- auto ---------------------------------------------------------------------------------------
def test_auto_is_deterministic_and_records_its_choice():
    g = _dw_separable((0.0, math.inf))
    data = _calib(g, n=12)
    a, b = quantize(g, data, "auto"), quantize(g, data, "auto")
    for name, t in a.tensors.items():
        assert t.quant == b.t(name).quant, name
        if t.data is not None:
            np.testing.assert_array_equal(t.data, b.t(name).data)
    meta = a.meta["calibration_auto"]
    assert a.meta["calibration_method"] == "auto" and meta["recipe"] in meta["scores"]
    assert set(meta["scores"]) >= {"mse", "per-tensor"}


def test_select_ranges_on_a_subset_equals_observing_that_subset():
    g = _conv_graph()
    data = _calib(g, n=10)
    obs = collect_observers(g, data)
    sub = select_ranges(g, obs, "mse", samples=range(5))
    assert sub == observe_ranges(g, {k: v[:5] for k, v in data.items()}, "mse")


@pytest.mark.skipif(not (MODELS / "ic_resnet8_float.onnx").is_file(), reason="MLPerf Tiny models not present")
def test_auto_never_reads_the_verification_data(tmp_path):
    """Two runs differing only in their verification data give the same int8 graph, bit for bit."""
    from toolchain.pipeline import import_model

    images = np.load(DATA / "cifar10_calib_200.npz")["images"]
    np.savez(tmp_path / "calib.npz", images=images[:8])
    np.savez(tmp_path / "v1.npz", images=images[100:110])
    np.savez(tmp_path / "v2.npz", images=255 - images[150:170])
    graphs = []
    for v in ("v1.npz", "v2.npz"):
        cfg = load_config(None, {"model": str(MODELS / "ic_resnet8_float.onnx"), "calibration": str(tmp_path / "calib.npz"),
                                 "verify": str(tmp_path / v), "calibration_method": "auto"})
        cfg = type(cfg)(**{**cfg.__dict__, "preprocess": type(cfg.preprocess)(layout="NHWC")})
        graphs.append(import_model(cfg).graph_s8)
    a, b = graphs
    assert a.meta["calibration_auto"] == b.meta["calibration_auto"]
    for name, t in a.tensors.items():
        assert t.quant == b.t(name).quant, name
        if t.data is not None:
            np.testing.assert_array_equal(t.data, b.t(name).data)
