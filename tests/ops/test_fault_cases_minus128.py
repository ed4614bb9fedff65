"""Fault case BL-04 of ../shared/design/int8-fault-cases.md ((-128) x (-128) products), with the right
value as the assertion plus neighbours: the quantizer never emits -128 weights, imported -128 weights
accumulate exactly (and keep off the 16-bit-lane dsp kernels), and activation x activation products.
Checked on the numpy reference and on the portable C kernels (ctypes)."""
from __future__ import annotations

import numpy as np
from _fault_cases import I8, I32, both, make_graph, qp
from _onnx_checks import float_graph, model
from onnx import helper

from quantize import quantize
from toolchain.ir import Graph, Node, QuantParams, Tensor
from toolchain.lower import select_kernels
from toolchain.ops.common import NO_ACT
from toolchain.ops.fixed_point import quantize_multiplier
from toolchain.ops.registry import OpKind


# ---- BL-04: (-128) x (-128) products ------------------------------------------------------------
def test_bl04_quantizer_never_emits_minus_128_weights(tmp_path):
    rng = np.random.default_rng(4)
    w = rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0], w[1] = -1.0, -w[1]              # the most negative weight sets a channel's scale
    m = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Flatten", ["c"], ["f"]),
               helper.make_node("Gemm", ["f", "fw"], ["y"], transB=1)], {"x": (1, 3, 5, 5)}, ["y"],
              {"w": w, "fw": -np.abs(rng.uniform(0.5, 1, (4, 72)).astype(np.float32))})
    q = quantize(float_graph(m, tmp_path), {"x": rng.uniform(-1, 1, (2, 1, 3, 5, 5)).astype(np.float32)})
    weights = [t.data for t in q.tensors.values() if t.is_const and t.dtype == I8]
    assert len(weights) == 2 and min(int(a.min()) for a in weights) == -127


def _fc_graph(x_zp: int, w: np.ndarray, mult_shift) -> Graph:
    from toolchain.ops.fully_connected import FullyConnectedAttrs

    k = w.shape[1]
    ws = 1.0 / 64
    y_scale = (1.0 * ws) / np.ldexp(mult_shift[0] / 2**31, mult_shift[1])
    ts = [Tensor("x", (1, k), I8, qp(1.0, x_zp)), Tensor("w", w.shape, I8, QuantParams((ws,), (0,), None), w),
          Tensor("b", (w.shape[0],), I32, QuantParams((ws,), (0,), None), np.zeros(w.shape[0], np.int32)),
          Tensor("y", (1, w.shape[0]), I8, qp(float(y_scale), 0))]
    return make_graph([Node("fc", OpKind.FULLY_CONNECTED, ("x", "w", "b"), ("y",), FullyConnectedAttrs(NO_ACT))], ts,
                  ["x"], ["y"])


def test_bl04_imported_minus_128_weights_accumulate_exactly(portable_lib):
    """K = 16, all activations and weights -128: the dot product is 262144 (an int16-lane kernel would
    wrap to -262144). With a real multiplier 2^-12 the output is 64, on every path; the dsp variant
    (16-bit lane pairs) is not chosen for weights holding -128 (packing.lane_safe): its conv2d GEMM
    fallback is (each product in its own lane), or the portable kernel."""
    w = np.full((2, 16), -128, np.int8)
    g = _fc_graph(0, w, quantize_multiplier(2.0**-12))
    x = np.full((1, 16), -128, np.int8)
    assert both(portable_lib, g, {"x": x}).tolist() == [[64, 64]]
    assert select_kernels(g, ["dsp", "portable"])["fc"].function.startswith("ecc_dsp_conv2d_1x1")
    # neighbour: K = 17 and mixed signs around the extreme
    w2 = np.where(np.arange(17) % 2, -128, 127).astype(np.int8).reshape(1, 17)
    g2 = _fc_graph(0, w2, quantize_multiplier(2.0**-12))
    acc = int((np.full(17, -128) * w2[0].astype(int)).sum())
    assert both(portable_lib, g2, {"x": np.full((1, 17), -128, np.int8)}).tolist() == [[round(acc / 4096)]]


def test_bl04_activation_times_activation_minus_128(portable_lib):
    """Mul of two activations that both hold -128 (no [-127, 127] guarantee there): exact products."""
    from toolchain.ops.binary import BinaryAttrs

    ts = [Tensor("a", (1, 16), I8, qp(1 / 128, 0)), Tensor("b", (1, 16), I8, qp(1 / 128, 0)),
          Tensor("y", (1, 16), I8, qp(1 / 128, 0))]
    g = make_graph([Node("m", OpKind.MUL, ("a", "b"), ("y",), BinaryAttrs(NO_ACT))], ts, ["a", "b"], ["y"])
    a = np.full((1, 16), -128, np.int8)
    assert both(portable_lib, g, {"a": a, "b": a}).ravel().tolist() == [127] * 16   # 1.0 saturates at 127/128
