"""ONNX frontend, Gemm and MatMul: float semantics (transA/B, alpha/beta, bias shapes, Conv-Flatten-Gemm)
against onnxruntime (atol 1e-4), loud rejection of a bias with rows, and the exact values of the fault
case BL-16 (transB with a 1-D bias)."""
import numpy as np
import pytest
from _onnx_frontend import check, edgecc, node, rnd

from graph_builder import load, onnx_model
from toolchain.errors import UnsupportedModel


# ---- Gemm / MatMul --------------------------------------------------------------------------
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (5,), (1,), (1, 5), (1, 1)])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0)])
@pytest.mark.parametrize("m", [1, 3])
def test_gemm(trans_a, trans_b, c_shape, alpha, beta, m, tmp_path):
    k, n = 6, 5
    inits = {"B": rnd(n, k) if trans_b else rnd(k, n)}
    ins = ["a", "B"]
    if c_shape is not None:
        inits["C"] = rnd(*c_shape)
        ins.append("C")
    attrs = dict(transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    model = onnx_model([node("Gemm", ins, **attrs)], {"a": (k, m) if trans_a else (m, k)}, ["y"], inits)
    check(model, tmp_path)


@pytest.mark.parametrize("c_shape", [(3, 1), (2, 5), (3, 5)])
def test_gemm_bias_with_rows_is_rejected(c_shape, tmp_path):
    """C of shape [M,1] or [M,N] with M > 1 is not a per-output bias: rejected loudly, not mis-added."""
    model = onnx_model([node("Gemm", ["a", "B", "C"], transB=1, name="gemm_c")], {"a": (3, 4)}, ["y"],
                       {"B": rnd(5, 4), "C": rnd(*c_shape)})
    with pytest.raises(UnsupportedModel, match="gemm_c"):
        load(model, tmp_path)


def test_bl16_gemm_transb_1d_bias_aligns_with_n(tmp_path):
    model = onnx_model([node("Gemm", ["a", "B", "C"], transB=1)], {"a": (1, 4)}, ["y"],
                       {"B": np.arange(12, dtype=np.float32).reshape(3, 4), "C": np.array([10, 20, 30], np.float32)})
    (y,) = edgecc(model, {"a": np.array([[1, 2, 3, 4]], np.float32)}, tmp_path)
    np.testing.assert_array_equal(y, [[30, 80, 130]])


@pytest.mark.parametrize("m", [1, 4])
def test_matmul_with_constant_b(m, tmp_path):
    model = onnx_model([node("MatMul", ["a", "B"])], {"a": (m, 7)}, ["y"], {"B": rnd(7, 3)})
    check(model, tmp_path)


def test_conv_flatten_gemm(tmp_path):
    """Flatten of a 4-D value with H, W > 1 must flatten in ONNX NCHW element order."""
    nodes = [node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), node("Flatten", ["c"], ["f"]),
             node("Gemm", ["f", "G"], transB=1)]
    model = onnx_model(nodes, {"x": (1, 2, 3, 4)}, ["y"], {"W": rnd(3, 2, 3, 3), "B": rnd(3), "G": rnd(5, 36)})
    check(model, tmp_path)
