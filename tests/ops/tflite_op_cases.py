"""Generated single-op .tflite models for the ops of issue 4, written with the flatbuffer object API
of tflite_micro's schema module (the builders of tests/frontend/_tflite_cases.py). Each case is
(model bytes, [inputs]); TFLM computes the expected outputs (tests/ops/conftest.py runs it once).

`sweep(op, full)` gives one op's cases, seeded per op: a representative subset by default and the
whole parameter sweep with full=True (EDGECC_SLOW=1): broadcast shapes, zero points -128 and 127,
channel counts that are not multiples of 4, odd sizes, every option of the op.
"""
from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path

import numpy as np


def _load_cases_module():
    name = "_tflite_cases"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "frontend" / "_tflite_cases.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


_tc = _load_cases_module()
S, Model, ACT = _tc.S, _tc.Model, _tc.ACT
F32 = np.float32
I8, I32, FLOAT = S.TensorType.INT8, S.TensorType.INT32, S.TensorType.FLOAT32
OP, OPT = S.BuiltinOperator, S.BuiltinOptions


def _i8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _zp(rng) -> int:
    return int(rng.choice([-128, 127, int(rng.integers(-128, 128))]))


def _scale(rng, lo=0.005, hi=0.5) -> np.float32:
    return F32(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _ints(m, values) -> int:
    """A constant int32 tensor without quantization (axis, paddings, sizes)."""
    arr = np.asarray(values, np.int32)
    t = m.tensor(arr.shape, I32, 1.0, 0, arr)
    m.tensors[t].quantization = None
    return t


def _one(m, code, otype, opts, ins, out, graph_inputs) -> bytes:
    return m.build_ops([(code, otype, opts, ins, [out])], graph_inputs, [out])


# ---- builders, one per op ----------------------------------------------------------------------
def binary(rng, op: str, a_shape, b_shape, act="none", const_b=False, scales=None):
    s1, s2, so = scales or (_scale(rng), _scale(rng), _scale(rng))
    a, b = _i8(rng, a_shape), _i8(rng, b_shape)
    out = tuple(np.broadcast_shapes(a_shape, b_shape))
    m = Model()
    t1 = m.tensor(a_shape, I8, s1, _zp(rng))
    t2 = m.tensor(b_shape, I8, s2, _zp(rng), b if const_b else None)
    to = m.tensor(out, I8, so, _zp(rng))
    code, otype, opts = {"add": (OP.ADD, OPT.AddOptions, S.AddOptionsT()),
                         "sub": (OP.SUB, OPT.SubOptions, S.SubOptionsT()),
                         "mul": (OP.MUL, OPT.MulOptions, S.MulOptionsT())}[op]
    opts.fusedActivationFunction = ACT[act]
    graph_in = [t1] if const_b else [t1, t2]
    return _one(m, code, otype, opts, [t1, t2], to, graph_in), [a] if const_b else [a, b]


def concat(rng, shapes, axis, same_q=True):
    s, z = _scale(rng), _zp(rng)
    m = Model()
    ts, xs = [], []
    for shp in shapes:
        ts.append(m.tensor(shp, I8, s if same_q else _scale(rng), z if same_q else _zp(rng)))
        xs.append(_i8(rng, shp))
    out = list(shapes[0])
    out[axis] = sum(sh[axis] for sh in shapes)
    to = m.tensor(out, I8, s if same_q else _scale(rng), z if same_q else _zp(rng))
    o = S.ConcatenationOptionsT()
    o.axis = axis
    return _one(m, OP.CONCATENATION, OPT.ConcatenationOptions, o, ts, to, ts), xs


def pad(rng, shape, pads, v2=False):
    s, z = _scale(rng), _zp(rng)
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    tp = _ints(m, pads)
    out = [d + a + b for d, (a, b) in zip(shape, pads)]
    to = m.tensor(out, I8, s, z)
    if v2:
        tc = m.tensor([1], I8, s, z, np.array([int(rng.integers(-128, 128))], np.int8))
        return _one(m, OP.PADV2, OPT.PadV2Options, S.PadV2OptionsT(), [ti, tp, tc], to, [ti]), [x]
    return _one(m, OP.PAD, OPT.PadOptions, S.PadOptionsT(), [ti, tp], to, [ti]), [x]


def mean(rng, shape, axes, keep_dims=True, same_q=False):
    s, z = _scale(rng, 0.01, 0.2), _zp(rng)
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    ta = _ints(m, axes)
    ax = {a % len(shape) for a in axes}
    out = [1 if i in ax else d for i, d in enumerate(shape)] if keep_dims else \
        [d for i, d in enumerate(shape) if i not in ax]
    to = m.tensor(out, I8, s if same_q else _scale(rng, 0.005, 0.2), z if same_q else _zp(rng))
    o = S.ReducerOptionsT()
    o.keepDims = keep_dims
    return _one(m, OP.MEAN, OPT.ReducerOptions, o, [ti, ta], to, [ti]), [x]


def unary(rng, op: str, shape, in_scale=None, alpha=None, out_q=None):
    s, z = in_scale or _scale(rng, 0.01, 0.3), _zp(rng)
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    fixed = {"logistic": (F32(1 / 256), -128), "tanh": (F32(1 / 128), 0),
             "hard_swish": (F32(s * rng.uniform(0.2, 1.2)), _zp(rng))}  # TFLM: output scale > s_in / 128
    so, zo = out_q or fixed.get(op) or (_scale(rng, 0.01, 0.3), _zp(rng))
    to = m.tensor(shape, I8, so, zo)
    code, otype, opts = {"logistic": (OP.LOGISTIC, 0, None), "tanh": (OP.TANH, 0, None),
                         "hard_swish": (OP.HARD_SWISH, OPT.HardSwishOptions, S.HardSwishOptionsT()),
                         "leaky_relu": (OP.LEAKY_RELU, OPT.LeakyReluOptions, S.LeakyReluOptionsT()),
                         "requantize": (OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT())}[op]
    if op == "leaky_relu":
        opts.alpha = alpha
    return _one(m, code, otype, opts, [ti], to, [ti]), [x]


def prelu(rng, shape, alpha_shape):
    x = _i8(rng, shape)
    alpha = _i8(rng, alpha_shape)
    m = Model()
    ti = m.tensor(shape, I8, _scale(rng, 0.01, 0.3), _zp(rng))
    ta = m.tensor(alpha_shape, I8, _scale(rng, 0.001, 0.02), _zp(rng), alpha)
    to = m.tensor(shape, I8, _scale(rng, 0.01, 0.3), _zp(rng))
    return _one(m, OP.PRELU, 0, None, [ti, ta], to, [ti]), [x]


def resize(rng, kind: str, shape, out_hw, align_corners=False, half_pixel=False):
    s, z = _scale(rng), _zp(rng)
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    tsz = _ints(m, out_hw)
    to = m.tensor((shape[0], *out_hw, shape[3]), I8, s, z)
    if kind == "nearest":
        code, otype, o = OP.RESIZE_NEAREST_NEIGHBOR, OPT.ResizeNearestNeighborOptions, S.ResizeNearestNeighborOptionsT()
    else:
        code, otype, o = OP.RESIZE_BILINEAR, OPT.ResizeBilinearOptions, S.ResizeBilinearOptionsT()
    o.alignCorners, o.halfPixelCenters = align_corners, half_pixel
    return _one(m, code, otype, o, [ti, tsz], to, [ti]), [x]


def quantize_float(rng, shape):
    """float32 input -> QUANTIZE -> int8 (a float model input quantized in the graph)."""
    s, z = _scale(rng, 0.005, 0.1), _zp(rng)
    x = (rng.normal(0, 3, shape) * 1.0).astype(np.float32)
    x.flat[:4] = (np.array([0.5, -0.5, 1.5, -2.5]) * s + 0).astype(np.float32)[: min(4, x.size)]  # near ties
    # values one float32 step from (k + 1/2) * s where x / s rounds differently in float32 (TFLM's
    # AffineQuantize) and in double: a double division would be 1 LSB off TFLM on these
    k = np.arange(-60, 60) + 0.5
    cand = np.concatenate([np.nextafter(np.float32(k * s), np.float32(d)) for d in (np.inf, -np.inf)])
    f32 = np.float32(cand) / np.float32(s)
    split = cand[(np.floor(np.abs(f32) + 0.5) != np.floor(np.abs(cand.astype(np.float64) / float(s)) + 0.5))]
    n = min(len(split), max(0, x.size - 4))
    x.flat[4:4 + n] = split[:n]
    m = Model()
    ti = m.tensor(shape, FLOAT, 0.0, 0)
    m.tensors[ti].quantization = None
    to = m.tensor(shape, I8, s, z)
    return _one(m, OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [ti], to, [ti]), [x]


def dequantize(rng, shape):
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, I8, _scale(rng), _zp(rng))
    to = m.tensor(shape, FLOAT, 0.0, 0)
    m.tensors[to].quantization = None
    return _one(m, OP.DEQUANTIZE, OPT.DequantizeOptions, S.DequantizeOptionsT(), [ti], to, [ti]), [x]


