"""ArgMax (ops/arg_max.py): TFLite ARG_MAX (int8 in, int32 out) vs TFLM through our interpreter and
the portable C kernel: every axis (negative too), odd sizes, ties (first index wins), zero points at
both ends; refusals of the int64 output and of a non-constant axis; and CONV_2D -> ARG_MAX as a whole
model through `edgecc run` on the host and on mps2-an386 (TFLM bit-exact)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import F32, I8, I32, OP, OPT, Model, S, _i8, _ints, _one, _scale, _zp

from toolchain.frontend.tflite import load_tflite
from toolchain.ops.arg_max import arg_max_s8

ROOT = Path(__file__).resolve().parents[2]


def _case(rng, shape, axis, *, x=None, out_type=I32, zp=None, axis_type=I32):
    x = _i8(rng, shape) if x is None else x
    m = Model()
    ti = m.tensor(shape, I8, _scale(rng), _zp(rng) if zp is None else zp)
    if axis_type == I32:
        ta = _ints(m, [axis])
    else:  # an int64 axis tensor
        arr = np.asarray([axis], np.int64)
        ta = m.tensor(arr.shape, axis_type, 1.0, 0, arr)
        m.tensors[ta].quantization = None
    out = [d for i, d in enumerate(shape) if i != axis % len(shape)]
    to = m.tensor(out, out_type, 1.0, 0)
    m.tensors[to].quantization = None
    o = S.ArgMaxOptionsT()
    o.outputType = out_type
    return _one(m, OP.ARG_MAX, OPT.ArgMaxOptions, o, [ti, ta], to, [ti]), [x]


def _cases():
    rng = np.random.default_rng(23)
    ties = np.zeros((3, 9), np.int8)
    ties[0, [2, 5]] = 7                       # two maxima: index 2
    ties[1, :] = -128                         # all equal: index 0
    ties[2, [8, 0]] = 127                     # first and last: index 0
    few = rng.integers(-2, 2, (2, 5, 7, 3)).astype(np.int8)  # many ties on every axis
    return {
        "argmax_last_axis": _case(rng, (1, 10), 1),
        "argmax_negative_axis": _case(rng, (2, 3, 11), -1),
        "argmax_axis0": _case(rng, (5, 4, 3), 0),
        "argmax_middle_axis": _case(rng, (2, 7, 5, 3), 2),
        "argmax_channel_nhwc": _case(rng, (1, 4, 6, 13), 3),
        "argmax_axis1_odd": _case(rng, (1, 9, 1, 5), 1),
        "argmax_ties": _case(rng, ties.shape, 1, x=ties),
        "argmax_many_ties_axis1": _case(rng, few.shape, 1, x=few),
        "argmax_many_ties_axis3": _case(rng, few.shape, 3, x=few),
        "argmax_zp_minus128": _case(rng, (3, 17), 1, zp=-128),
        "argmax_zp_127": _case(rng, (3, 17), 0, zp=127),
        "argmax_axis_size_1": _case(rng, (4, 1, 3), 1),
    }


def test_tflm_bit_exact(tmp_path, portable_lib):
    n = len(_cases())
    assert check_tflm_and_c(run_tflm(_cases(), tmp_path), portable_lib, "argmax_", min_cases=n) == n


def test_first_index_on_ties_and_int32():
    x = np.array([[1, 5, 5, -3], [-128, -128, -128, -128], [0, 0, 1, 1]], np.int8)
    got = arg_max_s8(x, 1)
    assert got.dtype == np.int32 and got.tolist() == [1, 0, 2]
    assert arg_max_s8(x, 0).tolist() == [0, 0, 0, 2]  # column 2: 5 vs 1, column 1: 5 first


def test_int64_output_is_refused(tmp_path):
    model, _ = _case(np.random.default_rng(1), (2, 6), 1, out_type=S.TensorType.INT64)
    (tmp_path / "a.tflite").write_bytes(model)
    with pytest.raises(Exception, match="ARG_MAX|INT64|int64"):
        load_tflite(tmp_path / "a.tflite")


def test_non_constant_axis_is_refused(tmp_path):
    rng = np.random.default_rng(2)
    m = Model()
    ti = m.tensor((2, 6), I8, _scale(rng), 0)
    ta = m.tensor((1,), I32, 1.0, 0)
    m.tensors[ta].quantization = None
    to = m.tensor((2,), I32, 1.0, 0)
    m.tensors[to].quantization = None
    o = S.ArgMaxOptionsT()
    o.outputType = I32
    (tmp_path / "a.tflite").write_bytes(_one(m, OP.ARG_MAX, OPT.ArgMaxOptions, o, [ti, ta], to, [ti, ta]))
    with pytest.raises(Exception, match="axis"):
        load_tflite(tmp_path / "a.tflite")


def _conv_argmax_model() -> bytes:
    """[1,6,6,3] int8 -> CONV_2D 3x3 VALID, 8 channels -> [1,4,4,8] -> ARG_MAX axis 3 -> int32 [1,4,4]."""
    rng = np.random.default_rng(5)
    m = Model()
    s_in, s_w, s_out = F32(0.02), F32(0.01), F32(0.05)
    tx = m.tensor((1, 6, 6, 3), I8, s_in, -3)
    w = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    tw = m.tensor(w.shape, I8, s_w, 0, w)
    bias = rng.integers(-500, 500, (8,)).astype(np.int32)
    tb = m.tensor(bias.shape, I32, F32(s_in * s_w), 0, bias)
    ty = m.tensor((1, 4, 4, 8), I8, s_out, 5)
    ta = _ints(m, [3])
    to = m.tensor((1, 4, 4), I32, 1.0, 0)
    m.tensors[to].quantization = None
    co = S.Conv2DOptionsT()
    co.padding, co.strideW, co.strideH = S.Padding.VALID, 1, 1
    co.dilationWFactor = co.dilationHFactor = 1
    ao = S.ArgMaxOptionsT()
    ao.outputType = I32
    return m.build_ops([(OP.CONV_2D, OPT.Conv2DOptions, co, [tx, tw, tb], [ty]),
                        (OP.ARG_MAX, OPT.ArgMaxOptions, ao, [ty, ta], [to])], [tx], [to])


@pytest.mark.parametrize("board", ["host", "mps2-an386"])
def test_conv_then_argmax_runs_bit_exact_with_tflm(board, tmp_path):
    pytest.importorskip("tflite_micro")
    model = tmp_path / "conv_argmax.tflite"
    model.write_bytes(_conv_argmax_model())
    data = np.random.default_rng(8).integers(-128, 128, (4, 1, 6, 6, 3)).astype(np.int8)
    np.save(tmp_path / "x.npy", data)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "toolchain.cli", "run", "--model", str(model), "--board", board,
                           "--calibration", str(tmp_path / "x.npy"), "--verify", str(tmp_path / "x.npy"),
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(next(out.glob("report*.json")).read_text())
    v = report["verification"]
    assert v["bit_exact"] is True and v["tflm_bit_exact"] is True, v
    assert v["sqnr_db"] is None  # indices: no SQNR
    assert 0.0 <= v["index_agreement"] <= 1.0  # vs the float twin's indices (its conv is not int8)


def test_an_sqnr_gate_on_index_outputs_fails_visibly(tmp_path):
    """min_sqnr_db on a model whose output is indices cannot be met: exit 1 with the reason, not a crash
    formatting None and not a silent pass."""
    from toolchain.cli import main

    model = tmp_path / "conv_argmax.tflite"
    model.write_bytes(_conv_argmax_model())
    np.save(tmp_path / "x.npy", np.random.default_rng(8).integers(-128, 128, (2, 1, 6, 6, 3)).astype(np.int8))
    (tmp_path / "p.yaml").write_text(f"model: {model}\nverify: {tmp_path / 'x.npy'}\nboard: host\n"
                                     f"out: {tmp_path / 'out'}\nmin_sqnr_db: 10\n")
    assert main(["run", str(tmp_path / "p.yaml"), "--quiet"]) == 1
    gates = json.loads((tmp_path / "out" / "report.json").read_text())["verification"]["gates_failed"]
    assert gates == ["SQNR is not defined for this model's outputs (gate 10.0); remove the gate"]
