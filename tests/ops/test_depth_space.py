"""DepthToSpace / SpaceToDepth (ops/depth_space.py) and TFLite TRANSPOSE (ops/shape_ops.py): TFLite
DEPTH_TO_SPACE, SPACE_TO_DEPTH and TRANSPOSE (constant perm, 2-D..4-D, NHWC<->NCHW) vs TFLM through
our interpreter and the C kernels; ONNX DepthToSpace (DCR and CRD) and SpaceToDepth on NCHW models vs
onnxruntime and through our quantizer (the IR is NHWC: the ONNX channel order must land right)."""
import numpy as np
import pytest
from _onnx_checks import check_float, check_int8, model
from _op_checks import check_tflm_and_c, run_tflm
from onnx import helper
from tflite_op_cases import I8, OP, OPT, Model, S, _i8, _ints, _one, _scale, _zp

from toolchain.errors import UnsupportedModel
from toolchain.frontend.tflite import load_tflite
from toolchain.ops.depth_space import depth_to_space, space_to_depth

RNG = np.random.default_rng(2024)


def _block_case(rng, op: str, shape, block, zp=None):
    s, z = _scale(rng), _zp(rng) if zp is None else zp
    n, h, w, c = shape
    out = (n, h * block, w * block, c // block ** 2) if op == "d2s" else (n, h // block, w // block, c * block ** 2)
    m = Model()
    ti, to = m.tensor(shape, I8, s, z), m.tensor(out, I8, s, z)
    if op == "d2s":
        o = S.DepthToSpaceOptionsT()
        code, otype = OP.DEPTH_TO_SPACE, OPT.DepthToSpaceOptions
    else:
        o = S.SpaceToDepthOptionsT()
        code, otype = OP.SPACE_TO_DEPTH, OPT.SpaceToDepthOptions
    o.blockSize = block
    return _one(m, code, otype, o, [ti], to, [ti]), [_i8(rng, shape)]


def _transpose_case(rng, shape, perm, zp=None):
    s, z = _scale(rng), _zp(rng) if zp is None else zp
    m = Model()
    ti = m.tensor(shape, I8, s, z)
    tp = _ints(m, perm)
    to = m.tensor(tuple(shape[p] for p in perm), I8, s, z)
    return _one(m, OP.TRANSPOSE, OPT.TransposeOptions, S.TransposeOptionsT(), [ti, tp], to, [ti]), [_i8(rng, shape)]


D2S = [((1, 2, 3, 4), 2, -128), ((1, 3, 5, 18), 3, 127), ((2, 1, 1, 8), 2, None), ((1, 4, 3, 7), 1, None),
       ((1, 2, 2, 48), 4, None), ((1, 3, 1, 20), 2, 127)]
S2D = [((1, 4, 6, 3), 2, -128), ((1, 6, 9, 5), 3, 127), ((2, 2, 2, 1), 2, None), ((1, 3, 5, 7), 1, None),
       ((1, 8, 4, 2), 4, None), ((1, 2, 6, 13), 2, None)]
PERMS = [((5, 7), (1, 0), None), ((3, 4, 5), (2, 0, 1), -128), ((3, 4, 5), (0, 2, 1), 127), ((2, 3, 5), (1, 0, 2), None),
         ((1, 5, 6, 7), (0, 3, 1, 2), -128), ((1, 7, 5, 6), (0, 2, 3, 1), 127), ((2, 3, 4, 5), (3, 2, 1, 0), None),
         ((2, 3, 4, 5), (1, 0, 3, 2), None), ((3, 1, 4, 1), (0, 1, 2, 3), None), ((4, 9), (0, 1), None)]


@pytest.fixture(scope="module")
def layout_cases(tmp_path_factory):
    rng = np.random.default_rng(77)
    cases = {}
    for k, (shape, b, zp) in enumerate(D2S):
        cases[f"d2s_{k}"] = _block_case(rng, "d2s", shape, b, zp)
    for k, (shape, b, zp) in enumerate(S2D):
        cases[f"s2d_{k}"] = _block_case(rng, "s2d", shape, b, zp)
    for k, (shape, perm, zp) in enumerate(PERMS):
        cases[f"transpose_{k}"] = _transpose_case(rng, shape, perm, zp)
    return run_tflm(cases, tmp_path_factory.mktemp("layout_tflm"))


@pytest.mark.parametrize("prefix, n", [("d2s_", len(D2S)), ("s2d_", len(S2D)), ("transpose_", len(PERMS))])
def test_tflm_bit_exact(layout_cases, portable_lib, prefix, n):
    assert check_tflm_and_c(layout_cases, portable_lib, prefix, min_cases=n) == n


def test_numpy_semantics_by_hand():
    """DCR: output (h*b+i, w*b+j, c) reads channel (i*b+j)*Co + c; CRD reads c*b*b + i*b + j."""
    x = np.arange(8).reshape(1, 1, 1, 8)
    assert depth_to_space(x, 2)[0, :, :, 0].tolist() == [[0, 2], [4, 6]]
    assert depth_to_space(x, 2)[0, :, :, 1].tolist() == [[1, 3], [5, 7]]
    assert depth_to_space(x, 2, "CRD")[0, :, :, 0].tolist() == [[0, 1], [2, 3]]
    assert depth_to_space(x, 2, "CRD")[0, :, :, 1].tolist() == [[4, 5], [6, 7]]
    y = np.arange(16).reshape(1, 4, 4, 1)
    assert space_to_depth(y, 2)[0, 0, 0].tolist() == [0, 1, 4, 5]
    assert np.array_equal(depth_to_space(space_to_depth(y, 2), 2), y)


def test_tflite_requantizing_data_movement_is_rejected(tmp_path):
    m = Model()
    ti, to = m.tensor((1, 2, 2, 4), I8, 0.1, 0), m.tensor((1, 4, 4, 1), I8, 0.2, 0)
    o = S.DepthToSpaceOptionsT()
    o.blockSize = 2
    (tmp_path / "m.tflite").write_bytes(_one(m, OP.DEPTH_TO_SPACE, OPT.DepthToSpaceOptions, o, [ti], to, [ti]))
    with pytest.raises(UnsupportedModel, match="keeps the input's quantization"):
        load_tflite(tmp_path / "m.tflite")


def test_tflite_transpose_of_rank_5_is_rejected(tmp_path):
    m = Model()
    ti = m.tensor((1, 2, 1, 2, 3), I8, 0.1, 0)
    tp = _ints(m, (4, 3, 2, 1, 0))
    to = m.tensor((3, 2, 1, 2, 1), I8, 0.1, 0)
    (tmp_path / "m.tflite").write_bytes(_one(m, OP.TRANSPOSE, OPT.TransposeOptions, S.TransposeOptionsT(), [ti, tp],
                                             to, [ti]))
    with pytest.raises(UnsupportedModel, match="rank 5"):
        load_tflite(tmp_path / "m.tflite")


# ---- ONNX DepthToSpace / SpaceToDepth (NCHW models; the IR holds NHWC) ----------------------------
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("shape, block", [((1, 8, 2, 3), 2), ((2, 18, 3, 1), 3), ((1, 12, 1, 5), 2), ((1, 3, 2, 2), 1)])
def test_onnx_depth_to_space(mode, shape, block, tmp_path, portable_lib):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("DepthToSpace", ["r"], ["y"], blocksize=block,
                                                                      mode=mode)]
    m = model(nodes, {"x": shape}, ["y"], opset=13)
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=0.5)


