"""Calibration: run the float reference interpreter over calibration samples and record each
activation tensor's min and max (the TFLite converter's default min/max observer)."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from toolchain.interpret import interpret
from toolchain.ir import Graph


def observe_ranges(graph: Graph, calibration: Mapping[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Tensor name -> (min, max) over all samples; calibration[name] is [S, *input shape] float32."""
    counts = {len(v) for v in calibration.values()}
    if len(counts) != 1 or not counts.pop():
        raise ValueError("calibration inputs must have the same, non-zero number of samples")
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    n = len(next(iter(calibration.values())))
    for i in range(n):
        env = interpret(graph, {k: v[i] for k, v in calibration.items()}, keep_all=True)
        for name, val in env.items():
            if graph.t(name).is_const:
                continue
            lo[name] = min(lo.get(name, np.inf), float(np.min(val)))
            hi[name] = max(hi.get(name, -np.inf), float(np.max(val)))
    return {k: (lo[k], hi[k]) for k in lo}