# ---- the sweeps --------------------------------------------------------------------------------
BCAST = [((1, 5, 7, 3), (1, 5, 7, 3)), ((1, 4, 6, 13), (1, 1, 1, 13)), ((1, 1, 1, 13), (1, 4, 6, 13)),
         ((1, 4, 6, 5), (5,)), ((2, 3, 1, 7), (1, 1, 5, 1)), ((1, 3, 9), (3, 1)), ((7,), (1,)),
         ((1, 4, 6, 5), (1, 4, 1, 5)), ((2, 1, 3, 4, 5), (1, 4, 3, 1, 1))]


def _binary_sweep(rng, op, full):
    shapes = BCAST if full else BCAST[:5]
    out = {}
    for i, (a, b) in enumerate(shapes):
        if len(a) > 4 and op == "add" and not full:
            continue
        act = ("none", "relu", "relu6", "relu_n1_to_1")[i % 4]
        out[f"{op}_b{i}"] = binary(rng, op, a, b, act)
        if full or i < 2:
            out[f"{op}_const{i}"] = binary(rng, op, a, b, "none", const_b=True)
    if op in ("add", "sub"):  # nearly equal scales, and an output factor near 1
        s = _scale(rng)
        out[f"{op}_near_scales"] = binary(rng, op, (1, 3, 5, 6), (1, 3, 5, 6), scales=(s, F32(s * 1.0001), _scale(rng)))
    return out


