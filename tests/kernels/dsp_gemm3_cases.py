"""Harness cases at the edges of the 2x3-blocked GEMM of dsp/conv2d and dsp/conv2d_1x1
(c_templates/kernels/dsp/ecc_dsp_gemm3.h): pixel counts below three and with remainders 1 and 2 (the
last pass ends at the last pixel or repeats it), group counts 1, 7, 9 (the first group from the biases,
the loop entered at the test), 17 and 144 (several loop iterations), odd channel counts, im2col of
in_c 1, 2, 3 (rows of whole groups read unaligned, staged rows, dilation), weights holding -128 and the
ends of the input range, zero points -128 and 127 at both ends, and relu layers with e = 23 and
accumulators at the bound of packing.fold_layer_why (the SMMLAR of ECC_DSP_OUT3_RELU).
Expected: the numpy reference of toolchain/ops/conv2d."""
from __future__ import annotations

import numpy as np

from dsp_harness import Case
from isa_cases import _act, _requant
from toolchain.ops import conv2d
from toolchain.ops.common import Window

GEMM3_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pads t/l/b/r, dilation)
    (3, 3, 8, 5, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1)),     # one pixel
    (1, 2, 4, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),     # two pixels, one group
    (2, 2, 36, 7, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),    # four pixels, nine groups, odd out_c
    (5, 1, 12, 4, 3, 1, (1, 1), (1, 0, 1, 0), (1, 1)),    # five pixels
    (7, 6, 1, 9, 4, 4, (2, 1), (1, 2, 2, 1), (1, 1)),     # in_c 1: rows of one group, unaligned
    (6, 6, 3, 10, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),    # in_c 3: staged windows, seven groups
    (7, 7, 2, 4, 3, 2, (1, 1), (2, 1, 2, 1), (2, 2)),     # in_c 2, dilation
    (4, 4, 64, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1)),    # 144 groups
    (3, 4, 68, 3, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1)),    # 17 groups
]
ZERO_POINTS = ((-128, -128, "relu"), (127, 127, "full"), (-128, 5, "narrow"), (127, -128, "relu"))


def gemm3_cases(conv_cases, rng: np.random.Generator) -> list[Case]:
    """The cases above through `conv_cases` (dsp_cases.conv_cases: every dsp conv entry point that takes
    the call)."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil) in enumerate(GEMM3_SHAPES):
        for j, (zin, zout, act) in enumerate(ZERO_POINTS):
            x = rng.integers(-128, 128, (1 + (i + j) % 2, h, wd, cin), dtype=np.int8)
            x.reshape(-1)[:: 5] = -128 if j % 2 else 127
            w = rng.integers(-128, 128, (cout, kh, kw, cin), dtype=np.int8)
            w.reshape(-1)[j:: 7] = -128
            bias = rng.integers(-5000, 5000, cout).astype(np.int32)
            mult, shift = _requant(rng, cout, 80.0 * np.sqrt(kh * kw * cin) * 60, e0=j == 2)
            out_hw = Window((kh, kw), st, dil, pads).out_hw(h, wd)
            lo, hi = _act(rng, act, zout)
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=out_hw, input_offset=-zin, output_offset=zout,
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += conv_cases(f"gemm3_conv{i}_{j}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    return cases + relu_bound_cases(conv_cases, rng)


def relu_bound_cases(conv_cases, rng: np.random.Generator) -> list[Case]:
    """relu layers with e = 23 (the largest relu allows) and biases that put |acc| near 2^30 - 256."""
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw) in enumerate(((4, 5, 8, 6, 3, 3), (3, 3, 16, 5, 1, 1))):
        x = rng.integers(-128, 128, (1, h, wd, cin), dtype=np.int8)
        w = rng.integers(-128, 128, (cout, kh, kw, cin), dtype=np.int8)
        room = 2**30 - 256 - 128 * 128 * kh * kw * cin - 1
        bias = (rng.choice([-1, 1], cout) * (room - rng.integers(0, 1 << 20, cout))).astype(np.int32)
        mult = rng.integers(1 << 30, 1 << 31, cout).astype(np.int32)
        shift = np.full(cout, -23, np.int32)
        pads = (1, 1, 1, 1) if kh == 3 else (0, 0, 0, 0)
        k = dict(stride=(1, 1), pad=pads[:2], dilation=(1, 1), out_hw=Window((kh, kw), (1, 1), (1, 1), pads).out_hw(h, wd),
                 input_offset=0, output_offset=-128, out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
        cases += conv_cases(f"gemm3_relu_bound{i}", x, w, bias, k, conv2d.conv2d_s8(x, w, bias, **k))
    return cases
