"""ONNX frontend, pooling: AveragePool, MaxPool (pads, ceil_mode, auto_pad, count_include_pad) and
GlobalAveragePool against onnxruntime (atol 1e-4), and the exact values of the fault case BL-13
(ceil_mode drops the window that lies in the padding)."""
import numpy as np
import pytest
from _onnx_frontend import check, edgecc, node

from graph_builder import onnx_model, run_ort


# ---- pooling --------------------------------------------------------------------------------
POOL_CASES = {
    "k2s2": dict(kernel_shape=[2, 2], strides=[2, 2]),
    "k3s1": dict(kernel_shape=[3, 3]),
    "k3s2_pads": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "k3s2_pads_asym": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0]),
    "k3s2_ceil": dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "k3s2_pads_ceil": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "k3s3_pads_ceil": dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1),
    "rect": dict(kernel_shape=[2, 3], strides=[1, 2]),
    "same_upper": dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
    "valid": dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID"),
}


@pytest.mark.parametrize("hw", [(5, 5), (6, 7)])
@pytest.mark.parametrize("cip", [0, 1])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_average_pool(case, cip, hw, tmp_path):
    model = onnx_model([node("AveragePool", ["x"], count_include_pad=cip, **POOL_CASES[case])], {"x": (1, 2, *hw)},
                       ["y"])
    check(model, tmp_path)


@pytest.mark.parametrize("hw", [(5, 5), (6, 7)])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool(case, hw, tmp_path):
    model = onnx_model([node("MaxPool", ["x"], **POOL_CASES[case])], {"x": (1, 2, *hw)}, ["y"])
    check(model, tmp_path)


def test_bl13_maxpool_ceil_mode_drops_window_in_padding(tmp_path):
    model = onnx_model([node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)],
                       {"x": (1, 1, 5, 5)}, ["y"])
    (y,) = edgecc(model, {"x": np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)}, tmp_path)
    assert y.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(y.ravel(), [6, 9, 21, 24])


@pytest.mark.parametrize("cip", [0, 1])
def test_bl13_average_pool_same_geometry(cip, tmp_path):
    model = onnx_model([node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1,
                             count_include_pad=cip)], {"x": (1, 1, 5, 5)}, ["y"])
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (y,) = edgecc(model, {"x": x}, tmp_path)
    assert y.shape == (1, 1, 2, 2)
    np.testing.assert_allclose(y, run_ort(model, {"x": x})[0], atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 4, 1, 1), (1, 2, 7, 3)])
def test_global_average_pool(shape, tmp_path):
    check(onnx_model([node("GlobalAveragePool", ["x"])], {"x": shape}, ["y"]), tmp_path)
