"""Issue 6 flash work: int8 per-channel shifts (toolchain/ops/common.py weighted_requant), the
header closure of the emitted library (codegen/emit.py with_local_includes, used by the split
neon/ecc_neon.h) and the report's weights figures (profiler/report.py weight_fields)."""
from __future__ import annotations

import numpy as np

from toolchain.codegen.emit import TEMPLATE_DIR, with_local_includes
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ops.common import weighted_requant
from toolchain.ops.fixed_point import requantize_s8
from toolchain.ops.fully_connected import FullyConnectedAttrs
from toolchain.ops.registry import OpKind
from profiler.report import weight_fields


def _fc(out_scale: float) -> tuple[Node, Graph]:
    """A FullyConnected node x[1, 2] -> y[1, 3] with per-channel weight scales 1e-3, 2e-3, 4e-3."""
    w = Tensor("w", (3, 2), DType.INT8, QuantParams((1e-3, 2e-3, 4e-3), (0, 0, 0), 0), np.ones((3, 2), np.int8))
    ts = {"x": Tensor("x", (1, 2), DType.INT8, QuantParams.per_tensor(0.5, 3)), "w": w,
          "y": Tensor("y", (1, 3), DType.INT8, QuantParams.per_tensor(out_scale, -1))}
    node = Node("fc", OpKind.FULLY_CONNECTED, ("x", "w"), ("y",), FullyConnectedAttrs())
    return node, Graph("fc", (node,), ts, ("x",), ("y",))


def test_shifts_are_int8_with_the_tflite_values():
    node, g = _fc(0.25)
    k = weighted_requant(node, g, out_axis=0)
    assert k["out_shift"].dtype == np.int8 and k["out_mult"].dtype == np.int32
    # real = 0.5 * s_w / 0.25 = 2e-3, 4e-3, 8e-3 -> frexp exponents -8, -7, -6, mantissa 0.512
    assert k["out_shift"].tolist() == [-8, -7, -6]
    assert k["out_mult"].tolist() == [1099511628] * 3
    assert (k["input_offset"], k["output_offset"]) == (-3, -1)


def test_a_shift_above_31_is_stored_as_31_without_changing_an_output():
    node, g = _fc(1e-15)  # real multipliers ~1e12 (> 2^31): TFLite shifts of 40 and more
    k = weighted_requant(node, g, out_axis=0)
    assert k["out_shift"].tolist() == [31, 31, 31]
    acc = np.array([[-3, -1, 0, 1, 2, 70000]]).T
    for rounding in ("tflm", "onnx"):
        for c in range(3):
            wide = requantize_s8(acc, k["out_mult"][c], 40 + c, 0, -128, 127, rounding=rounding)
            stored = requantize_s8(acc, k["out_mult"][c], int(k["out_shift"][c]), 0, -128, 127, rounding=rounding)
            assert stored.ravel().tolist() == wide.ravel().tolist() == [-128, -128, 0, 127, 127, 127]


def test_the_neon_umbrella_header_brings_every_part():
    got = with_local_includes(("kernels/neon/ecc_neon_kernels.h", "kernels/neon/ecc_neon.h"))
    parts = sorted(f"kernels/neon/{p.name}" for p in (TEMPLATE_DIR / "kernels" / "neon").glob("ecc_neon_*.h")
                   if p.name != "ecc_neon_kernels.h")
    assert got[:2] == ["kernels/neon/ecc_neon_kernels.h", "kernels/neon/ecc_neon.h"]
    assert sorted(got[2:]) == parts and len(parts) == 6
    assert with_local_includes(("kernels/portable/ecc_fixed_point.h",)) == ["kernels/portable/ecc_fixed_point.h",
                                                                          "kernels/portable/ecc_requant_f32.h"]


def test_weight_fields_split_the_section_and_name_the_overhead():
    sections = {"text": 900, "rodata": 12, "weights": 1300, "data": 0, "bss": 0}
    f = weight_fields(2212, sections, {"weights": 1000, "biases": 40, "other": 0, "requantization": 50, "packing": 200})
    assert f["weights_bytes"] == 1040 and f["flash_overhead_bytes"] == 1172
    assert f["weights_breakdown"]["alignment"] == 10 and sum(f["weights_breakdown"].values()) == 1300
    assert weight_fields(2212, sections, None) == {"weights_bytes": None, "flash_overhead_bytes": None,
                                                   "weights_breakdown": None}
