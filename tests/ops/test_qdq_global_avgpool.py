"""ONNX GlobalAveragePool in a QDQ model whose output grid differs from its input's (issue 4 point 3c):
the QDQ frontend turns it into a depthwise conv (weights 1, scale 1/n) so the window sum is
requantized once to the output grid; with equal grids it stays an AveragePool2D. Both rounding modes,
the portable C equal to the interpreter, and within 1 LSB of onnxruntime (0 under `rounding: onnx`
on these inputs), windows up to 20 x 20 cells."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _c_graph import run_graph_c

sys.path.append(str(Path(__file__).resolve().parents[1] / "frontend"))
from _qdq_cases import ModelBuilder, import_int8, on_grid, ort_run  # noqa: E402

from toolchain.interpret import interpret  # noqa: E402
from toolchain.ops.registry import OpKind  # noqa: E402

pytest.importorskip("onnxruntime")


def _gap(hw: tuple[int, int], qx: tuple[float, int], qy: tuple[float, int]) -> ModelBuilder:
    m = ModelBuilder(13)
    x = m.dq(m.input("x", (1, 3, *hw), np.int8), *qx, "xd")
    m.q(m.node("GlobalAveragePool", [x], "g"), *qy, "y")
    m.output("y", np.int8)
    return m


@pytest.mark.parametrize("rounding", ["tflm", "onnx"])
@pytest.mark.parametrize("hw, qx, qy, kind", [
    ((5, 7), (0.05, 3), (0.013, -9), OpKind.DEPTHWISE_CONV2D),   # other scale and zero point
    ((20, 20), (0.02, -128), (0.004, 100), OpKind.DEPTHWISE_CONV2D),  # 400 cells, zero points at the ends
    ((4, 6), (0.05, 3), (0.05, 3), OpKind.AVG_POOL2D),           # the same grid: TFLite pooling
])
def test_global_avgpool_requantizes_to_its_output_grid(tmp_path: Path, portable_lib, rounding, hw, qx, qy,
                                                       kind) -> None:
    path = _gap(hw, qx, qy).save(tmp_path / "gap.onnx")
    g = import_int8(path)
    assert [n.op for n in g.nodes if n.op in (OpKind.DEPTHWISE_CONV2D, OpKind.AVG_POOL2D)] == [kind]
    g = replace(g, meta={**g.meta, "rounding": rounding})
    rng, worst, exact, total = np.random.default_rng(3), 0, 0, 0
    for i in range(8):
        lo, hi = (-128, 128) if i < 6 else ((-128, -120) if i == 6 else (120, 128))  # and saturating inputs
        x = rng.integers(lo, hi, (1, 3, *hw)).astype(np.int8)
        c = run_graph_c(portable_lib, g, {g.inputs[0]: x})[g.outputs[0]]
        assert np.array_equal(c, interpret(g, {g.inputs[0]: x})[g.outputs[0]])
        ref = on_grid(ort_run(path, {"x": x})[0], g).reshape(c.shape)
        d = np.abs(c.astype(int) - ref)
        worst, exact, total = max(worst, int(d.max())), exact + int((d == 0).sum()), total + d.size
        # the real mean, requantized: never more than a rounding away
        want = (x.astype(np.float64) - qx[1]).mean(axis=(2, 3)) * qx[0] / qy[0] + qy[1]
        assert np.abs(c.reshape(want.shape) - np.clip(want, -128, 127)).max() <= 0.5 + 1e-6 + (rounding == "tflm")
    assert worst <= (1 if rounding == "tflm" else 0), (worst, exact / total)
