"""quantize.zero_point_split: a layer whose weights keep a zero point (w - zw beyond int8 somewhere)
runs on the ISA kernels: conv and FC in one node over their input widened by the channels that carry the
overflowing parts of w - zw; a depthwise layer's overflowing channels again, on int8 halves of w - zw, put
back by ScatterChannels: the same integers as the whole layer
on the portable kernel (interpreter, every value) and as onnxruntime, on host and on the M4 (DSP)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _qdq_cases import ModelBuilder, import_int8, on_grid, ort_run, ours

from quantize.zero_point_split import split_zero_point_channels
from toolchain.interpret import interpret
from toolchain.lower import select_kernels
from toolchain.ops.registry import OpKind
from toolchain.ops.scatter_channels import scatter_channels

pytest.importorskip("onnxruntime")
OVER = {"c1": (2, 5), "dw": (6,), "fc": (0, 3)}  # output channels given a weight beyond int8 of the zero point


def _weights(rng, shape, out_axis, over):
    """uint8 weights in [20, 255] (w - 138 within int8) except one weight of 0..5 in each `over` channel."""
    w = rng.integers(20, 256, shape)
    for c in over:
        idx = [0] * len(shape)
        idx[out_axis] = c
        w[tuple(idx)] = rng.integers(0, 6)
    return w


def _model(path: Path) -> Path:
    """x -> Q/DQ uint8 -> Conv 3x3 (8 -> 8, pads 1) -> Q/DQ -> depthwise 3x3 (pads 1) -> Q/DQ ->
    Flatten -> Gemm (288 -> 4) -> Q/DQ -> y; every weight tensor uint8 with zero point 138. Power-of-two
    scales: onnxruntime's float32 simulation of QDQ is exact on them (no near-tie flips)."""
    rng = np.random.default_rng(0)
    m = ModelBuilder(13)

    def qdq(t, s, z, name):
        return m.dq(m.q(t, s, z, f"{name}q", np.uint8), s, z, f"{name}d", np.uint8)

    x = qdq(m.input("x", (1, 8, 6, 6)), 2.0 ** -5, 120, "x")
    w1 = m.dq(m.const("w1", _weights(rng, (8, 8, 3, 3), 0, OVER["c1"]), np.uint8), 2.0 ** -10, 138, "w1d", np.uint8)
    y = qdq(m.node("Conv", [x, w1], "c1", pads=[1, 1, 1, 1]), 2.0 ** -3, 125, "c1")
    w2 = m.dq(m.const("w2", _weights(rng, (8, 1, 3, 3), 0, OVER["dw"]), np.uint8), 2.0 ** -8, 138, "w2d", np.uint8)
    y = qdq(m.node("Conv", [y, w2], "dw", group=8, pads=[1, 1, 1, 1]), 2.0 ** -3, 130, "dw")
    y = qdq(m.node("Flatten", [y], "fl"), 2.0 ** -3, 130, "fl")
    w3 = m.dq(m.const("w3", _weights(rng, (4, 288), 0, OVER["fc"]), np.uint8), 2.0 ** -9, 138, "w3d", np.uint8)
    qdq(m.node("Gemm", [y, w3], "fc", transB=1), 2.0 ** -1, 128, "y")
    m.output("yd")
    return m.save(path)


