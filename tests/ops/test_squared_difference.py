"""SquaredDifference (ops/squared_difference.py): TFLite SQUARED_DIFFERENCE vs TFLM through our
interpreter and the portable C kernel: equal and broadcast shapes, a constant operand, zero points
at both ends, scales far apart (one input's multiplier small), and an output scale small enough to
saturate."""
import numpy as np
import pytest
from _op_checks import check_tflm_and_c, run_tflm
from tflite_op_cases import I8, OP, Model, _i8, _one, _scale, _zp

from toolchain.ops.squared_difference import squared_difference_params, squared_difference_s8


def _case(rng, a_shape, b_shape, *, const_b=False, scales=None, zps=None):
    s1, s2, so = scales or (_scale(rng), _scale(rng), _scale(rng, 0.01, 1.0))
    z1, z2, zo = zps or (_zp(rng), _zp(rng), _zp(rng))
    a, b = _i8(rng, a_shape), _i8(rng, b_shape)
    m = Model()
    t1 = m.tensor(a_shape, I8, s1, z1)
    t2 = m.tensor(b_shape, I8, s2, z2, b if const_b else None)
    to = m.tensor(tuple(np.broadcast_shapes(a_shape, b_shape)), I8, so, zo)
    graph_in = [t1] if const_b else [t1, t2]
    model = _one(m, OP.SQUARED_DIFFERENCE, 0, None, [t1, t2], to, graph_in)
    return model, [a] if const_b else [a, b]


def _cases():
    rng = np.random.default_rng(99)
    return {
        "sqd_same": _case(rng, (1, 4, 5, 7), (1, 4, 5, 7)),
        "sqd_broadcast_channel": _case(rng, (1, 3, 4, 6), (6,)),
        "sqd_broadcast_rows": _case(rng, (2, 3, 1, 5), (1, 1, 4, 1)),
        "sqd_const_b": _case(rng, (1, 5, 5, 3), (1, 1, 1, 3), const_b=True),
        "sqd_zp_edges": _case(rng, (1, 9, 11), (1, 9, 11), zps=(-128, 127, -128)),
        "sqd_zp_edges_out_top": _case(rng, (3, 17), (3, 17), zps=(127, -128, 127)),
        "sqd_scales_apart": _case(rng, (1, 2, 3, 16), (1, 2, 3, 16), scales=(np.float32(0.002), np.float32(0.4),
                                                                            np.float32(0.3))),
        "sqd_saturating": _case(rng, (4, 33), (4, 33), scales=(np.float32(0.1), np.float32(0.1), np.float32(0.001))),
    }


def test_tflm_bit_exact(tmp_path, portable_lib):
    assert check_tflm_and_c(run_tflm(_cases(), tmp_path), portable_lib, "sqd_", min_cases=8) == 8


def test_saturation_and_sign_are_values_not_just_agreement():
    """Independent of TFLM: equal inputs give the zero point; a large difference saturates at 127."""
    p = squared_difference_params(0.1, 0, 0.1, 0, 0.001, -128)
    x = np.array([5, -5, 100, -100], np.int8)
    assert squared_difference_s8(x, x, p).tolist() == [-128] * 4
    assert squared_difference_s8(np.array([100], np.int8), np.array([-100], np.int8), p).tolist() == [127]
    # (0.5 - 0.2)^2 = 0.09 with s_out 0.001 -> 90 steps above the zero point -128
    assert squared_difference_s8(np.array([5], np.int8), np.array([2], np.int8), p).tolist() == [-38]


@pytest.mark.parametrize("shapes", [((1, 2, 3), (4, 1, 3)), ((5,), (1, 5))])
def test_broadcast_matches_numpy_broadcasting(shapes):
    rng = np.random.default_rng(3)
    p = squared_difference_params(0.05, 3, 0.07, -9, 0.02, -100)
    a, b = _i8(rng, shapes[0]), _i8(rng, shapes[1])
    got = squared_difference_s8(a, b, p)
    want = np.stack([squared_difference_s8(x, y, p) for x, y in
                     zip(*(np.broadcast_to(v, got.shape).reshape(-1) for v in (a, b)), strict=True)])
    assert got.reshape(-1).tolist() == want.reshape(-1).tolist()
