"""The DATA dtype rule (README, DATA; toolchain.io_dtypes.data_dtype_rule) for a quantized ONNX model
whose graph input is float32 and whose first node is a QuantizeLinear (onnxruntime quantize_static):
data of that QuantizeLinear's dtype (uint8 for U8U8 models, int8 for S8S8) are the model's quantized
values, float data real values, and any other integer dtype is refused in one line (issue 13, item 4)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder, import_int8, ort_run
from onnx import TensorProto, helper, numpy_helper

from toolchain.config import Preprocess
from toolchain.data import load_data, quantize_inputs
from toolchain.errors import InputError
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.interpret import interpret
from toolchain.io_dtypes import INPUT_QUANT_DTYPES, data_dtype_rule, quantized_dtype

pytest.importorskip("onnxruntime")
U8U8 = Path(__file__).resolve().parents[3] / "shared" / "models" / "exported" / "tv_mobilenet_v2_035_qdq_u8u8_pertensor"
QX = {np.uint8: (0.05, 100), np.int8: (0.05, -28)}  # same real grid [-5, 7.75] in both dtypes


def _float_input_qdq(path: Path, dtype, shape=(1, 6)) -> Path:
    """x float32 -> QuantizeLinear (dtype) -> DQ -> Mul 1.5 -> Q (dtype) -> DQ -> y float32."""
    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", shape), *QX[dtype], "xq", dtype), *QX[dtype], "xd", dtype)
    c = m.dq(m.q(m.const("c", np.full((1,), 1.5, np.float32)), 0.01, 0, "cq", np.int8), 0.01, 0, "cd", np.int8)
    m.dq(m.q(m.node("Mul", [xd, c], "f"), 0.1, QX[dtype][1], "yq", dtype), 0.1, QX[dtype][1], "y", dtype)
    m.output("y")
    return m.save(path)


def _ort_quantize(x: np.ndarray, scale: float, zp: int, dtype) -> np.ndarray:
    """x quantized by onnxruntime's QuantizeLinear (float32 division, ties to even, saturated)."""
    g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "q",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8 if dtype == np.uint8 else
                                                         TensorProto.INT8, None)],
                          [numpy_helper.from_array(np.float32(scale), "s"), numpy_helper.from_array(dtype(zp), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return ort_run(m, {"x": np.asarray(x, np.float32)})[0]


def _graphs(path: Path):
    return load_qdq(path).graph, import_int8(path)


def _int8_inputs(path: Path, g32, g8) -> np.ndarray:
    return quantize_inputs(load_data(path, g32, Preprocess(), quantized=g8), g8)[g8.inputs[0]]


X = np.linspace(-6.0, 9.0, 48, dtype=np.float32).reshape(8, 1, 6)  # past both ends of the grid, ties included


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_the_models_quantized_dtype_is_recorded_and_its_data_are_quantized_values(tmp_path, dtype):
    path = _float_input_qdq(tmp_path / "m.onnx", dtype)
    g32, g8 = _graphs(path)
    assert g8.meta[INPUT_QUANT_DTYPES] == {"x": np.dtype(dtype).name} and quantized_dtype(g8, "x") == dtype
    assert g8.t("x").quant.zero_point == (-28,)  # int8 inside whatever the file's dtype: same real values
    q = _ort_quantize(X, *QX[dtype], dtype)
    assert q.dtype == dtype and len(np.unique(q)) > 30
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "f.npy", X)
    from_q, from_f = _int8_inputs(tmp_path / "q.npy", g32, g8), _int8_inputs(tmp_path / "f.npy", g32, g8)
    expect = (q.astype(np.int16) - (128 if dtype == np.uint8 else 0)).astype(np.int8)
    assert np.array_equal(from_q.reshape(expect.shape), expect)  # uint8: the -128 shift of uint8 I/O
    assert np.array_equal(from_f, from_q)  # float data quantized as onnxruntime's QuantizeLinear does
    for a, b in zip(from_q, from_f, strict=True):
        assert np.array_equal(interpret(g8, {"x": a})[g8.outputs[0]], interpret(g8, {"x": b})[g8.outputs[0]])


@pytest.mark.parametrize("dtype, other", [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.int16)])
def test_another_integer_dtype_for_a_float_input_is_refused_in_one_line(tmp_path, dtype, other):
    path = _float_input_qdq(tmp_path / "m.onnx", dtype)
    g32, g8 = _graphs(path)
    np.save(tmp_path / "bad.npy", np.zeros((2, 1, 6), other))
    with pytest.raises(InputError) as e:
        load_data(tmp_path / "bad.npy", g32, Preprocess(), quantized=g8)
    own = np.dtype(dtype).name
    assert str(e.value) == (f"{tmp_path / 'bad.npy'} (input 'x'): data of dtype {np.dtype(other).name}; the model's "
                            f"input is float32, quantized to {own} inside the model: pass {own} (its quantized "
                            "values) or float32 / float64 (real values)")


