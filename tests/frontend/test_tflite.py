"""The TFLite frontend: int8 .tflite -> the IR our quantizer produces, with the file's own scales, zero
points, per-channel axes and fused activations, and bit-exact with TFLM through OUR interpreter.

1. The four MLPerf Tiny int8 models load: op counts, shapes, pads, activations; every tensor keeps
   the file's quantization and bytes exactly (checked against a direct read of the flatbuffer).
2. toolchain.interpret on each loaded model equals the TFLM Python interpreter (a subprocess) on
   every output element, and on every layer's output for the first sample.
3. A sweep of generated single-op models (tests/frontend/_tflite_cases.py) through load_tflite +
   interpret vs TFLM; plus the errors (unsupported ops listed together, bad files).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.frontend.tflite_reader import read_tflite, schema
from toolchain.interpret import interpret
from toolchain.ir import DType
from toolchain.ir.verify import verify
from toolchain.ops.fixed_point import quantize_multiplier
from toolchain.ops.registry import OpKind, opdef

pytest.importorskip("tflite_micro.python.tflite_micro.runtime", reason="tflite_micro (TFLM interpreter) not installed")

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1].parent / "shared"
MODELS = SHARED / "models" / "mlperf_tiny"
RELU = (0.0, float("inf"))
# name: (node count per op kind, input shape, output shape, (input scale, zp), (output scale, zp))
EXPECTED = {
    "ic_resnet8_int8": ({"Conv2D": 9, "Add": 3, "AveragePool2D": 1, "Reshape": 1, "FullyConnected": 1, "Softmax": 1},
                        (1, 32, 32, 3), (1, 10), (1.0, -128), (1 / 256, -128)),
    "vww_mobilenet_int8": ({"Conv2D": 14, "DepthwiseConv2D": 13, "AveragePool2D": 1, "Reshape": 1, "FullyConnected": 1,
                            "Softmax": 1}, (1, 96, 96, 3), (1, 2), (1 / 255, -128), (1 / 256, -128)),
    "kws_dscnn_int8": ({"Conv2D": 5, "DepthwiseConv2D": 4, "AveragePool2D": 1, "Reshape": 1, "FullyConnected": 1,
                        "Softmax": 1}, (1, 49, 10, 1), (1, 12), (0.5847029, 83), (1 / 256, -128)),
    "ad_autoencoder_int8": ({"FullyConnected": 10}, (1, 640), (1, 640), (0.39101523, 89), (0.36449847, 96)),
}

needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"{MODELS} not present")


def _path(name: str) -> Path:
    return MODELS / f"{name}.tflite"


def _raw_tensors(path: Path) -> list:
    """The file's tensors via the schema module directly (independent of tflite_reader)."""
    S = schema()
    buf = path.read_bytes()
    m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(buf, 0))
    return [(t, m.buffers[t.buffer].data) for t in m.subgraphs[0].tensors]


# ---- 1. loading -------------------------------------------------------------------------------
@needs_models
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mlperf_model_loads_with_file_quantization(name):
    counts, in_shape, out_shape, in_q, out_q = EXPECTED[name]
    g = load_tflite(_path(name))
    verify(g, lambda n, gr: opdef(n).infer_shapes(n, gr))
    got = {}
    for n in g.nodes:
        got[n.op.value] = got.get(n.op.value, 0) + 1
    assert got == counts
    assert dict(g.meta) == {"source": str(_path(name)), "format": "tflite", "input_layout": "NHWC"}
    (x,), (y,) = [g.t(i) for i in g.inputs], [g.t(o) for o in g.outputs]
    assert (x.shape, y.shape, x.dtype, y.dtype) == (in_shape, out_shape, DType.INT8, DType.INT8)
    assert np.isclose(x.quant.s, in_q[0], rtol=1e-6) and x.quant.zp == in_q[1]
    assert np.isclose(y.quant.s, out_q[0], rtol=1e-6) and y.quant.zp == out_q[1]
    checked = 0
    for t, data in _raw_tensors(_path(name)):
        ir = g.tensors.get(t.name.decode() if isinstance(t.name, bytes) else t.name)
        if ir is None:  # the RESHAPE shape constants are not IR tensors
            continue
        q = t.quantization
        assert ir.quant.scale == tuple(float(s) for s in q.scale), ir.name     # the float32 values, exactly
        assert ir.quant.zero_point == tuple(int(z) for z in q.zeroPoint), ir.name
        assert ir.quant.axis == (q.quantizedDimension if len(q.scale) > 1 else None), ir.name
        if data is not None:
            assert ir.data.tobytes() == np.asarray(data, np.uint8).tobytes(), ir.name
            assert ir.dtype in (DType.INT8, DType.INT32)
        checked += 1
    assert checked == len(g.tensors)
    for n in g.nodes:
        if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D):
            assert g.t(n.inputs[1]).quant.axis == (0 if n.op == OpKind.CONV2D else 3)


