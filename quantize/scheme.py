"""Activation quantization rule: per-tensor asymmetric int8 covering [min(lo, 0), max(hi, 0)]
so that real 0 is exactly representable (TFLite int8 spec). Scales are float32 values, as a
.tflite file would store them."""
from __future__ import annotations

import numpy as np

from toolchain.ir import QuantParams


def activation_qparams(lo: float, hi: float) -> QuantParams:
    """int8 scale and zero point for an observed real range [lo, hi]."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-12:  # a constant-zero tensor: any positive scale represents it exactly
        return QuantParams.per_tensor(1.0, -128 if lo == 0 else 0)
    scale = float(np.float32((hi - lo) / 255.0))
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return QuantParams.per_tensor(scale, zp)
