"""TransposeConv (ops/transpose_conv.py): TFLite TRANSPOSE_CONV vs TFLM (SAME/VALID, strides, odd
sizes, per-channel and per-tensor weights, absent bias, zero points -128/127, fused activations)
through our interpreter and the portable C kernel; the padding rule; ONNX ConvTranspose vs
onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import ACT, I8, I32, OP, OPT, F32, S, Model, _i8, _ints, _one

from toolchain.frontend.tflite_ops_reduce import transpose_conv_pad
from toolchain.ops.transpose_conv import transpose_conv_s8

RNG = np.random.default_rng(29)


def tconv_case(rng, *, h, w, cin, cout, k, s, same=True, out_hw=None, act="none", per_tensor=False, bias=True,
               zps=None):
    oh, ow = out_hw or ((h * s[0], w * s[1]) if same else ((h - 1) * s[0] + k[0], (w - 1) * s[1] + k[1]))
    xs, ys = F32(rng.uniform(0.01, 0.1)), F32(rng.uniform(0.02, 0.3))
    ws = rng.uniform(0.001, 0.02, 1 if per_tensor else cout).astype(F32)
    zx, zy = zps or (int(rng.integers(-128, 128)), int(rng.integers(-128, 128)))
    x = _i8(rng, (1, h, w, cin))
    wq = rng.integers(-127, 128, (cout, *k, cin)).astype(np.int8)
    m = Model()
    tshape = _ints(m, [1, oh, ow, cout])
    tw = m.tensor(wq.shape, I8, ws, [0] * len(ws), wq, qdim=0)
    ti = m.tensor(x.shape, I8, xs, zx)
    tb = m.tensor([cout], I32, ws.astype(np.float64) * float(xs), [0] * len(ws),
                  rng.integers(-4000, 4000, cout).astype(np.int32)) if bias else -1
    to = m.tensor((1, oh, ow, cout), I8, ys, zy)
    o = S.TransposeConvOptionsT()
    o.padding = S.Padding.SAME if same else S.Padding.VALID
    o.strideH, o.strideW = s
    o.fusedActivationFunction = ACT[act]
    ins = [tshape, tw, ti] + ([tb] if bias else [])
    return _one(m, OP.TRANSPOSE_CONV, OPT.TransposeConvOptions, o, ins, to, [ti]), [x]


def _cases():
    r = np.random.default_rng(7)
    specs = {
        "s2_same_3x3": dict(h=4, w=5, cin=3, cout=5, k=(3, 3), s=(2, 2)),
        "s2_valid_3x3": dict(h=3, w=4, cin=4, cout=3, k=(3, 3), s=(2, 2), same=False),
        "s1_same_odd": dict(h=5, w=3, cin=7, cout=6, k=(3, 3), s=(1, 1)),
        "s2_k2_zp_min": dict(h=4, w=4, cin=8, cout=4, k=(2, 2), s=(2, 2), zps=(-128, -128)),
        "s2_k4_zp_max": dict(h=3, w=3, cin=5, cout=7, k=(4, 4), s=(2, 2), zps=(127, 127)),
        "s3_k3_rect": dict(h=2, w=3, cin=3, cout=2, k=(3, 2), s=(3, 2), same=False),
        "s2_1x2_strides": dict(h=3, w=4, cin=2, cout=3, k=(3, 3), s=(1, 2)),
        "per_tensor": dict(h=4, w=4, cin=6, cout=5, k=(3, 3), s=(2, 2), per_tensor=True),
        "no_bias": dict(h=3, w=5, cin=4, cout=4, k=(3, 3), s=(2, 2), bias=False),
        "relu": dict(h=4, w=4, cin=4, cout=6, k=(3, 3), s=(2, 2), act="relu"),
        "relu6": dict(h=3, w=3, cin=5, cout=3, k=(5, 5), s=(2, 2), act="relu6"),
        "relu_n1": dict(h=3, w=3, cin=3, cout=3, k=(3, 3), s=(1, 1), act="relu_n1_to_1"),
        "same_odd_out": dict(h=4, w=4, cin=3, cout=4, k=(3, 3), s=(2, 2), out_hw=(7, 7)),
        "valid_big_out": dict(h=3, w=3, cin=3, cout=2, k=(3, 3), s=(2, 2), same=False, out_hw=(8, 8)),
        "k_gt_out": dict(h=1, w=1, cin=4, cout=3, k=(5, 5), s=(2, 2), same=False, out_hw=(3, 3)),
    }
    return {f"tconv_{n}": tconv_case(r, **kw) for n, kw in specs.items()}


@pytest.fixture(scope="module")
def tconv_cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_tconv"))


def test_tflm_bit_exact(tconv_cases, portable_lib):
    assert check_tflm_and_c(tconv_cases, portable_lib, "tconv_") == 15


@pytest.mark.parametrize("size, k, s, padding, pad", [(8, 3, 2, 0, 0), (7, 3, 2, 0, 1), (8, 4, 2, 0, 1),
                                                      (9, 3, 1, 0, 1), (9, 3, 2, 1, 0), (3, 5, 2, 1, 0),
                                                      (8, 2, 2, 0, 0)])
def test_padding_rule(size, k, s, padding, pad):
    assert transpose_conv_pad(size, k, s, padding) == pad


def test_scatter_by_hand():
    """1x2 input, stride 2, kernel 3, pad 1, out 4: pixel 0 lands on outputs -1..1, pixel 1 on 1..3."""
    x = np.array([[[[1], [2]]]], np.int8)
    w = np.array([[[[1], [10], [100]]]], np.int8)  # [1, 1, 3, 1]
    y = transpose_conv_s8(x, w, None, stride=(1, 2), pad=(0, 1), out_hw=(1, 4), input_offset=0, output_offset=0,
                          out_mult=[1 << 30], out_shift=[1])  # multiplier 1.0
    assert y.reshape(-1).tolist() == [10, 100 + 2, 20, 127]  # 200 saturates
