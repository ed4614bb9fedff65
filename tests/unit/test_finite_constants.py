"""NaN / inf in a model's numbers (toolchain.ir.check_finite, called by pipeline.import_model for every
frontend): NaN weights used to compile, run and PASS with a top-1 agreement of 0.0 and a bare NaN in
report.json. Now: exit 2, one line naming the model file and the tensor, nothing written. None of
these reach the C compiler (the check runs before quantization)."""
from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from toolchain.errors import InputError
from toolchain.ir import DType, QuantParams, Tensor
from toolchain.ir.check_finite import check_quant

REPO = Path(__file__).resolve().parents[2]
for _d in ("e2e", "frontend"):  # assert_rejected; the QDQ / TFLite model builders
    if str(REPO / "tests" / _d) not in sys.path:
        sys.path.append(str(REPO / "tests" / _d))

from e2e_helpers import DIGITS, assert_rejected

CALIB = DIGITS / "calibration.npy"


@pytest.fixture
def out(tmp_path):
    return tmp_path / "results" / "out"


def _digits_with(tmp_path: Path, init: str, index: int, value: float) -> Path:
    """examples/digits/model.onnx with one value of initializer `init` replaced."""
    m = onnx.load(str(DIGITS / "model.onnx"))
    t = next(i for i in m.graph.initializer if i.name == init)
    a = numpy_helper.to_array(t).copy()
    a.flat[index] = value
    t.CopyFrom(numpy_helper.from_array(a, init))
    path = tmp_path / "digits_bad.onnx"
    onnx.save(m, str(path))
    return path


@pytest.mark.parametrize("init, node", [("conv1.weight", "/conv1/Conv"), ("dw.bias", "/dw/Conv"),
                                        ("fc.weight", "/fc/Gemm"), ("bn1.running_var", "")])
@pytest.mark.parametrize("value, kind", [(math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "inf")])
def test_non_finite_weights_of_a_float_onnx_are_refused(edgecc, tmp_path, out, init, node, value, kind):
    model = _digits_with(tmp_path, init, 3 if init != "fc.weight" else 17, value)
    res = edgecc("build", "--model", model, "--calibration", CALIB, "--out", out)
    assert_rejected(res, out, "digits_bad.onnx", "tensor", kind, node)


@pytest.mark.parametrize("init, value, needles", [
    ("bn1.weight", 3e38, ("after folding constants and BatchNorm", "/conv1/Conv")),  # finite, overflows when folded
    ("fc.weight", 1e38, ("calibration sample 0", "overflow")),                       # finite, overflows in the model
])
def test_finite_weights_that_overflow_float32_are_refused(edgecc, tmp_path, out, init, value, needles):
    m = onnx.load(str(DIGITS / "model.onnx"))
    t = next(i for i in m.graph.initializer if i.name == init)
    t.CopyFrom(numpy_helper.from_array(np.full_like(numpy_helper.to_array(t), value), init))
    model = tmp_path / "digits_big.onnx"
    onnx.save(m, str(model))
    with warnings.catch_warnings():  # a numpy RuntimeWarning would reach stderr beside the error line
        warnings.simplefilter("error", RuntimeWarning)
        res = edgecc("build", "--model", model, "--calibration", CALIB, "--out", out)
    assert_rejected(res, out, "digits_big.onnx", *needles)


def _save(path: Path, nodes, inits, shape=(1, 16)) -> Path:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.fixture
def x16(tmp_path):
    p = tmp_path / "x16.npy"
    np.save(p, np.random.default_rng(1).standard_normal((8, 1, 16)).astype(np.float32))
    return p


def test_nan_in_a_constant_operand_is_refused(edgecc, tmp_path, out, x16):
    c = np.ones(16, np.float32)
    c[5] = np.nan
    model = _save(tmp_path / "add.onnx", [helper.make_node("Add", ["x", "C"], ["y"], name="add0")],
                  [numpy_helper.from_array(c, "C")])
    assert_rejected(edgecc("build", "--model", model, "--calibration", x16, "--out", out), out,
                    "add.onnx", "NaN in 1 of 16")


def test_nan_in_a_float_attribute_is_refused(edgecc, tmp_path, out, x16):
    w = numpy_helper.from_array(np.ones((16, 4), np.float32), "W")
    model = _save(tmp_path / "leaky.onnx", [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                                            helper.make_node("LeakyRelu", ["h"], ["y"], name="lrelu", alpha=math.nan)],
                  [w])
    assert_rejected(edgecc("build", "--model", model, "--calibration", x16, "--out", out), out,
                    "leaky.onnx", "lrelu", "alpha", "not a finite number")  # the ONNX door meets it first