def _sweeps():
    def concat_sweep(rng, full):
        cases = [([(1, 4, 5, 3), (1, 4, 5, 7)], 3), ([(1, 3, 5, 2), (1, 2, 5, 2), (1, 1, 5, 2)], 1),
                 ([(2, 5), (2, 3)], 1), ([(1, 3, 3, 13), (1, 3, 3, 5)], -1), ([(3, 4), (2, 4)], 0),
                 ([(1, 2, 3, 5)] * 4, 2)]
        return {f"concat_{i}": concat(rng, s, a % len(s[0])) for i, (s, a) in enumerate(cases if full else cases[:4])}

    def pad_sweep(rng, full):
        cases = [((1, 5, 6, 3), [[0, 0], [1, 1], [2, 1], [0, 0]], False),
                 ((1, 4, 4, 13), [[0, 0], [0, 3], [1, 0], [0, 0]], False),
                 ((1, 3, 7, 5), [[0, 0], [2, 2], [2, 2], [1, 2]], True),
                 ((2, 9), [[1, 0], [3, 4]], False), ((1, 2, 3), [[0, 0], [1, 1], [0, 2]], True)]
        return {f"pad_{i}": pad(rng, s, p, v2) for i, (s, p, v2) in enumerate(cases if full else cases[:3])}

    def mean_sweep(rng, full):
        cases = [((1, 7, 5, 13), [1, 2], True, False), ((1, 7, 5, 13), [1, 2], True, True),
                 ((1, 6, 6, 3), [2, 1], False, False), ((2, 5, 3, 8), [1, 2], True, False),
                 ((1, 49, 10, 1), [1, 2], True, True), ((1, 4, 3, 5), [3], True, False),
                 ((1, 3, 4, 6), [-1], False, True), ((1, 17, 17, 2), [1, 2], False, False),
                 ((3, 6), [0], True, False)]
        return {f"mean_{i}": mean(rng, s, a, k, q) for i, (s, a, k, q) in enumerate(cases if full else cases[:5])}

    def act_sweep(op, **kw):
        def sweep(rng, full):
            scales = [0.002, 0.01, 0.05, 0.1, 0.25, 0.9, 3.0] if full else [0.01, 0.1, 0.9]
            out = {}
            for i, sc in enumerate(scales):
                shape = (1, 3 + i % 3, 5, 13 - i) if i % 2 else (2, 9 + i)
                extra = {"alpha": [0.1, 0.01, 0.3, -0.2, 1.5, 0.0, 0.05][i]} if op == "leaky_relu" else {}
                out[f"{op}_{i}"] = unary(rng, op, shape, in_scale=F32(sc * rng.uniform(0.9, 1.1)), **extra, **kw)
            return out
        return sweep

    def prelu_sweep(rng, full):
        cases = [((1, 4, 5, 13), (1, 1, 13)), ((1, 3, 3, 5), (5,)), ((1, 2, 4, 6), (1, 4, 6)), ((2, 7), (7,))]
        return {f"prelu_{i}": prelu(rng, s, a) for i, (s, a) in enumerate(cases if full else cases[:3])}

    def resize_sweep(kind):
        def sweep(rng, full):
            geo = [((1, 4, 5, 3), (8, 10)), ((1, 5, 3, 13), (7, 8)), ((1, 1, 5, 2), (1, 8)), ((1, 6, 8, 2), (3, 4)),
                   ((2, 3, 3, 1), (5, 7)), ((1, 7, 7, 5), (2, 3))]
            modes = [(False, False), (True, False), (False, True)]
            out = {}
            for i, (shape, hw) in enumerate(geo if full else geo[:4]):
                for j, (ac, hp) in enumerate(modes if full else modes[i % 3:i % 3 + 1]):
                    out[f"resize_{kind}_{i}_{j}"] = resize(rng, kind, shape, hw, ac, hp)
            return out
        return sweep

    def quant_sweep(rng, full):
        shapes = [(1, 3, 4, 5), (7,), (2, 13)] if full else [(1, 3, 4, 5)]
        out = {}
        for i, s in enumerate(shapes):
            out[f"quantize_f32_{i}"] = quantize_float(rng, s)
            out[f"dequantize_{i}"] = dequantize(rng, s)
            out[f"requantize_{i}"] = unary(rng, "requantize", s)
        return out

    return {
        "add": lambda rng, full: _binary_sweep(rng, "add", full),
        "sub": lambda rng, full: _binary_sweep(rng, "sub", full),
        "mul": lambda rng, full: _binary_sweep(rng, "mul", full),
        "concat": concat_sweep, "pad": pad_sweep, "mean": mean_sweep,
        "logistic": act_sweep("logistic"), "tanh": act_sweep("tanh"),
        "hard_swish": act_sweep("hard_swish"), "leaky_relu": act_sweep("leaky_relu"),
        "prelu": prelu_sweep, "resize_nearest": resize_sweep("nearest"), "resize_bilinear": resize_sweep("bilinear"),
        "quantize": quant_sweep,
    }


