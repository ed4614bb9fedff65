"""Pad (ops/pad.py): PAD / PADV2 vs TFLM through our interpreter and the C kernel; the pad value is
the quantized constant (the zero point for 0, never a raw 0: BL-07, BL-14); ONNX Pad (constant mode,
pads/constant_value/axes inputs) vs onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c
from onnx import helper

from toolchain.errors import UnsupportedModel

RNG = np.random.default_rng(12)


def test_tflm_bit_exact(tflm_cases, portable_lib):
    check_tflm_and_c(tflm_cases, portable_lib, "pad_", min_cases=3)


@pytest.mark.parametrize("pads, value, axes", [([0, 0, 1, 2, 0, 0, 2, 1], 0.0, None), ([0, 1, 0, 0, 0, 2, 1, 1], 0.5, None),
                                               ([1, 2, 3, 0], 1.25, [2, 3]), ([0, 0, 0, 0, 0, 0, 0, 0], 0.0, None)])
def test_onnx_pad(pads, value, axes, tmp_path, portable_lib):
    inits = {"p": np.array(pads, np.int64), "v": np.array(value, np.float32)}
    ins = ["x", "p", "v"]
    if axes is not None:
        inits["a"] = np.array(axes, np.int64)
        ins.append("a")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Pad", ["r", *ins[1:]], ["y"])]
    m = model(nodes, {"x": (1, 3, 4, 5)}, ["y"], inits, opset=18)
    calib = {"x": RNG.uniform(-1, 2, (3, 1, 3, 4, 5)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=1.0)


def test_pad_value_outside_the_input_range_saturates(tmp_path):
    """Pad keeps the input's qparams (a byte copy, as TFLite): a constant outside the input's range
    saturates to the nearest representable value (here relu output >= 0, pad -1 -> real 0)."""
    from quantize import quantize
    from toolchain.interpret import interpret

    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Pad", ["r", "p", "v"], ["y"])]
    m = model(nodes, {"x": (1, 1, 2, 2)}, ["y"], {"p": np.array([0, 0, 1, 0, 0, 0, 0, 0], np.int64),
                                                   "v": np.array(-1.0, np.float32)})
    g, _ = check_float(m, {"x": np.ones((1, 1, 2, 2), np.float32)}, tmp_path)
    q = quantize(g, {"x": np.ones((1, 1, 1, 2, 2), np.float32)}, "minmax")
    qx = q.t(q.inputs[0]).quant
    y = interpret(q, {q.inputs[0]: qx.quantize(np.ones((1, 1, 2, 2), np.float32))})[q.outputs[0]]
    assert q.t(q.outputs[0]).quant.dequantize(y)[0, 0, 0].tolist() == [0.0, 0.0]


def test_onnx_pad_other_modes_and_negative_pads_are_rejected(tmp_path):
    for mode, pads in (("reflect", [0, 0, 1, 1, 0, 0, 1, 1]), ("constant", [0, 0, -1, 0, 0, 0, 0, 0])):
        m = model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)], {"x": (1, 2, 3, 3)}, ["y"],
                  {"p": np.array(pads, np.int64)})
        with pytest.raises(UnsupportedModel, match="Pad"):
            check_float(m, {"x": np.zeros((1, 2, 3, 3), np.float32)}, tmp_path)