def test_only_the_overflowing_channels_leave_the_fast_kernels(tmp_path: Path) -> None:
    p = _model(tmp_path / "m.onnx")
    g0 = import_int8(p)
    g = split_zero_point_channels(g0)
    scatters = [n for n in g.nodes if n.op == OpKind.SCATTER_CHANNELS]
    assert [s.attrs.channels for s in scatters] == [OVER["dw"]]  # conv and FC: one widened node each
    kernels = select_kernels(g, ("dsp", "portable"))
    by_name = {n.name: n for n in g.nodes}
    for name, depth in (("c1", 8), ("fc", 288)):  # one residual input channel per overflowing weight
        layer = next(n for n in g.nodes if n.name.startswith(name) and n.op != OpKind.GATHER)
        w, xw = g.t(layer.inputs[1]), g.t(layer.inputs[0])
        assert w.quant.zero_point[0] == 0 and w.shape[-1] == xw.shape[-1] > depth and xw.shape[-1] % 4 == 0
        gather = next(n for n in g.nodes if n.outputs[0] == layer.inputs[0])
        assert gather.attrs.indices[:depth] == tuple(range(depth))
        assert set(layer.outputs) <= set(g0.tensors)  # writes the layer's own output: no scatter
        if layer.op == OpKind.CONV2D:  # (the DSP FC kernel wants 4-multiple depths or so: not asserted)
            assert kernels[layer.name].isa == "dsp", kernels[layer.name]
    main = next(n for n in g.nodes if n.outputs[0] == scatters[0].inputs[0])
    fix = by_name[f"{main.name}__fix"]
    assert main.op == OpKind.DEPTHWISE_CONV2D and fix.op == OpKind.CONV2D
    assert g.t(main.inputs[1]).quant.zero_point[0] == 0 and int(np.abs(g.t(main.inputs[1]).data).max()) <= 127
    assert g.t(fix.inputs[1]).quant.zero_point[0] == 0 and g.t(fix.inputs[1]).shape == (1, 3, 3, 2)  # the halves
    assert kernels[main.name].isa == "dsp" and kernels[fix.name].isa == "dsp"
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = {"x": rng.uniform(-3.5, 4, (1, 8, 6, 6)).astype(np.float32)}
        want = ours(p, x, "onnx", g0)[0]
        assert np.array_equal(ours(p, x, "onnx", g)[0], want)      # split == whole, every value
        assert np.array_equal(on_grid(ort_run(p, x)[0], g), want)  # == onnxruntime
        q = {g.inputs[0]: g.t(g.inputs[0]).quant.quantize(x["x"])}
        env0, env = interpret(g0, q, keep_all=True), interpret(g, q, keep_all=True)
        for n in g0.nodes:  # the intermediate layers too (tflm rounding)
            assert np.array_equal(env[n.outputs[0]], env0[n.outputs[0]])
            assert len(np.unique(env[n.outputs[0]])) > min(4, env[n.outputs[0]].size // 2)  # not clamped


def test_scatter_channels_reference() -> None:
    base = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    assert scatter_channels(base, np.full((2, 3, 2), -7, np.int8), (3, 0))[..., [3, 0]].tolist() == \
        np.full((2, 3, 2), -7).tolist()


def test_split_layers_run_bit_exact_on_host_and_the_m4(tmp_path: Path, edgecc, need_board) -> None:
    for b in ("host", "mps2-an386"):
        need_board(b)
    p = _model(tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.random.default_rng(2).uniform(-3.5, 4, (6, 1, 8, 6, 6)).astype(np.float32))
    res = edgecc("run", "--model", p, "--board", "host,mps2-an386", "--verify", tmp_path / "x.npy",
                 "--out", tmp_path / "out", "--quiet")
    assert res.code == 0, res.err[-2000:]
    for b in ("host", "mps2-an386"):
        r = json.loads((tmp_path / "out" / b / "report.json").read_text())
        assert r["verification"]["bit_exact"] is True
        kernels = {o["name"]: o["kernel"] for o in r["ops"]}
        assert any(k.endswith("__scatter") for k in kernels)
        if b == "mps2-an386":
            fix = [k for k in kernels if k.endswith("__fix")]  # the depthwise layer's halves
            assert len(fix) == 1 and kernels[fix[0]].startswith("dsp") and kernels[fix[0][:-5]].startswith("dsp")
            widened = [k for k in kernels if f"{k}__widen" in kernels]  # conv and FC on their widened inputs
            assert len(widened) == 2 and kernels[widened[0]].startswith("dsp"), kernels
