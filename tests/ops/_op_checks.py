"""Checks the op tests of issue 4 share: a generated .tflite through our frontend and interpreter
against TFLM, and through the portable C kernels (ctypes, the code generator's argument lists)
against our interpreter."""
from __future__ import annotations

import numpy as np

from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret


def check_tflm_and_c(tflm_cases: dict, portable_lib, prefix: str, min_cases: int = 1) -> int:
    """Every case whose name starts with `prefix`: interpreter == TFLM and C == interpreter, bit for
    bit. Returns the number of cases checked; fails listing every bad case."""
    from _c_graph import run_graph_c

    bad, n = [], 0
    for name, (path, inputs, want) in sorted(tflm_cases.items()):
        if not name.startswith(prefix):
            continue
        n += 1
        if isinstance(want, str):
            bad.append(f"{name}: TFLM error {want[:200]}")
            continue
        g = load_tflite(path)
        feeds = dict(zip(g.inputs, inputs, strict=True))
        got = interpret(g, feeds)[g.outputs[0]]
        want = want.reshape(got.shape)
        if not np.array_equal(got, want):
            d = np.abs(got.astype(np.float64) - want.astype(np.float64))
            bad.append(f"{name}: interpreter vs TFLM: {np.count_nonzero(d)} of {got.size} differ, max {d.max()}")
        c = run_graph_c(portable_lib, g, feeds)[g.outputs[0]]
        if not np.array_equal(c, got):
            bad.append(f"{name}: C vs interpreter: {np.count_nonzero(c != got)} of {got.size} differ")
    assert not bad, "\n".join(bad)
    assert n >= min_cases, f"only {n} cases named {prefix}*"
    return n
