"""Generated single-op (and small multi-op) int8 .tflite models for test_tflite.py, written with the
colleague's flatbuffer builder from tests/ops/test_vs_tflm.py (`_Model`, object API of tflite_micro's
schema module). Each case is (model bytes, [int8 inputs]); the expected values come from TFLM.

The sweep covers what the TFLite frontend maps: padding SAME (odd pixel at the end) and VALID,
strides, dilations, odd sizes, channel counts that are not multiples of 4, zero points -128/127,
fused activations, depth multipliers, per-tensor and per-channel weights, absent bias, FC inputs
of rank > 2 and keep_num_dims, and one FC case whose bias puts accumulators exactly where TFLM's
float32 multiplier rule and the all-double rule disagree.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from toolchain.ops.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier


def _colleague_module():
    """tests/ops/test_vs_tflm.py, imported under the name pytest gives it (no second copy)."""
    mod = sys.modules.get("test_vs_tflm")
    if mod is None:
        path = Path(__file__).resolve().parents[1] / "ops" / "test_vs_tflm.py"
        spec = importlib.util.spec_from_file_location("test_vs_tflm", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["test_vs_tflm"] = mod
        spec.loader.exec_module(mod)
    return mod


_vs = _colleague_module()
S, F32 = _vs.S, np.float32
ACT = {"none": 0, "relu": 1, "relu_n1_to_1": 2, "relu6": 3}


class Model(_vs._Model):
    """The colleague's one-subgraph builder, extended to several operators."""

    def build_ops(self, ops: list[tuple], graph_inputs: list[int], graph_outputs: list[int]) -> bytes:
        """ops: (builtin code, options type, options, inputs, outputs) in execution order."""
        codes = sorted({op[0] for op in ops})
        operators = []
        for code, otype, opts, ins, outs in ops:
            o = S.OperatorT()
            o.opcodeIndex, o.inputs, o.outputs = codes.index(code), list(ins), list(outs)
            o.builtinOptionsType, o.builtinOptions = otype, opts
            operators.append(o)
        opcodes = []
        for c in codes:
            oc = S.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = c, min(c, 127), 1
            opcodes.append(oc)
        sg = S.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs, sg.operators = self.tensors, graph_inputs, graph_outputs, operators
        m = S.ModelT()
        m.version, m.operatorCodes, m.subgraphs, m.buffers = 3, opcodes, [sg], self.buffers
        b = _vs.flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _i8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _zp(rng) -> int:
    return int(rng.choice([-128, 127, int(rng.integers(-128, 128))]))


