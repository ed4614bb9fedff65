"""AveragePool / MaxPool extras of issue 4 (ops/pool2d.py): ceil_mode, and count_include_pad with a
non-zero zero point, where the padded cells count as the zero point (a real 0) and cells past the
declared end pads never count; numpy reference, C kernel (new pad_bottom / pad_right / pad_value
arguments) and ONNX models through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from onnx import helper

from toolchain.ops.pool2d import avg_pool2d_s8

RNG = np.random.default_rng(14)


def test_count_include_pad_counts_padding_as_the_zero_point():
    x = np.full((1, 2, 2, 3), -128, np.int8)      # real 0 everywhere with zp -128
    y = avg_pool2d_s8(x, kernel=(2, 2), stride=(1, 1), pad=(1, 1), out_hw=(3, 3), count_include_pad=True,
                      pad_value=-128, pad_end=(1, 1))
    assert np.all(y == -128)
    x = np.full((1, 2, 2, 1), 10, np.int8)        # zp 6: the corner window holds one 10 and three 6
    y = avg_pool2d_s8(x, kernel=(2, 2), stride=(1, 1), pad=(1, 1), out_hw=(3, 3), count_include_pad=True,
                      pad_value=6, pad_end=(1, 1))
    assert y[0, 0, 0, 0] == 7 and y[0, 1, 1, 0] == 10     # (10 + 18) / 4 = 7


def test_ceil_mode_window_past_the_end_pads_is_not_counted():
    """W = 7, kernel 3, stride 2, pads (left 1, right 0), ceil_mode: the last window covers columns
    5..7, column 7 lies past the end pad: count_include_pad counts 2 cells there, not 3 (ORT, ONNX
    reference); the first window counts its left padding cell as the zero point."""
    x = np.full((1, 1, 7, 1), 12, np.int8)
    y = avg_pool2d_s8(x, kernel=(1, 3), stride=(1, 2), pad=(0, 1), out_hw=(1, 4), count_include_pad=True,
                      pad_value=0, pad_end=(0, 0))
    assert y.ravel().tolist() == [8, 12, 12, 12]


@pytest.mark.parametrize("cip", [0, 1])
@pytest.mark.parametrize("ceil_mode", [0, 1])
@pytest.mark.parametrize("geom", [{"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                                  {"kernel_shape": [3, 3], "strides": [3, 3], "pads": [1, 1, 1, 1]},
                                  {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [0, 1, 1, 0]}])
def test_onnx_average_pool_int8(cip, ceil_mode, geom, tmp_path, portable_lib):
    node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=cip, ceil_mode=ceil_mode, **geom)
    m = model([node], {"x": (1, 3, 5, 7)}, ["y"])
    # positive inputs: the zero point sits far from 0, so raw-0 padding would be visibly wrong
    calib = {"x": RNG.uniform(0.5, 3, (3, 1, 3, 5, 7)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.0)


@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_onnx_max_pool_int8(ceil_mode, tmp_path, portable_lib):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1],
                            ceil_mode=ceil_mode)
    m = model([node], {"x": (1, 2, 5, 5)}, ["y"])
    calib = {"x": RNG.uniform(-2, 2, (3, 1, 2, 5, 5)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=0.5)
