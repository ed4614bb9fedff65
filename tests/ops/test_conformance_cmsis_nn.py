"""Every CMSIS-NN int8 unit-test set (../shared/conformance/cmsis_nn, 63 sets, 13 families)
reproduced bit for bit by the numpy references in toolchain/ops."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolchain.ops.add import add_s8
from toolchain.ops.conv2d import conv2d_s8
from toolchain.ops.depthwise_conv2d import depthwise_conv2d_s8
from toolchain.ops.elementwise import mul_s8, pad_s8, transpose_s8
from toolchain.ops.fixed_point import AddParams, MulParams, softmax_params
from toolchain.ops.fully_connected import fully_connected_s8
from toolchain.ops.pool2d import avg_pool2d_s8, max_pool2d_s8
from toolchain.ops.softmax import softmax_s8

CONF = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "cmsis_nn"


def _sets() -> list[str]:
    if not (CONF / "index.json").is_file():
        return []
    return [s["set"] for s in json.loads((CONF / "index.json").read_text())["sets"]]


SETS = _sets()


def _run_conv(d, c):
    return conv2d_s8(d["input"], d["weights"], d.get("bias"), stride=(c["STRIDE_Y"], c["STRIDE_X"]),
                     pad=(c["PAD_Y"], c["PAD_X"]), dilation=(c["DILATION_Y"], c["DILATION_X"]),
                     out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]), input_offset=c["INPUT_OFFSET"],
                     output_offset=c["OUTPUT_OFFSET"], out_mult=d["output_mult"], out_shift=d["output_shift"],
                     act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])


def _run_depthwise(d, c):
    return depthwise_conv2d_s8(d["input"], d["weights"], d.get("bias"), stride=(c["STRIDE_Y"], c["STRIDE_X"]),
                               pad=(c["PAD_Y"], c["PAD_X"]), dilation=(c["DILATION_Y"], c["DILATION_X"]),
                               out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]), depth_multiplier=c["CH_MULT"],
                               input_offset=c["INPUT_OFFSET"], output_offset=c["OUTPUT_OFFSET"],
                               out_mult=d["output_mult"], out_shift=d["output_shift"],
                               act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])


def _run_fc(d, c):
    if "output_mult" in d:
        mult, shift = d["output_mult"], d["output_shift"]
    else:
        mult, shift = [c["OUTPUT_MULTIPLIER"]], [c["OUTPUT_SHIFT"]]
    return fully_connected_s8(d["input"], d["weights"], d.get("bias"), input_offset=c["INPUT_OFFSET"],
                              filter_offset=c.get("FILTER_OFFSET", 0), output_offset=c["OUTPUT_OFFSET"],
                              out_mult=mult, out_shift=shift,
                              act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])


def _pool_kw(c):
    return dict(kernel=(c["FILTER_H"], c["FILTER_W"]), stride=(c["STRIDE_H"], c["STRIDE_W"]),
                pad=(c["PADDING_H"], c["PADDING_W"]), out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]),
                act_min=c["ACTIVATION_MIN"], act_max=c["ACTIVATION_MAX"])


def _run_add(d, c):
    p = AddParams(c["INPUT1_OFFSET"], c["INPUT1_MULT"], c["INPUT1_SHIFT"], c["INPUT2_OFFSET"], c["INPUT2_MULT"],
                  c["INPUT2_SHIFT"], c["LEFT_SHIFT"], c["OUTPUT_OFFSET"], c["OUTPUT_MULT"], c["OUTPUT_SHIFT"])
    return add_s8(d["input"], d["input2"], p, c["OUT_ACTIVATION_MIN"], c["OUT_ACTIVATION_MAX"])


def _run_mul(d, c):
    p = MulParams(c["INPUT1_OFFSET"], c["INPUT2_OFFSET"], c["OUTPUT_OFFSET"], c["OUTPUT_MULT"], c["OUTPUT_SHIFT"])
    return mul_s8(d["input"], d["input2"], p, c["OUT_ACTIVATION_MIN"], c["OUT_ACTIVATION_MAX"])


def _run_softmax(d, c):
    # The set stores only the prepared params; recover the input scale they came from and check
    # that softmax_params() re-derives them exactly before running the kernel with them.
    scale = c["INPUT_MULT"] * 2.0 ** (c["INPUT_LEFT_SHIFT"] - 31) / 2.0**26
    p = softmax_params(scale)
    assert (p.input_multiplier, p.input_left_shift, p.diff_min) == (
        c["INPUT_MULT"], c["INPUT_LEFT_SHIFT"], c["DIFF_MIN"])
    return softmax_s8(d["input"], p)


def _run_pad(d, c):
    axes = ("N", "H", "W", "C")
    pads = [(c[f"PRE_PAD_{a}"], c[f"POST_PAD_{a}"]) for a in axes]
    return pad_s8(d["input"], pads, pad_value=c["PAD_VALUE"])


def _run_transpose(d, c):
    return transpose_s8(d["input"], c["PERM"][: c["PERM_SIZE"]])


RUNNERS = {
    "conv": _run_conv, "conv_1x1": _run_conv, "conv_1xn": _run_conv, "grouped_conv": _run_conv,
    "depthwise_conv": _run_depthwise, "fully_connected": _run_fc,
    "avgpool": lambda d, c: avg_pool2d_s8(d["input"], **_pool_kw(c)),
    "maxpool": lambda d, c: max_pool2d_s8(d["input"], **_pool_kw(c)),
    "softmax": _run_softmax, "add": _run_add, "mul": _run_mul, "pad": _run_pad, "transpose": _run_transpose,
}


@pytest.mark.skipif(not SETS, reason=f"conformance vectors not found at {CONF}")
def test_index_covers_every_family():
    families = json.loads((CONF / "index.json").read_text())["families"]
    assert set(families) == set(RUNNERS)
    assert len(SETS) == 63


@pytest.mark.parametrize("name", SETS or [pytest.param("none", marks=pytest.mark.skip(
    reason=f"conformance vectors not found at {CONF}"))])
def test_set_bit_exact(name: str):
    meta = json.loads((CONF / f"{name}.json").read_text())
    with np.load(CONF / f"{name}.npz") as z:
        d = {k: z[k] for k in z.files}
    got = RUNNERS[meta["family"]](d, meta["config"])
    ref = d["output_ref"]
    assert got.dtype == np.int8 and got.shape == ref.shape, (got.shape, ref.shape)
    diff = np.count_nonzero(got != ref)
    assert diff == 0, f"{name}: {diff} of {ref.size} elements differ"
