"""Cross-check the numpy references against the real oracle: tiny single-op int8 .tflite models
(written with the flatbuffer object API of tflite_micro's schema_py_generated) run by the TFLM
Python interpreter in a subprocess (_tflm_runner.py), compared bit for bit.

Params on our side are derived from the scales the way TFLM's Prepare derives them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolchain.ops.add import add_s8
from toolchain.ops.conv2d import conv2d_s8
from toolchain.ops.depthwise_conv2d import depthwise_conv2d_s8
from toolchain.ops.elementwise import mul_s8
from toolchain.ops.fixed_point import activation_range, add_params, mul_params, quantize_multiplier, softmax_params
from toolchain.ops.fully_connected import fully_connected_s8
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8
from toolchain.ops.softmax import softmax_s8

schema = pytest.importorskip("tflite_micro.tensorflow.lite.micro.python.schema_py_generated",
                             reason="tflite_micro package (schema + interpreter) not installed")
flatbuffers = pytest.importorskip("flatbuffers")
S = schema
F32 = np.float32


def _same(size: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """(output size, pad before) of TF SAME, as TFLM ComputePaddingHeightWidth."""
    out = -(-size // s)
    eff = (k - 1) * d + 1
    return out, max((out - 1) * s + eff - size, 0) // 2


class _Model:
    """One subgraph, one operator; tensors added in order, constants get their own buffer."""

    def __init__(self):
        self.tensors, self.buffers = [], [S.BufferT()]

    def tensor(self, shape, ttype, scale, zp, data=None, qdim=0):
        t = S.TensorT()
        t.shape, t.type, t.name = list(shape), ttype, f"t{len(self.tensors)}"
        t.quantization = S.QuantizationParametersT()
        t.quantization.scale = [float(v) for v in np.atleast_1d(scale)]
        t.quantization.zeroPoint = [int(v) for v in np.atleast_1d(zp)]
        t.quantization.quantizedDimension = qdim
        t.buffer = 0
        if data is not None:
            b = S.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def build(self, opcode, opt_type, opts, inputs, outputs, graph_inputs) -> bytes:
        code = S.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode, code.version = opcode, min(opcode, 127), 1
        op = S.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = 0, inputs, outputs
        op.builtinOptionsType, op.builtinOptions = opt_type, opts
        sg = S.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs, sg.operators = self.tensors, graph_inputs, outputs, [op]
        m = S.ModelT()
        m.version, m.operatorCodes, m.subgraphs, m.buffers = 3, [code], [sg], self.buffers
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _conv_case(rng, depthwise: bool):
    n, h, w, cin = 1, int(rng.integers(3, 9)), int(rng.integers(3, 9)), int(rng.integers(1, 5))
    mult = int(rng.integers(1, 3)) if depthwise else 1
    cout = cin * mult if depthwise else int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    dh, dw = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) if rng.random() < 0.3 else (1, 1)
    same = rng.random() < 0.6
    if same:
        (oh, pt), (ow, pl) = _same(h, kh, sh, dh), _same(w, kw, sw, dw)
    else:
        oh, ow, pt, pl = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1, 0, 0
        if min(oh, ow) < 1:
            return None
    xs, xz, ys, yz = F32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)), F32(rng.uniform(0.02, 0.3)), \
        int(rng.integers(-128, 128))
    ws = rng.uniform(0.001, 0.02, cout).astype(F32)
    x = rng.integers(-128, 128, (n, h, w, cin)).astype(np.int8)
    wq = rng.integers(-127, 128, (1, kh, kw, cout) if depthwise else (cout, kh, kw, cin)).astype(np.int8)
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    act = ("none", "relu", "relu6")[int(rng.integers(0, 3))]
    m = _Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, xs, xz)
    tw = m.tensor(wq.shape, S.TensorType.INT8, ws, [0] * cout, wq, qdim=3 if depthwise else 0)
    tb = m.tensor([cout], S.TensorType.INT32, ws.astype(np.float64) * float(xs), [0] * cout, bias)
    to = m.tensor((n, oh, ow, cout), S.TensorType.INT8, ys, yz)
    fused = {"none": 0, "relu": 1, "relu6": 3}[act]
    if depthwise:
        o = S.DepthwiseConv2DOptionsT()
        o.depthMultiplier = mult
        code, otype = S.BuiltinOperator.DEPTHWISE_CONV_2D, S.BuiltinOptions.DepthwiseConv2DOptions
    else:
        o = S.Conv2DOptionsT()
        code, otype = S.BuiltinOperator.CONV_2D, S.BuiltinOptions.Conv2DOptions
    o.padding, o.strideH, o.strideW = (S.Padding.SAME if same else S.Padding.VALID), sh, sw
    o.dilationHFactor, o.dilationWFactor, o.fusedActivationFunction = dh, dw, fused
    model = m.build(code, otype, o, [ti, tw, tb], [to], [ti])
    # TFLM PopulateConvolutionQuantizationParams: double(in) * double(w[c]) / double(out)
    pairs = [quantize_multiplier(float(xs) * float(s) / float(ys)) for s in ws]
    lo, hi = activation_range(act, float(ys), yz)
    kw_ = dict(stride=(sh, sw), pad=(pt, pl), dilation=(dh, dw), out_hw=(oh, ow), input_offset=-xz,
               output_offset=yz, out_mult=[p[0] for p in pairs], out_shift=[p[1] for p in pairs],
               act_min=lo, act_max=hi)
    ref = depthwise_conv2d_s8(x, wq, bias, depth_multiplier=mult, **kw_) if depthwise else \
        conv2d_s8(x, wq, bias, **kw_)
    return model, [x], ref


def _fc_case(rng):
    b, k, o = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 10))
    xs, ws, ys = F32(rng.uniform(0.01, 0.1)), F32(rng.uniform(0.001, 0.02)), F32(rng.uniform(0.05, 0.5))
    xz, yz = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    x = rng.integers(-128, 128, (b, k)).astype(np.int8)
    wq = rng.integers(-127, 128, (o, k)).astype(np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    m = _Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, xs, xz)
    tw = m.tensor(wq.shape, S.TensorType.INT8, ws, 0, wq)
    tb = m.tensor([o], S.TensorType.INT32, float(xs) * float(ws), 0, bias)
    to = m.tensor((b, o), S.TensorType.INT8, ys, yz)
    model = m.build(S.BuiltinOperator.FULLY_CONNECTED, S.BuiltinOptions.FullyConnectedOptions,
                    S.FullyConnectedOptionsT(), [ti, tw, tb], [to], [ti])
    # TFLM GetQuantizedConvolutionMultipler: float(in * w) widened to double, / double(out)
    mu, sh = quantize_multiplier(float(F32(xs * ws)) / float(ys))
    ref = fully_connected_s8(x, wq, bias, input_offset=-xz, output_offset=yz, out_mult=[mu], out_shift=[sh])
    return model, [x], ref


def _pool_case(rng, avg: bool):
    h, w, c = int(rng.integers(2, 9)), int(rng.integers(2, 9)), int(rng.integers(1, 4))
    kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, 4))
    (oh, pt), (ow, pl) = _same(h, kh, sh), _same(w, kw, sw)
    s, z = F32(rng.uniform(0.01, 0.2)), int(rng.integers(-128, 128))
    x = rng.integers(-128, 128, (1, h, w, c)).astype(np.int8)
    m = _Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, s, z)
    to = m.tensor((1, oh, ow, c), S.TensorType.INT8, s, z)
    o = S.Pool2DOptionsT()
    o.padding, o.strideH, o.strideW, o.filterHeight, o.filterWidth = S.Padding.SAME, sh, sw, kh, kw
    code = S.BuiltinOperator.AVERAGE_POOL_2D if avg else S.BuiltinOperator.MAX_POOL_2D
    model = m.build(code, S.BuiltinOptions.Pool2DOptions, o, [ti], [to], [ti])
    fn = avg_pool2d_s8 if avg else max_pool2d_s8
    return model, [x], fn(x, kernel=(kh, kw), stride=(sh, sw), pad=(pt, pl), out_hw=(oh, ow))


def _binary_case(rng, op: str):
    shape = (1, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 9)))
    s1, s2, so = (F32(v) for v in rng.uniform(0.01, 0.5, 3))
    if op == "add" and rng.random() < 0.3:
        so = F32(2 * max(s1, s2) / 2**20 / rng.uniform(0.2, 0.9))   # output multiplier just below 1
    z1, z2, zo = (int(v) for v in rng.integers(-128, 128, 3))
    a, b = (rng.integers(-128, 128, shape).astype(np.int8) for _ in range(2))
    m = _Model()
    t1 = m.tensor(shape, S.TensorType.INT8, s1, z1)
    t2 = m.tensor(shape, S.TensorType.INT8, s2, z2)
    to = m.tensor(shape, S.TensorType.INT8, so, zo)
    if op == "add":
        model = m.build(S.BuiltinOperator.ADD, S.BuiltinOptions.AddOptions, S.AddOptionsT(), [t1, t2], [to], [t1, t2])
        ref = add_s8(a, b, add_params(s1, z1, s2, z2, so, zo))
    else:
        model = m.build(S.BuiltinOperator.MUL, S.BuiltinOptions.MulOptions, S.MulOptionsT(), [t1, t2], [to], [t1, t2])
        ref = mul_s8(a, b, mul_params(s1, z1, s2, z2, so, zo))
    return model, [a, b], ref


def _softmax_case(rng):
    rows, n = int(rng.integers(1, 4)), int(rng.choice([1, 2, 5, 10, 64, 300]))
    s, z = F32(rng.choice([0.01, 0.05, 0.1, 0.25, 1.0, 3.0]) * rng.uniform(0.8, 1.2)), int(rng.integers(-128, 128))
    x = rng.integers(-128, 128, (rows, n)).astype(np.int8)
    m = _Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, s, z)
    to = m.tensor(x.shape, S.TensorType.INT8, 1 / 256, -128)
    o = S.SoftmaxOptionsT()
    o.beta = 1.0
    model = m.build(S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, o, [ti], [to], [ti])
    return model, [x], softmax_s8(x, softmax_params(float(s), 1.0))


def _cases():
    rng = np.random.default_rng(2024)
    makers = [("conv", lambda: _conv_case(rng, False)), ("dwconv", lambda: _conv_case(rng, True)),
              ("fc", lambda: _fc_case(rng)), ("avgpool", lambda: _pool_case(rng, True)),
              ("maxpool", lambda: _pool_case(rng, False)), ("add", lambda: _binary_case(rng, "add")),
              ("mul", lambda: _binary_case(rng, "mul")), ("softmax", lambda: _softmax_case(rng))]
    out = {}
    for name, make in makers:
        for i in range(25):
            case = make()
            if case is not None:
                out[f"{name}_{i:02d}"] = case
    return out


@pytest.fixture(scope="module")
def tflm_results(tmp_path_factory):
    d = tmp_path_factory.mktemp("tflm")
    cases = _cases()
    for name, (model, inputs, _ref) in cases.items():
        (d / f"{name}.tflite").write_bytes(model)
        for k, arr in enumerate(inputs):
            np.save(d / f"{name}.in{k}.npy", arr)
    runner = Path(__file__).with_name("_tflm_runner.py")
    proc = subprocess.run([sys.executable, str(runner), str(d)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"TFLM runner died (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return d, cases


def test_tflm_bit_exact(tflm_results):
    d, cases = tflm_results
    bad = []
    for name, (_model, _inputs, ref) in cases.items():
        err = d / f"{name}.err"
        if err.exists():
            bad.append(f"{name}: TFLM error {err.read_text()}")
            continue
        got = np.load(d / f"{name}.out.npy")
        if got.shape != ref.shape or not np.array_equal(got, ref):
            bad.append(f"{name}: {np.count_nonzero(got.reshape(ref.shape) != ref)} of {ref.size} differ")
    assert not bad, "\n".join(bad)
    assert len(cases) >= 190
