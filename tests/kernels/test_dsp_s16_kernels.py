"""Every dsp 16x8 entry point (dsp/*_s16.c.j2) and the portable *_s16 kernel of the same op, on the
same calls, bit-exact with reference_s16 (the numpy references of toolchain/ops, bit-exact with TFLM)
on the Cortex-M4 (mps2-an386), M7 (mps2-an500) and M33 (mps2-an505) under QEMU: one test firmware per
board runs all cases of dsp_s16_cases.py (seeded layers with hand-picked corners, the worst-case
accumulators, and the .tflite sweep through the frontend with the compiler's own argument lists); the
outputs, return codes and guard bytes after every output and scratch buffer (scratch_bytes is exact)
come back in one file. See dsp_s16_harness.py."""
from __future__ import annotations

import numpy as np
import pytest

import dsp_s16_cases
import dsp_s16_harness

CASES = dsp_s16_cases.all_cases()


@pytest.fixture(scope="session")
def results(tmp_path_factory, need_board):
    """board -> per-case (rc, guards intact, output), one firmware build and one QEMU run per board."""
    return dsp_s16_harness.results_getter(tmp_path_factory, need_board, CASES)


@pytest.mark.parametrize("board", dsp_s16_harness.BOARDS)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_s16_bit_exact(results, board, index):
    dsp_s16_harness.check_result(results(board)[index], CASES[index])


def test_cases_cover_every_entry_point():
    """Each dsp _s16 entry point and each portable weighted _s16 kernel runs in at least one case, and
    every direct layer runs on the portable kernel and on a dsp entry point (the plans accept them all:
    no 16x8 layer of these shapes needs the portable fallback)."""
    assert set(dsp_s16_harness.prototypes()) == {c.function for c in CASES}
    layers: dict[str, set[str]] = {}
    for c in CASES:
        layers.setdefault(c.name.split("-")[0], set()).add(c.function)
    for tag, fns in layers.items():
        assert any(f.startswith("ecc_dsp_") for f in fns), tag
        assert any(not f.startswith("ecc_dsp_") for f in fns), tag


def test_cases_reach_the_corners():
    """The case list holds what it claims: both accumulation paths of each GEMM entry point and of the
    depthwise one (chunk / narrow arguments), chunked int32 partials (chunk < the group count),
    outputs at both ends of the int16 range and at the ends of the narrow clamp."""
    from toolchain.isa import dsp_s16

    w = np.full((2, 2000), -128, np.int8)
    assert dsp_s16.accumulator_chunk(w) == 127  # 127 * 4 * 128 * 32768 = 2^31 - 2^24
    chunks = {}
    for c in CASES:
        if c.function in ("ecc_dsp_fully_connected_s16", "ecc_dsp_conv2d_1x1_s16", "ecc_dsp_conv2d_s16"):
            pos = {"ecc_dsp_fully_connected_s16": 1, "ecc_dsp_conv2d_1x1_s16": 3, "ecc_dsp_conv2d_s16": 7}[c.function]
            chunks.setdefault(c.function, set()).add(c.args[pos][1])
    for fn, seen in chunks.items():
        assert 0 in seen and any(v >= 1 for v in seen), fn
    assert {v for v in chunks["ecc_dsp_fully_connected_s16"] if 0 < v < 100}  # chunked partial sums
    dw = {c.args[8][1] for c in CASES if c.function == "ecc_dsp_depthwise_conv2d_s16"}
    assert dw == {0, 1}
    outs = np.concatenate([np.frombuffer(c.expected, np.int16) for c in CASES])
    assert {-32768, 32767, 0, -3000, 20000} <= set(outs.tolist())  # saturation and each clamp's ends


@pytest.mark.parametrize("name", ["conv_same", "dw_mult2_stride", "fc_per_channel_relu"])
def test_portable_args_are_the_ops_own(tmp_path, name):
    """dsp_s16_cases.portable_args builds the portable kernels' argument lists as the op modules'
    s16_args do: the resolved calls of a .tflite node are the same bytes either way."""
    from tflite16_cases import single_op_cases

    from toolchain.frontend.tflite import load_tflite
    from toolchain.ops import conv2d, depthwise_conv2d
    from toolchain.ops.quant16 import weighted_requant_s16
    from toolchain.ops.registry import opdef

    model, (x,) = single_op_cases()[name]
    (tmp_path / "m.tflite").write_bytes(model)
    g = load_tflite(tmp_path / "m.tflite")
    (node,) = g.nodes
    w, bias, y = g.t(node.inputs[1]).data, g.t(node.inputs[2]).data, g.t(node.outputs[0])
    op = {"conv": "conv2d", "dw": "depthwise_conv2d", "fc": "fully_connected"}[name.split("_")[0]]
    k = {"conv2d": conv2d.s16_kwargs, "depthwise_conv2d": depthwise_conv2d.s16_kwargs,
         "fully_connected": lambda n, gr: weighted_requant_s16(n, gr, out_axis=0)}[op](node, g)
    portable = next(v for v in opdef(node).variants if v.name == "portable_s16")
    consts = {t.name: t.data for t in g.tensors.values() if t.is_const}
    ours = dsp_s16_harness.resolve("a", "f", dsp_s16_cases.portable_args(op, k, x.shape, w, bias, y.shape),
                                   {"input": x}, "output", 0, np.zeros(y.shape, np.int16))
    theirs = dsp_s16_harness.resolve("a", "f", portable.args(node, g), {node.inputs[0]: x}, node.outputs[0], 0,
                                     np.zeros(y.shape, np.int16), consts)
    assert ours == theirs
