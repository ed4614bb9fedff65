"""Generated 16x8 .tflite models (int16 activations, symmetric with zero point 0; int8 weights; int64
biases: TFLite's 16x8 quantization spec), written with the flatbuffer object API as the int8 cases of
tests/frontend/_tflite_cases.py are. Each builder returns (model bytes, [inputs]); TFLM computes the
expected outputs. The single-op cases cover what the frontend maps for int16: CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, QUANTIZE (float / int8 / int16 -> int16 / int8) and
DEQUANTIZE (int16 -> float), with SAME / VALID padding, strides, dilations, per-tensor and per-channel
weights, fused activations, absent biases, full-range int16 inputs and biases near the int64 range
TFLM's requantization allows (|acc| < 2^47).
"""
from __future__ import annotations

import numpy as np
from tflite_op_cases import ACT, FLOAT, I8, OP, OPT, Model, S

F32 = np.float32
I16, I64 = S.TensorType.INT16, S.TensorType.INT64


def i16(rng, shape, lo: int = -32768, hi: int = 32768) -> np.ndarray:
    """int16 values, the extremes included."""
    x = rng.integers(lo, hi, shape).astype(np.int16)
    flat = x.reshape(-1)
    if flat.size >= 2:
        flat[0], flat[-1] = lo, hi - 1
    return x


