"""Every CMSIS-NN int8 conformance set run through the portable C kernels, bit for bit."""
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

CONF = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "cmsis_nn"
NO_KERNEL: set[str] = set()  # mul and pad got their kernels with issue 4


def _sets():
    index = CONF / "index.json"
    if not index.exists():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"{CONF} not found"))]
    params = []
    for s in json.loads(index.read_text())["sets"]:
        marks = [pytest.mark.skip(reason="no C kernel yet (issue 4)")] if s["family"] in NO_KERNEL else []
        params.append(pytest.param(s["family"], s["set"], id=s["set"], marks=marks))
    return params


def test_index_lists_63_sets():
    index = CONF / "index.json"
    if not index.exists():
        pytest.skip(f"{CONF} not found")
    assert json.loads(index.read_text())["count"] == 63


def _bias(d, meta):
    if "bias" not in d or meta["derived"].get("bias_all_zero"):
        return None     # the CMSIS-NN tests pass NULL for these sets
    return d["bias"]


def _run(k, family, d, meta):
    c = meta["config"]
    if family in ("conv", "conv_1x1", "conv_1xn", "grouped_conv"):
        return k.conv2d_s8(
            d["input"], d["weights"], _bias(d, meta), stride=(c["STRIDE_Y"], c["STRIDE_X"]),
            pad=(c["PAD_Y"], c["PAD_X"]), dilation=(c.get("DILATION_Y", 1), c.get("DILATION_X", 1)),
            out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]), input_offset=c["INPUT_OFFSET"],
            output_offset=c["OUTPUT_OFFSET"], out_mult=d["output_mult"], out_shift=d["output_shift"],
            act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])
    if family == "depthwise_conv":
        return k.depthwise_conv2d_s8(
            d["input"], d["weights"], _bias(d, meta), stride=(c["STRIDE_Y"], c["STRIDE_X"]),
            pad=(c["PAD_Y"], c["PAD_X"]), dilation=(c.get("DILATION_Y", 1), c.get("DILATION_X", 1)),
            out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]), depth_multiplier=c["CH_MULT"],
            input_offset=c["INPUT_OFFSET"], output_offset=c["OUTPUT_OFFSET"], out_mult=d["output_mult"],
            out_shift=d["output_shift"], act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])
    if family == "fully_connected":
        if "output_mult" in d:
            mult, shift = d["output_mult"], d["output_shift"]
        else:
            mult, shift = [c["OUTPUT_MULTIPLIER"]], [c["OUTPUT_SHIFT"]]
        return k.fully_connected_s8(
            d["input"], d["weights"], _bias(d, meta), input_offset=c["INPUT_OFFSET"],
            filter_offset=c.get("FILTER_OFFSET", 0), output_offset=c["OUTPUT_OFFSET"], out_mult=mult,
            out_shift=shift, act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])
    if family in ("avgpool", "maxpool"):
        kw = dict(kernel=(c["FILTER_H"], c["FILTER_W"]), stride=(c["STRIDE_H"], c["STRIDE_W"]),
                  pad=(c["PADDING_H"], c["PADDING_W"]), out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]),
                  act_min=c["ACTIVATION_MIN"], act_max=c["ACTIVATION_MAX"])
        fn = k.avg_pool2d_s8 if family == "avgpool" else k.max_pool2d_s8
        return fn(d["input"], **kw)
    if family == "softmax":
        p = SimpleNamespace(input_multiplier=c["INPUT_MULT"], input_left_shift=c["INPUT_LEFT_SHIFT"],
                            diff_min=c["DIFF_MIN"])
        return k.softmax_s8(d["input"].reshape(c["NUM_ROWS"], c["ROW_SIZE"]), p)
    if family == "add":
        p = SimpleNamespace(input1_offset=c["INPUT1_OFFSET"], input1_mult=c["INPUT1_MULT"],
                            input1_shift=c["INPUT1_SHIFT"], input2_offset=c["INPUT2_OFFSET"],
                            input2_mult=c["INPUT2_MULT"], input2_shift=c["INPUT2_SHIFT"],
                            left_shift=c["LEFT_SHIFT"], output_offset=c["OUTPUT_OFFSET"],
                            output_mult=c["OUTPUT_MULT"], output_shift=c["OUTPUT_SHIFT"])
        return k.add_s8(d["input"], d["input2"], p, c["OUT_ACTIVATION_MIN"], c["OUT_ACTIVATION_MAX"])
    if family == "mul":
        p = SimpleNamespace(input1_offset=c["INPUT1_OFFSET"], input2_offset=c["INPUT2_OFFSET"],
                            output_offset=c["OUTPUT_OFFSET"], output_mult=c["OUTPUT_MULT"],
                            output_shift=c["OUTPUT_SHIFT"])
        return k.mul_s8(d["input"], d["input2"], p, c["OUT_ACTIVATION_MIN"], c["OUT_ACTIVATION_MAX"])
    if family == "pad":
        pads = [(c[f"PRE_PAD_{a}"], c[f"POST_PAD_{a}"]) for a in ("N", "H", "W", "C")]
        return k.pad_s8(d["input"], pads, pad_value=c["PAD_VALUE"])
    if family == "transpose":
        rank = c["PERM_SIZE"]
        x = d["input"].reshape(c["IN_DIM"][:rank])
        return k.transpose_s8(x, c["PERM"][:rank])
    raise AssertionError(f"unhandled family {family}")


@pytest.mark.parametrize("family,name", _sets())
def test_conformance_set(portable, family, name):
    d = dict(np.load(CONF / f"{name}.npz"))
    meta = json.loads((CONF / f"{name}.json").read_text())
    out = _run(portable, family, d, meta)
    ref = d["output_ref"]
    assert out.shape == ref.shape
    diff = np.count_nonzero(out != ref)
    assert diff == 0, f"{name}: {diff} of {ref.size} outputs differ"
