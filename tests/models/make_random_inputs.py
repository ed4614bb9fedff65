"""Write the seeded random verification inputs of the int8 MLPerf Tiny models that have no image
data (DS-CNN, autoencoder): S samples of random int8 in the model input's shape, dequantized with the
input's own scale and zero point (float32), so `edgecc run` quantizes them back to the same int8.

    /work/venv/bin/python tests/models/make_random_inputs.py     (rewrites tests/models/data/*.npy)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = HERE.parents[1].parent / "shared" / "models" / "mlperf_tiny"
SAMPLES = 10
SEEDS = {"kws_dscnn_int8": 1, "ad_autoencoder_int8": 0}


def random_inputs(name: str, samples: int = SAMPLES) -> np.ndarray:
    """[S, *input shape] float32: dequantized int8 drawn from default_rng(seed)."""
    from toolchain.frontend.tflite import load_tflite

    g = load_tflite(MODELS / f"{name}.tflite")
    x = g.t(g.inputs[0])
    q = np.random.default_rng(SEEDS[name]).integers(-128, 128, (samples, *x.shape)).astype(np.int8)
    return x.quant.dequantize(q)


def main() -> None:
    (HERE / "data").mkdir(exist_ok=True)
    for name in SEEDS:
        np.save(HERE / "data" / f"{name}_random.npy", random_inputs(name))


if __name__ == "__main__":
    main()
