"""Element types and quantization parameters of IR tensors.

Owns: DType, QuantParams (TFLite int8 spec: real = scale * (q - zero_point), per-tensor or
per-channel along `axis`; the 16x8 spec's int16 activations use the same parameters with zero
point 0 and int64 biases). Does not own any arithmetic on them (see toolchain.ops.fixed_point).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class DType(enum.Enum):
    """Element type of a tensor; `.np` gives the numpy dtype and `.c` the C type name."""

    FLOAT32 = "float32"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"  # 16x8 activations (TFLite 16x8 quantization: symmetric, zero point 0)
    INT32 = "int32"
    INT64 = "int64"  # 16x8 biases (int64 accumulators, TFLM reference_integer_ops int16 kernels)

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.value)

    @property
    def itemsize(self) -> int:
        """Size of one element in bytes."""
        return self.np.itemsize

    @property
    def c(self) -> str:
        return {"float32": "float", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t",
                "int64": "int64_t"}[self.value]


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization of one tensor (TFLite int8 spec).

    scale and zero_point are tuples: length 1 for per-tensor, length C for per-channel along
    `axis` (weights only). real_value = scale * (quantized - zero_point).
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @staticmethod
    def per_tensor(scale: float, zero_point: int) -> QuantParams:
        return QuantParams((float(scale),), (int(zero_point),), None)

    @property
    def is_per_channel(self) -> bool:
        return self.axis is not None

    @property
    def s(self) -> float:
        """The per-tensor scale; raises ValueError on per-channel parameters."""
        if self.is_per_channel:
            raise ValueError("per-channel quantization has no single scale")
        return self.scale[0]

    @property
    def zp(self) -> int:
        """The per-tensor zero point; raises ValueError on per-channel parameters."""
        if self.is_per_channel:
            raise ValueError("per-channel quantization has no single zero point")
        return self.zero_point[0]

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """int tensor -> float32 real values (broadcast along axis for per-channel)."""
        scale = np.asarray(self.scale, np.float64)
        zp = np.asarray(self.zero_point, np.float64)
        if self.is_per_channel:
            shape = [1] * q.ndim
            shape[self.axis] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return ((q.astype(np.float64) - zp) * scale).astype(np.float32)

    def quantize(self, x: np.ndarray, dtype: DType = DType.INT8) -> np.ndarray:
        """float -> int with round-half-away-from-zero and saturation (TFLite rule; per-tensor)."""
        info = np.iinfo(dtype.np)
        q = np.asarray(x, np.float64) / self.s
        # sign(q) * floor(|q| + 0.5) in fewer steps: q - 0.5 is -(|q| + 0.5) exactly for q < 0, and
        # trunc is floor of |q| + 0.5 with q's sign
        q = np.trunc(q + np.copysign(0.5, q)) + self.zp
        return np.clip(q, info.min, info.max).astype(dtype.np)
