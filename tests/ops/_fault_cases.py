"""Helpers of the tests/ops/test_fault_cases_*.py files (the field fault cases of
../shared/design/int8-fault-cases.md handled with issue 4): tiny int8 graphs, the interpreter-vs-C
check, and the TFLM reference models of those files (run by a module fixture, one subprocess a file).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, QuantParams

HERE = Path(__file__).resolve().parent
# conv_case lives in tests/frontend/_tflite_cases.py; that folder is importable only when its conftest
# is loaded, so a run of tests/ops alone puts it on the path here (appended: never shadows the repo).
_FRONTEND = str(HERE.parent / "frontend")
if _FRONTEND not in sys.path:
    sys.path.append(_FRONTEND)

I8, I32 = DType.INT8, DType.INT32


def qp(s: float, z: int) -> QuantParams:
    """Per-tensor quantization parameters: real = s * (q - z)."""
    return QuantParams.per_tensor(s, z)


def make_graph(nodes, tensors, inputs, outputs) -> Graph:
    """A Graph named "g" of `nodes` over `tensors` (ir.Tensor, keyed by name) with the given I/O names."""
    return Graph("g", tuple(nodes), {t.name: t for t in tensors}, tuple(inputs), tuple(outputs))


def both(lib, g: Graph, feeds: dict) -> np.ndarray:
    """The graph's first output from the interpreter, asserting the C kernels give the same bytes."""
    from _c_graph import run_graph_c

    want = interpret(g, feeds)[g.outputs[0]]
    assert np.array_equal(run_graph_c(lib, g, feeds)[g.outputs[0]], want), "C differs from the interpreter"
    return want


# ---- TFLM models of the fault-case files ------------------------------------------------------------
def _tflm_models() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """Every TFLM model of the fault-case files, always built together and in this order so that each
    one's random weights (one generator, seed 404) do not depend on which file asks for it."""
    from _tflite_cases import conv_case
    from tflite_op_cases import I8 as T8
    from tflite_op_cases import OP, OPT, Model, S, _ints, _one, unary

    rng = np.random.default_rng(404)
    out = {}
    x5 = np.array([10, 20, 30, 40, 50], np.int8).reshape(1, 1, 5, 1)
    for name, hw, ac, hp in [("bl30_up_asym", 8, False, False), ("bl30_up_half", 8, False, True),
                             ("bl30_up_align", 8, True, False), ("bl30_down_asym", 3, False, False),
                             ("bl30_down_half", 3, False, True)]:
        m = Model()
        ti = m.tensor((1, 1, 5, 1), T8, 1.0, 0)
        ts = _ints(m, [1, hw])
        to = m.tensor((1, 1, hw, 1), T8, 1.0, 0)
        o = S.ResizeNearestNeighborOptionsT()
        o.alignCorners, o.halfPixelCenters = ac, hp
        out[name] = (_one(m, OP.RESIZE_NEAREST_NEIGHBOR, OPT.ResizeNearestNeighborOptions, o, [ti, ts], to, [ti]), [x5])
    for name, s_in, x in [("bl25_a", 0.1, [5, -5, 15, 7]), ("bl25_b", 0.5, [1, 2, 3, 4])]:
        model_bytes, _ = unary(rng, "requantize", (4,), in_scale=np.float32(s_in), out_q=(np.float32(0.2), 0))
        m = S.ModelT.InitFromObj(S.Model.GetRootAsModel(model_bytes, 0))
        m.subgraphs[0].tensors[0].quantization.zeroPoint = [0]
        import flatbuffers
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        out[name] = (bytes(b.Output()), [np.array(x, np.int8)])
    out["bl10_dw_mult9"] = conv_case(rng, h=4, w=6, cin=1, cout=9, k=(1, 3), depthwise=True)
    out["bl10_dw_mult2"] = conv_case(rng, h=3, w=3, cin=2, cout=4, k=(2, 2), depthwise=True, same=False)
    out["bl11_dw_3x1_s2"] = conv_case(rng, h=8, w=8, cin=2, cout=2, k=(3, 1), s=(2, 2), depthwise=True, bias="zeros")
    out["bl11_dw_1x2_s2"] = conv_case(rng, h=2, w=2, cin=3, cout=3, k=(1, 2), s=(2, 2), depthwise=True, bias="zeros")
    out["bl14_conv_dil2"] = conv_case(rng, h=1, w=8, cin=1, cout=1, k=(1, 3), d=(1, 2))
    out["bl14_conv_3x3_dil2"] = conv_case(rng, h=7, w=7, cin=2, cout=3, k=(3, 3), d=(2, 2))
    return out


def tflm_oracle(*names: str):
    """A module fixture `tflm` running the named models of _tflm_models through TFLM (one subprocess);
    it yields get(name) -> (our Graph of the .tflite, its int8 inputs, TFLM's output)."""
    @pytest.fixture(scope="module", name="tflm")
    def fixture(tmp_path_factory):
        pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
        d = tmp_path_factory.mktemp("tflm_faults")
        cases = {k: v for k, v in _tflm_models().items() if k in names}
        for name, (m, inputs) in cases.items():
            (d / f"{name}.tflite").write_bytes(m)
            for k, a in enumerate(inputs):
                np.save(d / f"{name}.in{k}.npy", a)
        proc = subprocess.run([sys.executable, str(HERE / "_tflm_runner.py"), str(d)], capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]

        def get(name: str) -> tuple[Graph, list[np.ndarray], np.ndarray]:
            assert not (d / f"{name}.err").exists(), (d / f"{name}.err").read_text()
            return load_tflite(d / f"{name}.tflite"), cases[name][1], np.load(d / f"{name}.out.npy")
        return get
    return fixture


def tflm_agrees(tflm, lib, name: str) -> np.ndarray:
    """Our output of TFLM model `name` (interpreter == C, asserted), asserted equal to TFLM's."""
    g, inputs, want = tflm(name)
    got = both(lib, g, dict(zip(g.inputs, inputs, strict=True)))
    assert np.array_equal(got, want.reshape(got.shape)), f"{name}: ours {got.ravel()} TFLM {want.ravel()}"
    return got
