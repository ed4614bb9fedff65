"""set_io_dtype (YAML io_dtype) on real graphs: the float-I/O MobileNetV2 .tflite loses its Quantize /
Dequantize for int8 / uint8 (input int8 on the Quantize's grid, output the Dequantize's int8 input), the
digits ONNX model gains a Quantize / Dequantize for float32; the interpreter computes the same int8
values either way; refusals name the YAML, the tensor and the fix."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from toolchain.errors import InputError
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.io_dtypes import DEFAULT_IO_DTYPES, UINT8_IO, host_quantized, io_ctype, quantized_dtype
from toolchain.ir.verify import verify
from toolchain.ops.fixed_point import rounding_mode
from toolchain.ops.quantize_ops import quantize_f32_s8
from toolchain.ops.registry import OpKind, opdef
from toolchain.passes.set_io_dtype import set_io_dtype

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO.parent / "shared" / "models" / "exported"
FLOATIO = CORPUS / "keras_mobilenet_v2_035_floatio.tflite"
INT8 = CORPUS / "keras_mobilenet_v2_035_int8.tflite"


def _checked(g):
    verify(g, lambda node, gr: opdef(node).infer_shapes(node, gr), after="set_io_dtype")
    return g


@pytest.fixture(scope="module")
def floatio():
    if not FLOATIO.is_file():
        pytest.skip(f"{FLOATIO} is absent")
    return load_tflite(FLOATIO)


def test_int8_drops_the_float_quantize_and_dequantize(floatio):
    g = _checked(set_io_dtype(floatio, "int8", "p.yaml"))
    q, d = floatio.nodes[0], floatio.nodes[-1]
    assert (q.op, d.op) == (OpKind.QUANTIZE, OpKind.DEQUANTIZE)
    assert len(g.nodes) == len(floatio.nodes) - 2
    assert not {n.op for n in g.nodes} & {OpKind.QUANTIZE, OpKind.DEQUANTIZE}
    x, y = g.inputs[0], g.outputs[0]
    assert x == floatio.inputs[0] and y == d.inputs[0]  # the input keeps its name; the output is the int8 tensor
    assert g.t(x).quant == floatio.t(q.outputs[0]).quant and g.t(x).shape == (1, 96, 96, 3)
    assert [io_ctype(g, n) for n in (x, y)] == ["int8_t", "int8_t"]
    assert g.meta[DEFAULT_IO_DTYPES] == {x: "float32", y: "float32"} and UINT8_IO not in g.meta
    assert host_quantized(g, x) and quantized_dtype(g, x) is None  # int8 DATA stay real values, as before
    # the int8 graph computes what the float-input one computes, fed the dropped Quantize's result
    real = np.random.default_rng(0).uniform(-1, 1, (1, 96, 96, 3)).astype(np.float32)
    with rounding_mode("tflm"):
        want = interpret(floatio, {x: real}, keep_all=True)[y]
        qp = g.t(x).quant
        got = interpret(g, {x: quantize_f32_s8(real, qp.s, qp.zp)})[y]
    assert np.array_equal(got, want)


def test_uint8_moves_the_edges_to_uint8(floatio):
    g = _checked(set_io_dtype(floatio, "uint8", "p.yaml"))
    assert g.meta[UINT8_IO] == (g.inputs[0], g.outputs[0])
    assert [io_ctype(g, n) for n in (*g.inputs, *g.outputs)] == ["uint8_t", "uint8_t"]
    back = _checked(set_io_dtype(g, "int8", "p.yaml"))
    assert UINT8_IO not in back.meta and back.meta[DEFAULT_IO_DTYPES] == {g.inputs[0]: "float32",
                                                                         g.outputs[0]: "float32"}


def test_float32_keeps_a_float_model_float(floatio):
    assert set_io_dtype(floatio, "float32", "p.yaml").nodes == floatio.nodes


def test_float32_adds_the_edges_to_a_float_onnx_model():
    from toolchain.config import load_config
    from toolchain.pipeline import import_model

    cfg = load_config(REPO / "examples" / "digits" / "pipeline.yaml", {"io_dtype": "float32"})
    g = _checked(import_model(cfg).graph_s8)
    assert (g.nodes[0].op, g.nodes[-1].op) == (OpKind.QUANTIZE, OpKind.DEQUANTIZE)
    assert g.inputs == ("input",) and g.outputs == ("probs_float",)
    assert [io_ctype(g, n) for n in (*g.inputs, *g.outputs)] == ["float", "float"]
    assert g.t(g.nodes[0].outputs[0]).quant is not None and g.nodes[-1].inputs == ("probs",)


def test_refusals_name_the_yaml_the_tensor_and_the_fix(floatio, tmp_path):
    if not INT8.is_file():
        pytest.skip(f"{INT8} is absent")
    with pytest.raises(InputError, match=r"^p.yaml: io_dtype: float32: 'serving_default_keras_tensor:0' is int8 in "
                       r"the model file .*; quantize on the host with the model.h scale and zero point, or remove"):
        set_io_dtype(load_tflite(INT8), "float32", "p.yaml")
    sys.path.append(str(REPO / "tests" / "ops"))
    from tflite16_cases import net16  # a float QUANTIZE to int16 first: io_dtype int8 cannot hold it

    (tmp_path / "m.tflite").write_bytes(net16()[0])
    with pytest.raises(InputError, match=r"^p.yaml: io_dtype: int8: '.*' is an int16 \(16x8\) input; remove"):
        set_io_dtype(load_tflite(tmp_path / "m.tflite"), "int8", "p.yaml")