@needs_models
def test_mlperf_geometry_and_fused_activations():
    g = load_tflite(_path("kws_dscnn_int8"))
    first = g.nodes[0]
    # 10x4 kernel, stride 2, SAME on 49x10 -> 25x5: total pads 9 (h) and 2 (w), the odd one at the end
    assert first.attrs.window.pads == (4, 1, 5, 1) and first.attrs.act == RELU
    assert g.nodes[-4].op == OpKind.AVG_POOL2D and g.nodes[-4].attrs.window.kernel == (25, 5)
    r = load_tflite(_path("ic_resnet8_int8"))
    convs = [n for n in r.nodes if n.op == OpKind.CONV2D]
    assert convs[0].attrs.window.pads == (1, 1, 1, 1)
    assert convs[3].attrs.window.stride == (2, 2) and convs[3].attrs.window.pads == (0, 0, 1, 1)
    assert [n.attrs.act == RELU for n in convs] == [True, True, False, True, False, False, True, False, False]
    assert all(n.attrs.act == RELU for n in r.nodes if n.op == OpKind.ADD)
    a = load_tflite(_path("ad_autoencoder_int8"))
    assert [n.attrs.act == RELU for n in a.nodes] == [True] * 9 + [False]


# ---- 2. bit-exact with TFLM on the real models -------------------------------------------------
def _inputs(name: str, g) -> np.ndarray:
    x = g.t(g.inputs[0])
    if name.startswith("ic_"):  # raw pixels minus 128 (input scale 1.0, zp -128)
        pixels = np.load(SHARED / "data" / "cifar10_calib_200.npz")["images"][:20]
        return (pixels.astype(np.int16) - 128).astype(np.int8)[:, None]
    if name.startswith("vww_"):  # pixel / 255 quantized with the input's own scale and zero point
        from PIL import Image

        files = sorted((SHARED / "data" / "vww_calib").glob("*.jpg"))[:10]
        real = [np.asarray(Image.open(f).convert("RGB"), np.float32) / 255.0 for f in files]
        return np.stack([x.quant.quantize(r) for r in real])[:, None]
    rng = np.random.default_rng(sorted(EXPECTED).index(name))
    return rng.integers(-128, 128, (10, *x.shape)).astype(np.int8)


