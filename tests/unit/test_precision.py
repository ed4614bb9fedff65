"""precision: int8 | int16 (quantize.precision): 16x8 wherever an op has a kernel, REQUANTIZE at every
int8 <-> int16 edge, symmetric int16 activations from min/max, int64 biases within TFLM's bounds, the
graph I/O rule; the default int8 path unchanged bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from graph_builder import GraphBuilder
from quantize import quantize, quantize_ranges
from quantize.calibrate import collect_observers, observe_ranges, select_ranges
from quantize.precision import BIAS64_LIMIT, capable_nodes, int16_qparams, neighbours, with_boundaries
from toolchain.interpret import interpret
from toolchain.ir import DType
from toolchain.notes import KEPT_INT8, NOTES_KEY
from toolchain.ops.registry import OpKind

RELU = (0.0, float("inf"))


def wide_net(seed: int = 0):
    """x [1,8,8,4] -> A (1x1: channel 0 times 100, a wide tensor) -> B (1x1: channel 0 times 1/127, the
    others mixed) -> C (3x3, ReLU) -> flatten -> D (FC 10). A's int8 grid spends its 256 steps on channel
    0: B, reading it, loses channels 1-3 (B's isolated error is the worst by far). A's and B's weights are
    integers / 127 with a 127 in every row: exact on their int8 grids, so 16x8 leaves no error there."""
    b = GraphBuilder("wide", seed)
    x = b.input("x", (1, 8, 8, 4))
    wa = np.diag([100.0, 1.0, 1.0, 1.0]).reshape(4, 1, 1, 4)
    a = b.conv(x, 4, 1, w=wa, b=np.zeros(4), name="A")
    mix = np.array([[1, 127, 40, -25], [1, 50, 127, 10], [-1, -30, 20, 127], [2, 127, -60, 30]]) / 127.0
    c = b.conv(a, 4, 1, w=mix.reshape(4, 1, 1, 4), b=b.rng.uniform(-0.1, 0.1, 4), name="B")
    d = b.conv(c, 8, 3, pads=(1, 1, 1, 1), act=RELU, name="C")
    r = b.reshape(d, (1, 8 * 8 * 8))
    y = b.fc(r, 10, name="D")
    return b.build(y)


def calib(n: int = 48, seed: int = 1, pixels: bool = False) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if pixels:  # 8-bit data: every value on the input's int8 grid (scale 1, 256 levels)
        return {"x": rng.integers(0, 256, (n, 1, 8, 8, 4)).astype(np.float32)}
    return {"x": rng.uniform(-2, 2, (n, 1, 8, 8, 4)).astype(np.float32)}  # bounded: held-out data stay in range


def sqnr_vs_float(g, q, data) -> float:
    o = g.outputs[0]
    xs = {k: q.t(k).quant.quantize(v, q.t(k).dtype) for k, v in data.items()}
    got = np.stack([q.t(o).quant.dequantize(interpret(q, {k: v[i] for k, v in xs.items()})[o])
                    for i in range(len(data["x"]))]).astype(np.float64)
    ref = np.stack([interpret(g, {k: v[i] for k, v in data.items()})[o] for i in range(len(data["x"]))])
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((got - ref) ** 2)))


def test_every_op_with_a_16x8_kernel_computes_in_16x8():
    g = wide_net()
    assert capable_nodes(g) == ["A", "B", "C", "D"]  # the Reshape is a view: it follows its input
    data = calib()
    q = quantize(g, data, "mse", precision="int16")
    minmax = observe_ranges(g, data, "minmax")
    for node in q.nodes:
        t = q.t(node.outputs[0])
        assert t.dtype == DType.INT16 and t.quant.zero_point == (0,), node.name
        if node.name in "ABCD":  # symmetric, float32 scale from the calibrated min / max
            lo, hi = minmax[node.outputs[0]]
            assert t.quant.s == float(np.float32(max(abs(lo), abs(hi)) / 32767))
            x, w, b = (q.t(i) for i in node.inputs)
            assert b.dtype == DType.INT64
            want = np.round(g.t(b.name).data.astype(np.float64) / (x.quant.s * np.asarray(w.quant.scale)))
            np.testing.assert_array_equal(b.data, want.astype(np.int64))
            assert w.dtype == DType.INT8 and np.abs(w.data).max() == 127  # int8 weights, per channel, symmetric
    assert not [n for n in q.nodes if n.op == OpKind.REQUANTIZE]  # nothing stays int8: no boundary
    # I/O: real-valued data are not 8-bit, and A reads the input in 16x8: the input is int16, so is D's output
    assert q.t("x").dtype == DType.INT16 and q.t(q.outputs[0]).dtype == DType.INT16
    p = q.meta["precision"]
    assert p["mode"] == "int16" and p["int16_ops"] == ["A", "B", "C", "D"] and p["requantize_ops"] == 0
    assert p["io_dtypes"] == {"x": "int16", q.outputs[0]: "int16"}


def test_int16_output_error_far_below_int8():
    g, data, held = wide_net(), calib(), calib(32, seed=7)
    db8 = sqnr_vs_float(g, quantize(g, data, "mse"), held)
    db16 = sqnr_vs_float(g, quantize(g, data, "mse", precision="int16"), held)
    # measured 10.9 dB (int8: channels 1-3 of A's output get a few of A's 256 steps) and 43.8 dB (16x8: C's
    # and D's int8 weights bound it) on 32 held-out samples
    assert db8 < 13.0 and db16 > 41.0 and db16 - db8 > 30.0, (db8, db16)


def test_requantize_at_every_int8_int16_edge():
    """A Transpose has no 16x8 kernel: it runs in int8 between two 16x8 convolutions, one REQUANTIZE on
    each side of it (TFLM reference_ops::Requantize), and the graph still computes the float function."""
    b = GraphBuilder("t", 3)
    x = b.input("x", (1, 6, 6, 3))
    c1 = b.conv(x, 4, 3, pads=(1, 1, 1, 1), name="c1")
    t = b.transpose(c1, (0, 2, 1, 3), name="t")
    y = b.conv(t, 2, 1, name="c2")
    g = b.build(y)
    assert capable_nodes(g) == ["c1", "c2"]
    fb, wide, source = with_boundaries(g, {"c1", "c2"}, {"x"})
    assert [n.op for n in fb.nodes] == [OpKind.CONV2D, OpKind.REQUANTIZE, OpKind.TRANSPOSE, OpKind.REQUANTIZE,
                                        OpKind.CONV2D]
    assert source == {f"{c1}__s8": c1, f"{t}__s16": t} and wide == {"x", c1, f"{t}__s16", y}
    data = {"x": np.random.default_rng(0).normal(0, 1, (16, 1, 6, 6, 3)).astype(np.float32)}
    for i in range(3):  # REQUANTIZE is the identity in float: the same float graph
        np.testing.assert_array_equal(interpret(fb, {"x": data["x"][i]})[y], interpret(g, {"x": data["x"][i]})[y])
    q = quantize(g, data, "mse", precision="int16")
    types = [(n.op, q.t(n.inputs[0]).dtype, q.t(n.outputs[0]).dtype) for n in q.nodes]
    assert types[1:4] == [(OpKind.REQUANTIZE, DType.INT16, DType.INT8), (OpKind.TRANSPOSE, DType.INT8, DType.INT8),
                          (OpKind.REQUANTIZE, DType.INT8, DType.INT16)]
    # the int8 side of a boundary keeps the calibration method's range; the int16 side min / max
    mse = observe_ranges(g, data, "mse")
    assert q.t(f"{c1}__s8").quant.s == pytest.approx((mse[c1][1] - min(mse[c1][0], 0)) / 255, rel=1e-6)
    assert q.meta["precision"]["requantize_ops"] == 2
    assert sqnr_vs_float(g, q, data) > sqnr_vs_float(g, quantize(g, data, "mse"), data)


def test_8bit_input_stays_int8_and_is_requantized():
    """Pixels (integers 0..255, scale 1) lie on the int8 grid: the input stays int8 (what the data hold)
    and a REQUANTIZE gives the 16x8 reader its int16 copy; real-valued data make the input int16."""
    g = wide_net()
    q = quantize(g, calib(pixels=True), "mse", precision="int16")
    assert q.t("x").dtype == DType.INT8 and q.t("x").quant.s == 1.0
    first = q.nodes[0]
    assert first.op == OpKind.REQUANTIZE and first.inputs == ("x",) and q.t(first.outputs[0]).dtype == DType.INT16
    assert q.meta["precision"]["io_dtypes"]["x"] == "int8"


def test_int8_default_is_unchanged_bit_for_bit():
    g, data = wide_net(), calib()
    old = quantize_ranges(g, observe_ranges(g, data, "mse"))  # the int8 path as it was
    for q in (quantize(g, data, "mse"), quantize(g, data, "mse", precision="int8")):
        assert [(n.name, n.op, n.inputs, n.outputs) for n in q.nodes] == [(n.name, n.op, n.inputs, n.outputs)
                                                                          for n in old.nodes]
        for name, t in old.tensors.items():
            u = q.t(name)
            assert (u.dtype, u.quant, u.shape) == (t.dtype, t.quant, t.shape), name
            if t.data is not None:
                np.testing.assert_array_equal(u.data, t.data)
        assert q.meta["precision"] == {"mode": "int8", "int16_ops": [], "requantize_ops": 0,
                                       "io_dtypes": {"x": "int8", q.outputs[0]: "int8"}}


def test_a_dead_channels_large_bias_raises_its_weight_scale():
    """BatchNorm folding can leave a channel with weights ~1e-9 and a bias ~1: round(b / (s_x s_w)) would
    pass 2^47. That channel's weight scale is raised (its bias under 2^46), as bias_fit does for int32."""
    b = GraphBuilder("dead", 0)
    x = b.input("x", (1, 4, 4, 2))
    w = b.rng.uniform(-1, 1, (3, 1, 1, 2))
    w[1] = 1e-12
    y = b.conv(x, 3, 1, w=w, b=np.array([0.1, 2.0, -0.1]), name="c")
    g = b.build(y)
    q = quantize(g, {"x": np.random.default_rng(0).normal(0, 1, (8, 1, 4, 4, 2)).astype(np.float32)}, "mse",
                 precision="int16")
    bias, wq = q.t(q.nodes[0].inputs[2]), q.t(q.nodes[0].inputs[1])
    assert bias.dtype == DType.INT64 and np.abs(bias.data).max() <= BIAS64_LIMIT
    assert wq.quant.scale[1] > 1e-12 / 127 * 1e3 and wq.quant.scale[0] == pytest.approx(np.abs(w[0]).max() / 127)
    assert any("raised so the int64 bias fits" in n for n in q.meta[NOTES_KEY])


def test_an_op_tflm_cannot_take_in_16x8_stays_int8():
    """Two equal input channels weighted +1 / -1 leave an output 1e6 times smaller than its products:
    s_x s_w / s_y is far above 2^7, past TFLM's 64-bit requantization (shift <= 7). That op stays int8
    (with a note), its neighbour keeps 16x8."""
    b = GraphBuilder("cancel", 0)
    x = b.input("x", (1, 4, 4, 2))
    y = b.conv(x, 1, 1, w=np.array([1.0, -1.0]).reshape(1, 1, 1, 2), b=np.zeros(1), name="cancel")
    z = b.conv(y, 2, 1, name="next")
    g = b.build(z)
    v = np.random.default_rng(0).normal(0, 1, (8, 1, 4, 4, 1)).astype(np.float32)
    data = {"x": np.concatenate([v, v + 1e-6 * np.random.default_rng(1).normal(0, 1, v.shape)], axis=-1)}
    q = quantize(g, data.copy(), "mse", precision="int16")
    assert q.meta["precision"]["int16_ops"] == ["next"]
    assert q.t(y).dtype == DType.INT8
    note, = [n for n in q.meta[NOTES_KEY] if KEPT_INT8 in n]
    assert "node cancel (Conv2D)" in note and "2^" in note


def test_neighbours_look_through_views():
    g = wide_net()
    assert neighbours(g, "C") == (["B"], ["D"])  # D reads C's output through the Reshape
    assert neighbours(g, "A") == ([], ["B"])     # the graph input has no producer


def test_int16_qparams():
    assert int16_qparams(-2.0, 1.0).s == float(np.float32(2.0 / 32767)) and int16_qparams(-2.0, 1.0).zp == 0
    assert int16_qparams(0.0, 0.0).s == 1.0


def test_precision_needs_a_float_model_and_calibration():
    from quantize.precision import PRECISIONS
    from toolchain.errors import UnsupportedModel

    g = wide_net()
    assert PRECISIONS == ("int8", "int16", "auto")
    with pytest.raises(ValueError, match="unknown precision"):
        quantize(g, calib(), "mse", precision="fp16")
    with pytest.raises(UnsupportedModel, match="precision int16 applies to float models"):
        quantize(g, calib(), "mse", given={}, precision="int16")
    with pytest.raises(ValueError, match="needs a precision_search.Search"):
        quantize(g, calib(), "mse", precision="auto")


def test_bias_correction_on_the_mixed_graph_corrects_16x8_ops():
    """quantize.auto.fit with int16 nodes corrects the biases of the mixed graph, node for node (int64
    biases included); its corrected graph is closer to the float graph than the uncorrected one."""
    from quantize.auto import Recipe, fit
    from quantize import quantize_int16

    g, data, held = wide_net(), calib(64, seed=3), calib(32, seed=9)
    obs = collect_observers(g, data)
    nodes = {"A", "B", "C"}
    plain = fit(g, obs, data, Recipe("mse"))
    corrected = fit(g, obs, data, Recipe("mse", bias_correction=True), None, nodes)
    assert select_ranges(g, obs, "mse") == corrected.ranges
    changed = [n.name for n in g.nodes if len(n.inputs) > 2
               and not np.array_equal(g.t(n.inputs[2]).data, corrected.graph.t(n.inputs[2]).data)]
    assert changed == ["A", "B", "C", "D"]  # every layer's bias moved
    db = [sqnr_vs_float(g, quantize_int16(f, nodes), held) for f in (plain, corrected)]
    assert db[1] > db[0], db


def test_config_keys(tmp_path):
    from toolchain.config import load_config
    from toolchain.errors import InputError

    def cfg(text: str):
        (tmp_path / "p.yaml").write_text("model: m.onnx\n" + text)
        return load_config(tmp_path / "p.yaml", {})

    c = cfg("precision: auto\nprecision_target: {agreement: 0.99, sqnr_db: 30}\nmax_arena_bytes: 65536\n"
            "max_cost_ratio: 2.5\n")
    assert (c.precision, c.precision_target, c.max_arena_bytes, c.max_cost_ratio) == (
        "auto", {"agreement": 0.99, "sqnr_db": 30.0}, 65536, 2.5)
    assert cfg("").precision == "int8" and cfg("").precision_target == {}
    assert cfg("precision_target: {sqnr_db: null}\n").precision_target == {"sqnr_db": None}
    for bad, needle in (("precision: fp16\n", "precision must be int8 or int16 or auto"),
                        ("precision_target: {agreement: 99}\n", "precision_target.agreement must be a fraction"),
                        ("precision_target: {top5: 0.9}\n", "precision_target must map"),
                        ("max_cost_ratio: 0.5\n", "max_cost_ratio` must be a number of at least 1"),
                        ("max_arena_bytes: 1.5\n", "max_arena_bytes` must be an integer"),
                        ("precison: int16\n", "did you mean precision")):
        with pytest.raises(InputError, match=needle):
            cfg(bad)
    cfg("precision: auto\n")
    assert load_config(tmp_path / "p.yaml", {"precision": "int16"}).precision == "int16"  # --precision wins
    with pytest.raises(InputError, match="command line --precision"):
        load_config(tmp_path / "p.yaml", {"precision": "int4"})


def test_per_op_error_of_a_mixed_graph():
    """profiler.numerics on a mixed graph: 16x8 ops get isolated figures from their int16 references, a
    REQUANTIZE (its output has no float counterpart) is measured with the op it feeds (error_at), and the
    16x8 convolutions' isolated SQNR is far above their int8 twins'."""
    from profiler.numerics import op_numerics

    b = GraphBuilder("t", 3)
    x = b.input("x", (1, 6, 6, 3))
    c1 = b.conv(x, 4, 3, pads=(1, 1, 1, 1), name="c1")
    t = b.transpose(c1, (0, 2, 1, 3), name="t")
    g = b.build(b.conv(t, 2, 1, name="c2"))
    data = {"x": np.random.default_rng(0).uniform(-1, 1, (16, 1, 6, 6, 3)).astype(np.float32)}
    figures = {}
    for prec in ("int8", "int16"):
        q = quantize(g, data, "mse", precision=prec)
        qx = {"x": q.t("x").quant.quantize(data["x"], q.t("x").dtype)}
        figures[prec] = op_numerics(g, q, data, qx, max_samples=8)["ops"]
    f16 = figures["int16"]
    rq = [n for n in f16 if "__requantize" in n]
    assert len(rq) == 2 and {f16[n]["error_at"] for n in rq} == {"t", "c2"}
    # measured: c1 40.4 -> 48.6 dB isolated (int16 input and output; its int8 weights remain); c2 39.8 ->
    # 41.4 dB (its group starts at t, an int8 tensor: only its output grid is finer)
    i8, i16 = ({c: figures[p][c]["sqnr_db_isolated"] for c in ("c1", "c2")} for p in ("int8", "int16"))
    assert i16["c1"] > i8["c1"] + 5.0 and i16["c2"] > i8["c2"], (i8, i16)
