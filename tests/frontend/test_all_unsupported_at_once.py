"""An unsupported model fails before any C is written, listing every unsupported node at once
(issue 4; reviewer finding): unknown ops, unknown attribute names, unsupported attribute values,
dtypes and shape constraints of the whole graph in one error whose first line names the file and the
counts, then one line per op type and reason, for float ONNX, QDQ ONNX and int8 .tflite models. Conversion goes on after a bad node (its
outputs get the shapes ONNX infers, or the shapes the .tflite file declares)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import ModelBuilder
from onnx import helper, numpy_helper

from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx import load_onnx
from toolchain.frontend.onnx_qdq import load_qdq
from toolchain.frontend.tflite import load_tflite
from toolchain.frontend.unsupported import POINTER


def _float_model(path: Path, nodes: list, x_shape: tuple[int, ...], outs: list[str], inits: dict) -> Path:
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outs],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _groups(msg: str, path: Path, n: int, types: str) -> list[str]:
    """The group lines of the error, after checking its summary line and its pointer line."""
    lines = msg.splitlines()
    assert "Traceback" not in msg
    assert lines[0] == f"{path}: {n} unsupported node(s) of {types}", msg
    assert lines[-1] == POINTER, msg
    return lines[1:-1]


def test_float_onnx_lists_unknown_ops_attribute_values_and_shape_constraints(tmp_path: Path) -> None:
    # x -> Erf -> DepthToSpace(mode XYZ, behind the unknown op) ; x -> ConvTranspose(group 2: valid
    # ONNX, unsupported) -> AveragePool(dilations 2) ; x -> Cos ; x -> Relu (fine). An invalid group
    # (C != group * W.shape[1]) is refused alone in one line: tests/frontend/test_onnx_validate.py
    nodes = [helper.make_node("Erf", ["x"], ["e"], name="erf_1"),
             helper.make_node("DepthToSpace", ["e"], ["s"], name="d2s_xyz", blocksize=2, mode="XYZ"),
             helper.make_node("ConvTranspose", ["x", "w"], ["c"], name="convt_g2", group=2),
             helper.make_node("AveragePool", ["c"], ["p"], name="pool_dil", kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node("Cos", ["x"], ["k"], name="cos_2"),
             helper.make_node("Relu", ["x"], ["r"], name="relu_fine")]
    path = _float_model(tmp_path / "m.onnx", nodes, (1, 4, 6, 6), ["s", "p", "k", "r"],
                        {"w": np.ones((4, 3, 1, 1))})
    with pytest.raises(UnsupportedModel) as e:
        load_onnx(path)
    groups = _groups(str(e.value), path, 5,
                     "5 op type(s): AveragePool (1), ConvTranspose (1), Cos (1), DepthToSpace (1), Erf (1)")
    assert groups == ["  AveragePool x1 (dilated AveragePool): pool_dil",
                      "  ConvTranspose x1 (ConvTranspose group 2 (group 1 only)): convt_g2",
                      "  Cos x1 (unknown op): cos_2",
                      "  DepthToSpace x1 (DepthToSpace mode 'XYZ' (DCR or CRD)): d2s_xyz",
                      "  Erf x1 (unknown op): erf_1"]
    assert "relu_fine" not in str(e.value)


def test_float_onnx_unknown_attribute_and_bad_value_together(tmp_path: Path) -> None:
    # the reviewer's second example, plus an unknown attribute name on a third node
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], name="pool_dil", kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node("DepthToSpace", ["x"], ["s"], name="sm", blocksize=2, mode="XYZ"),
             helper.make_node("MaxPool", ["x"], ["q"], name="mp", kernel_shape=[2, 2], sparkle=1)]
    path = _float_model(tmp_path / "m.onnx", nodes, (1, 4, 6, 6), ["p", "s", "q"], {})
    with pytest.raises(UnsupportedModel) as e:
        load_onnx(path)
    groups = _groups(str(e.value), path, 3, "3 op type(s): AveragePool (1), DepthToSpace (1), MaxPool (1)")
    assert groups == ["  AveragePool x1 (dilated AveragePool): pool_dil",
                      "  DepthToSpace x1 (DepthToSpace mode 'XYZ' (DCR or CRD)): sm",
                      "  MaxPool x1 (attribute(s) sparkle): mp"]


def test_qdq_onnx_lists_strip_errors_unknown_ops_and_attribute_values(tmp_path: Path) -> None:
    m = ModelBuilder(13)
    x = m.dq(m.q(m.input("x", (1, 4, 6, 6)), 0.05, 0, "xq"), 0.05, 0, "xd")
    m.node("Erf", [x], "e")                                                        # unknown op
    m.dq(m.q(m.node("DepthToSpace", ["e"], "s", blocksize=2, mode="XYZ"), 0.05, 0, "sq"), 0.05, 0, "sd")  # bad mode
    m.dq(m.q(m.node("AveragePool", [x], "p", kernel_shape=[2, 2], dilations=[2, 2]), 0.05, 0, "pq"), 0.05, 0, "pd")
    m.node("DequantizeLinear", ["xq", m.const("s2", 0.1), m.const("z2", 0, np.int8)], "x2")  # a requantization
    for o in ("sd", "pd", "x2"):
        m.output(o)
    path = m.save(tmp_path / "q.onnx")
    with pytest.raises(UnsupportedModel) as e:
        load_qdq(path)
    msg = str(e.value)
    groups = _groups(msg, path, 4, "4 op type(s): AveragePool (1), DepthToSpace (1), DequantizeLinear (1), Erf (1)")
    assert groups[:2] == ["  AveragePool x1 (dilated AveragePool): n6_AveragePool",
                          "  DepthToSpace x1 (DepthToSpace mode 'XYZ' (DCR or CRD)): n3_DepthToSpace"]
    assert groups[2].startswith("  DequantizeLinear x1 (input 'xq' read with") and "a requantization" in groups[2], msg
    assert groups[3:] == ["  Erf x1 (unknown op): n2_Erf"]


def test_tflite_lists_unknown_ops_options_and_quantization(tmp_path: Path) -> None:
    from _tflite_cases import Model, S

    m = Model()
    t0, t1 = (m.tensor((1, 4, 4, 2), S.TensorType.INT8, 0.1, 0) for _ in range(2))
    t2 = m.tensor((1, 2, 2, 2), S.TensorType.INT8, 0.5, 0)            # pool output on another grid
    t3 = m.tensor((1, 2, 2, 2), S.TensorType.INT8, 0.1, 0)            # softmax output not on 1/256, -128
    t4 = m.tensor((1, 4, 4, 2), S.TensorType.INT8, 0.1, 0)
    pool = S.Pool2DOptionsT()
    pool.padding, pool.strideH, pool.strideW, pool.filterHeight, pool.filterWidth = S.Padding.VALID, 2, 2, 2, 2
    soft = S.SoftmaxOptionsT()
    soft.beta = 1.0
    relu = S.Pool2DOptionsT()
    relu.padding, relu.strideH, relu.strideW, relu.filterHeight, relu.filterWidth = S.Padding.SAME, 1, 1, 1, 1
    relu.fusedActivationFunction = 4                                       # TANH
    ops = [(S.BuiltinOperator.EXP, 0, None, [t0], [t1]),
           (S.BuiltinOperator.AVERAGE_POOL_2D, S.BuiltinOptions.Pool2DOptions, pool, [t1], [t2]),
           (S.BuiltinOperator.SOFTMAX, S.BuiltinOptions.SoftmaxOptions, soft, [t2], [t3]),
           (S.BuiltinOperator.MAX_POOL_2D, S.BuiltinOptions.Pool2DOptions, relu, [t0], [t4])]
    path = tmp_path / "four.tflite"
    path.write_bytes(m.build_ops(ops, [t0], [t3, t4]))
    with pytest.raises(UnsupportedModel) as e:
        load_tflite(path)
    msg = str(e.value)
    groups = _groups(msg, path, 4, "4 op type(s): AVERAGE_POOL_2D (1), EXP (1), MAX_POOL_2D (1), SOFTMAX (1)")
    assert groups[0].startswith("  AVERAGE_POOL_2D x1 (pooling from scale 0.1") and groups[0].endswith(": operator 1 't2'")
    assert groups[1] == "  EXP x1 (unknown op): operator 0 't1'"
    assert groups[2] == "  MAX_POOL_2D x1 (fused activation 4 (TANH/SIGN_BIT)): operator 3 't4'"
    assert groups[3].startswith("  SOFTMAX x1 (softmax output quantization") and groups[3].endswith(": operator 2 't3'")


def test_nodes_missing_required_inputs_are_refused_by_name(tmp_path: Path) -> None:
    """A node without a required input (Slice without starts/ends, Conv without W) breaks its ONNX
    operator schema: refused in one line naming the node (tests/frontend/test_onnx_validate.py), not
    a TypeError traceback from the converter call."""
    nodes = [helper.make_node("Slice", ["x"], ["s"], name="slice_1in"),
             helper.make_node("Conv", ["x"], ["c"], name="conv_no_w"),
             helper.make_node("ConvTranspose", ["x", ""], ["t"], name="ct_empty_w")]
    path = _float_model(tmp_path / "m.onnx", nodes, (1, 4, 6, 6), ["s", "c", "t"], {})
    with pytest.raises(InputError) as e:
        load_onnx(path)
    assert str(e.value) == f"{path}: node slice_1in (Slice): 1 inputs (Slice-13 takes 3 to 5); re-export the model"
