"""ONNX QDQ / QLinear model -> its float core plus the model's quantization, still in ONNX terms.

Rewrites, node by node (ONNX names are kept wherever they stand for a float value):
- QuantizeLinear x -> q on an activation: q is "x on an int8 grid"; x gets the Q's parameters.
  DequantizeLinear q -> x': x' is x again (the pair disappears). With different parameters on
  the two sides (a requantization) the model is unsupported.
- QuantizeLinear / DequantizeLinear on constants: the constant becomes float (dequantized, as
  ORT's float simulation sees it) and its integers and parameters are recorded.
- QLinearConv / QLinearMatMul: a float Conv / MatMul on the float twins of their int inputs, the
  output carrying y_scale / y_zero_point.
- ConvInteger / MatMulInteger -> Cast(float) -> Mul(constant scale) [-> Add(constant bias)]: a
  float Conv / Gemm whose weight scale is that scale divided by the input's.
- int8 views (Reshape, Transpose, MaxPool, ...) between QLinear ops keep their input's parameters; an
  int8 / uint8 graph input read through such views takes the grid of the DequantizeLinear behind them.
uint8 tensors become int8: integers and zero point shifted by -128 (the real values are equal).
Not here: the float converters (toolchain.frontend.onnx) and the IR mapping (onnx_qdq).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from toolchain.frontend.onnx_validate import DEFAULT_DOMAINS
from toolchain.frontend.unsupported import Problem, node_label
from toolchain.ir import DType, QuantParams, Tensor

QDQ_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}
INT_VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Identity"}
ELEM = {TensorProto.INT8: "int8", TensorProto.UINT8: "uint8", TensorProto.FLOAT: "float32",
        TensorProto.INT32: "int32"}


class Skip(Exception):
    """One node cannot be rewritten; collected so every unsupported node is reported at once."""


@dataclass
class Stripped:
    """The float core: nodes in order, float constants, and the model's quantization by ONNX name."""

    nodes: list[Any] = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    acts: dict[str, QuantParams] = field(default_factory=dict)  # float value -> its int8 grid
    act_dtypes: dict[str, str] = field(default_factory=dict)  # float value -> its QuantizeLinear's "int8" / "uint8"
    weights: dict[str, Tensor] = field(default_factory=dict)    # float constant -> its integers + grid
    int_of: dict[str, tuple[str, QuantParams | None]] = field(default_factory=dict)  # int tensor -> float twin
    alias: dict[str, str] = field(default_factory=dict)          # DequantizeLinear output -> float value
    errors: list[Problem] = field(default_factory=list)
    index: dict[tuple[str, ...], int] = field(default_factory=dict)  # core node outputs -> ONNX node index
    weight_source: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)  # -> (initializer, its zp)


def _qparams(scale: np.ndarray, zp: np.ndarray | None, axis: int | None, what: str) -> QuantParams:
    """ONNX scale / zero point (any int8 / uint8 / int32) -> int8 QuantParams (uint8: zp - 128)."""
    s = np.asarray(scale, np.float32).reshape(-1)
    if zp is None:
        z = np.zeros(1, np.int64)
    else:
        if zp.dtype not in (np.int8, np.uint8, np.int32):
            raise Skip(f"{what}: zero point of type {zp.dtype} (int8 / uint8 only)")
        z = np.asarray(zp, np.int64).reshape(-1) - (128 if zp.dtype == np.uint8 else 0)
    if s.size != z.size and z.size != 1:
        raise Skip(f"{what}: {s.size} scales with {z.size} zero points")
    if s.size == 1:
        return QuantParams.per_tensor(float(s[0]), int(z[0]))
    z = np.broadcast_to(z, s.shape)
    return QuantParams(tuple(float(v) for v in s), tuple(int(v) for v in z), axis)


def _ints(q: np.ndarray, what: str) -> tuple[np.ndarray, DType]:
    if q.dtype == np.uint8:
        return q.astype(np.int16) - 128, DType.INT8
    if q.dtype in (np.int8, np.int32):
        return q, DType.INT8 if q.dtype == np.int8 else DType.INT32
    raise Skip(f"{what}: integers of type {q.dtype} (int8 / uint8 / int32 only)")


