"""TFLite FULLY_CONNECTED with a weight (filter) zero point: TFLM passes it to the kernel as
filter_offset (acc = sum (x - zx)(w - zw) + bias); we take it through the same argument of the
portable kernel, per tensor (per-channel weights and conv weights stay symmetric, refused otherwise).
Compared with TFLM (the tflite-micro Python interpreter) on random inputs, with zero points whose
w - zw leave int8 (up to 255 in magnitude), and through `edgecc run` on the host board."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _tflite_cases import fc_case

from toolchain import tflm_oracle
from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret

needs_tflm = pytest.mark.skipif(not tflm_oracle.available(), reason="tflite-micro is not installed")


def _fc(tmp_path: Path, wzp: int, seed: int, per_tensor: bool = True, **kw) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    scales = (np.float32(0.05), np.float32(0.005), np.float32(0.25))  # outputs of about +-60 LSB: few clamp
    bias = rng.integers(-3000, 3000, 9).astype(np.int32)  # given: input zero point 5, output -3
    model, _ = fc_case(rng, b=1, k=37, o=9, per_tensor=per_tensor, wzp=wzp, scales=scales, bias_values=bias, **kw)
    path = tmp_path / f"fc_{wzp}_{seed}.tflite"
    path.write_bytes(model)
    return path, rng.integers(-128, 128, (16, 1, 37)).astype(np.int8)


@needs_tflm
@pytest.mark.parametrize("wzp,seed", [(7, 0), (-100, 1), (127, 2), (-128, 3)])
def test_fc_filter_zero_point_equals_tflm(tmp_path, wzp, seed):
    path, x = _fc(tmp_path, wzp, seed, act="relu" if seed == 1 else "none")
    g = load_tflite(path)
    w = g.t(g.nodes[-1].inputs[1])
    assert w.quant.zero_point == (wzp,)
    assert int(np.abs(w.data.astype(np.int64) - wzp).max()) > 127  # w - zw beyond int8: only filter_offset holds it
    ours = np.stack([interpret(g, {g.inputs[0]: s})[g.outputs[0]] for s in x])
    theirs = tflm_oracle.run_tflm(path, [x])["outputs"][0]
    np.testing.assert_array_equal(ours, theirs.reshape(ours.shape))
    assert len(np.unique(ours)) > 5  # not a clamped constant


def test_per_channel_filter_zero_point_is_refused_naming_the_weights(tmp_path):
    path, _ = _fc(tmp_path, 3, 4, per_tensor=False)
    with pytest.raises(UnsupportedModel, match=r"weights 't1' with zero point 3 \(TFLite int8 weights are symmetric"):
        load_tflite(path)


@needs_tflm
def test_fc_filter_zero_point_runs_on_the_host_board_bit_exact_with_tflm(tmp_path, edgecc, need_board):
    need_board("host")
    path, x = _fc(tmp_path, -100, 5)
    np.save(tmp_path / "x.npy", x)  # int8 data of an int8 input: the model's quantized values
    res = edgecc("run", "--model", path, "--board", "host", "--verify", tmp_path / "x.npy", "--out", tmp_path / "out",
                 "--quiet")
    assert res.code == 0, res.err[-2000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    v = report["verification"]
    assert v["bit_exact"] is True and v["tflm_bit_exact"] is True and v["samples"] == 16
