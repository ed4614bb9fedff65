"""Slice and the data-movement ops on it (ops/slice.py): TFLite STRIDED_SLICE (begin/end/shrink masks,
negative strides, offset), SLICE, SPLIT, SPLIT_V, UNPACK, and the views SQUEEZE / EXPAND_DIMS, PACK
(expand + CONCATENATION) and the folded SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE of a Keras Flatten,
vs TFLM through our interpreter and the portable C kernel (bit for bit); ONNX Slice / Split / Squeeze /
Unsqueeze vs onnxruntime and through our quantizer (the output keeps the input's qparams)."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from tflite_op_cases import I8, I32, OP, OPT, S, Model, _i8, _ints, _one, _scale, _zp

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.registry import OpKind
from toolchain.ops.slice import strided_slice_s8

RNG = np.random.default_rng(31)


def _np_slices(begin, end, strides, begin_mask, end_mask):
    return tuple(slice(None if begin_mask >> k & 1 else b, None if end_mask >> k & 1 else e, s)
                 for k, (b, e, s) in enumerate(zip(begin, end, strides)))


def strided(shape, begin, end, strides, begin_mask=0, end_mask=0, shrink=0, zp=None, q_out=None):
    s, z = _scale(RNG), _zp(RNG) if zp is None else zp
    x = _i8(RNG, shape)
    ref = x[_np_slices(begin, end, strides, begin_mask, end_mask)]
    out = [d for k, d in enumerate(ref.shape) if not shrink >> k & 1]
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    tb, te, ts = _ints(m, begin), _ints(m, end), _ints(m, strides)
    to = m.tensor(out, I8, *(q_out or (s, z)))
    o = S.StridedSliceOptionsT()
    o.beginMask, o.endMask, o.shrinkAxisMask = begin_mask, end_mask, shrink
    return _one(m, OP.STRIDED_SLICE, OPT.StridedSliceOptions, o, [ti, tb, te, ts], to, [ti]), [x]


def slice_case(shape, begin, size):
    s, z = _scale(RNG), _zp(RNG)
    x = _i8(RNG, shape)
    out = [d - b if n == -1 else n for d, b, n in zip(shape, begin, size)]
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    to = m.tensor(out, I8, s, z)
    return _one(m, OP.SLICE, OPT.SliceOptions, S.SliceOptionsT(), [ti, _ints(m, begin), _ints(m, size)], to,
                [ti]), [x]


def split_case(shape, axis, n=None, sizes=None, zp=None):
    s, z = _scale(RNG), _zp(RNG) if zp is None else zp
    x = _i8(RNG, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    parts = sizes or [shape[axis] // n] * n
    real = [shape[axis] - (sum(parts) + 1) if p == -1 else p for p in parts]
    outs = [m.tensor([p if k == axis % len(shape) else d for k, d in enumerate(shape)], I8, s, z) for p in real]
    if sizes is None:
        o = S.SplitOptionsT()
        o.numSplits = n
        op = (OP.SPLIT, OPT.SplitOptions, o, [_ints(m, [axis]), ti], outs)
    else:
        o = S.SplitVOptionsT()
        o.numSplits = len(sizes)
        op = (OP.SPLIT_V, OPT.SplitVOptions, o, [ti, _ints(m, sizes), _ints(m, [axis])], outs)
    return m.build_ops([op], [ti], outs), [x]


def unpack_case(shape, axis):
    s, z = _scale(RNG), _zp(RNG)
    x = _i8(RNG, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    ax = axis % len(shape)
    outs = [m.tensor([d for k, d in enumerate(shape) if k != ax], I8, s, z) for _ in range(shape[ax])]
    o = S.UnpackOptionsT()
    o.num, o.axis = shape[ax], axis
    return m.build_ops([(OP.UNPACK, OPT.UnpackOptions, o, [ti], outs)], [ti], outs), [x]


def view_case(op, shape, arg):
    s, z = _scale(RNG), _zp(RNG)
    x = _i8(RNG, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    if op == "squeeze":
        dims = {a % len(shape) for a in arg} or {k for k, d in enumerate(shape) if d == 1}
        to = m.tensor([d for k, d in enumerate(shape) if k not in dims], I8, s, z)
        o = S.SqueezeOptionsT()
        o.squeezeDims = list(arg)
        return _one(m, OP.SQUEEZE, OPT.SqueezeOptions, o, [ti], to, [ti]), [x]
    out = list(shape)
    out.insert(arg % (len(shape) + 1), 1)
    to = m.tensor(out, I8, s, z)
    return _one(m, OP.EXPAND_DIMS, OPT.ExpandDimsOptions, S.ExpandDimsOptionsT(), [ti, _ints(m, [arg])], to,
                [ti]), [x]


def pack_case(shape, n, axis, q_out=None):
    s, z = _scale(RNG), _zp(RNG)
    xs = [_i8(RNG, shape) for _ in range(n)]
    m = Model()
    ts = [m.tensor(shape, I8, s, z) for _ in range(n)]
    out = list(shape)
    out.insert(axis % (len(shape) + 1), n)
    to = m.tensor(out, I8, *(q_out or (s, z)))
    o = S.PackOptionsT()
    o.valuesCount, o.axis = n, axis
    return _one(m, OP.PACK, OPT.PackOptions, o, ts, to, ts), xs


def flatten_case(shape):
    """Keras Flatten: SHAPE -> STRIDED_SLICE (batch, shrink) -> PACK (batch, -1) -> RESHAPE."""
    s, z = _scale(RNG), _zp(RNG)
    x = _i8(RNG, shape)
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    tshape = m.tensor([len(shape)], I32, 1.0, 0)
    tb = m.tensor([], I32, 1.0, 0)
    tm1 = _ints(m, np.array(-1, np.int32))
    tpack = m.tensor([2], I32, 1.0, 0)
    for t in (tshape, tb, tpack):
        m.tensors[t].quantization = None
    to = m.tensor([shape[0], int(np.prod(shape[1:]))], I8, s, z)
    o1 = S.ShapeOptionsT()
    o1.outType = I32
    o2 = S.StridedSliceOptionsT()
    o2.shrinkAxisMask = 1
    o3 = S.PackOptionsT()
    o3.valuesCount, o3.axis = 2, 0
    ops = [(OP.SHAPE, OPT.ShapeOptions, o1, [ti], [tshape]),
           (OP.STRIDED_SLICE, OPT.StridedSliceOptions, o2, [tshape, _ints(m, [0]), _ints(m, [1]), _ints(m, [1])], [tb]),
           (OP.PACK, OPT.PackOptions, o3, [tb, tm1], [tpack]),
           (OP.RESHAPE, OPT.ReshapeOptions, S.ReshapeOptionsT(), [ti, tpack], [to])]
    return m.build_ops(ops, [ti], [to]), [x]


def _cases():
    c = {}
    c["ss_basic"] = strided((1, 6, 7, 5), [0, 1, 2, 0], [1, 5, 7, 3], [1, 1, 2, 1], zp=-128)
    c["ss_masks"] = strided((1, 6, 7, 5), [0, 3, 0, 1], [0, 0, -2, 0], [1, 1, 1, 2], begin_mask=0b0101, end_mask=0b1011,
                            zp=127)
    c["ss_negative_stride"] = strided((2, 5, 3, 7), [1, -1, 0, 6], [0, 0, 3, 0], [1, -2, 1, -3], end_mask=0b0001)
    c["ss_reverse_all"] = strided((3, 4, 5), [0, 0, 0], [0, 0, 0], [-1, -1, -1], begin_mask=7, end_mask=7)
    c["ss_shrink"] = strided((1, 4, 6, 3), [0, 2, 1, 0], [1, 3, 6, 3], [1, 1, 1, 1], shrink=0b0011)
    c["ss_shrink_negative"] = strided((4, 9), [-1, 2], [0, -1], [1, 3], shrink=0b01)
    c["ss_clamp"] = strided((3, 4, 5, 3), [-100, 1, 1, 0], [100, 4, 5, 3], [1, 2, 3, 2])
    c["ss_rank1"] = strided((11,), [1], [10], [4])
    c["slice_4d"] = slice_case((1, 7, 5, 9), [0, 2, 1, 3], [1, 4, -1, 5])
    c["slice_2d"] = slice_case((5, 13), [1, 0], [3, -1])
    c["split_c"] = split_case((1, 4, 3, 6), 3, n=3, zp=-128)
    c["split_neg_axis"] = split_case((2, 6, 5), -2, n=2, zp=127)
    c["split_batch"] = split_case((4, 3), 0, n=4)
    c["splitv"] = split_case((1, 5, 4, 7), 3, sizes=[2, 4, 1])
    c["splitv_minus1"] = split_case((1, 9, 3, 2), 1, sizes=[2, -1, 3])
    c["unpack_axis1"] = unpack_case((1, 3, 4, 5), 1)
    c["unpack_last"] = unpack_case((2, 3, 4), -1)
    c["squeeze_dims"] = view_case("squeeze", (1, 1, 1, 10), [1, 2])
    c["squeeze_all"] = view_case("squeeze", (1, 3, 1, 5), [])
    c["expand_dims"] = view_case("expand_dims", (2, 7), 1)
    c["expand_dims_neg"] = view_case("expand_dims", (1, 3, 5), -1)
    c["pack_axis0"] = pack_case((3, 5), 3, 0)
    c["pack_axis_last"] = pack_case((1, 2, 3, 3), 2, -1)
    c["pack_middle"] = pack_case((4, 3), 4, 1)
    c["flatten_shape"] = flatten_case((1, 3, 4, 5))
    c["flatten_shape_1x1"] = flatten_case((1, 1, 1, 10))
    return c


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return run_tflm(_cases(), tmp_path_factory.mktemp("tflm_slice"))


@pytest.mark.parametrize("prefix, n", [("ss_", 8), ("slice_", 2), ("split", 5), ("unpack_", 2), ("squeeze_", 2),
                                       ("expand_", 2), ("pack_", 3), ("flatten_", 2)])
def test_tflm_bit_exact(cases, portable_lib, prefix, n):
    check_tflm_and_c(cases, portable_lib, prefix, min_cases=n)


def test_ops_used(cases):
    ops = {name: [n.op for n in load_tflite(path).nodes] for name, (path, _i, _o) in cases.items()}
    assert ops["ss_basic"] == [OpKind.SLICE]
    assert ops["ss_shrink"] == [OpKind.SLICE, OpKind.RESHAPE]
    assert ops["split_c"] == [OpKind.SLICE] * 3
    assert ops["unpack_axis1"] == [OpKind.SLICE, OpKind.RESHAPE] * 3  # the axis dropped by a view
    assert ops["squeeze_dims"] == [OpKind.RESHAPE]
    assert OpKind.CONCAT in ops["pack_axis0"]
    assert ops["flatten_shape"] == [OpKind.RESHAPE]  # SHAPE / STRIDED_SLICE / PACK folded


def test_strided_slice_reference_matches_numpy():
    x = np.arange(2 * 5 * 7).reshape(2, 5, 7)
    got = strided_slice_s8(x, (1, 4, 6), (-1, -2, -3), (2, 3, 3))
    assert np.array_equal(got, x[1::-1, 4::-2, 6::-3])


def _refused(model_bytes, tmp_path, match):
    p = tmp_path / "m.tflite"
    p.write_bytes(model_bytes)
    with pytest.raises(UnsupportedModel, match=match):
        load_tflite(p)


def test_refused_forms(tmp_path):
    m, _ = strided((1, 4, 4, 2), [0, 0, 0, 0], [1, 2, 2, 2], [1, 1, 1, 1], q_out=(0.5, 3))
    _refused(m, tmp_path, "keeps the input's quantization")
    m, _ = pack_case((3, 5), 2, 0, q_out=(0.5, 3))
    _refused(m, tmp_path, "keeps the input's quantization")
    mm = Model()
    ti = mm.tensor((1, 4, 4, 2), I8, 0.1, 0)
    to = mm.tensor((1, 4, 4, 2), I8, 0.1, 0)
    o = S.StridedSliceOptionsT()
    o.ellipsisMask = 1
    b = _one(mm, OP.STRIDED_SLICE, OPT.StridedSliceOptions, o,
             [ti, _ints(mm, [0, 0]), _ints(mm, [1, 2]), _ints(mm, [1, 1])], to, [ti])
    _refused(b, tmp_path, "ellipsis_mask")


# ---- ONNX ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, starts, ends, axes, steps", [
    ((1, 6, 5, 7), [1, 0], [5, 4], [1, 3], [1, 2]),        # NHWC activation: channel + width axes
    ((1, 6, 5, 7), [-1], [-7], [2], [-2]),                 # negative start, end and step
    ((1, 6, 5, 7), [0, 2, 1, 0], [1, 100, 5, 7], None, None),  # all axes, end past the dimension
    ((3, 10), [8], [-100], [-1], [-3]),                    # 2-D, negative step clamped
    ((2, 3, 4, 5, 3), [1, 0, 4], [3, 100, -100], [1, 3, 2], [1, 2, -2]),  # rank 5
])
def test_onnx_slice(shape, starts, ends, axes, steps, tmp_path, portable_lib):
    inits = {"s": np.array(starts, np.int64), "e": np.array(ends, np.int64)}
    ins = ["r", "s", "e"]
    if axes is not None:
        inits["a"] = np.array(axes, np.int64)
        ins.append("a")
    if steps is not None:
        inits["p"] = np.array(steps, np.int64)
        ins.append("p")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Slice", ins, ["y"])]
    m = model(nodes, {"x": shape}, ["y"], inits)
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert OpKind.SLICE in [n.op for n in g.nodes]
    q = check_int8(g, calib, portable_lib, max_lsb=0.0)
    sl = next(n for n in q.nodes if n.op == OpKind.SLICE)
    assert q.t(sl.outputs[0]).quant == q.t(sl.inputs[0]).quant


@pytest.mark.parametrize("shape, axis, split, attrs, opset, n", [
    ((1, 6, 4, 5), 1, [2, 4], {}, 13, 2),               # split input, channel axis of an NHWC value
    ((1, 6, 4, 5), -1, None, {"split": [1, 3, 1]}, 11, 3),  # split attribute (opset 11)
    ((1, 7, 4, 5), 1, None, {"num_outputs": 3}, 18, 3),   # num_outputs: ceil(7/3) = 3 -> 3, 3, 1
    ((2, 9), 1, None, {"num_outputs": 2}, 18, 2),         # 9 into 2: 5, 4 (the last part smaller)
    ((6, 4), 0, None, {}, 13, 3),                         # equal split
])
def test_onnx_split(shape, axis, split, attrs, opset, n, tmp_path, portable_lib):
    outs = [f"y{k}" for k in range(n)]
    inits = {"sp": np.array(split, np.int64)} if split else {}
    ins = ["r", "sp"] if split else ["r"]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Split", ins, outs, axis=axis, **attrs)]
    nodes += [helper.make_node("Relu", [o], [f"{o}r"]) for o in outs]
    m = model(nodes, {"x": shape}, [f"{o}r" for o in outs], inits, opset=opset)
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    assert [n.op for n in g.nodes].count(OpKind.SLICE) == n
    check_int8(g, calib, portable_lib, max_lsb=0.0)


@pytest.mark.parametrize("op, shape, axes", [("Squeeze", (1, 1, 4, 5), [1]), ("Squeeze", (1, 5, 1, 1), None),
                                             ("Unsqueeze", (1, 3, 4, 5), [2]), ("Unsqueeze", (3, 7), [0, -1]),
                                             ("Squeeze", (1, 6, 1), [-1])])
def test_onnx_squeeze_unsqueeze(op, shape, axes, tmp_path, portable_lib):
    inits = {"a": np.array(axes, np.int64)} if axes else {}
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op, ["r", "a"] if axes else ["r"], ["y"])]
    m = model(nodes, {"x": shape}, ["y"], inits, opset=13)
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=0.0)