def _grid(qp: QuantParams, ndim: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 scale and zero point arrays that broadcast against a tensor of rank ndim."""
    shape = [1] * ndim
    if qp.is_per_channel:
        shape[axis] = -1
    return (np.asarray(qp.scale, np.float32).reshape(shape if qp.is_per_channel else []),
            np.asarray(qp.zero_point, np.float32).reshape(shape if qp.is_per_channel else []))


def _dequantize(q: np.ndarray, qp: QuantParams, axis: int) -> np.ndarray:
    """Real values in float32 as ORT computes them: (q - zp) * scale, per-axis along `axis`."""
    s, z = _grid(qp, q.ndim, axis)
    return ((q.astype(np.float32) - z) * s).astype(np.float32)


class Stripper:
    """Walks the ONNX nodes once; `run()` returns the Stripped model."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.m = model
        self.s = Stripped()
        self.init: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.failed: set[str] = set()
        self.consumers: dict[str, list[Any]] = {}
        for n in model.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.done: set[int] = set()  # ids of nodes folded into an earlier pattern
        self.q_consts: dict[str, QuantParams] = {}  # QuantizeLinear of a float constant -> its grid
        self.int_dtype: dict[str, np.dtype] = {}     # int tensor -> int8 / uint8 (default zero point type)
        self.view_of: dict[str, str] = {}  # int view of a graph input whose grid is not known yet -> its source

    # -- helpers -----------------------------------------------------------------------------
    def const(self, name: str, what: str) -> np.ndarray:
        if name not in self.init:
            raise Skip(f"{what} {name!r} is not a constant")
        return self.init[name]

    def opt_const(self, node: Any, i: int, what: str) -> np.ndarray | None:
        return self.const(node.input[i], what) if len(node.input) > i and node.input[i] else None

    def float_name(self, name: str) -> str:
        return self.s.alias.get(name, name)

    def twin(self, name: str, qp: QuantParams, what: str) -> str:
        """The float twin of int tensor `name`, which the consumer reads with `qp`."""
        if name not in self.s.int_of:
            raise Skip(f"{what} {name!r} is not an int8 tensor of the model")
        fx, have = self.s.int_of[name]
        if qp.is_per_channel:
            raise Skip(f"per-axis quantization of activation {name!r}")
        if have is None:  # an int8 graph input (or a view of one): its first reader defines the grid
            while name is not None:
                self.s.int_of[name] = (self.s.int_of[name][0], qp)
                self.set_act(self.s.int_of[name][0], qp)
                name = self.view_of.get(name)
        elif have != qp and not _close(have, qp):
            raise Skip(f"{what} {name!r} read with scale/zero point {qp.scale[0]:.9g}/{qp.zero_point[0]}, "
                       f"written with {have.scale[0]:.9g}/{have.zero_point[0]} (a requantization)")
        return fx

    def set_act(self, name: str, qp: QuantParams) -> None:
        if qp.is_per_channel:
            raise Skip(f"per-axis quantization of activation {name!r}")
        old = self.s.acts.get(name)
        if old is not None and not _close(old, qp):
            raise Skip(f"tensor {name!r} quantized twice with different parameters")
        self.s.acts[name] = qp

    def given_const(self, name: str, q: np.ndarray, qp: QuantParams, axis: int,
                    source: tuple[str, np.ndarray] | None = None) -> str:
        """Record constant `name` = dequantized q; returns the float constant's name. `source`: the
        file's integer tensor and zero point as written (uint8 unshifted), for error messages."""
        ints, dtype = _ints(q, f"constant {name!r}")  # uint8: integers - 128, as the zero point
        self.s.consts[name] = _dequantize(ints, qp, axis)
        data = ints.astype(np.int32 if dtype == DType.INT32 else np.int8)
        self.s.weights[name] = Tensor(name, tuple(ints.shape), dtype, qp, data)
        if source is not None:
            self.s.weight_source[name] = source
        return name

    def emit(self, op: str, inputs: list[str], outputs: list[str], name: str, attrs_of: Any = None) -> None:
        """A float core node; `attrs_of`: the ONNX node whose attributes it takes, copied as written
        (rebuilding them from values loses the type of an empty list)."""
        new = helper.make_node(op, inputs, outputs, name=name)
        if attrs_of is not None:
            new.attribute.extend(attrs_of.attribute)
        self.s.nodes.append(new)

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> Stripped:
        for inp in self.m.graph.input:
            if inp.name in self.init:
                continue
            if inp.type.tensor_type.elem_type in (TensorProto.INT8, TensorProto.UINT8):
                self.s.int_of[inp.name] = (inp.name, None)
                self.int_dtype[inp.name] = np.dtype(np.uint8 if inp.type.tensor_type.elem_type == TensorProto.UINT8
                                                    else np.int8)
        for index, node in enumerate(self.m.graph.node):
            if id(node) in self.done:
                continue
            if any(i in self.failed for i in node.input):
                self.failed.update(node.output)
                continue
            emitted = len(self.s.nodes)
            try:
                standard = node.domain in DEFAULT_DOMAINS  # other domains: on_float refuses them
                getattr(self, f"on_{node.op_type}" if standard else "on_float", self.on_float)(node)
            except Skip as e:
                self.s.errors.append(Problem(node_label(node.name, index), node.op_type, str(e)))
                self.failed.update(node.output)
            self.s.index.update((tuple(n.output), index) for n in self.s.nodes[emitted:])
        self.s.consts = {**self.init, **self.s.consts}  # float weights, shapes, ...; unused ones cost nothing
        return self.s

    def on_Constant(self, node: Any) -> None:  # noqa: N802 - ONNX op names
        attrs = {a.name: a for a in node.attribute}
        if "value" not in attrs:
            raise Skip(f"Constant attribute(s) {sorted(attrs)} (only `value`)")
        self.init[node.output[0]] = numpy_helper.to_array(attrs["value"].t)

    def _q_attrs(self, node: Any, x_rank: int) -> int:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("block_size", 0):
            raise Skip("blocked quantization (block_size)")
        unknown = set(attrs) - {"axis", "saturate", "block_size", "output_dtype"}
        if unknown:
            raise Skip(f"attribute(s) {sorted(unknown)}")
        if attrs.get("output_dtype", 0) not in (0, TensorProto.INT8, TensorProto.UINT8):
            raise Skip(f"output_dtype {attrs['output_dtype']} (int8 / uint8 only)")
        axis = int(attrs.get("axis", 1))
        return axis % x_rank if x_rank else 0

    def on_QuantizeLinear(self, node: Any) -> None:  # noqa: N802
        zp = self.opt_const(node, 2, "zero point")
        if zp is None:  # opset 21: output_dtype decides; default uint8
            od = next((a.i for a in node.attribute if a.name == "output_dtype"), 0)
            zp = np.zeros((), np.int8 if od == TensorProto.INT8 else np.uint8)
        x = node.input[0]
        rank = self.init[x].ndim if x in self.init else 1
        qp = _qparams(self.const(node.input[1], "scale"), zp, self._q_attrs(node, rank), f"QuantizeLinear {x!r}")
        if x in self.init:  # float weights quantized in the graph: their integers, ties to even
            sc, zf = _grid(qp, self.init[x].ndim, qp.axis or 0)
            q = np.clip(np.rint(self.init[x].astype(np.float32) / sc) + zf, -128, 127)
            self.init[node.output[0]] = (q + 128).astype(np.uint8) if zp.dtype == np.uint8 else q.astype(np.int8)
            self.q_consts[node.output[0]] = qp
            return
        fx = self.float_name(x)
        if fx in self.init:
            raise Skip(f"QuantizeLinear of constant {x!r} through other nodes")
        self.set_act(fx, qp)
        self.s.int_of[node.output[0]] = (fx, qp)
        self.int_dtype[node.output[0]] = zp.dtype
        self.s.act_dtypes.setdefault(fx, str(zp.dtype))  # a float graph input's: the DATA dtype rule (io_dtypes)

    def on_DequantizeLinear(self, node: Any) -> None:  # noqa: N802
        q = node.input[0]
        if q in self.init:
            data = self.init[q]
            axis = self._q_attrs(node, data.ndim)
            zp = self.opt_const(node, 2, "zero point")
            if zp is None:
                zp = np.zeros((), data.dtype)
            if data.dtype == np.int8 and zp.dtype == np.uint8 or data.dtype == np.uint8 and zp.dtype == np.int8:
                raise Skip("integers and zero point of different types")
            qp = _qparams(self.const(node.input[1], "scale"), zp, axis, f"DequantizeLinear {q!r}")
            if q in self.q_consts and not _close(self.q_consts[q], qp):
                raise Skip(f"constant {q!r} dequantized with other parameters than it was quantized with")
            self.given_const(node.output[0], data, qp, axis, (q, zp))
            return
        zp = self.opt_const(node, 2, "zero point")
        if zp is None:  # absent: 0 of the integers' type
            zp = np.zeros((), self.int_dtype.get(q, np.dtype(np.int8)))
        qp = _qparams(self.const(node.input[1], "scale"), zp, self._q_attrs(node, 1), f"DequantizeLinear {q!r}")
        self.s.alias[node.output[0]] = self.twin(q, qp, "input")

    def on_QLinearConv(self, node: Any) -> None:  # noqa: N802
        i = node.input
        x = self.twin(i[0], _qparams(self.const(i[1], "x_scale"), self.const(i[2], "x_zero_point"), None, "x"), "x")
        w = self.const(i[3], "weights")
        w_qp = _qparams(self.const(i[4], "w_scale"), self.const(i[5], "w_zero_point"), 0, "w")
        wname = self.given_const(f"{node.output[0]}__w", w, w_qp, 0, (i[3], self.const(i[5], "w_zero_point")))
        ins = [x, wname]
        if len(i) > 8 and i[8]:
            ins.append(self._bias(f"{node.output[0]}__b", self.const(i[8], "bias"), self.s.acts[x], w_qp))
        self._out(node, self.const(i[6], "y_scale"), self.const(i[7], "y_zero_point"))
        self.emit("Conv", ins, [node.output[0]], node.name, node)

    def on_QLinearMatMul(self, node: Any) -> None:  # noqa: N802
        i = node.input
        a = self.twin(i[0], _qparams(self.const(i[1], "a_scale"), self.const(i[2], "a_zero_point"), None, "a"), "a")
        if i[3] in self.init:
            b_qp = _qparams(self.const(i[4], "b_scale"), self.const(i[5], "b_zero_point"), 1, "b")
            b_src = (i[3], self.const(i[5], "b_zero_point"))
            b = self.given_const(f"{node.output[0]}__b", self.init[i[3]], b_qp, 1, b_src)
        else:
            b = self.twin(i[3], _qparams(self.const(i[4], "b_scale"), self.const(i[5], "b_zero_point"), None, "b"), "b")
        self._out(node, self.const(i[6], "y_scale"), self.const(i[7], "y_zero_point"))
        self.emit("MatMul", [a, b], [node.output[0]], node.name)

    def on_ConvInteger(self, node: Any) -> None:  # noqa: N802
        self._integer(node, "Conv")

    def on_MatMulInteger(self, node: Any) -> None:  # noqa: N802
        self._integer(node, "Gemm")

    def _integer(self, node: Any, op: str) -> None:
        """X-Integer -> Cast(float) -> Mul(const) [-> Add(const)]: one float Conv / Gemm."""
        chain, out = self._requant_chain(node)
        mul = chain[1]
        if node.input[0] not in self.s.int_of or self.s.int_of[node.input[0]][1] is None:
            raise Skip(f"input {node.input[0]!r} without known quantization (needs a QuantizeLinear producer)")
        fx, x_qp = self.s.int_of[node.input[0]]
        x_zp = self.opt_const(node, 2, "x zero point")
        if x_zp is not None and int(np.asarray(x_zp, np.int64).reshape(-1)[0]) - (128 if x_zp.dtype == np.uint8 else 0) != x_qp.zp:
            raise Skip("x zero point differs from the input's quantization")
        w = self.const(node.input[1], "weights")
        scale_in = next(j for j in mul.input if j != chain[0].output[0])
        combined = np.asarray(self.const(scale_in, "scale"), np.float64)
        cout = w.shape[0] if op == "Conv" else w.shape[-1]
        w_scale = _channel_vector(combined, cout, op, "scale") / x_qp.s
        w_zp = self.opt_const(node, 3, "w zero point")
        axis = 0 if op == "Conv" else 1
        w_zp = w_zp if w_zp is not None else np.zeros((), w.dtype)
        w_qp = _qparams(w_scale.astype(np.float32), w_zp, axis, "w")
        wname = self.given_const(f"{out}__w", w, w_qp, axis, (node.input[1], w_zp))
        ins = [fx, wname]
        if len(chain) == 3:
            add = chain[2]
            b_in = next(j for j in add.input if j != mul.output[0])
            bias = _channel_vector(np.asarray(self.const(b_in, "bias"), np.float64), cout, op, "bias")
            self.s.consts[f"{out}__bias"] = bias.astype(np.float32)
            ins.append(f"{out}__bias")
        self.emit(op, ins, [out], node.name, node if op == "Conv" else None)
        self.done.update(id(n) for n in chain)

    def _requant_chain(self, node: Any) -> tuple[list[Any], str]:
        def only(name: str, op: str) -> Any | None:
            users = self.consumers.get(name, [])
            return users[0] if len(users) == 1 and users[0].op_type == op else None

        cast = only(node.output[0], "Cast")
        if cast is None or next((a.i for a in cast.attribute if a.name == "to"), 0) != TensorProto.FLOAT:
            raise Skip("int32 output not requantized (needs Cast(float) -> Mul(scale) [-> Add(bias)] -> QuantizeLinear)")
        mul = only(cast.output[0], "Mul")
        if mul is None or not any(j in self.init for j in mul.input if j != cast.output[0]):
            raise Skip("int32 output not scaled by a constant Mul after its Cast")
        add = only(mul.output[0], "Add")
        if add is not None and any(j in self.init for j in add.input if j != mul.output[0]):
            return [cast, mul, add], add.output[0]
        return [cast, mul], mul.output[0]

    def _bias(self, name: str, b: np.ndarray, x_qp: QuantParams, w_qp: QuantParams) -> str:
        if b.dtype != np.int32:
            raise Skip(f"bias of type {b.dtype} (int32 only)")
        scale = np.float32(x_qp.s) * np.asarray(w_qp.scale, np.float32)  # QLinearConv: x_scale * w_scale
        qp = QuantParams(tuple(float(v) for v in np.broadcast_to(scale, b.shape)), (0,) * b.size, 0)
        return self.given_const(name, b, qp, 0)

    def _out(self, node: Any, scale: np.ndarray, zp: np.ndarray) -> None:
        self.int_dtype[node.output[0]] = zp.dtype
        qp = _qparams(scale, zp, None, "y")
        self.set_act(node.output[0], qp)
        self.s.int_of[node.output[0]] = (node.output[0], qp)

    def on_float(self, node: Any) -> None:
        if node.domain not in ("", "ai.onnx"):
            raise Skip(f"op domain {node.domain!r}")
        ints = [i for i in node.input if i in self.s.int_of]
        ins = [self.s.int_of[i][0] if i in self.s.int_of else self.float_name(i) for i in node.input]
        if ints:
            if node.op_type not in INT_VIEWS or ints != [node.input[0]]:
                raise Skip(f"int8 input {ints[0]!r} to a float op (only views and MaxPool pass int8 through)")
            qp = self.s.int_of[ints[0]][1]  # the twin of the int8 output keeps the input's grid
            self.int_dtype[node.output[0]] = self.int_dtype.get(ints[0], np.dtype(np.int8))
            if qp is None:  # a view of an int8 graph input: the DequantizeLinear behind it gives both the grid
                self.view_of[node.output[0]] = ints[0]
            else:
                self.set_act(node.output[0], qp)
            self.s.int_of[node.output[0]] = (node.output[0], qp)
        self.emit(node.op_type, ins, list(node.output), node.name, node)


def _close(a: QuantParams, b: QuantParams) -> bool:
    return a.zero_point == b.zero_point and len(a.scale) == len(b.scale) and all(
        abs(x - y) <= 1e-6 * max(abs(x), abs(y)) for x, y in zip(a.scale, b.scale))


def _channel_vector(v: np.ndarray, cout: int, op: str, what: str) -> np.ndarray:
    """A scale / bias constant broadcast along the output channels (Conv: [C,1,1] or [1,C,1,1];
    Gemm: [N] or [1,N]) -> float64 [cout]; a scalar is repeated."""
    if v.size == 1:
        return np.full(cout, float(v.reshape(-1)[0]))
    shape = [s for s in v.shape]
    ok = v.size == cout and (shape[-3:] in ([cout, 1, 1],) if op == "Conv" else shape[-1] == cout)
    if not ok:
        raise Skip(f"{what} of shape {shape} (needs one value per output channel)")
    return v.reshape(-1).astype(np.float64)


def strip(model: onnx.ModelProto) -> Stripped:
    """The float core of a QDQ / QLinear model and its quantization (see the module docstring)."""
    return Stripper(model).run()


def elem_types(model: onnx.ModelProto) -> dict[str, str]:
    """Graph input / output name -> element type name (float32, int8, uint8, ...)."""
    vis = list(model.graph.input) + list(model.graph.output)
    return {v.name: ELEM.get(v.type.tensor_type.elem_type, str(v.type.tensor_type.elem_type)) for v in vis}