def _out_size(size: int, k: int, s: int, d: int, same: bool) -> int:
    return -(-size // s) if same else (size - (k - 1) * d - 1) // s + 1


def conv_case(rng, *, h, w, cin, cout, k, s=(1, 1), d=(1, 1), same=True, act="none", depthwise=False,
              per_tensor=False, bias=True, groups=1):
    mult = cout // cin if depthwise else 1
    oh, ow = _out_size(h, k[0], s[0], d[0], same), _out_size(w, k[1], s[1], d[1], same)
    xs, ys = F32(rng.uniform(0.01, 0.1)), F32(rng.uniform(0.02, 0.3))
    ws = rng.uniform(0.001, 0.02, 1 if per_tensor else cout).astype(F32)
    x = _i8(rng, (1, h, w, cin))
    wq = rng.integers(-127, 128, (1, *k, cout) if depthwise else (cout, *k, cin // groups)).astype(np.int8)
    m = Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, xs, _zp(rng))
    tw = m.tensor(wq.shape, S.TensorType.INT8, ws, [0] * len(ws), wq, qdim=3 if depthwise else 0)
    tb = m.tensor([cout], S.TensorType.INT32, ws.astype(np.float64) * float(xs), [0] * len(ws),
                  np.zeros(cout, np.int32) if bias == "zeros" else rng.integers(-3000, 3000, cout).astype(np.int32)
                  ) if bias else -1
    to = m.tensor((1, oh, ow, cout), S.TensorType.INT8, ys, _zp(rng))
    o = S.DepthwiseConv2DOptionsT() if depthwise else S.Conv2DOptionsT()
    if depthwise:
        o.depthMultiplier = mult
    o.padding, o.strideH, o.strideW = (S.Padding.SAME if same else S.Padding.VALID), *s
    o.dilationHFactor, o.dilationWFactor, o.fusedActivationFunction = *d, ACT[act]
    code, otype = ((S.BuiltinOperator.DEPTHWISE_CONV_2D, S.BuiltinOptions.DepthwiseConv2DOptions) if depthwise
                   else (S.BuiltinOperator.CONV_2D, S.BuiltinOptions.Conv2DOptions))
    return m.build(code, otype, o, [ti, tw, tb], [to], [ti]), [x]


def fc_case(rng, *, b=1, k=16, o=5, per_tensor=True, in_shape=None, keep_num_dims=False, act="none",
            bias=True, scales=None, bias_values=None, x=None, wq=None, wzp=0):
    xs, ws, ys = scales or (F32(rng.uniform(0.01, 0.1)), F32(rng.uniform(0.001, 0.02)), F32(rng.uniform(0.05, 0.5)))
    wsc = np.full(1, ws, F32) if per_tensor else rng.uniform(0.001, 0.02, o).astype(F32)
    in_shape = in_shape or (b, k)
    x = _i8(rng, in_shape) if x is None else x
    wq = rng.integers(-127, 128, (o, k)).astype(np.int8) if wq is None else wq
    bv = rng.integers(-3000, 3000, o).astype(np.int32) if bias_values is None else bias_values
    rows = x.size // k
    out_shape = (*in_shape[:-1], o) if keep_num_dims else (rows, o)
    m = Model()
    ti = m.tensor(in_shape, S.TensorType.INT8, xs, _zp(rng) if bias_values is None else 5)
    tw = m.tensor(wq.shape, S.TensorType.INT8, wsc, [wzp] * len(wsc), wq)  # wzp: TFLite FC allows a filter zero point
    tb = m.tensor([o], S.TensorType.INT32, wsc.astype(np.float64) * float(xs), [0] * len(wsc), bv) if bias else -1
    to = m.tensor(out_shape, S.TensorType.INT8, ys, _zp(rng) if bias_values is None else -3)
    opts = S.FullyConnectedOptionsT()
    opts.fusedActivationFunction, opts.keepNumDims = ACT[act], keep_num_dims
    return m.build(S.BuiltinOperator.FULLY_CONNECTED, S.BuiltinOptions.FullyConnectedOptions, opts,
                   [ti, tw, tb], [to], [ti]), [x]


def fc_rule_case(rng):
    """Per-tensor FC whose bias places accumulators where TFLM's multiplier, from the float32
    product float(s_in * s_w), and the all-double product give different outputs."""
    k, o, x_zp, y_zp = 4, 8, 5, -3
    for _ in range(100):
        # small real multipliers (large accumulators) make the two rules disagree more often
        xs, ws, ys = F32(rng.uniform(0.01, 0.1)), F32(rng.uniform(1e-4, 1e-3)), F32(rng.uniform(0.5, 2.0))
        mt, st = quantize_multiplier(float(xs * ws) / float(ys))          # TFLM: float32 product
        me, se = quantize_multiplier(float(xs) * float(ws) / float(ys))  # double product
        if (mt, st) == (me, se):
            continue
        # accumulators around every output rounding boundary (n + 1/2) / real, n in [-100, 100)
        centers = np.round((np.arange(-100, 100) + 0.5) * ys / (float(xs) * float(ws))).astype(np.int64)
        acc = (centers[:, None] + np.arange(-64, 65)[None, :]).ravel()
        yt = multiply_by_quantized_multiplier(acc, mt, st) + y_zp
        ye = multiply_by_quantized_multiplier(acc, me, se) + y_zp
        hits = np.unique(acc[yt != ye])
        if hits.size >= o:
            break
    else:
        raise AssertionError("no scale triple separates the two multiplier rules")
    targets = rng.choice(hits, o, replace=False)
    x = _i8(rng, (1, k))
    wq = rng.integers(-127, 128, (o, k)).astype(np.int8)
    dot = (x.astype(np.int64) - x_zp) @ wq.astype(np.int64).T
    bias = (targets - dot[0]).astype(np.int32)
    return fc_case(rng, k=k, o=o, scales=(xs, ws, ys), bias_values=bias, x=x, wq=wq)


def pool_case(rng, *, avg, h, w, c, k, s, same=True, act="none"):
    oh, ow = _out_size(h, k[0], s[0], 1, same), _out_size(w, k[1], s[1], 1, same)
    sc, z = F32(rng.uniform(0.01, 0.2)), _zp(rng)
    x = _i8(rng, (1, h, w, c))
    m = Model()
    ti = m.tensor(x.shape, S.TensorType.INT8, sc, z)
    to = m.tensor((1, oh, ow, c), S.TensorType.INT8, sc, z)
    o = S.Pool2DOptionsT()
    o.padding, o.strideH, o.strideW = (S.Padding.SAME if same else S.Padding.VALID), *s
    o.filterHeight, o.filterWidth, o.fusedActivationFunction = *k, ACT[act]
    code = S.BuiltinOperator.AVERAGE_POOL_2D if avg else S.BuiltinOperator.MAX_POOL_2D
    return m.build(code, S.BuiltinOptions.Pool2DOptions, o, [ti], [to], [ti]), [x]


def add_case(rng, *, shape, act="none", near_one=False):
    s1, s2, so = (F32(v) for v in rng.uniform(0.01, 0.5, 3))
    if near_one:  # output multiplier 2 max(s1, s2) / (2^20 s_out) just below 1
        so = F32(2 * max(s1, s2) / 2**20 / rng.uniform(0.2, 0.9))
    a, b = _i8(rng, shape), _i8(rng, shape)
    m = Model()
    t1 = m.tensor(shape, S.TensorType.INT8, s1, _zp(rng))
    t2 = m.tensor(shape, S.TensorType.INT8, s2, _zp(rng))
    to = m.tensor(shape, S.TensorType.INT8, so, _zp(rng))
    o = S.AddOptionsT()
    o.fusedActivationFunction = ACT[act]
    return m.build(S.BuiltinOperator.ADD, S.BuiltinOptions.AddOptions, o, [t1, t2], [to], [t1, t2]), [a, b]


def softmax_case(rng, *, shape, beta=1.0):
    s = F32(rng.choice([0.01, 0.05, 0.1, 0.25, 1.0]) * rng.uniform(0.8, 1.2))
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, S.TensorType.INT8, s, _zp(rng))
    to = m.tensor(shape, S.TensorType.INT8, 1 / 256, -128)
    o = S.SoftmaxOptionsT()
    o.beta = beta
    return m.build(S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, o, [ti], [to], [ti]), [x]


def reshape_case(rng, *, shape, new_shape):
    x = _i8(rng, shape)
    m = Model()
    ti = m.tensor(shape, S.TensorType.INT8, F32(0.05), _zp(rng))
    ts = m.tensor([len(new_shape)], S.TensorType.INT32, 1.0, 0, np.array(new_shape, np.int32))
    to = m.tensor(new_shape, S.TensorType.INT8, F32(0.05), m.tensors[ti].quantization.zeroPoint[0])
    m.tensors[ts].quantization = None
    o = S.ReshapeOptionsT()
    o.newShape = list(new_shape)
    return m.build(S.BuiltinOperator.RESHAPE, S.BuiltinOptions.ReshapeOptions, o, [ti, ts], [to], [ti]), [x]


def sweep_cases() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """Every sweep case by name (seeded: the same models every run)."""
    rng = np.random.default_rng(44)
    c: dict[str, tuple[bytes, list[np.ndarray]]] = {}
    conv = dict(
        same_3x3=dict(h=7, w=5, cin=3, cout=5, k=(3, 3)),
        same_s2_even=dict(h=8, w=8, cin=4, cout=6, k=(3, 3), s=(2, 2), act="relu"),
        same_s2_odd_k4=dict(h=9, w=7, cin=3, cout=7, k=(4, 4), s=(2, 2), act="relu6"),
        same_s21=dict(h=6, w=9, cin=2, cout=3, k=(2, 3), s=(2, 1), act="relu_n1_to_1"),
        valid_3x2_s2=dict(h=9, w=6, cin=5, cout=4, k=(3, 2), s=(2, 2), same=False),
        valid_s3=dict(h=11, w=10, cin=1, cout=2, k=(3, 3), s=(3, 3), same=False, act="relu"),
        same_dil2=dict(h=9, w=9, cin=3, cout=4, k=(3, 3), d=(2, 2)),
        valid_dil23=dict(h=10, w=11, cin=2, cout=3, k=(3, 2), d=(2, 3), same=False),
        same_dil_s2=dict(h=10, w=9, cin=3, cout=3, k=(3, 3), s=(2, 2), d=(2, 2), act="relu"),
        pointwise=dict(h=5, w=3, cin=13, cout=11, k=(1, 1)),
        kernel_10x4_s2=dict(h=49, w=10, cin=1, cout=8, k=(10, 4), s=(2, 2), act="relu"),
        per_tensor=dict(h=6, w=6, cin=3, cout=5, k=(3, 3), per_tensor=True),
        no_bias=dict(h=5, w=7, cin=2, cout=3, k=(3, 3), bias=False),
        grouped=dict(h=6, w=5, cin=6, cout=4, k=(3, 3), groups=2),
    )
    for name, kw in conv.items():
        c[f"conv_{name}"] = conv_case(rng, **kw)
    dw = dict(
        m1_same=dict(h=7, w=6, cin=5, cout=5, k=(3, 3)),
        m2_same_s2=dict(h=9, w=8, cin=3, cout=6, k=(3, 3), s=(2, 2), act="relu"),
        m3_valid=dict(h=8, w=7, cin=2, cout=6, k=(3, 2), same=False, act="relu6"),
        m2_dil2=dict(h=9, w=10, cin=3, cout=6, k=(3, 3), d=(2, 2)),
        m1_s2_even=dict(h=10, w=10, cin=7, cout=7, k=(3, 3), s=(2, 2), act="relu"),
        m4_per_tensor=dict(h=5, w=5, cin=1, cout=4, k=(2, 2), per_tensor=True),
        # TFLM segfaults on a depthwise conv without bias: the oracle gets explicit zeros, and
        # test_absent_depthwise_bias compares our bias-less form with it
        m1_zero_bias=dict(h=6, w=5, cin=3, cout=3, k=(3, 3), bias="zeros", act="relu_n1_to_1"),
    )
    for name, kw in dw.items():
        c[f"dwconv_{name}"] = conv_case(rng, depthwise=True, **kw)
    fc = dict(
        per_tensor=dict(k=64, o=10), per_tensor_b3=dict(b=3, k=17, o=7, act="relu"),
        per_tensor_k1=dict(k=1, o=3), per_tensor_o1=dict(k=33, o=1),
        per_channel=dict(k=20, o=6, per_tensor=False, act="relu6"),
        rank4_input=dict(k=24, o=5, in_shape=(1, 1, 1, 24)),
        rank3_input=dict(k=8, o=3, in_shape=(1, 3, 8)),
        keep_num_dims=dict(k=8, o=4, in_shape=(1, 2, 8), keep_num_dims=True),
        no_bias=dict(k=9, o=4, bias=False),
    )
    for name, kw in fc.items():
        c[f"fc_{name}"] = fc_case(rng, **kw)
    c["fc_multiplier_rule"] = fc_rule_case(rng)
    pools = dict(
        same_3x3_s2=dict(h=7, w=8, c=3, k=(3, 3), s=(2, 2)), same_2x2_s2=dict(h=5, w=5, c=5, k=(2, 2), s=(2, 2)),
        same_3x2_s1=dict(h=4, w=6, c=2, k=(3, 2), s=(1, 1), act="relu"),
        same_k_gt_s=dict(h=9, w=7, c=4, k=(3, 3), s=(3, 2)), valid_global=dict(h=5, w=6, c=7, k=(5, 6), s=(5, 6), same=False),
        valid_2x2=dict(h=7, w=6, c=3, k=(2, 2), s=(2, 2), same=False, act="relu6"),
    )
    for name, kw in pools.items():
        for avg in (True, False):
            c[f"{'avg' if avg else 'max'}pool_{name}"] = pool_case(rng, avg=avg, **kw)
    for i, (shape, act, near) in enumerate([((1, 4, 4, 3), "none", False), ((1, 3, 5, 7), "relu", False),
                                            ((1, 2, 3, 16), "none", True), ((1, 10), "relu6", False),
                                            ((1, 5, 1, 9), "none", True)]):
        c[f"add_{i}"] = add_case(rng, shape=shape, act=act, near_one=near)
    for i, (shape, beta) in enumerate([((1, 10), 1.0), ((3, 5), 1.0), ((1, 64), 1.0), ((2, 12), 0.5),
                                       ((1, 1, 2, 7), 1.0)]):
        c[f"softmax_{i}"] = softmax_case(rng, shape=shape, beta=beta)
    c["reshape_flatten"] = reshape_case(rng, shape=(1, 2, 3, 4), new_shape=(1, 24))
    c["reshape_3d"] = reshape_case(rng, shape=(1, 6, 5), new_shape=(2, 3, 5))
    return c