SWEEPS = _sweeps()


def _random_shape(rng, rank: int) -> tuple[int, ...]:
    return tuple(int(v) for v in rng.integers(1, 8, rank))


def _random_case(op: str, rng):
    """One random case of `op` for the full sweep (broadcast patterns, odd sizes, scales, options)."""
    if op in ("add", "sub", "mul"):
        a = _random_shape(rng, int(rng.integers(1, 5)))
        b = tuple(d if rng.random() < 0.5 else 1 for d in a[len(a) - int(rng.integers(1, len(a) + 1)):])
        a, b = (b, a) if rng.random() < 0.3 else (a, b)
        return binary(rng, op, a, b, ("none", "relu", "relu6")[int(rng.integers(0, 3))], const_b=rng.random() < 0.3)
    if op in ("logistic", "tanh", "hard_swish", "leaky_relu"):
        extra = {"alpha": float(rng.uniform(-0.5, 1.5))} if op == "leaky_relu" else {}
        return unary(rng, op, _random_shape(rng, 4), in_scale=_scale(rng, 0.002, 2.0), **extra)
    if op == "concat":
        base, ax = _random_shape(rng, 4), int(rng.integers(0, 4))
        shapes = [tuple(int(rng.integers(1, 6)) if i == ax else d for i, d in enumerate(base))
                  for _ in range(int(rng.integers(2, 5)))]
        return concat(rng, shapes, ax)
    if op == "pad":
        shape = _random_shape(rng, 4)
        return pad(rng, shape, [[int(v) for v in rng.integers(0, 3, 2)] for _ in shape], v2=rng.random() < 0.5)
    if op == "mean":
        return mean(rng, _random_shape(rng, 4), [1, 2], bool(rng.random() < 0.5), bool(rng.random() < 0.5))
    if op == "prelu":
        shape = _random_shape(rng, 4)
        return prelu(rng, shape, (1, 1, shape[3]))
    if op in ("resize_nearest", "resize_bilinear"):
        ac = bool(rng.random() < 0.3)
        return resize(rng, op.split("_")[1], (1, *_random_shape(rng, 3)), tuple(int(v) for v in rng.integers(1, 12, 2)),
                      ac, not ac and rng.random() < 0.5)
    return None


def sweep(op: str, full: bool = False) -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """One op's cases (seeded by the op name: the same models every run); the full sweep adds 20
    random ones per op."""
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    cases = SWEEPS[op](rng, full)
    if full:
        for i in range(20):
            case = _random_case(op, rng)
            if case is not None:
                cases[f"{op}_random{i}"] = case
    return cases


def all_cases(full: bool = False) -> dict[str, tuple[bytes, list[np.ndarray]]]:
    out = {}
    for op in SWEEPS:
        out.update(sweep(op, full))
    return out
