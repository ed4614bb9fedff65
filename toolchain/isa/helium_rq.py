"""Which requantization entry points of the Helium kernels are exact for a layer, decided offline:
TFLM's MultiplyByQuantizedMultiplier (gemmlowp double rounding: `relu` without and `full` with the
round-half-away fix-up) and rounding "onnx" (`onnx`: onnxruntime's float32 output stage,
toolchain.ops.fixed_point.requantize_s8_f32, on the MVE floating-point unit: board feature mve_fp).

The onnx epilogue of Conv / depthwise / FC (c_templates/kernels/helium/ecc_helium.h, ECC_HELIUM_F32)
is VCVT.F32.S32, VMUL.F32 by the channel's float32 scale f32_scale(mult, shift) (stored in the blob
in place of the multiplier, helium_pack.as_mode), VCVTN.S32.F32, a saturating add of the output
offset and the integer clamp: the same float32 operations as the reference, so it is exact for
every multiplier in [0, 2^31) and shift in [-31, 31] (the range fold_or_reason accepts). Add keeps
its own onnx output stage (the real product rounded once, ECC_HELIUM_RNE / ECC_HELIUM_RNE_TIES):
add_onnx_reason.
"""
from __future__ import annotations

import numpy as np

from toolchain.ops.fixed_point import AddParams

TFLM_MODES = ("relu", "full")  # ECC_HELIUM_NOFIX, ECC_HELIUM_FIX
ONNX = "onnx"                  # ECC_HELIUM_F32 (weighted ops)
MODES = (*TFLM_MODES, ONNX)
# the board features of the weighted onnx entry points beyond `mve`, and why (report.json kernel_reason)
ONNX_FEATURES = frozenset({"mve_fp"})
ONNX_FEATURES_WHY = "needs MVE float for onnxruntime's float32 requantization"


def modes_and_reasons(mult: np.ndarray, shift: np.ndarray, output_offset: int,
                      act_min: int) -> tuple[tuple[str, ...], dict[str, str]]:
    """(the entry points exact for a layer, the reason each other one is not), given per-channel
    multipliers in [0, 2^31) and shifts in [-31, 31]. The onnx one (float32) is exact for all of them."""
    live = mult != 0
    why: dict[str, str] = {}
    if np.any(shift[live] > 0):
        why["full"] = why["relu"] = "a requantization multiplier of 1 or more (TFLM rounding needs shift <= 0)"
    elif not (act_min >= output_offset or not np.any(shift[live] != 0)):
        why["relu"] = "the clamp starts below the output zero point (the round-half-away fix-up is needed)"
    return tuple(m for m in MODES if m not in why), why


def add_onnx_reason(p: AddParams) -> str | None:
    """Why helium/add_onnx (ECC_HELIUM_RNE_TIES on the output) is not exact for AddParams p (None: it
    is): with shift 0 its pre-shift needs a normalised multiplier (>= 2^30, ecc_helium.h)."""
    if p.output_shift == 0 and 0 < p.output_mult < 2**30:
        return "an output multiplier in [1/4, 1/2) not normalised (the onnx epilogue's pre-shift needs >= 2^30)"
    return None
