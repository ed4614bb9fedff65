"""Validation at the door for .tflite (toolchain/frontend/tflite_validate.py): a mutated or corrupt
file is refused by `edgecc build` with exit 2 and ONE line naming the file and the operator (#index
and opcode) or tensor (#index and name), no traceback, nothing written. One test per kind of defect
(parametrized over instances), built from the valid model of _tflite_mutants.base_model(), plus a
seeded byte-flip sweep that must never end in a traceback.
"""
from __future__ import annotations

import inspect
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from _tflite_mutants import (
    add_orphan_output,
    add_tensor_read_by,
    base_model,
    buffer_of,
    flipped,
    graph_field,
    mutate,
    op_field,
    op_index,
    quant_field,
    short_data,
    swap_ops,
    tensor_field,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_helpers import assert_rejected

BASE = base_model()


def _refused(edgecc, tmp_path: Path, model: bytes, *needles: str) -> str:
    """Build `model` on the host board: refused in one line holding the file name and every needle."""
    path, out = tmp_path / "bad.tflite", tmp_path / "out"
    path.write_bytes(model)
    res = edgecc("build", "--model", path, "--board", "host", "--out", out)
    line = assert_rejected(res, out, str(path), *needles)
    # 300 characters with a 70-character path: the path is pytest's temp folder, whose length varies
    # (pytest-NNN, and popen-gwN/ under xdist), so the rest of the line is what is bounded
    assert len(line) - len(str(path)) <= 230, f"{len(line) - len(str(path))} characters besides the path: {line}"
    return line


def _chain(*edits):
    def edit(m):
        for e in edits:
            e(m)
    return edit


def test_the_base_model_builds(edgecc, tmp_path):
    """The unmutated model (absent FC bias = -1 at an optional input) is valid: the cases below fail
    because of their one mutation."""
    (tmp_path / "ok.tflite").write_bytes(BASE)
    res = edgecc("build", "--model", tmp_path / "ok.tflite", "--board", "host", "--out", tmp_path / "out")
    assert res.code == 0, res.err


INDICES = {
    "op input past the tensors": (op_index(1, "inputs", 0, 7), "operator #1 RESHAPE", "tensor index 7"),
    "op input huge": (op_index(0, "inputs", 1, 2**31 - 1), "operator #0 CONV_2D", "tensor index 2147483647"),
    "op input -2 at the optional bias": (op_index(2, "inputs", 2, -2), "operator #2 FULLY_CONNECTED", "index -2"),
    "op input -1 where required": (op_index(0, "inputs", 0, -1), "operator #0 CONV_2D", "input 0 is -1"),
    "op weights -1": (op_index(2, "inputs", 1, -1), "operator #2 FULLY_CONNECTED", "input 1 is -1"),
    "op output past the tensors": (op_index(2, "outputs", 0, 9), "operator #2 FULLY_CONNECTED", "output 0"),
    "op output -1": (op_index(1, "outputs", 0, -1), "operator #1 RESHAPE", "tensor index -1"),
    "op without outputs": (op_field(1, "outputs", []), "operator #1 RESHAPE", "no outputs"),
    "opcode index past the codes": (op_field(1, "opcodeIndex", 3), "operator #1", "opcode index 3"),
    "buffer index past the buffers": (tensor_field(1, "buffer", 40), "tensor #1 't1'", "buffer index 40"),
    "graph input past the tensors": (graph_field("inputs", [7]), "graph input #0", "tensor index 7"),
    "graph input -1": (graph_field("inputs", [-1]), "graph input #0", "tensor index -1"),
    "graph output past the tensors": (graph_field("outputs", [6, 100]), "graph output #1", "tensor index 100"),
    "graph output -1": (graph_field("outputs", [-1]), "graph output #0", "tensor index -1"),
    "graph output listed twice": (graph_field("outputs", [6, 6]), "graph output #1", "listed twice"),
    "no graph inputs": (graph_field("inputs", []), "no graph inputs"),
    "no graph outputs": (graph_field("outputs", []), "no graph outputs"),
    "no subgraph": (lambda m: setattr(m, "subgraphs", []), "model: no subgraph"),
    "no buffers": (lambda m: setattr(m, "buffers", []), "tensor #0 't0'", "buffer index 0 but the model has 0"),
}


@pytest.mark.parametrize("case", INDICES)
def test_indices_out_of_range_or_absent(edgecc, tmp_path, case):
    """Tensor / opcode / buffer / graph input / output indices must name an entry; -1 only at an
    optional operator input (no wrap to the last tensor)."""
    edit, *needles = INDICES[case]
    _refused(edgecc, tmp_path, mutate(BASE, edit), *needles)


QUANT = {
    "activation scale 0": (quant_field(3, scale=[0.0]), "tensor #3 't3'", "scale[0] is 0.0"),
    "negative scale": (quant_field(0, scale=[-0.05]), "tensor #0 't0'", "scale[0] is -0.05"),
    "output scale +inf": (quant_field(6, scale=[math.inf]), "tensor #6 't6'", "scale[0] is inf"),
    "scale NaN": (quant_field(4, scale=[math.nan]), "tensor #4 't4'", "scale[0] is nan"),
    "weight scale 0": (quant_field(1, scale=[0.01, 0.0]), "tensor #1 't1'", "scale[1] is 0.0"),
    "bias scale -inf": (quant_field(2, scale=[-math.inf, 0.001]), "tensor #2 't2'", "scale[0] is -inf"),
    "int8 zero point 128": (quant_field(0, zeroPoint=[128]), "tensor #0 't0'", "zero point[0] 128"),
    "int8 zero point -129": (quant_field(6, zeroPoint=[-129]), "tensor #6 't6'", "zero point[0] -129"),
    "uint8 zero point -1": (_chain(tensor_field(0, "type", 3), quant_field(0, zeroPoint=[-1])), "tensor #0 't0'",
                            "zero point[0] -1 outside uint8 [0, 255]"),
    "int32 zero point 2^31": (quant_field(2, zeroPoint=[0, 2**31]), "tensor #2 't2'", "zero point[1] 2147483648"),
    "more zero points than scales": (quant_field(3, zeroPoint=[5, 5]), "tensor #3 't3'", "1 scale(s) but 2 zero"),
    "no zero points": (quant_field(0, zeroPoint=[]), "tensor #0 't0'", "1 scale(s) but 0 zero"),
    "scales vs channel extent": (quant_field(1, scale=[0.01] * 3, zeroPoint=[0] * 3), "tensor #1 't1'",
                                 "3 scales for quantized_dimension 0 of extent 2"),
    "quantized_dimension = rank": (quant_field(1, quantizedDimension=4), "tensor #1 't1'", "quantized_dimension 4"),
    "quantized_dimension -1": (quant_field(3, quantizedDimension=-1), "tensor #3 't3'", "quantized_dimension -1"),
}


@pytest.mark.parametrize("case", QUANT)
def test_bad_quantization(edgecc, tmp_path, case):
    """TFLite int8 spec / ParseQuantization: finite scales > 0, zero points inside the type, as many
    zero points as scales, 1 or one scale per channel of quantized_dimension, which is in range."""
    edit, *needles = QUANT[case]
    _refused(edgecc, tmp_path, mutate(BASE, edit), *needles)


GRAPH = {
    "self-loop": (op_index(1, "inputs", 0, 4), "operator #1 RESHAPE", "its own output tensor #4 't4'"),
    "operators out of order": (swap_ops(1, 2), "operator #1 FULLY_CONNECTED", "later operator #2"),
    "cycle": (op_index(0, "inputs", 0, 6), "operator #0 CONV_2D", "later operator #2"),
    "tensor written twice": (op_index(2, "outputs", 0, 4), "operator #2 FULLY_CONNECTED",
                             "already written by operator #1"),
    "operator overwrites a graph input": (op_index(1, "outputs", 0, 0), "operator #1 RESHAPE", "a graph input"),
    "operator overwrites a constant": (op_index(1, "outputs", 0, 5), "operator #1 RESHAPE", "a constant"),
    "input nobody writes": (add_tensor_read_by(1, 0), "operator #1 RESHAPE", "tensor #7 'orphan'"),
    "graph output nobody writes": (add_orphan_output(), "graph output #1", "tensor #7 'orphan'"),
}


@pytest.mark.parametrize("case", GRAPH)
def test_graph_order_and_single_writer(edgecc, tmp_path, case):
    """Operators are stored in execution order (schema.fbs): every input written by an earlier
    operator (no self-loop, no cycle), every tensor written at most once."""
    edit, *needles = GRAPH[case]
    _refused(edgecc, tmp_path, mutate(BASE, edit), *needles)


DIMS = {
    "dimension 0": (tensor_field(3, "shape", [1, 4, 0, 2]), "tensor #3 't3'", "[1, 4, 0, 2]"),
    "negative dimension": (tensor_field(0, "shape", [1, -4, 4, 2]), "tensor #0 't0'", "dimension < 1"),
    "absurd element count": (tensor_field(4, "shape", [1, 2**29]), "tensor #4 't4'", "more than 2^28"),
    "absurd product": (tensor_field(3, "shape", [64, 2048, 2048, 2]), "tensor #3 't3'", "more than 2^28"),
    "shape_signature rank": (tensor_field(0, "shapeSignature", [-1, 4, 4]), "tensor #0 't0'", "shape_signature"),
    "shape_signature value": (tensor_field(6, "shapeSignature", [1, 4]), "tensor #6 't6'", "shape_signature"),
    "unknown element type": (tensor_field(4, "type", 99), "tensor #4 't4'", "element type 99"),
}


@pytest.mark.parametrize("case", DIMS)
def test_bad_dims_and_types(edgecc, tmp_path, case):
    """Dimensions >= 1, at most 2^28 elements, shape_signature of the shape's rank agreeing with it
    (or -1), element types of the schema's TensorType enum."""
    edit, *needles = DIMS[case]
    _refused(edgecc, tmp_path, mutate(BASE, edit), *needles)


BUFFERS = {
    "weights cut short": (short_data(5, 50), "tensor #5 't5'", "constant data of 50 bytes"),
    "bias cut short": (short_data(2, 7), "tensor #2 't2'", "constant data of 7 bytes"),
    "weights too long": (buffer_of(1, data=np.zeros(80, np.uint8)), "tensor #1 't1'", "constant data of 80 bytes"),
    "offset past the file": (buffer_of(5, data=None, offset=10**9, size=96), "tensor #5 't5'", "outside the"),
    "size past the file": (buffer_of(5, data=None, offset=64, size=10**9), "tensor #5 't5'", "outside the"),
    "offset inside, size wrong": (buffer_of(5, data=None, offset=64, size=8), "tensor #5 't5'", "constant data of 8"),
}


@pytest.mark.parametrize("case", BUFFERS)
def test_constant_data_and_offsets(edgecc, tmp_path, case):
    """Constant data holds exactly shape x element size bytes; a >2 GB-layout buffer (offset/size)
    lies inside the file."""
    edit, *needles = BUFFERS[case]
    _refused(edgecc, tmp_path, mutate(BASE, edit), *needles)


CORRUPT = {
    "cut to half": lambda b: b[:len(b) // 2],
    "cut to 40 bytes": lambda b: b[:40],
    "cut to 12 bytes": lambda b: b[:12],
    "root offset past the end": lambda b: (len(b) + 4).to_bytes(4, "little") + b[4:],
    "vector length flipped": lambda b: b[:len(b) - 260] + b"\xff\xff\xff\x7f" + b[len(b) - 256:],
}


@pytest.mark.parametrize("case", CORRUPT)
def test_corrupt_flatbuffer(edgecc, tmp_path, case):
    """A truncated or byte-damaged flatbuffer: whatever the flatbuffers reader raises (struct.error,
    IndexError, ValueError, ...) is one line, never a traceback."""
    _refused(edgecc, tmp_path, CORRUPT[case](BASE))


def test_corrupt_flatbuffer_is_named_as_such(edgecc, tmp_path):
    line = _refused(edgecc, tmp_path, BASE[:len(BASE) // 2])
    assert "not a valid .tflite flatbuffer" in line and "re-export the model" in line, line


def test_names_are_escaped(edgecc, tmp_path):
    """A name with control characters and invalid UTF-8 is shown escaped in the one line."""
    evil = b"evil\n\x1b[31m\xff\tname"
    model = mutate(BASE, _chain(tensor_field(3, "name", evil), quant_field(3, scale=[0.0])))
    line = _refused(edgecc, tmp_path, model, "tensor #3 'evil\\n\\x1b[31m\\xff\\tname'")
    assert "\x1b" not in line and "\t" not in line, repr(line)


def test_long_names_are_shortened(edgecc, tmp_path):
    model = mutate(BASE, _chain(tensor_field(3, "name", "n" * 5000), quant_field(3, scale=[-1.0])))
    _refused(edgecc, tmp_path, model, "tensor #3 'nnn", "…'")


def test_custom_op_name_is_escaped(edgecc, tmp_path):
    """A custom op's name reaches the unsupported-op summary escaped (no injected line)."""
    def edit(m):
        m.operatorCodes[1].builtinCode, m.operatorCodes[1].deprecatedBuiltinCode = 32, 32  # CUSTOM
        m.operatorCodes[1].customCode = "x\ny\x07"
    path, out = tmp_path / "custom.tflite", tmp_path / "out"
    path.write_bytes(mutate(BASE, edit))
    res = edgecc("build", "--model", path, "--board", "host", "--out", out)
    text = assert_rejected(res, out, "CUSTOM(x\\ny\\x07)", max_lines=3)
    assert "\x07" not in text


def test_tflm_oracle_never_sees_a_malformed_file(edgecc, tmp_path, monkeypatch):
    """`edgecc run` refuses the file before the TFLM oracle (which would run it) is reached."""
    import toolchain.tflm_oracle as oracle

    def boom(*_a, **_k):
        raise AssertionError("the TFLM oracle was given a malformed file")

    monkeypatch.setattr(oracle, "run_tflm", boom)
    data = tmp_path / "x.npy"
    np.save(data, np.zeros((2, 1, 4, 4, 2), np.int8))
    path, out = tmp_path / "bad.tflite", tmp_path / "out"
    path.write_bytes(mutate(BASE, op_index(0, "inputs", 0, -1)))
    res = edgecc("run", "--model", path, "--board", "host", "--verify", data, "--out", out)
    assert_rejected(res, out, str(path), "operator #0 CONV_2D", "input 0 is -1")


def test_optional_inputs_cover_the_converters():
    """Every converter input that defaults to -1 (absent) is listed as optional, so a valid model
    omitting it is not refused at the door."""
    from toolchain.frontend.tflite import CONVERTERS
    from toolchain.frontend.tflite_validate import OPTIONAL_INPUTS

    for name, fn in CONVERTERS.items():
        params = [p for p in inspect.signature(fn).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
        optional = {k for k, p in enumerate(params) if p.default == -1}
        assert optional <= OPTIONAL_INPUTS.get(name, frozenset()), (name, optional)


@pytest.mark.parametrize("seed", range(4))
def test_byte_flip_sweep_never_tracebacks(edgecc, tmp_path, seed):
    """25 seeded files with 1-3 bytes flipped per seed: built (exit 0) or refused (exit 2, the file
    named on the first line), never a traceback."""
    rng = np.random.default_rng(1000 + seed)
    for k in range(25):
        path, out = tmp_path / f"flip{k}.tflite", tmp_path / f"out{k}"
        path.write_bytes(flipped(BASE, rng, int(rng.integers(1, 4))))
        res = edgecc("build", "--model", path, "--board", "host", "--out", out)
        assert "Traceback" not in res.err, f"case {k}: {res.err}"
        assert res.code in (0, 2), f"case {k}: exit {res.code}: {res.err}"
        if res.code == 2:
            assert res.err.startswith(f"edgecc: error: {path}"), f"case {k}: {res.err}"
            assert not out.exists(), f"case {k}: OUT written"


def test_options_of_another_op_do_not_reach_its_inputs(edgecc, tmp_path):
    """An operator whose options table belongs to another op type (CONCATENATION's `axis` on a MEAN)
    is refused by name; the field must not collide with the converter's `axis` input (was a TypeError)."""
    import _tflite_cases

    S = _tflite_cases.S

    def edit(m):
        fc = m.subgraphs[0].operators[2]
        m.operatorCodes[fc.opcodeIndex].builtinCode = m.operatorCodes[fc.opcodeIndex].deprecatedBuiltinCode = 40
        fc.inputs, fc.builtinOptionsType = [4, 5], S.BuiltinOptions.ConcatenationOptions
        fc.builtinOptions = S.ConcatenationOptionsT()
        fc.builtinOptions.axis = 1
    path, out = tmp_path / "mixed.tflite", tmp_path / "out"
    path.write_bytes(mutate(BASE, edit))
    res = edgecc("build", "--model", path, "--board", "host", "--out", out)
    assert_rejected(res, out, str(path), "MEAN", "option(s) axis=1", max_lines=3)
