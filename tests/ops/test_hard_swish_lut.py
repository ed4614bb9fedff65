"""HardSwish's table variant (ops/hard_swish.py + ops/lut.py): lowering picks the LUT kernel; its
table is hard_swish_s8 of every int8 input; and the arithmetic kernel ecc_hard_swish_s8, no longer
chosen, still equals hard_swish_s8 (called directly with the op's own argument list), zero points
-128 and 127 included. TFLM bit-exactness of the chosen kernel: test_hard_swish.py."""
import ctypes

import numpy as np
import pytest

from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.lower import select_kernels
from toolchain.ops.hard_swish import HardSwishAttrs, hard_swish_params, hard_swish_s8, hard_swish_table
from toolchain.ops.registry import OpKind, opdef

X = np.arange(-128, 128, dtype=np.int8)
QPARAMS = [(0.05, 0, 0.04, -100), (0.1, -128, 0.08, -120), (0.02, 127, 0.02, -128), (0.3, 10, 0.2, -110),
           (0.03, -128, 0.01, 127)]


def graph(s_in, z_in, s_out, z_out, shape=(1, 16, 16)) -> Graph:
    ts = {"x": Tensor("x", shape, DType.INT8, QuantParams.per_tensor(s_in, z_in)),
          "y": Tensor("y", shape, DType.INT8, QuantParams.per_tensor(s_out, z_out))}
    return Graph("g", (Node("hs", OpKind.HARD_SWISH, ("x",), ("y",), HardSwishAttrs()),), ts, ("x",), ("y",))


def test_lowering_picks_the_table():
    g = graph(*QPARAMS[0])
    assert select_kernels(g, ["portable"])["hs"].function == "ecc_lut_s8"
    assert select_kernels(g, ["dsp", "portable"])["hs"].function == "ecc_lut_s8"


@pytest.mark.parametrize("q", QPARAMS)
def test_table_is_the_reference(q):
    g = graph(*q)
    table = hard_swish_table(g.nodes[0], g)
    assert np.array_equal(table, hard_swish_s8(X, hard_swish_params(*q)))
    assert np.array_equal(interpret(g, {"x": X.reshape(1, 16, 16)})["y"].reshape(-1), table)


@pytest.mark.parametrize("q", QPARAMS)
def test_arithmetic_kernel_still_equals_the_reference(portable_lib, q):
    g = graph(*q)
    x = np.ascontiguousarray(X.reshape(1, 16, 16))
    y = np.full(256 + 16, 0x5A, np.uint8)
    scratch = np.zeros(1, np.int8)
    args = [ctypes.c_void_p(scratch.ctypes.data)]
    for a in opdef(g.nodes[0]).kernel_args(g.nodes[0], g):
        if a.kind == "int":
            args.append(ctypes.c_int32(a.value))
        else:
            args.append(ctypes.c_void_p(x.ctypes.data if a.value == "x" else y.ctypes.data))
    fn = portable_lib.ecc_hard_swish_s8
    fn.restype = ctypes.c_int
    assert fn(*args) == 0
    assert np.all(y[256:] == 0x5A)
    assert np.array_equal(y[:256].view(np.int8), hard_swish_s8(X, hard_swish_params(*q)))
