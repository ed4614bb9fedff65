"""toolchain/tflm_oracle.py: TFLM run in a subprocess on a model's samples, the comparison that
`edgecc run` writes as verification.tflm_bit_exact, and the search for the first op whose output
differs (TFLM and our interpreter layer by layer)."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret
from toolchain.ops.registry import OpKind
from toolchain.tflm_oracle import available, first_difference, reference_name, run_tflm, tflm_verification

pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
MODEL = Path(__file__).resolve().parents[3] / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_int8.tflite"
needs_model = pytest.mark.skipif(not MODEL.is_file(), reason=f"{MODEL} not present")


@pytest.fixture(scope="module")
def kws():
    g = load_tflite(MODEL)
    x = np.random.default_rng(3).integers(-128, 128, (3, *g.t(g.inputs[0]).shape)).astype(np.int8)
    return g, x


def test_available_and_named():
    assert available() and reference_name().startswith("tflite-micro ")


@needs_model
def test_bit_exact_outputs_give_true(kws):
    g, x = kws
    ours = np.stack([interpret(g, {g.inputs[0]: s})[g.outputs[0]] for s in x])
    v = tflm_verification(g, MODEL, {g.inputs[0]: x}, [ours])
    assert v["tflm_bit_exact"] is True and v["tflm"]["mismatches"] is None and v["tflm"]["error"] is None


@needs_model
def test_a_board_difference_is_counted_and_located(kws):
    """One output element off by 3 on sample 2: counted; TFLM and the interpreter agree on every layer,
    so the report says the board alone differs."""
    g, x = kws
    ours = np.stack([interpret(g, {g.inputs[0]: s})[g.outputs[0]] for s in x])
    bad = ours.copy()
    bad[2, 0, 5] = np.int8(int(bad[2, 0, 5]) + (3 if bad[2, 0, 5] < 100 else -3))
    v = tflm_verification(g, MODEL, {g.inputs[0]: x}, [bad])
    assert v["tflm_bit_exact"] is False
    assert v["tflm"]["mismatches"] == {"count": 1, "first_sample": 2, "max_abs_diff": 3.0}
    assert "agree on every layer" in v["tflm"]["first_difference"]["note"]


@needs_model
def test_first_difference_names_the_first_op_whose_output_differs(kws):
    """An IR whose third conv has one weight changed: the per-layer run names that node, not a later one."""
    g, x = kws
    convs = [k for k, n in enumerate(g.nodes) if n.op in (OpKind.CONV2D, OpKind.DEPTHWISE_CONV2D)]
    k = convs[2]
    w = g.t(g.nodes[k].inputs[1])
    data = w.data.copy()
    data.flat[0] = np.int8(-data.flat[0] if data.flat[0] else 50)
    changed = g.with_tensor(replace(w, data=data))
    d = first_difference(changed, MODEL, {g.inputs[0]: x[0]}, 0, [x])
    assert d["op_index"] == k and d["name"] == g.nodes[k].name and d["op_type"] == g.nodes[k].op.value
    assert d["elements"] > 0 and d["max_abs_diff"] >= 1


def test_a_failing_model_is_an_error_not_an_exception(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" + b"\0" * 60)
    assert "error" in run_tflm(bad, [np.zeros((1, 4), np.int8)])
