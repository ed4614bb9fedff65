"""Lowering picks the ISA kernels of the hot-path ops (toolchain/isa/dsp_transpose.py, maximum_minimum.py,
lut.py) exactly where they are exact, and the portable kernel elsewhere: TRANSPOSE_CONV on the DSP
(-128 weights included), MAXIMUM / MINIMUM with inputs on the output's qparams on dsp / neon /
helium (not after our PTQ's rescale), the LUT ops on neon / helium (the DSP keeps the portable loop).
Bit-exactness of the kernels themselves: tests/kernels/test_{dsp,neon,helium}_kernels.py."""
import numpy as np
import pytest
from test_maximum_minimum import _case as maxmin_case
from test_transpose_conv import tconv_case
from tflite_op_cases import I8, OP, OPT, Model, S, _one

from toolchain.frontend.tflite import load_tflite
from toolchain.lower import select_kernels

BOARDS = {"dsp": ((), "dsp"), "neon": (("dotprod",), "neon"), "helium": (("mve",), "helium")}


def _load(tmp_path, buf, name):
    p = tmp_path / f"{name}.tflite"
    p.write_bytes(bytes(buf))
    return load_tflite(p)


def _chosen(g, isa):
    features, _ = BOARDS[isa]
    (v,) = select_kernels(g, [isa, "portable"], features).values()
    return v.function


def test_transpose_conv_takes_dsp(tmp_path):
    g = _load(tmp_path, tconv_case(np.random.default_rng(1), h=5, w=5, cin=8, cout=4, k=(3, 3), s=(2, 2))[0], "t")
    assert _chosen(g, "dsp").startswith("ecc_dsp_transpose_conv")
    assert _chosen(g, "neon") == "ecc_transpose_conv_s8"
    w = next(t for t in g.tensors.values() if t.data is not None and t.data.ndim == 4)
    w.data.reshape(-1)[5] = -128  # BL-04 (issue 13): each product in its own lane, the DSP kernel stays
    assert _chosen(g, "dsp").startswith("ecc_dsp_transpose_conv")


@pytest.mark.parametrize("isa", list(BOARDS))
@pytest.mark.parametrize("op", ["max", "min"])
def test_maximum_minimum_raw_compare_takes_the_isa_kernel(tmp_path, isa, op):
    rng = np.random.default_rng(2)
    name = {"max": "maximum", "min": "minimum"}[op]
    for shapes in (((1, 4, 4, 8), (1, 4, 4, 8)), ((1, 4, 4, 8), (8,))):
        g = _load(tmp_path, maxmin_case(rng, op, *shapes, -128)[0], "m")
        assert _chosen(g, isa) == f"ecc_{isa}_{name}_s8"


def test_maximum_rescaled_stays_portable():
    """Inputs off the output's grid (our PTQ; TFLite refuses them): the portable rescale, on every ISA."""
    from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
    from toolchain.ops.maximum_minimum import MaxMinAttrs
    from toolchain.ops.registry import OpKind

    ts = {"a": Tensor("a", (1, 8), DType.INT8, QuantParams.per_tensor(0.1, 3)),
          "b": Tensor("b", (1, 8), DType.INT8, QuantParams.per_tensor(0.1, 3)),
          "y": Tensor("y", (1, 8), DType.INT8, QuantParams.per_tensor(0.2, -5))}
    g = Graph("g", (Node("m", OpKind.MAXIMUM, ("a", "b"), ("y",), MaxMinAttrs()),), ts, ("a", "b"), ("y",))
    for isa in BOARDS:
        assert _chosen(g, isa) == "ecc_maximum_s8"
    ts["y"] = Tensor("y", (1, 8), DType.INT8, QuantParams.per_tensor(0.1, 3))
    g = Graph("g", (Node("m", OpKind.MAXIMUM, ("a", "b"), ("y",), MaxMinAttrs()),), ts, ("a", "b"), ("y",))
    for isa in BOARDS:
        assert _chosen(g, isa) == f"ecc_{isa}_maximum_s8"


def test_lut_ops_take_neon_and_helium(tmp_path):
    m = Model()
    ti = m.tensor((1, 8, 8, 4), I8, np.float32(0.05), -10)
    to = m.tensor((1, 8, 8, 4), I8, np.float32(0.04), -100)
    g = _load(tmp_path, _one(m, OP.HARD_SWISH, OPT.HardSwishOptions, S.HardSwishOptionsT(), [ti], to, [ti]), "h")
    assert _chosen(g, "neon") == "ecc_neon_lut_s8"
    assert _chosen(g, "helium") == "ecc_helium_lut_s8"
    assert _chosen(g, "dsp") == "ecc_lut_s8"
