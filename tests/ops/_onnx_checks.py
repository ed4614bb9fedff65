"""ONNX side of the op tests of issue 4: a float model built with onnx.helper goes through our
frontend (float reference vs onnxruntime), then through our INT8 quantizer (output qparams rules of
each op), and the int8 graph runs in the portable C kernels (bit-exact with the interpreter) and
stays close to the float model."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

_UNIT = str(Path(__file__).resolve().parents[1] / "unit")
if _UNIT not in sys.path:
    sys.path.append(_UNIT)

from graph_builder import run_ort

from quantize import quantize
from toolchain.data import quantize_inputs
from toolchain.frontend.onnx import load_onnx
from toolchain.interpret import interpret
from toolchain.ir import Graph
from toolchain.passes import run_passes


def model(nodes, inputs: dict, outputs: list[str], inits: dict | None = None, opset: int = 17) -> onnx.ModelProto:
    """A float32 ONNX model; inputs: name -> shape."""
    vi = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    vo = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outputs]
    g = helper.make_graph(list(nodes), "t", vi, vo,
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def float_graph(m: onnx.ModelProto, tmp_path: Path) -> Graph:
    path = Path(tmp_path) / f"m{len(list(Path(tmp_path).glob('*.onnx')))}.onnx"
    onnx.save(m, str(path))
    return run_passes(load_onnx(path))


def check_float(m: onnx.ModelProto, feeds: dict, tmp_path: Path, atol: float = 1e-5) -> tuple[Graph, list]:
    """Our float reference (load_onnx + passes + interpret) equals onnxruntime within atol."""
    g = float_graph(m, tmp_path)
    got = [interpret(g, feeds)[o] for o in g.outputs]
    want = run_ort(m, feeds)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=atol)
    return g, want


def check_int8(g: Graph, calib: dict[str, np.ndarray], lib, max_lsb: float | None = 2.0) -> Graph:
    """Quantize g on `calib` ([S, ...] per input), then on every sample: the C kernels equal the int8
    interpreter bit for bit, and (max_lsb) the dequantized output is within max_lsb output LSBs of
    the float graph (plus the input quantization error the float graph does not see)."""
    from _c_graph import run_graph_c

    q = quantize(g, calib, "minmax")
    qin = quantize_inputs(calib, q)
    for i in range(len(next(iter(calib.values())))):
        feeds = {k: v[i] for k, v in qin.items()}
        ref = interpret(q, feeds)
        c = run_graph_c(lib, q, feeds)
        for o in q.outputs:
            assert np.array_equal(c[o], ref[o]), f"sample {i} output {o}: C differs from the interpreter"
        if max_lsb is not None:
            f = interpret(g, {k: q.t(k).quant.dequantize(v) for k, v in feeds.items()})
            for o in q.outputs:
                qp = q.t(o).quant
                err = np.abs(qp.dequantize(ref[o]) - f[o]) / qp.s
                assert err.max() <= max_lsb, f"output {o}: int8 is {err.max():.2f} LSB from the float graph"
    return q
