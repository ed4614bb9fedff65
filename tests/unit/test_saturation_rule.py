"""toolchain.data.input_saturation: a value counts as saturated only when quantizing clipped it by more
than rounding would (beyond the grid by over half a step), on either end; float inputs are left out."""
import numpy as np

from toolchain.data import input_saturation, quantize_inputs
from toolchain.ir import DType, Graph, QuantParams, Tensor


def _graph(scale: float = 0.5, zp: int = -10) -> Graph:
    x = Tensor("x", (6,), DType.INT8, QuantParams.per_tensor(scale, zp))
    f = Tensor("f", (6,), DType.FLOAT32)
    return Graph("g", (), {"x": x, "f": f}, ("x", "f"), ())


def test_only_values_beyond_half_a_step_past_the_grid_saturate():
    g = _graph()  # grid: (q + 10) * 0.5 for q in [-128, 127] -> real [-59, 68.5]
    lo, hi = (-128 + 10) * 0.5, (127 + 10) * 0.5
    x = np.array([[lo - 0.2, lo - 0.3, hi + 0.2, hi + 0.3, 0.0, 1e6]], np.float32)  # 0.2 < 0.25 (half step) < 0.3
    data = {"x": x, "f": np.full((1, 6), 1e9, np.float32)}
    sat = input_saturation(data, quantize_inputs(data, g), g)
    assert sat["per_input"] == {"x": 3 / 6}  # lo - 0.3, hi + 0.3, 1e6; the float input is not quantized
    assert sat["fraction"] == 3 / 6


def test_int8_data_given_as_quantized_values_never_saturate():
    g = _graph()
    q = {"x": np.array([[-128, 127, 0, 5, -128, 127]], np.int8)}
    real = {"x": (q["x"].astype(np.float64) + 10) * 0.5}  # what load_data makes of int8 data
    assert input_saturation(real, quantize_inputs(real, g), g)["fraction"] == 0.0
