"""Generated 16x8 .tflite models (int16 activations, zero point 0) of the element-wise, pooling and
data-movement ops: MUL, SUB, ADD with broadcasting, AVERAGE_POOL_2D, MAX_POOL_2D, CONCATENATION, PAD,
PADV2, MEAN and SUM, written with the flatbuffer object API as tflite16_cases.py does. Each builder returns
(model bytes, [inputs]); TFLM computes the expected outputs. The cases take full-range int16 inputs
(both extremes included), scales that make outputs saturate, fused activations, broadcast shapes,
int16 constant operands, SAME / VALID pooling with partial windows and positive MEAN shifts; `mixed_net16`
is a small 16x8 net through every one of them between float edges.
"""
from __future__ import annotations

import numpy as np
from tflite16_cases import I8, I16, I64, i16
from tflite_op_cases import ACT, FLOAT, OP, OPT, Model, S, _ints

F32 = np.float32
_BIN = {"add": (OP.ADD, OPT.AddOptions, S.AddOptionsT), "sub": (OP.SUB, OPT.SubOptions, S.SubOptionsT),
        "mul": (OP.MUL, OPT.MulOptions, S.MulOptionsT)}


def _scales(rng, n: int, lo: float = 1e-4, hi: float = 1e-3) -> tuple:
    return tuple(F32(v) for v in rng.uniform(lo, hi, n))


def binary16(rng, op: str, a_shape, b_shape, *, act="none", scales=None, const_b=False):
    """ADD / SUB / MUL of two int16 tensors (broadcasting; `const_b`: input 2 an int16 constant)."""
    s1, s2, so = scales or _scales(rng, 3)
    if op == "mul" and scales is None:  # s1 s2 / s_out near 2^-15: full-range products mostly in range
        so = F32(float(s1) * float(s2) * rng.uniform(8000, 40000))
    a, b = i16(rng, a_shape), i16(rng, b_shape)
    out = tuple(np.broadcast_shapes(a_shape, b_shape))
    m = Model()
    t1 = m.tensor(a_shape, I16, s1, 0)
    t2 = m.tensor(b_shape, I16, s2, 0, b if const_b else None)
    to = m.tensor(out, I16, so, 0)
    code, otype, ocls = _BIN[op]
    o = ocls()
    o.fusedActivationFunction = ACT[act]
    if op != "mul":
        o.potScaleInt16 = False  # as the TFLite converter writes 16x8 files
    graph_in = [t1] if const_b else [t1, t2]
    return m.build_ops([(code, otype, o, [t1, t2], [to])], graph_in, [to]), [a] if const_b else [a, b]


