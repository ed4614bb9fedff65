"""Gather with constant indices (ops/gather.py): TFLite GATHER (axis, batch_dims 0) vs TFLM through our
interpreter and the portable C kernel, bit for bit; ONNX Gather with initializer indices (any axis,
negative indices, a scalar index dropping the axis) vs onnxruntime and through our quantizer."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from tflite_op_cases import I8, OP, OPT, S, Model, _i8, _ints, _one, _scale, _zp

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.registry import OpKind

RNG = np.random.default_rng(32)


def gather_case(shape, indices, axis, batch_dims=0, zp=None):
    s, z = _scale(RNG), _zp(RNG) if zp is None else zp
    x = _i8(RNG, shape)
    idx = np.asarray(indices, np.int32)
    ax = axis % len(shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    to = m.tensor(shape[:ax] + idx.shape + shape[ax + 1:], I8, s, z)
    o = S.GatherOptionsT()
    o.axis, o.batchDims = axis, batch_dims
    return _one(m, OP.GATHER, OPT.GatherOptions, o, [ti, _ints(m, idx)], to, [ti]), [x]


def _cases():
    return {"gather_axis0": gather_case((5, 3), [4, 0, 0, 2], 0, zp=-128),
            "gather_channels": gather_case((1, 3, 4, 7), [6, 1, 3], 3, zp=127),
            "gather_neg_axis": gather_case((2, 5, 3), [[1, 4], [0, 0]], -2),
            "gather_scalar": gather_case((1, 6, 5), 3, 1),
            "gather_width": gather_case((1, 2, 9, 3), [8, 7, 0, 2, 2], 2),
            # rows of 16 bytes or more: the kernel copies runs (0..39: memcpy; 5, 6 and 1: short copies)
            "gather_long_runs": gather_case((2, 40, 3), [*range(40), 5, 6, 1], 1)}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_gather"))


def test_tflm_bit_exact(cases, portable_lib):
    check_tflm_and_c(cases, portable_lib, "gather_", min_cases=6)
    assert [n.op for n in load_tflite(cases["gather_scalar"][0]).nodes] == [OpKind.GATHER]


def test_refused_forms(tmp_path):
    for k, (case, match) in enumerate([(gather_case((3, 4), [[0, 1]], 1, batch_dims=1), "batch_dims"),
                                       (gather_case((3, 4), [1, 5], 1), "outside")]):
        p = tmp_path / f"m{k}.tflite"
        p.write_bytes(case[0])
        with pytest.raises(UnsupportedModel, match=match):
            load_tflite(p)


@pytest.mark.parametrize("shape, indices, axis", [((1, 6, 4, 5), [5, -1, 0], 1), ((1, 6, 4, 5), [3, 1], 3),
                                                  ((1, 6, 4, 5), 2, 2), ((4, 7), [[-7, 6], [2, 2]], 1),
                                                  ((4, 7), -1, 0)])
def test_onnx_gather(shape, indices, axis, tmp_path, portable_lib):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["y"], axis=axis)]
    m = model(nodes, {"x": shape}, ["y"], {"i": np.array(indices, np.int64)})
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert OpKind.GATHER in [n.op for n in g.nodes]
    check_int8(g, calib, portable_lib, max_lsb=0.0)


def test_onnx_gather_out_of_range_is_refused(tmp_path):
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], {"x": (1, 3, 2, 2)}, ["y"],
              {"i": np.array([3], np.int64)})
    with pytest.raises(UnsupportedModel, match="outside"):
        check_float(m, {"x": np.zeros((1, 3, 2, 2), np.float32)}, tmp_path)
