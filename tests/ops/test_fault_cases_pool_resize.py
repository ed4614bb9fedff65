"""Window-geometry fault cases of ../shared/design/int8-fault-cases.md, each with the right value as the
assertion plus neighbours: BL-13 (MaxPool/AveragePool ceil_mode with padding) and BL-30 (Resize nearest
honours half_pixel_centers), through ONNX and TFLite. Values are checked on the numpy reference, on the
portable C kernels (ctypes) and against TFLM (one subprocess for the file)."""
from __future__ import annotations

import numpy as np
import pytest
from _fault_cases import tflm_agrees, tflm_oracle
from _onnx_checks import check_float, check_int8, model
from onnx import helper

tflm = tflm_oracle("bl30_up_asym", "bl30_up_half", "bl30_up_align", "bl30_down_asym", "bl30_down_half")


# ---- BL-13: MaxPool ceil_mode with padding ------------------------------------------------------------
@pytest.mark.parametrize("op, want", [("MaxPool", [6, 9, 21, 24]), ("AveragePool", None)])
def test_bl13_ceil_mode_drops_the_window_in_the_padding_int8(op, want, tmp_path, portable_lib):
    m = model([helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1],
                                ceil_mode=1)], {"x": (1, 1, 5, 5)}, ["y"])
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    g, (ref,) = check_float(m, {"x": x}, tmp_path)
    assert ref.shape == (1, 1, 2, 2)
    if want:
        assert ref.ravel().tolist() == want
    q = check_int8(g, {"x": np.stack([x, 24 - x])}, portable_lib, max_lsb=1.0)
    assert q.t(q.outputs[0]).shape == (1, 1, 2, 2)


# ---- BL-30: Resize nearest honours half_pixel_centers ----------------------------------------------
@pytest.mark.parametrize("name, want", [("bl30_up_asym", [10, 10, 20, 20, 30, 40, 40, 50]),
                                        ("bl30_up_half", [10, 10, 20, 30, 30, 40, 50, 50]),
                                        ("bl30_up_align", [10, 20, 20, 30, 30, 40, 40, 50]),
                                        ("bl30_down_asym", [10, 20, 40]), ("bl30_down_half", [10, 30, 50])])
def test_bl30_tflite_resize_nearest(tflm, portable_lib, name, want):
    assert tflm_agrees(tflm, portable_lib, name).ravel().tolist() == want


@pytest.mark.parametrize("coord, mode, size, want", [
    ("asymmetric", "floor", 8, [10, 10, 20, 20, 30, 40, 40, 50]),
    ("tf_half_pixel_for_nn", "floor", 8, [10, 10, 20, 30, 30, 40, 50, 50]),
    ("half_pixel", "round_prefer_floor", 8, [10, 10, 20, 30, 30, 40, 50, 50]),
    ("align_corners", "round_prefer_ceil", 8, [10, 20, 20, 30, 30, 40, 40, 50]),
    ("asymmetric", "floor", 3, [10, 20, 40]), ("tf_half_pixel_for_nn", "floor", 3, [10, 30, 50])])
def test_bl30_onnx_resize_nearest(coord, mode, size, want, tmp_path, portable_lib):
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest", coordinate_transformation_mode=coord,
                            nearest_mode=mode)
    m = model([node], {"x": (1, 1, 1, 5)}, ["y"], {"s": np.array([1, 1, 1, size], np.int64)}, opset=13)
    x = np.array([10, 20, 30, 40, 50], np.float32).reshape(1, 1, 1, 5)
    g, (ref,) = check_float(m, {"x": x}, tmp_path)
    assert ref.ravel().tolist() == want
    q = check_int8(g, {"x": np.stack([x, x - 30])}, portable_lib, max_lsb=0.5)
    assert q.t(q.outputs[0]).quant == q.t(q.inputs[0]).quant    # nearest copies integers