def pool16(rng, kind: str, *, shape=(1, 7, 6, 3), k=(2, 2), s=(2, 2), same=False, act="none", scale=None):
    """AVERAGE_POOL_2D / MAX_POOL_2D on int16, input and output on one scale."""
    sc = scale or F32(rng.uniform(1e-4, 1e-3))
    n, h, w, c = shape
    oh, ow = ((-(-h // s[0]), -(-w // s[1])) if same else ((h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1))
    x = i16(rng, shape)
    m = Model()
    ti, to = m.tensor(shape, I16, sc, 0), m.tensor((n, oh, ow, c), I16, sc, 0)
    o = S.Pool2DOptionsT()
    o.padding, o.strideH, o.strideW = (S.Padding.SAME if same else S.Padding.VALID), *s
    o.filterHeight, o.filterWidth, o.fusedActivationFunction = *k, ACT[act]
    code = OP.AVERAGE_POOL_2D if kind == "avg" else OP.MAX_POOL_2D
    return m.build_ops([(code, OPT.Pool2DOptions, o, [ti], [to])], [ti], [to]), [x]


def concat16(rng, shapes, axis: int, *, const_last=False, scales=None):
    """CONCATENATION of int16 tensors along `axis` (all on the output's scale unless `scales`)."""
    sc = F32(rng.uniform(1e-4, 1e-3))
    m = Model()
    ts, xs = [], []
    for i, shp in enumerate(shapes):
        x = i16(rng, shp)
        const = const_last and i == len(shapes) - 1
        ts.append(m.tensor(shp, I16, scales[i] if scales else sc, 0, x if const else None))
        if not const:
            xs.append(x)
    out = list(shapes[0])
    out[axis] = sum(sh[axis] for sh in shapes)
    to = m.tensor(out, I16, sc, 0)
    o = S.ConcatenationOptionsT()
    o.axis = axis
    graph_in = ts[:-1] if const_last else ts
    return m.build_ops([(OP.CONCATENATION, OPT.ConcatenationOptions, o, ts, [to])], graph_in, [to]), xs


def pad16(rng, shape, pads, *, v2=False, value=None):
    """PAD (pad value 0) or PADV2 (an int16 constant on the output's scale) of an int16 tensor."""
    sc = F32(rng.uniform(1e-4, 1e-3))
    x = i16(rng, shape)
    m = Model()
    ti, tp = m.tensor(shape, I16, sc, 0), _ints(m, pads)
    to = m.tensor([d + a + b for d, (a, b) in zip(shape, pads, strict=True)], I16, sc, 0)
    if v2:
        v = int(rng.integers(-32768, 32768)) if value is None else value
        tc = m.tensor([1], I16, sc, 0, np.array([v], np.int16))
        return m.build_ops([(OP.PADV2, OPT.PadV2Options, S.PadV2OptionsT(), [ti, tp, tc], [to])], [ti], [to]), [x]
    return m.build_ops([(OP.PAD, OPT.PadOptions, S.PadOptionsT(), [ti, tp], [to])], [ti], [to]), [x]


def mean16(rng, shape, axes, *, keep_dims=True, scales=None, lo=-32768, op="mean"):
    """MEAN (op "sum": SUM) of an int16 tensor over `axes` (inputs drawn from [lo, 32767])."""
    s_in, s_out = scales or _scales(rng, 2)
    x = i16(rng, shape, lo)
    m = Model()
    ti, ta = m.tensor(shape, I16, s_in, 0), _ints(m, axes)
    ax = {a % len(shape) for a in axes}
    out = [1 if i in ax else d for i, d in enumerate(shape)] if keep_dims else \
        [d for i, d in enumerate(shape) if i not in ax]
    to = m.tensor(out, I16, s_out, 0)
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    code = OP.MEAN if op == "mean" else OP.SUM
    return m.build_ops([(code, OPT.ReducerOptions, o, [ti, ta], [to])], [ti], [to]), [x]


def op_cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """name -> (model, inputs) of every single-op case (fixed seeds)."""
    big = (F32(1e-3), F32(1e-3), F32(2e-4))  # output scale below the inputs': many outputs saturate
    specs = {
        "mul": (binary16, dict(op="mul", a_shape=(1, 5, 4, 3), b_shape=(1, 5, 4, 3))),
        "mul_bcast_channel": (binary16, dict(op="mul", a_shape=(1, 4, 6, 5), b_shape=(1, 1, 1, 5))),
        "mul_bcast_both": (binary16, dict(op="mul", a_shape=(2, 4, 1, 3), b_shape=(1, 1, 5, 3), act="relu")),
        "mul_const": (binary16, dict(op="mul", a_shape=(1, 3, 3, 4), b_shape=(4,), const_b=True)),
        "mul_saturating": (binary16, dict(op="mul", a_shape=(3, 17), b_shape=(3, 17),
                                          scales=(F32(1e-3), F32(2e-3), F32(1e-4)))),
        "mul_relu6": (binary16, dict(op="mul", a_shape=(1, 6, 6, 2), b_shape=(1, 6, 6, 2), act="relu6",
                                     scales=(F32(3e-3), F32(3e-3), F32(2e-3)))),
        "sub": (binary16, dict(op="sub", a_shape=(1, 5, 4, 3), b_shape=(1, 5, 4, 3))),
        "sub_bcast": (binary16, dict(op="sub", a_shape=(1, 4, 6, 5), b_shape=(1, 4, 1, 5), act="relu")),
        "sub_saturating": (binary16, dict(op="sub", a_shape=(2, 9), b_shape=(9,), scales=big)),
        "sub_const": (binary16, dict(op="sub", a_shape=(1, 2, 3, 4), b_shape=(1, 1, 1, 4), const_b=True)),
        "add_bcast_channel": (binary16, dict(op="add", a_shape=(1, 3, 4, 5), b_shape=(1, 1, 1, 5))),
        "add_bcast_rank": (binary16, dict(op="add", a_shape=(2, 7), b_shape=(7,), act="relu")),
        "add_bcast_both": (binary16, dict(op="add", a_shape=(1, 4, 1, 3), b_shape=(1, 1, 5, 3), scales=big)),
        "add_bcast_first": (binary16, dict(op="add", a_shape=(1, 1, 1, 6), b_shape=(2, 3, 2, 6))),
        "add_const_bias": (binary16, dict(op="add", a_shape=(1, 3, 3, 4), b_shape=(4,), const_b=True)),
        "avgpool_valid": (pool16, dict(kind="avg")),
        "avgpool_same_3x3": (pool16, dict(kind="avg", shape=(2, 7, 5, 4), k=(3, 3), s=(1, 1), same=True)),
        "avgpool_same_s2_relu": (pool16, dict(kind="avg", shape=(1, 9, 8, 3), k=(3, 3), s=(2, 2), same=True,
                                              act="relu")),
        "avgpool_global": (pool16, dict(kind="avg", shape=(1, 11, 13, 5), k=(11, 13), s=(1, 1))),
        "maxpool_valid": (pool16, dict(kind="max")),
        "maxpool_same_3x3_s2": (pool16, dict(kind="max", shape=(1, 9, 8, 6), k=(3, 3), s=(2, 2), same=True)),
        "maxpool_relu6": (pool16, dict(kind="max", shape=(1, 6, 6, 2), k=(2, 3), s=(1, 2), act="relu6",
                                       scale=F32(2e-4))),
        "concat_channels": (concat16, dict(shapes=[(1, 3, 4, 2), (1, 3, 4, 5), (1, 3, 4, 1)], axis=3)),
        "concat_rows": (concat16, dict(shapes=[(1, 2, 4, 3), (1, 5, 4, 3)], axis=1)),
        "concat_negative_axis": (concat16, dict(shapes=[(2, 3), (2, 7)], axis=-1)),
        "concat_const": (concat16, dict(shapes=[(1, 2, 2, 3), (1, 2, 2, 2)], axis=3, const_last=True)),
        "pad_hw": (pad16, dict(shape=(1, 4, 5, 3), pads=[(0, 0), (1, 2), (2, 1), (0, 0)])),
        "pad_channels": (pad16, dict(shape=(1, 3, 3, 2), pads=[(0, 0), (0, 0), (0, 0), (1, 3)])),
        "pad_rank2": (pad16, dict(shape=(3, 4), pads=[(1, 0), (2, 2)])),
        "padv2_value": (pad16, dict(shape=(1, 4, 4, 2), pads=[(0, 0), (1, 1), (1, 1), (0, 0)], v2=True)),
        "padv2_min": (pad16, dict(shape=(2, 3, 3, 1), pads=[(1, 0), (0, 1), (1, 0), (0, 2)], v2=True,
                                  value=-32768)),
        "mean_hw": (mean16, dict(shape=(1, 5, 6, 4), axes=[1, 2])),
        "mean_hw_flat": (mean16, dict(shape=(2, 4, 3, 5), axes=[1, 2], keep_dims=False)),
        "mean_channels": (mean16, dict(shape=(1, 3, 4, 7), axes=[3])),
        "mean_positive_shift": (mean16, dict(shape=(1, 2, 2, 6), axes=[1, 2], scales=(F32(1e-3), F32(2e-4)))),
        "mean_large_values": (mean16, dict(shape=(1, 4, 4, 3), axes=[1, 2], lo=16000,
                                           scales=(F32(5e-4), F32(7e-4)))),
        "sum_hw": (mean16, dict(shape=(1, 3, 4, 5), axes=[1, 2], op="sum", scales=(F32(1e-4), F32(8e-4)))),
        "sum_channels_flat": (mean16, dict(shape=(2, 3, 6), axes=[2], keep_dims=False, op="sum",
                                           scales=(F32(2e-4), F32(2e-4)))),
    }
    return {name: fn(np.random.default_rng(300 + i), **kw) for i, (name, (fn, kw)) in enumerate(specs.items())}


def mixed_net16(seed: int = 11) -> tuple[bytes, np.ndarray]:
    """A small 16x8 net with float I/O, every activation int16 (zero point 0): x [1,8,8,3] float ->
    QUANTIZE -> CONV_2D 3x3 relu (6 ch) -> PAD 1 px -> MAX_POOL_2D 2x2 s2 -> AVERAGE_POOL_2D 3x3 SAME ->
    CONCATENATION (max pool, avg pool: 12 ch) -> MUL by an int16 per-channel constant (broadcast) ->
    ADD of an int16 [1,1,1,12] constant (broadcast) -> MEAN over H, W -> FULLY_CONNECTED (5) ->
    DEQUANTIZE float [1, 5]. Returns (model bytes, float input samples [4, 1, 8, 8, 3])."""
    rng = np.random.default_rng(seed)
    m = Model()
    s_x, s_c, s_cat, s_mul, s_add, s_mean, s_fc = (F32(v) for v in (1 / 8192, 1.5e-3, 1.5e-3, 2e-3, 2.5e-3,
                                                                     1.2e-3, 1e-2))
    x = m.tensor((1, 8, 8, 3), FLOAT, 1.0, 0)
    m.tensors[x].quantization = None
    xq = m.tensor((1, 8, 8, 3), I16, s_x, 0)
    ws = rng.uniform(0.005, 0.02, 6).astype(F32)
    w = m.tensor((6, 3, 3, 3), I8, ws, [0] * 6, rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8))
    bias = m.tensor([6], I64, ws.astype(np.float64) * float(s_x), [0] * 6,
                    rng.integers(-2**20, 2**20, 6).astype(np.int64))
    c1 = m.tensor((1, 8, 8, 6), I16, s_c, 0)
    padded = m.tensor((1, 10, 10, 6), I16, s_c, 0)
    mp = m.tensor((1, 5, 5, 6), I16, s_c, 0)
    ap = m.tensor((1, 5, 5, 6), I16, s_c, 0)
    cat = m.tensor((1, 5, 5, 12), I16, s_cat, 0)
    gain = m.tensor((12,), I16, F32(1 / 16384), 0, rng.integers(8000, 24000, 12).astype(np.int16))
    mul = m.tensor((1, 5, 5, 12), I16, s_mul, 0)
    shift = m.tensor((1, 1, 1, 12), I16, F32(1e-3), 0, rng.integers(-3000, 3000, (1, 1, 1, 12)).astype(np.int16))
    add = m.tensor((1, 5, 5, 12), I16, s_add, 0)
    mean = m.tensor((1, 12), I16, s_mean, 0)
    wf = m.tensor((5, 12), I8, np.full(1, 0.01, F32), [0], rng.integers(-127, 128, (5, 12)).astype(np.int8))
    bf = m.tensor([5], I64, np.full(1, 0.01 * float(s_mean)), [0], rng.integers(-2**16, 2**16, 5).astype(np.int64))
    fc = m.tensor((1, 5), I16, s_fc, 0)
    y = m.tensor((1, 5), FLOAT, 1.0, 0)
    m.tensors[y].quantization = None
    oc = S.Conv2DOptionsT()
    oc.padding, oc.strideH, oc.strideW, oc.fusedActivationFunction = S.Padding.SAME, 1, 1, ACT["relu"]
    omp, oap = S.Pool2DOptionsT(), S.Pool2DOptionsT()
    omp.padding, omp.strideH, omp.strideW, omp.filterHeight, omp.filterWidth = S.Padding.VALID, 2, 2, 2, 2
    oap.padding, oap.strideH, oap.strideW, oap.filterHeight, oap.filterWidth = S.Padding.SAME, 1, 1, 3, 3
    ocat = S.ConcatenationOptionsT()
    ocat.axis = 3
    oadd = S.AddOptionsT()
    oadd.potScaleInt16 = False
    om = S.ReducerOptionsT()
    om.keepDims = False
    ops = [(OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [x], [xq]),
           (OP.CONV_2D, OPT.Conv2DOptions, oc, [xq, w, bias], [c1]),
           (OP.PAD, OPT.PadOptions, S.PadOptionsT(), [c1, _ints(m, [(0, 0), (1, 1), (1, 1), (0, 0)])], [padded]),
           (OP.MAX_POOL_2D, OPT.Pool2DOptions, omp, [padded], [mp]),
           (OP.AVERAGE_POOL_2D, OPT.Pool2DOptions, oap, [mp], [ap]),
           (OP.CONCATENATION, OPT.ConcatenationOptions, ocat, [mp, ap], [cat]),
           (OP.MUL, OPT.MulOptions, S.MulOptionsT(), [cat, gain], [mul]),
           (OP.ADD, OPT.AddOptions, oadd, [mul, shift], [add]),
           (OP.MEAN, OPT.ReducerOptions, om, [add, _ints(m, [1, 2])], [mean]),
           (OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, S.FullyConnectedOptionsT(), [mean, wf, bf], [fc]),
           (OP.DEQUANTIZE, 0, None, [fc], [y])]
    samples = rng.uniform(-3.5, 3.5, (4, 1, 8, 8, 3)).astype(F32)
    return m.build_ops(ops, [x], [y]), samples
