"""Generated 16x8 .tflite models of SOFTMAX, LOGISTIC and TANH (int16 in and out, zero point 0, output
Q0.15: TFLite's 16x8 spec as TFLM's int16 kernels take it), written with the flatbuffer object API as
tflite16_cases.py writes the others; TFLM computes the expected outputs.

One model holds up to MAX_OPS independent ops (an input and an output each, one input scale each), so
that hundreds of input scales cost a few TFLM runs; _tflm_runner.py reads inputs in name order, which
is numeric order for at most 10 inputs. Scales: log-uniform over the whole range the kernels accept,
the powers of two the kernels special-case (2^-12, 2^-11 and their neighbours), scales within
CheckedLog2's 1e-3 of a power of two (TFLM then takes the power of two) and just outside it.
Inputs: full-range int16 (the extremes included), every int16 value for a few scales, softmax rows of
1 to 4096 entries (one dominant entry, near-equal rows that make the sum large, random rows) and a
two-entry sweep that reaches every segment of the exp table.
"""
from __future__ import annotations

import numpy as np
from tflite16_cases import I16, i16
from tflite_op_cases import OP, OPT, Model, S

F32 = np.float32
MAX_OPS = 10
UNIT = F32(1 / 32768)
ALL_INT16 = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16).reshape(256, 256)


def unary16(op: str, specs: list[tuple[np.ndarray, float, float]], out_scale=UNIT, out_zp=0) -> tuple[bytes, list]:
    """A model of len(specs) independent int16 ops `op` ("softmax", "logistic", "tanh"): each spec is
    (input array, input scale, beta) (beta for softmax only). Returns (model bytes, inputs)."""
    assert 1 <= len(specs) <= MAX_OPS
    m = Model()
    ops, ins, outs = [], [], []
    for x, scale, beta in specs:
        ti = m.tensor(x.shape, I16, F32(scale), 0)
        to = m.tensor(x.shape, I16, F32(out_scale), out_zp)
        if op == "softmax":
            o = S.SoftmaxOptionsT()
            o.beta = float(beta)
            ops.append((OP.SOFTMAX, OPT.SoftmaxOptions, o, [ti], [to]))
        else:
            ops.append((OP.LOGISTIC if op == "logistic" else OP.TANH, 0, None, [ti], [to]))
        ins.append(ti)
        outs.append(to)
    return m.build_ops(ops, ins, outs), [x for x, _, _ in specs]


def _log_uniform(rng, lo: float, hi: float, n: int) -> list[float]:
    return [float(F32(v)) for v in np.exp(rng.uniform(np.log(lo), np.log(hi), n))]


def near_pot_scales(exps, rel: float) -> list[float]:
    """2^e * (1 +- rel) for each e: inside (rel 5e-4) or outside (rel 2e-3) CheckedLog2's tolerance."""
    return [float(F32(2.0**e * (1 + s * rel))) for e in exps for s in (-1, 1)]


def sigmoid_scales(rng) -> list[float]:
    """Input scales for LOGISTIC / TANH: the power-of-two cases, their near misses, a log-uniform sweep
    from 1e-7 to the largest scale TFLM takes (32767 / 12288)."""
    pots = [2.0**e for e in range(-20, 2)]
    return (pots + near_pot_scales((-13, -12, -11, -10), 5e-4) + near_pot_scales((-12, -11), 2e-3)
            + _log_uniform(rng, 1e-7, 2.66, 200) + _log_uniform(rng, 1e-5, 2e-3, 60) + [2.6665, 32767 / 12288])


def sigmoid_cases(op: str) -> dict[str, tuple[bytes, list]]:
    """LOGISTIC or TANH: every int16 value at the power-of-two scales and a few others, then each
    sweep scale on 1024 random full-range values."""
    rng = np.random.default_rng(16 if op == "tanh" else 17)
    cases = {}
    full = [2.0**-12, 2.0**-11, 2.0**-10, 2.0**-15, 2.0**-12 * (1 + 5e-4), 1e-4, 3.1e-4, 1 / 3000, 0.01]
    for k in range(0, len(full), 3):  # three 64K-entry ops per model: TFLM's 1 MiB arena
        cases[f"{op}_all_int16_{k // 3}"] = unary16(op, [(ALL_INT16, s, 0.0) for s in full[k:k + 3]])
    scales = sigmoid_scales(rng)
    for k in range(0, len(scales), MAX_OPS):
        specs = [(i16(rng, (1, 1024)), s, 0.0) for s in scales[k:k + MAX_OPS]]
        cases[f"{op}_scales_{k // MAX_OPS:02d}"] = unary16(op, specs)
    return cases


def softmax_rows(rng, rows: int, width: int, kind: str) -> np.ndarray:
    """int16 [rows, width]: "random" full range, "dominant" (one entry far above the rest), "flat"
    (near-equal entries: the largest sums), "narrow" (values within +-200: fine differences)."""
    if kind == "random":
        return i16(rng, (rows, width))
    if kind == "dominant":
        x = rng.integers(-32768, 0, (rows, width)).astype(np.int16)
        x[np.arange(rows), rng.integers(0, width, rows)] = 32767
        return x
    if kind == "flat":
        base = rng.integers(-30000, 30000, (rows, 1))
        return (base + rng.integers(-3, 4, (rows, width))).astype(np.int16)
    return rng.integers(-200, 201, (rows, width)).astype(np.int16)


