"""Validation at the door (toolchain/frontend/onnx_validate*.py): every kind of invalid ONNX file
the fuzz campaign found is refused through the CLI with exit 2 and ONE line naming the file and the
node / tensor, no traceback, nothing written; one test per kind, parametrized over instances of it.
Here: graph structure, tensor data, names, domains and opsets, quantization parameters, and the
validator itself; attribute values and operator schemas: test_onnx_validate_attrs.py. Valid
neighbours (an empty optional input, a zero weight scale) still import."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _validate_cases import X_SHAPE, assert_rejected, build, float_model, mutate, qdq_model, single
from onnx import TensorProto, helper, numpy_helper

from toolchain.errors import InputError, printable
from toolchain.frontend.onnx import load_onnx
from toolchain.frontend.onnx_validate import validate


# ---- graph structure ---------------------------------------------------------------------------
def _add(m, *nodes):
    m.graph.node.extend(nodes)


GRAPHS = {
    "dangling input": (lambda m: m.graph.node[1].input.__setitem__(0, "ghost"), ["relu1 (Relu)", "'ghost'"]),
    "produced twice": (lambda m: _add(m, helper.make_node("Relu", ["x"], ["c"], name="again")), ["again", "'c'"]),
    "output is an initializer name": (lambda m: m.graph.node[0].output.__setitem__(0, "w"), ["conv1", "'w'"]),
    "no outputs": (lambda m: m.graph.ClearField("output"), ["graph", "no outputs"]),
    "output nothing produces": (lambda m: m.graph.output.add().CopyFrom(
        helper.make_tensor_value_info("nowhere", TensorProto.FLOAT, None)), ["graph output 'nowhere'"]),
    "out of order": (lambda m: m.graph.node.reverse(), ["relu1 (Relu)", "topological order"]),
    "cycle": (lambda m: (m.graph.node[0].input.__setitem__(0, "y"), m.graph.input[0].__setattr__("name", "x0")),
              ["cycle", "conv1", "relu1"]),
}


@pytest.mark.parametrize("case", GRAPHS, ids=list(GRAPHS))
def test_invalid_graph_structure_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    fn, needles = GRAPHS[case]
    build(tmp_path, edgecc, mutate(fn), *needles)


# ---- tensor data and dims ----------------------------------------------------------------------
def _weights(m) -> onnx.TensorProto:
    return m.graph.initializer[0]


def _float_data(m, n: int) -> None:
    t = _weights(m)
    t.ClearField("raw_data")
    t.float_data.extend([0.1] * n)


TENSORS = {
    "raw_data short": (lambda m: setattr(_weights(m), "raw_data", _weights(m).raw_data[:-4]),
                       ["initializer 'w'", "212 bytes"]),
    "raw_data long": (lambda m: setattr(_weights(m), "raw_data", _weights(m).raw_data + b"\0" * 8),
                      ["initializer 'w'", "needs 216"]),
    "float_data short": (lambda m: _float_data(m, 53), ["initializer 'w'", "53 values"]),
    "two data fields": (lambda m: _weights(m).float_data.extend([1.0]), ["initializer 'w'", "ONNX allows one"]),
    "negative initializer dim": (lambda m: _weights(m).dims.__setitem__(0, -3), ["initializer 'w'", "negative"]),
    "absurd initializer dims": (lambda m: _weights(m).dims.extend([1 << 20, 1 << 20]), ["initializer 'w'", "elements"]),
    "negative input dim": (lambda m: m.graph.input[0].type.tensor_type.shape.dim[2].__setattr__("dim_value", -500),
                           ["graph input 'x'", "negative"]),
    "huge input dim": (lambda m: m.graph.input[0].type.tensor_type.shape.dim[3].__setattr__("dim_value", 1 << 30),
                       ["graph input 'x'", "too large"]),
    "undefined dtype": (lambda m: setattr(_weights(m), "data_type", 0), ["initializer 'w'", "data type 0"]),
}


@pytest.mark.parametrize("case", TENSORS, ids=list(TENSORS))
def test_tensor_data_not_matching_its_shape_is_refused(tmp_path: Path, edgecc, case: str) -> None:
    fn, needles = TENSORS[case]
    build(tmp_path, edgecc, mutate(fn), *needles)


# ---- names -------------------------------------------------------------------------------------
def _bytes_with(m: onnx.ModelProto, name: bytes, bad: bytes) -> bytes:
    data = m.SerializeToString()
    assert data.count(name) >= 1
    return data.replace(name, bad)


def test_non_utf8_names_are_refused(tmp_path: Path, edgecc) -> None:
    m = float_model()
    build(tmp_path, edgecc, _bytes_with(m, b"relu1", b"rel\xff1"), "not UTF-8", "rel\\xff1")


@pytest.mark.parametrize("where", ["graph input", "graph output", "initializer"])
def test_empty_graph_names_are_refused(tmp_path: Path, edgecc, where: str) -> None:
    m = float_model()
    item = {"graph input": m.graph.input, "graph output": m.graph.output, "initializer": m.graph.initializer}[where]
    item[0].name = ""
    build(tmp_path, edgecc, m, f"{where} #0", "empty name")


def test_control_characters_in_names_are_escaped(tmp_path: Path, edgecc) -> None:
    m = float_model()
    m.graph.node[1].name = "evil\nline\x1b[31m"
    m.graph.node[1].input[0] = "gh\tost"
    line = build(tmp_path, edgecc, m, "evil\\nline\\x1b[31m", "gh\\tost")
    assert "\x1b" not in line and "\t" not in line


def test_empty_optional_input_stays_valid(tmp_path: Path) -> None:
    m = single("Relu")
    m.graph.node[0].op_type = "Clip"
    m.graph.node[0].input.extend(["", "hi"])  # min absent (""), max given
    m.graph.initializer.append(numpy_helper.from_array(np.float32(6.0), "hi"))
    onnx.save(m, str(tmp_path / "clip.onnx"))
    assert [n.op.value for n in load_onnx(tmp_path / "clip.onnx").nodes][-1] == "Clamp"


# ---- domains and opsets ------------------------------------------------------------------------
def _domain(domain: str, imported: bool = True):
    def fn(m):
        m.graph.node[0].domain = domain
        if imported:
            m.opset_import.append(helper.make_opsetid(domain, 1))
    return fn


DOMAINS = {
    "com.example Conv": (_domain("com.example"), ["conv1 (Conv)", "custom domain 'com.example'"]),
    "domain not imported": (_domain("com.microsoft", imported=False), ["conv1 (Conv)", "no opset_import"]),
    "opset 10^6": (lambda m: setattr(m.opset_import[0], "version", 10**6), ["opset_import", "1000000"]),
    "opset past onnx": (lambda m: setattr(m.opset_import[0], "version", onnx.defs.onnx_opset_version() + 1),
                        ["opset_import", str(onnx.defs.onnx_opset_version() + 1)]),
    "no default opset": (lambda m: (m.opset_import.pop(), m.opset_import.append(helper.make_opsetid("x.y", 1))),
                         ["opset_import", "default domain"]),
}


@pytest.mark.parametrize("case", DOMAINS, ids=list(DOMAINS))
def test_foreign_domains_and_opsets_are_refused(tmp_path: Path, edgecc, case: str) -> None:
    fn, needles = DOMAINS[case]
    build(tmp_path, edgecc, mutate(fn), *needles)


def test_onnxruntime_domain_op_is_never_compiled_as_the_standard_op(tmp_path: Path, edgecc) -> None:
    path = tmp_path / "ms.onnx"
    onnx.save(mutate(_domain("com.microsoft")), str(path))
    np.save(tmp_path / "calib.npy", np.zeros((2, *X_SHAPE), np.float32))
    res = edgecc("build", "--model", path, "--calibration", tmp_path / "calib.npy", "--board", "host",
                 "--out", tmp_path / "out")
    assert_rejected(res, tmp_path / "out", "Conv x1 (op of domain 'com.microsoft'", "conv1", max_lines=3)


# ---- quantization parameters -------------------------------------------------------------------
XQ, WD = "n0_QuantizeLinear (QuantizeLinear)", "n2_DequantizeLinear (DequantizeLinear)"  # qdq_model's nodes
QDQ = {
    "scale inf": (dict(scale=np.inf), [XQ, "scale 'xq_s'", "inf"]),
    "scale nan": (dict(scale=np.nan), [XQ, "nan"]),
    "scale 0": (dict(scale=0.0), [XQ, "0.0"]),
    "scale negative": (dict(scale=-0.5), [XQ, "-0.5"]),
    "scale subnormal": (dict(scale=1e-42), [XQ, "scale 'xq_s'"]),
    "weight scale negative": (dict(w_scale=-0.1), [WD, "scale 'wd_s'"]),
    "zero point int32 2^31-1": (dict(zp=2**31 - 1, zp_dtype=np.int32), [XQ, "int32"]),
    "zero point int16": (dict(zp=3, zp_dtype=np.int16), [XQ, "int16"]),
}


@pytest.mark.parametrize("case", QDQ, ids=list(QDQ))
def test_bad_quantization_parameters_are_refused(tmp_path: Path, edgecc, case: str) -> None:
    kwargs, needles = QDQ[case]
    build(tmp_path, edgecc, qdq_model(**kwargs), *needles)


def _per_axis(m: onnx.ModelProto, scales: int, axis: int, zps: int | None = None) -> None:
    inits = {t.name: t for t in m.graph.initializer}
    inits["wd_s"].CopyFrom(numpy_helper.from_array(np.full(scales, 0.1, np.float32), "wd_s"))
    inits["wd_z"].CopyFrom(numpy_helper.from_array(np.zeros(zps or scales, np.int8), "wd_z"))
    dq = next(n for n in m.graph.node if n.output[0] == "wd")
    dq.attribute.append(helper.make_attribute("axis", axis))


@pytest.mark.parametrize("scales, axis, zps, needle", [(4, 0, None, "4 scales for axis 0"),
                                                       (3, 7, None, "axis 7"),
                                                       (3, 0, 2, "zero point 'wd_z' of shape [2]")])
def test_scale_and_zero_point_shapes_are_checked(tmp_path: Path, edgecc, scales, axis, zps, needle) -> None:
    m = qdq_model().model()
    _per_axis(m, scales, axis, zps)
    build(tmp_path, edgecc, m, WD, needle)


def test_out_of_range_int8_zero_point_in_int32_data_is_refused(tmp_path: Path, edgecc) -> None:
    m = qdq_model().model()
    zp = next(t for t in m.graph.initializer if t.name == "xq_z")
    zp.ClearField("raw_data")
    zp.int32_data.append(1 << 20)
    build(tmp_path, edgecc, m, XQ, "1048576")


# ---- the validator directly ---------------------------------------------------------------------
def test_valid_models_pass_and_zero_weight_scale_stays_valid() -> None:
    validate(float_model(), "m.onnx")
    validate(qdq_model().model(), "q.onnx")
    m = qdq_model(w_scale=0.0).model()  # onnxruntime: a weight channel of zeros gets scale 0
    validate(m, "q.onnx")


@pytest.mark.parametrize("case", list(GRAPHS)[:3] + list(TENSORS)[:3] + list(DOMAINS)[:2])
def test_validator_raises_one_line_input_error(case: str) -> None:
    fn, needles = {**GRAPHS, **TENSORS, **DOMAINS}[case]
    with pytest.raises(InputError) as e:
        validate(mutate(fn), "m.onnx")
    msg = str(e.value)
    assert msg.startswith("m.onnx: ") and "\n" not in msg and all(n in msg for n in needles), msg


def test_printable_escapes_controls_and_cuts() -> None:
    assert printable("a\nb\x00c") == "a\\nb\\x00c"
    assert printable(b"\xfe") == "\\xfe"
    assert printable("é漢") == "é漢"
    assert len(printable("n" * 500)) == 60