def _qdq_matmul(tmp_path: Path, w_scale: float, x_scale: float = 0.02) -> Path:
    from _qdq_cases import ModelBuilder

    m = ModelBuilder(13)
    xd = m.dq(m.q(m.input("x", (1, 4)), x_scale, 0, "xq"), x_scale, 0, "xd")
    wd = m.dq(m.const("w", np.arange(12).reshape(4, 3), np.int8), np.float32(w_scale), 0, "wd")
    y = m.node("MatMul", [xd, wd], "mm")
    m.dq(m.q(y, 0.05, 0, "yq"), 0.05, 0, "y")
    m.output("y")
    return m.save(tmp_path / "qdq_bad.onnx")


# NaN, inf and negative scales are refused at the ONNX door (onnx_validate_qdq); a zero scale, which the
# door allows on constant weights (an all-zero channel), by the IR-level check once it reaches the int8 graph
@pytest.mark.parametrize("w_scale, needles", [(math.nan, ("scale 'wd_s' holds nan",)), (math.inf, ("holds inf",)),
                                              (0.0, ("tensor", "scale 0.0")), (-0.5, ("holds -0.5",))])
def test_bad_weight_scales_of_a_qdq_onnx_are_refused(edgecc, tmp_path, out, w_scale, needles):
    model = _qdq_matmul(tmp_path, w_scale)
    assert_rejected(edgecc("build", "--model", model, "--out", out), out, "qdq_bad.onnx", *needles)


@pytest.mark.parametrize("x_scale", [math.nan, math.inf, 0.0, -1.0])
def test_bad_activation_scales_of_a_qdq_onnx_are_refused(edgecc, tmp_path, out, x_scale):
    model = _qdq_matmul(tmp_path, 0.01, x_scale)
    res = edgecc("build", "--model", model, "--out", out)
    # a NaN activation scale is met first by the QDQ frontend, which (NaN != NaN) calls the Q/DQ pair a
    # requantization and lists it as unsupported: exit 2 naming the file, in the 3-line unsupported form
    assert_rejected(res, out, "qdq_bad.onnx", max_lines=3 if math.isnan(x_scale) else 1)


def _tflite_conv(tmp_path: Path, patch) -> Path:
    """A generated int8 CONV_2D .tflite with `patch(model_object)` applied (the tensors of
    _tflite_cases.conv_case: 0 input, 1 weights, 2 bias, 3 output)."""
    pytest.importorskip("tflite_micro")
    import flatbuffers
    from _tflite_cases import conv_case

    from toolchain.frontend.tflite_reader import schema

    buf, _ = conv_case(np.random.default_rng(3), h=5, w=5, cin=2, cout=3, k=(3, 3))
    S = schema()
    m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(buf, 0))
    patch(m.subgraphs[0].tensors)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    path = tmp_path / "conv_bad.tflite"
    path.write_bytes(bytes(b.Output()))
    return path


def _set(index: int, field: str, pos: int, value):
    def patch(tensors):
        q = tensors[index].quantization
        values = np.array(getattr(q, field))  # the object API hands out read-only numpy views
        values[pos] = value
        setattr(q, field, values)
    return patch


@pytest.mark.parametrize("patch, needles", [
    (_set(1, "scale", 1, math.nan), ("tensor #1", "scale[1] is nan")),  # refused at the TFLite door
    (_set(1, "scale", 0, 0.0), ("scale[0] is 0.0",)),
    (_set(0, "scale", 0, math.inf), ("scale[0] is inf",)),
    (_set(3, "scale", 0, -0.25), ("scale[0] is -0.25",)),
    (_set(0, "zeroPoint", 0, 300), ("zero point[0] 300", "int8")),
])
def test_bad_quantization_of_a_tflite_is_refused(edgecc, tmp_path, out, patch, needles):
    model = _tflite_conv(tmp_path, patch)
    assert_rejected(edgecc("build", "--model", model, "--out", out), out, "conv_bad.tflite", *needles)


@pytest.mark.parametrize("qp, dtype, needle", [
    (QuantParams((0.5, math.nan), (0, 0), 0), DType.INT8, "scale nan"),
    (QuantParams.per_tensor(1e-3, -129), DType.INT8, "zero point -129"),
    (QuantParams.per_tensor(1e-3, 256), DType.UINT8, "zero point 256"),
    (QuantParams.per_tensor(1e-3, 2**31), DType.INT32, "zero point 2147483648"),
])
def test_check_quant_names_what_is_wrong(qp, dtype, needle):
    with pytest.raises(InputError, match=needle):
        check_quant(qp, Tensor("t", (2,), dtype, qp), "m.onnx: tensor 't'")
    check_quant(QuantParams.per_tensor(1e-3, 255 if dtype == DType.UINT8 else 0), Tensor("t", (2,), dtype), "ok")