def softmax_cases() -> dict[str, tuple[bytes, list]]:
    """SOFTMAX: rows of 1 to 4096 entries, betas 0.1 to 3.7, input scales from 1e-6 to just below
    TFLM's int32 limit (scale * beta < 5), powers of two among them; and the two-entry sweep
    [32767, 32767 - d] for every d in [0, 65535] at scale * beta = 10 / 65535, which walks every
    segment of the exp table."""
    rng = np.random.default_rng(18)
    cases = {}
    kinds = ("random", "dominant", "flat", "narrow")
    widths = (1, 2, 3, 5, 10, 16, 33, 64, 100, 257, 1000)
    betas = (1.0, 1.0, 0.5, 2.0, 0.1, 3.7, 1.0)
    scales = ([2.0**e for e in range(-16, 2)] + _log_uniform(rng, 1e-6, 4.9, 160) + _log_uniform(rng, 1e-5, 1e-3, 60))
    specs = []
    for k, s in enumerate(scales):
        beta = betas[k % len(betas)]
        if s * beta >= 4.99:
            beta = 0.5
        width = widths[k % len(widths)]
        specs.append((softmax_rows(rng, int(rng.integers(1, 4)), width, kinds[k % len(kinds)]), s, beta))
    for k in range(0, len(specs), MAX_OPS):
        cases[f"softmax_scales_{k // MAX_OPS:02d}"] = unary16("softmax", specs[k:k + MAX_OPS])
    long_rows = [(softmax_rows(rng, 2, 4096, kind), s, 1.0) for kind, s in
                 (("flat", 1e-4), ("random", 3e-4), ("narrow", 2.0**-12), ("dominant", 1e-3))]
    cases["softmax_long_rows"] = unary16("softmax", long_rows)
    d = np.arange(65536, dtype=np.int64)
    pairs = np.stack([np.full(65536, 32767), 32767 - d], axis=1).astype(np.int16)
    cases["softmax_exp_sweep"] = unary16("softmax", [(pairs, float(F32(10 / 65535)), 1.0)])
    shapes = [(rng.integers(-32768, 32768, (1, 3, 4, 7)).astype(np.int16), 5e-4, 1.0),
              (rng.integers(-32768, 32768, (2, 5, 6)).astype(np.int16), 2e-4, 1.0),
              (rng.integers(-32768, 32768, (9,)).astype(np.int16), 1e-3, 1.0)]
    cases["softmax_ranks"] = unary16("softmax", shapes)
    return cases


def lut_cases() -> dict[str, tuple[bytes, list]]:
    """Every case of the three ops, by name."""
    return {**softmax_cases(), **sigmoid_cases("logistic"), **sigmoid_cases("tanh")}


def net16_softmax(seed: int = 11) -> tuple[bytes, np.ndarray]:
    """A small 16x8 classifier with float I/O: x [1, 24] float -> QUANTIZE int16 -> FULLY_CONNECTED
    (16, relu) -> TANH -> FULLY_CONNECTED (10) -> SOFTMAX (Q0.15) -> DEQUANTIZE float [1, 10].
    Returns (model bytes, the float input samples [5, 1, 24])."""
    from tflite16_cases import I64
    from tflite_op_cases import FLOAT, I8

    rng = np.random.default_rng(seed)
    m = Model()
    s_x, s_h, s_l = F32(1 / 8192), F32(2.0**-13), F32(1.5e-3)

    def fc(n_in, n_out, s_in, ws):
        w = m.tensor((n_out, n_in), I8, [ws], [0], rng.integers(-127, 128, (n_out, n_in)).astype(np.int8))
        b = m.tensor([n_out], I64, [float(ws) * float(s_in)], [0], rng.integers(-2**20, 2**20, n_out).astype(np.int64))
        return w, b

    x = m.tensor((1, 24), FLOAT, 1.0, 0)
    m.tensors[x].quantization = None
    xq = m.tensor((1, 24), I16, s_x, 0)
    w1, b1 = fc(24, 16, s_x, F32(0.0025))
    h = m.tensor((1, 16), I16, s_h, 0)
    t = m.tensor((1, 16), I16, UNIT, 0)
    w2, b2 = fc(16, 10, UNIT, F32(0.02))
    logits = m.tensor((1, 10), I16, s_l, 0)
    p = m.tensor((1, 10), I16, UNIT, 0)
    y = m.tensor((1, 10), FLOAT, 1.0, 0)
    m.tensors[y].quantization = None
    o1 = S.FullyConnectedOptionsT()
    o1.fusedActivationFunction = 1  # RELU
    so = S.SoftmaxOptionsT()
    so.beta = 1.0
    ops = [(OP.QUANTIZE, OPT.QuantizeOptions, S.QuantizeOptionsT(), [x], [xq]),
           (OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, o1, [xq, w1, b1], [h]),
           (OP.TANH, 0, None, [h], [t]),
           (OP.FULLY_CONNECTED, OPT.FullyConnectedOptions, S.FullyConnectedOptionsT(), [t, w2, b2], [logits]),
           (OP.SOFTMAX, OPT.SoftmaxOptions, so, [logits], [p]),
           (OP.DEQUANTIZE, 0, None, [p], [y])]
    samples = rng.uniform(-3.5, 3.5, (5, 1, 24)).astype(F32)
    return m.build_ops(ops, [x], [y]), samples
