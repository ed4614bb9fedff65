"""Element-wise single-input QDQ ops as 256-entry tables of onnxruntime's own results.

DequantizeLinear -> Sigmoid / Tanh / LeakyRelu / Clip / ... -> QuantizeLinear with per-tensor grids
on both sides is, in int8, a function of one int8 value: 256 outputs. onnxruntime computes it in
float32 (its MLAS kernels for Sigmoid / Tanh are approximations, and the float32 products and the
QuantizeLinear division move near-ties either way), so the only exact emulation is its own result:
the table is onnxruntime's output for the 256 int8 inputs of the op alone (a three-node model, graph
optimisations off, the same opset, attributes and constant inputs). The op then becomes the IR
LOOKUP_TABLE (toolchain/ops/lookup_table.py), exact by construction; onnxruntime with its default
optimisations fuses the same chain into QLinearSigmoid / QLinearLeakyRelu, which build the same
table from the same float kernels (tests/frontend/test_qdq_tables.py checks both).

Relu and Clip whose output grid is the input's stay the int8 CLAMP: a clamp in one grid is exact.
An op whose converter emits more than one IR node (layout transposes), or that onnxruntime does not
run alone (e.g. a constant of another type than the input), keeps its IR ops.
Not here: the table op (ops/lookup_table.py), the frontend walk (onnx_qdq).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from quantize.given import same_qparams
from toolchain.ir import QuantParams
from toolchain.ops.lookup_table import LookupTableAttrs
from toolchain.ops.registry import OpKind

# ONNX element-wise ops of one activation input (other inputs constant) that become tables when
# the model quantizes their input and output; those with a float converter are wrapped.
TABLE_OPS = ("Sigmoid", "Tanh", "LeakyRelu", "Clip", "Relu", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus",
             "Softsign", "Exp", "Log", "Neg", "Abs", "Sqrt", "Erf", "Gelu", "Celu", "Mish", "Reciprocal",
             "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min")  # binary ones: with a constant scalar operand
SAME_GRID_EXACT = frozenset({"Relu", "Clip"})  # a clamp within one grid: the int8 CLAMP is exact
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def ort_table(node: Any, consts: dict[str, np.ndarray], opset: int, qx: QuantParams, qy: QuantParams,
              act: int = 0) -> np.ndarray:
    """onnxruntime's int8 outputs (index q + 128) of QuantizeLinear(node(DequantizeLinear(q))) for the
    256 int8 q: `node` an ONNX node whose input `act` is the activation and whose other inputs are
    constants in `consts`; qx / qy per-tensor int8 grids (a uint8 grid shifted by -128 has the same
    real values and the same outputs - 128). ORT graph optimisations off (its float simulation)."""
    import onnxruntime as ort

    inits = [numpy_helper.from_array(np.asarray(qx.s, np.float32), "sx"),
             numpy_helper.from_array(np.asarray(qx.zp, np.int8), "zx"),
             numpy_helper.from_array(np.asarray(qy.s, np.float32), "sy"),
             numpy_helper.from_array(np.asarray(qy.zp, np.int8), "zy")]
    ins = []
    for i, name in enumerate(node.input):
        if name and i != act:
            c = np.asarray(consts[name])  # a scalar operand as a scalar: the output keeps the input's shape
            inits.append(numpy_helper.from_array(c.reshape(()) if c.size == 1 else c, f"c{i}"))
        ins.append("x" if i == act else f"c{i}" if name else "")
    op = helper.make_node(node.op_type, ins, ["y"], name="op")
    op.attribute.extend(node.attribute)
    nodes = [helper.make_node("DequantizeLinear", ["q", "sx", "zx"], ["x"]), op,
             helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["out"])]
    g = helper.make_graph(nodes, "table", [helper.make_tensor_value_info("q", TensorProto.INT8, [256])],
                          [helper.make_tensor_value_info("out", TensorProto.INT8, [256])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7 if opset <= 15 else 10
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"q": ALL_INT8})[0], np.int8)


def as_table(b: Any, first: int) -> None:
    """Replace the one IR node the float converter just emitted for b.node (from index `first`) by a
    LOOKUP_TABLE of onnxruntime's outputs when the node reads one activation (the other inputs are
    constant scalars) and the model gives that activation and the output per-tensor grids (b.acts by
    ONNX name), unless the op is a clamp within one grid (module docstring)."""
    node = b.node
    acts = [i for i, name in enumerate(node.input) if name and name not in b.consts]
    if len(acts) != 1 or any(name and name in b.consts and b.consts[name].size != 1 for name in node.input):
        return
    a = acts[0]
    qx, qy = b.acts.get(node.input[a]), b.acts.get(node.output[0])
    if qx is None or qy is None or qx.is_per_channel or qy.is_per_channel:
        return
    if node.op_type in SAME_GRID_EXACT and same_qparams(qx, qy):
        return
    emitted, out, x = b.nodes[first:], b.vals.get(node.output[0]), b.vals.get(node.input[a])
    if len(emitted) != 1 or out is None or x is None or emitted[0].outputs[0] != out.name:
        return
    inner = emitted[0]
    if x.name not in inner.inputs or b.shape(out.name) != b.shape(x.name):
        return
    operands = tuple(None if n == x.name else b.tensors[n].data for n in inner.inputs)
    if any(v is not None and (v is None or np.size(v) != 1) for v in operands):
        return
    try:
        table = ort_table(node, b.consts, b.opset, qx, qy, a)
    except Exception:  # noqa: BLE001 - ORT refuses the node alone (e.g. a constant's type): keep the IR op
        return
    b.nodes.pop()
    scalars = tuple(None if v is None else float(np.asarray(v).reshape(-1)[0]) for v in operands)
    attrs = LookupTableAttrs(tuple(int(v) for v in table), inner.op, inner.attrs, qx, qy, scalars)
    b.emit(OpKind.LOOKUP_TABLE, [x.name], attrs, nhwc=out.nhwc)


def table_overrides(converters: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """op type -> its float converter followed by as_table, for the TABLE_OPS that have a converter."""
    out = {}
    for op_type in TABLE_OPS:
        float_fn = converters.get(op_type)
        if float_fn is None:
            continue

        def convert(b: Any, *args: Any, _float_fn: Callable[..., Any] = float_fn, **kwargs: Any) -> None:
            first = len(b.nodes)
            _float_fn(b, *args, **kwargs)
            as_table(b, first)

        out[op_type] = functools.wraps(float_fn)(convert)  # same signature: the Builder reads attributes from it
    return out


__all__ = ["TABLE_OPS", "as_table", "ort_table", "table_overrides"]
