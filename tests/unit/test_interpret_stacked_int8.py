"""interpret_each on int8 graphs: samples stacked on axis 0 through the int8 references
(OpDef.stacks_samples_int8) give every sample exactly its one-sample values (every activation, bit
for bit), on a graph of every stacking op in both rounding modes and on real models: the int8 graphs
edgecc makes from the MLPerf Tiny float models, and the MLPerf Tiny int8 .tflite files. quantize.auto
scores its candidates with it (held-out error), and bias correction runs its references that way."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from graph_builder import GraphBuilder
from quantize import quantize
from test_interpret_stacked import _assert_same_as_one_at_a_time, _every_stacking_op, _float_model
from toolchain.data import quantize_inputs
from toolchain.interpret import interpret_chunks, stack_size
from toolchain.ir import DType, Graph
from toolchain.ops.registry import OpKind
from toolchain.ops.relu import ReluAttrs

MLPERF = Path(__file__).resolve().parents[3] / "shared" / "models" / "mlperf_tiny"


def _with_relu_ops() -> Graph:
    """_every_stacking_op's graph with TFLite RELU / RELU6 nodes (requantizing Relu ops) after its input."""
    g = _every_stacking_op()
    gb = GraphBuilder()
    x = gb.input("x", g.t("x").shape)
    r = gb.node(OpKind.RELU, [gb.node(OpKind.RELU, [x], ReluAttrs())], ReluAttrs(6.0))
    head = gb.build(r)
    first = g.nodes[0]
    nodes = [*head.nodes, replace(first, inputs=(r, *first.inputs[1:])), *g.nodes[1:]]
    return g.with_nodes(nodes, {**g.tensors, **head.tensors})


def _int8_every_stacking_op(rounding: str) -> tuple[Graph, dict[str, np.ndarray]]:
    g = _with_relu_ops()
    data = {"x": (np.random.default_rng(1).standard_normal((13, 1, 11, 9, 3)) * 3).astype(np.float32)}
    q = quantize(g, data, "minmax")
    q = replace(q, meta={**q.meta, "rounding": rounding})
    return q, quantize_inputs(data, q)


@pytest.mark.parametrize("rounding", ["tflm", "onnx"])
def test_int8_graph_of_every_stacking_op_stacks_bit_for_bit(rounding):
    q, data = _int8_every_stacking_op(rounding)
    assert {n.op.value for n in q.nodes} >= {"Conv2D", "DepthwiseConv2D", "Add", "Relu", "Clamp", "MaxPool2D",
                                             "AveragePool2D", "Transpose", "Reshape", "FullyConnected", "Softmax"}
    assert all(q.t(n.outputs[0]).dtype == DType.INT8 for n in q.nodes)
    assert stack_size(q, 13) == 13
    _assert_same_as_one_at_a_time(q, data)
    sizes = [q.t(a).size for a in [*q.inputs, *(n.outputs[0] for n in q.nodes)]]
    small = 4 * (4 * sum(sizes) + 24 * max(sizes))  # chunks of 4 + 4 + 4 + 1
    assert stack_size(q, 13, max_bytes=small) == 4
    _assert_same_as_one_at_a_time(q, data, max_bytes=small)


def test_interpret_chunks_gives_samples_on_a_new_leading_axis():
    q, data = _int8_every_stacking_op("tflm")
    out = q.outputs[0]
    starts, firsts = [], []
    for start, env in interpret_chunks(q, data, max_bytes=0):  # max_bytes 0: one sample per chunk
        starts.append(start)
        assert env[out].shape == (1, *q.t(out).shape)          # [1, *shape]: a new axis
        firsts.append(env[out][0])
    assert starts == list(range(13))
    (start, env), = list(interpret_chunks(q, data))              # all 13 stacked: [13, *shape[1:]]
    assert start == 0 and env[out].shape == (13, *q.t(out).shape[1:])
    np.testing.assert_array_equal(env[out], np.concatenate(firsts))


def test_an_int16_node_runs_one_sample_at_a_time():
    q, data = _int8_every_stacking_op("tflm")
    relu = next(n for n in q.nodes if n.op.value == "Relu")
    wide = q.with_tensor(replace(q.t(relu.outputs[0]), dtype=DType.INT16))
    assert stack_size(q, 8) == 8 and stack_size(wide, 8) == 1  # 16x8 references do not stack (yet)


@pytest.mark.parametrize("yaml_name, samples", [("ic_resnet8_float.yaml", 40), ("vww_mobilenet_float.yaml", 24)])
def test_int8_graphs_of_the_mlperf_float_models_stack_bit_for_bit(yaml_name, samples):
    g, data = _float_model(yaml_name)
    data = {k: v[:samples] for k, v in data.items()}
    q = quantize(g, data, "mse")
    assert stack_size(q, samples) > 1  # every int8 op of the MLPerf float models stacks
    data_q = quantize_inputs(data, q)
    _assert_same_as_one_at_a_time(q, data_q)
    _assert_same_as_one_at_a_time(replace(q, meta={**q.meta, "rounding": "onnx"}), data_q)


@pytest.mark.parametrize("name", ["ic_resnet8_int8", "vww_mobilenet_int8", "kws_dscnn_int8", "ad_autoencoder_int8"])
def test_mlperf_int8_tflite_files_stack_bit_for_bit(name):
    from toolchain.frontend.tflite import load_tflite

    path = MLPERF / f"{name}.tflite"
    if not path.is_file():
        pytest.skip("the MLPerf Tiny files of ../shared are not here")
    q = load_tflite(path)
    rng = np.random.default_rng(0)
    data = {k: rng.integers(-128, 128, (12, *q.t(k).shape)).astype(q.t(k).dtype.np) for k in q.inputs}
    assert stack_size(q, 12) > 1
    _assert_same_as_one_at_a_time(q, data)