def test_image_pixels_for_a_uint8_quantized_float_input_are_real_values(tmp_path):
    from PIL import Image

    path = _float_input_qdq(tmp_path / "m.onnx", np.uint8, (1, 1, 2, 3))
    g32, g8 = _graphs(path)
    assert data_dtype_rule(g8, "x", np.dtype(np.uint8), images=True) == "real"
    (tmp_path / "img").mkdir()
    pixels = np.array([[0, 10, 20], [30, 40, 255]], np.uint8)
    Image.fromarray(pixels, "L").save(tmp_path / "img" / "a.png")
    got = load_data(tmp_path / "img", g32, Preprocess(scale=0.02), quantized=g8)["x"]
    np.testing.assert_allclose(got.reshape(2, 3), pixels * np.float32(0.02), rtol=1e-6)


@pytest.mark.skipif(not U8U8.with_suffix(".onnx").exists(), reason="no exported U8U8 QDQ file in ../shared")
def test_the_exported_u8u8_file(tmp_path):
    """The onnxruntime quantize_static U8U8 file: its input QuantizeLinear makes uint8 (scale 0.01866, zero
    point 114); float data accepted, its uint8 quantization by onnxruntime the same int8 inputs and
    outputs, int8 data refused."""
    path = U8U8.with_suffix(".onnx")
    model = onnx.load(str(path), load_external_data=False)
    q_node = next(n for n in model.graph.node if n.input and n.input[0] == model.graph.input[0].name)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    scale, zp = float(inits[q_node.input[1]]), inits[q_node.input[2]]
    assert q_node.op_type == "QuantizeLinear" and zp.dtype == np.uint8
    g32, g8 = _graphs(path)
    name = g8.inputs[0]
    assert g8.meta[INPUT_QUANT_DTYPES] == {name: "uint8"} and g8.t(name).quant.zero_point == (int(zp) - 128,)
    x = np.load(U8U8.with_name(U8U8.name + ".inputs.npy"))[:2]
    q = _ort_quantize(x, scale, int(zp), np.uint8)
    np.save(tmp_path / "f.npy", x)
    np.save(tmp_path / "u8.npy", q)
    np.save(tmp_path / "i8.npy", (q.astype(np.int16) - 128).astype(np.int8))
    from_f, from_q = _int8_inputs(tmp_path / "f.npy", g32, g8), _int8_inputs(tmp_path / "u8.npy", g32, g8)
    assert np.array_equal(from_q.reshape(q.shape), (q.astype(np.int16) - 128).astype(np.int8))
    assert np.array_equal(from_f, from_q)
    out = g8.outputs[0]
    assert np.array_equal(interpret(g8, {name: from_f[0]})[out], interpret(g8, {name: from_q[0]})[out])
    with pytest.raises(InputError, match=r"i8\.npy \(input 'input\.1'\): data of dtype int8; the model's input is "
                                         r"float32, quantized to uint8 inside the model: pass uint8"):
        load_data(tmp_path / "i8.npy", g32, Preprocess(), quantized=g8)
