"""Resize nearest / bilinear (ops/resize.py): TFLite RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR with
align_corners and half_pixel_centers vs TFLM through our interpreter and the C kernels; ONNX Resize in
every supported coordinate_transformation_mode and nearest_mode vs onnxruntime (float reference) and
through our quantizer. BL-30 (TF half-pixel nearest) is in test_fault_cases_pool_resize.py."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.ops.resize import ResizeAttrs, bilinear_table, nearest_table


@pytest.mark.parametrize("kind", ["nearest", "bilinear"])
def test_tflm_bit_exact(tflm_cases, portable_lib, kind):
    check_tflm_and_c(tflm_cases, portable_lib, f"resize_{kind}_", min_cases=4)


def test_tflite_bilinear_table_is_q10():
    """TFLM ResizeBilinearInteger: 5 -> 8 without flags, scale10 = (1024 * 5 + 4) // 8 = 640."""
    t = bilinear_table(ResizeAttrs((8, 8)), 0, 5, 8)
    assert t[:, 0].tolist() == [0, 0, 1, 1, 2, 3, 3, 4] and t[:, 2].tolist()[:3] == [0, 640, 256]
    hp = bilinear_table(ResizeAttrs((8, 8), half_pixel_centers=True), 0, 5, 8)
    assert hp[0].tolist() == [0, 0, -192]   # 640 // 2 - 512: below the first pixel, blended with itself


MODES = [("nearest", "half_pixel", "round_prefer_floor"), ("nearest", "asymmetric", "floor"),
         ("nearest", "align_corners", "round_prefer_ceil"), ("nearest", "tf_half_pixel_for_nn", "floor"),
         ("nearest", "pytorch_half_pixel", "ceil"), ("nearest", "half_pixel_symmetric", "round_prefer_floor"),
         ("linear", "half_pixel", "round_prefer_floor"), ("linear", "align_corners", "round_prefer_floor"),
         ("linear", "asymmetric", "round_prefer_floor"), ("linear", "pytorch_half_pixel", "round_prefer_floor"),
         ("linear", "half_pixel_symmetric", "round_prefer_floor")]


@pytest.mark.parametrize("mode, coord, nearest", MODES)
@pytest.mark.parametrize("sizes", [(1, 3, 7, 10), (1, 3, 3, 4), (1, 3, 1, 9)])
def test_onnx_resize(mode, coord, nearest, sizes, tmp_path, portable_lib):
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode=mode, coordinate_transformation_mode=coord,
                            nearest_mode=nearest)
    m = model([node], {"x": (1, 3, 5, 6)}, ["y"], {"s": np.array(sizes, np.int64)}, opset=19)
    calib = {"x": np.random.default_rng(9).uniform(-1, 1, (2, 1, 3, 5, 6)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.0)


@pytest.mark.parametrize("scales", [(1.0, 1.0, 1.7, 2.5), (1.0, 1.0, 0.6, 0.5)])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_onnx_resize_with_scales(scales, mode, tmp_path, portable_lib):
    node = helper.make_node("Resize", ["x", "", "sc"], ["y"], mode=mode)
    m = model([node], {"x": (1, 2, 5, 6)}, ["y"], {"sc": np.array(scales, np.float32)}, opset=13)
    calib = {"x": np.random.default_rng(10).uniform(-1, 1, (2, 1, 2, 5, 6)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.0)


def test_nearest_table_tflite_rules():
    """BL-30's formulas for 5 -> 8: floor(d * 5 / 8), with half_pixel_centers floor((d + .5) * 5 / 8),
    with align_corners round(d * 4 / 7)."""
    a = ResizeAttrs((1, 8))
    assert nearest_table(a, 1, 5, 8).tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert nearest_table(ResizeAttrs((1, 8), half_pixel_centers=True), 1, 5, 8).tolist() == [0, 0, 1, 2, 2, 3, 4, 4]
    assert nearest_table(ResizeAttrs((1, 8), align_corners=True), 1, 5, 8).tolist() == [0, 1, 1, 2, 2, 3, 3, 4]