@pytest.fixture(scope="module")
def tflm_models(tmp_path_factory):
    """All four models through TFLM in one subprocess: outputs per sample, every layer of sample 0."""
    d = tmp_path_factory.mktemp("tflm_models")
    graphs = {}
    for name in sorted(EXPECTED):
        graphs[name] = g = load_tflite(_path(name))
        np.save(d / f"{name}.in.npy", _inputs(name, g))
    runner = HERE / "_tflm_model_runner.py"
    proc = subprocess.run([sys.executable, str(runner), str(d), *map(str, map(_path, sorted(EXPECTED)))],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.fail(f"TFLM runner died (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return d, graphs


@needs_models
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mlperf_bit_exact_with_tflm(tflm_models, name):
    d, graphs = tflm_models
    g = graphs[name]
    assert not (d / f"{name}.err").exists(), (d / f"{name}.err").read_text() if (d / f"{name}.err").exists() else ""
    ref = np.load(d / f"{name}.npz")
    xs = np.load(d / f"{name}.in.npy")
    # Per layer on the first sample: names the first op whose output differs.
    index = {t.name: i for i, t in enumerate(read_tflite(_path(name)).tensors) if t is not None}
    env = interpret(g, {g.inputs[0]: xs[0]}, keep_all=True)
    for n in g.nodes:  # every node output here is a tensor of the file, dumped by the runner
        want, got = ref[f"t{index[n.outputs[0]]}"], env[n.outputs[0]]
        diff = np.count_nonzero(got != want.reshape(got.shape))
        assert diff == 0, f"{n.name} ({n.op.value}): {diff} of {got.size} differ, max |d| " \
                          f"{np.abs(got.astype(int) - want.reshape(got.shape).astype(int)).max()}"
    out = np.stack([interpret(g, {g.inputs[0]: x})[g.outputs[0]] for x in xs])
    want = ref["out"].reshape(out.shape)
    assert np.array_equal(out, want), f"{np.count_nonzero(out != want)} of {out.size} outputs differ"
    assert len(xs) == (20 if name.startswith("ic_") else 10)


# ---- 3. generated single-op models -------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from _tflite_cases import sweep_cases

    d = tmp_path_factory.mktemp("tflite_sweep")
    cases = sweep_cases()
    for name, (model, inputs) in cases.items():
        (d / f"{name}.tflite").write_bytes(model)
        for k, arr in enumerate(inputs):
            np.save(d / f"{name}.in{k}.npy", arr)
    runner = HERE.parent / "ops" / "_tflm_runner.py"  # the colleague's single-op runner
    proc = subprocess.run([sys.executable, str(runner), str(d)], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        pytest.fail(f"TFLM runner died (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return d, cases


def test_single_op_sweep_bit_exact_with_tflm(sweep):
    d, cases = sweep
    bad = []
    for name, (_model, inputs) in cases.items():
        if (d / f"{name}.err").exists():
            bad.append(f"{name}: TFLM error {(d / f'{name}.err').read_text()}")
            continue
        g = load_tflite(d / f"{name}.tflite")
        got = interpret(g, dict(zip(g.inputs, inputs, strict=True)))[g.outputs[0]]
        want = np.load(d / f"{name}.out.npy").reshape(got.shape)
        if not np.array_equal(got, want):
            bad.append(f"{name}: {np.count_nonzero(got != want)} of {got.size} differ")
    assert not bad, "\n".join(bad)
    kinds = {n.split("_")[0] for n in cases}
    assert kinds == {"conv", "dwconv", "fc", "avgpool", "maxpool", "add", "softmax", "reshape"}
    assert len(cases) >= 50


def test_fc_per_tensor_multiplier_is_the_double_product(sweep):
    """The directed FC case: its bias puts every accumulator where the real multiplier
    double(s_in) * double(s_w) / double(s_out) and TFLM's source rule double(float(s_in * s_w)) / s_out
    round differently. The oracle build agrees with the double product (our glue), not the source."""
    from toolchain.ops.fully_connected import fully_connected_s8

    d, _ = sweep
    g = load_tflite(d / "fc_multiplier_rule.tflite")
    (node,) = g.nodes
    x, w, y = (g.t(n) for n in (*node.inputs[:2], node.outputs[0]))
    xin = np.load(d / "fc_multiplier_rule.in0.npy")
    want = np.load(d / "fc_multiplier_rule.out.npy")
    assert np.array_equal(interpret(g, {g.inputs[0]: xin})[g.outputs[0]], want)
    m, s = quantize_multiplier(float(np.float32(x.quant.s) * np.float32(w.quant.s)) / y.quant.s)
    source_rule = fully_connected_s8(xin, w.data, g.t(node.inputs[2]).data, input_offset=-x.quant.zp,
                                     output_offset=y.quant.zp, out_mult=[m], out_shift=[s])
    assert np.count_nonzero(source_rule != want) == want.size


def test_per_tensor_weight_scales_become_per_channel_multipliers(sweep):
    """Per-tensor weight scales: conv, depthwise and FC kernels get one multiplier per output
    (TFLM PopulateConvolutionQuantizationParams broadcasts the same way)."""
    d, _ = sweep
    for name in ("conv_per_tensor", "dwconv_m4_per_tensor", "fc_per_tensor"):
        g = load_tflite(d / f"{name}.tflite")
        (node,) = g.nodes
        assert len(g.t(node.inputs[1]).quant.scale) == 1
        arrays = [a.value for a in opdef(node).kernel_args(node, g) if a.kind == "array"]
        cout = g.t(node.outputs[0]).shape[-1]
        assert [len(a) for a in arrays] == [cout, cout] and len(set(arrays[0].tolist())) == 1, name


def test_absent_depthwise_bias_equals_zero_bias(sweep, tmp_path):
    """A bias-less DEPTHWISE_CONV_2D gets a zero int32 bias in the IR (TFLM itself crashes on that
    model, so the oracle is its run of the same model with explicit zeros)."""
    d, _ = sweep
    no_bias = _patched((d / "dwconv_m1_zero_bias.tflite").read_bytes(),
                       lambda m: setattr(m.subgraphs[0].operators[0], "inputs", [0, 1, -1]))
    (tmp_path / "dw.tflite").write_bytes(no_bias)
    g = load_tflite(tmp_path / "dw.tflite")
    bias = g.t(g.nodes[0].inputs[2])
    assert bias.dtype == DType.INT32 and not bias.data.any()
    x = np.load(d / "dwconv_m1_zero_bias.in0.npy")
    want = np.load(d / "dwconv_m1_zero_bias.out.npy")
    assert np.array_equal(interpret(g, {g.inputs[0]: x})[g.outputs[0]], want)


# ---- errors ------------------------------------------------------------------------------------
def _two_unsupported_ops() -> bytes:
    from _tflite_cases import Model, S

    m = Model()
    shape = (1, 4)
    t0, t1, t2 = (m.tensor(shape, S.TensorType.INT8, 0.1, 0) for _ in range(3))
    t3 = m.tensor(shape, S.TensorType.INT8, 1 / 256, -128)
    pow_ = (S.BuiltinOperator.POW, 0, None, [t0, t1], [t2])  # ops edgecc does not run
    exp = (S.BuiltinOperator.EXP, 0, None, [t2], [t3])
    return m.build_ops([pow_, exp], [t0, t1], [t3])


def test_unsupported_ops_are_listed_together(tmp_path):
    p = tmp_path / "two.tflite"
    p.write_bytes(_two_unsupported_ops())
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(p)
    msg = str(e.value)
    assert "2 unsupported node(s) of 2 op type(s): EXP (1), POW (1)" in msg.splitlines()[0], msg
    assert "  POW x1 (unknown op): operator 0 't2'" in msg and "  EXP x1 (unknown op): operator 1 't3'" in msg
    assert msg.splitlines()[-1] == "  see `edgecc ops` for the supported ops"


def _patched(model: bytes, edit) -> bytes:
    """The model with `edit(ModelT)` applied (object API round trip)."""
    import flatbuffers
    from _tflite_cases import S

    obj = S.ModelT.InitFromObj(S.Model.GetRootAsModel(model, 0))
    edit(obj)
    b = flatbuffers.Builder(1024)
    b.Finish(obj.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_unsupported_options_and_quantization_name_the_operator(tmp_path):
    from _tflite_cases import conv_case, pool_case

    rng = np.random.default_rng(0)
    model, _ = conv_case(rng, h=5, w=5, cin=2, cout=2, k=(3, 3))
    tanh = _patched(model, lambda m: setattr(m.subgraphs[0].operators[0].builtinOptions, "fusedActivationFunction", 4))
    (tmp_path / "tanh.tflite").write_bytes(tanh)
    with pytest.raises(UnsupportedModel, match=r"CONV_2D x1 \(fused activation 4 .*\): operator 0 't3'"):
        load_tflite(tmp_path / "tanh.tflite")
    model, _ = pool_case(rng, avg=True, h=4, w=4, c=2, k=(2, 2), s=(2, 2))
    rescaled = _patched(model, lambda m: setattr(m.subgraphs[0].tensors[1].quantization, "scale", [0.5]))
    (tmp_path / "pool.tflite").write_bytes(rescaled)
    with pytest.raises(UnsupportedModel, match=r"AVERAGE_POOL_2D x1 \(pooling from scale"):
        load_tflite(tmp_path / "pool.tflite")
    model, _ = conv_case(rng, h=5, w=5, cin=2, cout=2, k=(3, 3))
    hybrid = _patched(model, lambda m: setattr(m.subgraphs[0].tensors[0], "type", 0))  # float32 input
    (tmp_path / "float.tflite").write_bytes(hybrid)
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(tmp_path / "float.tflite")
    assert "graph input x1 (of type float32" in str(e.value) and "CONV_2D x1 (input 't0' of type float32" in str(e.value)


def test_bad_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such model file"):
        load_tflite(tmp_path / "missing.tflite")
    (tmp_path / "junk.tflite").write_bytes(b"\x00" * 64)
    with pytest.raises(InputError, match="not a TFLite flatbuffer"):
        load_tflite(tmp_path / "junk.tflite")