def _out(size: int, k: int, s: int, d: int, same: bool) -> int:
    return -(-size // s) if same else (size - (k - 1) * d - 1) // s + 1


def conv16(rng, *, h=7, w=6, cin=3, cout=5, k=(3, 3), s=(1, 1), d=(1, 1), same=True, act="none",
           depthwise=False, per_tensor=False, bias=True, big_bias=False, scales=None):
    """CONV_2D or DEPTHWISE_CONV_2D (depth multiplier cout / cin), int16 in and out, int64 bias."""
    oh, ow = _out(h, k[0], s[0], d[0], same), _out(w, k[1], s[1], d[1], same)
    xs, ys = scales or (F32(rng.uniform(1e-4, 1e-3)), F32(rng.uniform(5e-4, 5e-3)))
    ws = rng.uniform(0.002, 0.02, 1 if per_tensor else cout).astype(F32)
    x = i16(rng, (1, h, w, cin))
    wq = rng.integers(-127, 128, (1, *k, cout) if depthwise else (cout, *k, cin)).astype(np.int8)
    lim = 2**40 if big_bias else 2**22
    m = Model()
    ti = m.tensor(x.shape, I16, xs, 0)
    tw = m.tensor(wq.shape, I8, ws, [0] * len(ws), wq, qdim=3 if depthwise else 0)
    tb = m.tensor([cout], I64, ws.astype(np.float64) * float(xs), [0] * len(ws),
                  rng.integers(-lim, lim, cout).astype(np.int64)) if bias else -1
    to = m.tensor((1, oh, ow, cout), I16, ys, 0)
    o = S.DepthwiseConv2DOptionsT() if depthwise else S.Conv2DOptionsT()
    if depthwise:
        o.depthMultiplier = cout // cin
    o.padding, o.strideH, o.strideW = (S.Padding.SAME if same else S.Padding.VALID), *s
    o.dilationHFactor, o.dilationWFactor, o.fusedActivationFunction = *d, ACT[act]
    code, otype = ((OP.DEPTHWISE_CONV_2D, OPT.DepthwiseConv2DOptions) if depthwise
                   else (OP.CONV_2D, OPT.Conv2DOptions))
    return m.build_ops([(code, otype, o, [ti, tw, tb], [to])], [ti], [to]), [x]


def fc16(rng, *, b=2, k=19, o=6, per_tensor=True, act="none", bias=True, in_shape=None):
    """FULLY_CONNECTED, int16 in and out, int8 weights [o, k], int64 bias."""
    xs, ys = F32(rng.uniform(1e-4, 1e-3)), F32(rng.uniform(1e-3, 1e-2))
    ws = rng.uniform(0.002, 0.02, 1 if per_tensor else o).astype(F32)
    in_shape = in_shape or (b, k)
    x = i16(rng, in_shape)
    wq = rng.integers(-127, 128, (o, k)).astype(np.int8)
    m = Model()
    ti = m.tensor(in_shape, I16, xs, 0)
    tw = m.tensor(wq.shape, I8, ws, [0] * len(ws), wq)
    tb = m.tensor([o], I64, ws.astype(np.float64) * float(xs), [0] * len(ws),
                  rng.integers(-2**24, 2**24, o).astype(np.int64)) if bias else -1
    to = m.tensor((x.size // k, o), I16, ys, 0)
    opts = S.FullyConnectedOptionsT()
    opts.fusedActivationFunction = ACT[act]
    return m.build_ops([(OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, opts, [ti, tw, tb], [to])], [ti], [to]), [x]


def add16(rng, *, shape=(1, 5, 4, 3), act="none", scales=None):
    """ADD of two int16 tensors of one shape (pot_scale_int16 false, as the TFLite converter writes it)."""
    s1, s2, so = scales or tuple(F32(v) for v in rng.uniform(1e-4, 1e-3, 3))
    a, b = i16(rng, shape), i16(rng, shape)
    m = Model()
    t1, t2, to = m.tensor(shape, I16, s1, 0), m.tensor(shape, I16, s2, 0), m.tensor(shape, I16, so, 0)
    o = S.AddOptionsT()
    o.fusedActivationFunction, o.potScaleInt16 = ACT[act], False
    return m.build_ops([(OP.ADD, OPT.AddOptions, o, [t1, t2], [to])], [t1, t2], [to]), [a, b]


def quantize16(rng, *, src: str, dst: str, shape=(1, 4, 5, 3)):
    """QUANTIZE from `src` ("float", "int8", "int16") to `dst` ("int8", "int16")."""
    types = {"float": FLOAT, "int8": I8, "int16": I16}
    m = Model()
    if src == "float":
        x = rng.normal(0, 3.0, shape).astype(F32)
        x.reshape(-1)[:4] = [0.0, -1e6, 1e6, 0.5]  # saturation and a tie
        ti = m.tensor(shape, FLOAT, 1.0, 0)
        m.tensors[ti].quantization = None
    elif src == "int8":
        x = rng.integers(-128, 128, shape).astype(np.int8)
        ti = m.tensor(shape, I8, F32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128)))
    else:
        x = i16(rng, shape)
        ti = m.tensor(shape, I16, F32(rng.uniform(1e-4, 1e-3)), 0)
    scale = F32(rng.uniform(1e-4, 1e-3)) if dst == "int16" else F32(rng.uniform(0.01, 0.05))
    to = m.tensor(shape, types[dst], scale, 0 if dst == "int16" else int(rng.integers(-128, 128)))
    return m.build_ops([(OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [ti], [to])], [ti], [to]), [x]


def dequantize16(rng, *, shape=(1, 4, 5, 3)):
    """DEQUANTIZE int16 -> float32."""
    x = i16(rng, shape)
    m = Model()
    ti = m.tensor(shape, I16, F32(rng.uniform(1e-4, 1e-3)), 0)
    to = m.tensor(shape, FLOAT, 1.0, 0)
    m.tensors[to].quantization = None
    return m.build_ops([(OP.DEQUANTIZE, 0, None, [ti], [to])], [ti], [to]), [x]


def single_op_cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """name -> (model, inputs): the 16x8 single-op sweep, each case seeded by its position."""
    specs = {
        "conv_same": (conv16, {}),
        "conv_valid_stride": (conv16, dict(h=9, w=8, k=(3, 2), s=(2, 2), same=False)),
        "conv_dilated_relu": (conv16, dict(h=8, w=8, d=(2, 2), act="relu", cin=4, cout=6)),
        "conv_relu6_per_tensor": (conv16, dict(act="relu6", per_tensor=True)),
        "conv_1x1_no_bias": (conv16, dict(k=(1, 1), bias=False, cin=8, cout=3)),
        "conv_big_bias": (conv16, dict(big_bias=True, scales=(F32(2e-4), F32(100.0)))),
        "conv_relu_n1_to_1": (conv16, dict(act="relu_n1_to_1")),
        "dw_same": (conv16, dict(depthwise=True, cin=3, cout=3)),
        "dw_mult2_stride": (conv16, dict(depthwise=True, cin=3, cout=6, s=(2, 1), h=9, w=7)),
        "dw_valid_relu_dilated": (conv16, dict(depthwise=True, cin=5, cout=5, same=False, act="relu", h=9, w=9,
                                               d=(2, 1))),
        # (no int16 depthwise case without a bias: TFLM's kernel crashes there, tflite-micro 0.dev20261023)
        "dw_per_tensor": (conv16, dict(depthwise=True, cin=4, cout=4, per_tensor=True)),
        "fc": (fc16, {}),
        "fc_per_channel_relu": (fc16, dict(per_tensor=False, act="relu")),
        "fc_rank4_no_bias": (fc16, dict(in_shape=(1, 2, 3, 4), k=24, bias=False)),
        "add": (add16, {}),
        "add_relu": (add16, dict(act="relu", shape=(2, 7))),
        "add_same_scales": (add16, dict(scales=(F32(3e-4), F32(3e-4), F32(6e-4)))),
        "quantize_float_int16": (quantize16, dict(src="float", dst="int16")),
        "quantize_int8_int16": (quantize16, dict(src="int8", dst="int16")),
        "quantize_int16_int8": (quantize16, dict(src="int16", dst="int8")),
        "quantize_int16_int16": (quantize16, dict(src="int16", dst="int16")),
        "dequantize_int16": (dequantize16, {}),
    }
    return {name: fn(np.random.default_rng(100 + i), **kw) for i, (name, (fn, kw)) in enumerate(specs.items())}


def net16(seed: int = 7) -> tuple[bytes, np.ndarray]:
    """A small 16x8 conv net with float I/O: x [1,8,8,3] float -> QUANTIZE int16 -> CONV_2D 3x3 relu
    (8 ch) -> DEPTHWISE_CONV_2D 3x3 stride 2 relu6 -> CONV_2D 1x1 (8 ch) -> ADD (residual with the
    depthwise output) -> FULLY_CONNECTED (rank-4 input, 5 outputs) -> DEQUANTIZE float [1, 5].
    Returns (model bytes, the float input samples [4, 1, 8, 8, 3])."""
    rng = np.random.default_rng(seed)
    m = Model()
    s_x, s_c1, s_dw, s_c2, s_add, s_fc = (F32(v) for v in (1 / 8192, 2e-3, 2e-4, 1e-3, 1.2e-3, 2e-2))

    def weights(shape, scales, qdim):
        return m.tensor(shape, I8, scales, [0] * len(scales), rng.integers(-127, 128, shape).astype(np.int8), qdim)

    def bias(n, s_in, s_w):
        return m.tensor([n], I64, s_w.astype(np.float64) * float(s_in), [0] * len(s_w),
                        rng.integers(-2**20, 2**20, n).astype(np.int64))

    x = m.tensor((1, 8, 8, 3), FLOAT, 1.0, 0)
    m.tensors[x].quantization = None
    xq = m.tensor((1, 8, 8, 3), I16, s_x, 0)
    w1s = rng.uniform(0.005, 0.02, 8).astype(F32)
    w1, b1 = weights((8, 3, 3, 3), w1s, 0), bias(8, s_x, w1s)
    c1 = m.tensor((1, 8, 8, 8), I16, s_c1, 0)
    wds = rng.uniform(0.005, 0.02, 8).astype(F32)
    wd, bd = weights((1, 3, 3, 8), wds, 3), bias(8, s_c1, wds)
    dw = m.tensor((1, 4, 4, 8), I16, s_dw, 0)
    w2s = rng.uniform(0.005, 0.02, 8).astype(F32)
    w2, b2 = weights((8, 1, 1, 8), w2s, 0), bias(8, s_dw, w2s)
    c2 = m.tensor((1, 4, 4, 8), I16, s_c2, 0)
    add = m.tensor((1, 4, 4, 8), I16, s_add, 0)
    wfs = np.full(1, 0.01, F32)
    wf, bf = weights((5, 128), wfs, 0), bias(5, s_add, wfs)
    fc = m.tensor((1, 5), I16, s_fc, 0)
    y = m.tensor((1, 5), FLOAT, 1.0, 0)
    m.tensors[y].quantization = None
    o1, o2 = S.Conv2DOptionsT(), S.Conv2DOptionsT()
    o1.padding, o1.strideH, o1.strideW, o1.fusedActivationFunction = S.Padding.SAME, 1, 1, ACT["relu"]
    o2.padding, o2.strideH, o2.strideW = S.Padding.VALID, 1, 1
    od = S.DepthwiseConv2DOptionsT()
    od.padding, od.strideH, od.strideW, od.depthMultiplier, od.fusedActivationFunction = S.Padding.SAME, 2, 2, 1, ACT["relu6"]
    oa = S.AddOptionsT()
    oa.potScaleInt16 = False
    ops = [(OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [x], [xq]),
           (OP.CONV_2D, OPT.Conv2DOptions, o1, [xq, w1, b1], [c1]),
           (OP.DEPTHWISE_CONV_2D, OPT.DepthwiseConv2DOptions, od, [c1, wd, bd], [dw]),
           (OP.CONV_2D, OPT.Conv2DOptions, o2, [dw, w2, b2], [c2]),
           (OP.ADD, OPT.AddOptions, oa, [c2, dw], [add]),
           (OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, S.FullyConnectedOptionsT(), [add, wf, bf], [fc]),
           (OP.DEQUANTIZE, 0, None, [fc], [y])]
    samples = rng.uniform(-3.5, 3.5, (4, 1, 8, 8, 3)).astype(F32)
    return m.build_ops(ops, [x], [y]), samples