@pytest.mark.parametrize("shape, block", [((1, 3, 4, 6), 2), ((2, 1, 6, 3), 3), ((1, 5, 2, 8), 2), ((1, 2, 3, 3), 1)])
def test_onnx_space_to_depth(shape, block, tmp_path, portable_lib):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("SpaceToDepth", ["r"], ["y"], blocksize=block)]
    m = model(nodes, {"x": shape}, ["y"], opset=13)
    calib = {"x": RNG.uniform(-1, 2, (3, *shape)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path)
    check_int8(g, calib, portable_lib, max_lsb=0.5)


def test_onnx_depth_to_space_after_conv_and_before_flatten(tmp_path, portable_lib):
    """A conv output (held NHWC) through DepthToSpace CRD, then Flatten (ONNX element order)."""
    w = RNG.uniform(-1, 1, (8, 3, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("DepthToSpace", ["c"], ["d"], blocksize=2, mode="CRD"),
             helper.make_node("Flatten", ["d"], ["y"])]
    m = model(nodes, {"x": (1, 3, 2, 3)}, ["y"], {"w": w}, opset=13)
    calib = {"x": RNG.uniform(-1, 1, (3, 1, 3, 2, 3)).astype(np.float32)}
    g, _ = check_float(m, {"x": calib["x"][0]}, tmp_path, atol=1e-4)
    check_int8(g, calib, portable_lib, max_lsb=2.0)


def test_onnx_depth_to_space_bad_mode_is_rejected(tmp_path):
    m = model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="XYZ")], {"x": (1, 4, 2, 2)}, ["y"])
    with pytest.raises(UnsupportedModel, match="DepthToSpace"):
        check_float(m, {"x": np.zeros((1, 4, 2, 2), np.float32)}, tmp_path)
