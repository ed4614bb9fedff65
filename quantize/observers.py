"""Range observers: what real range [lo, hi] an activation's int8 grid should cover.

Every method is deterministic (a seeded subsample, fixed histograms and search grids):

- minmax: the observed minimum and maximum (the TFLite converter's default, its MinMax calibrator).
- percentile: [P(100 - q), P(q)] of the observed values, q = PERCENTILE (99.99): the few largest
  values are clipped (the percentile calibration of NVIDIA's pytorch-quantization and of
  onnxruntime's calibrate.py; Wu et al. 2020, "Integer Quantization for Deep Learning Inference",
  arXiv:2004.09602, section 4.2).
- kl: the clipping threshold T whose int8 histogram is closest in Kullback-Leibler divergence to the
  observed histogram (TensorRT's entropy calibration: Migacz 2017, "8-bit Inference with TensorRT",
  GTC). Symmetric |x| with 128 levels for signed tensors; [0, T] with 256 levels for non-negative ones
  (post-ReLU), as our asymmetric grid then spends all 256 codes on [0, T]. Exact zeros are left out
  of the histogram: real 0 is always exact on our grid (quantize.scheme), and a ReLU's zero spike
  (about half the values) merged into the first level would otherwise push T down to a few bins
  (measured on ResNet-8: thresholds a quarter of min/max, output SQNR 6 dB).
- mse: the range, shrunk from min/max by a common factor, whose int8 grid gives the smallest mean
  squared error (rounding plus clipping) on the observed values (Banner et al. 2019, "Post training
  4-bit quantization", ACIQ, solved by search instead of a fitted law).
- per-tensor (auto_range): per tensor, the method above whose range, fitted on one half of the
  calibration samples, gives the smallest quantization MSE on the other half (both ways, summed).
  `calibration_method: auto` (quantize.auto) chooses between it and the uniform methods, bias
  correction and equalisation by the model output's error on held-out calibration samples.

Measured effect on MLPerf Tiny ResNet-8 / VWW: bench/results/quant_holdout.md and docs/calibration.md.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SAMPLE_PER_TENSOR = 16384  # values kept per tensor and calibration sample for the histogram methods
BINS = 4096  # histogram bins over [min, max]: the MSE is evaluated on bin centres
FRACTIONS = np.linspace(0.2, 1.0, 41)
PERCENTILE = 99.99
KL_BINS = 2048  # TensorRT's histogram size
KL_STEP = 8  # candidate thresholds every KL_STEP bins (TensorRT tries every bin; 8 keeps it ~10 ms per tensor)

RANGE_METHODS = ("minmax", "percentile", "kl", "mse")
METHODS = (*RANGE_METHODS, "auto")


class Observer:
    """Accumulates per calibration sample the exact min/max and a deterministic subsample of one
    tensor's values, so a range can be fitted on any subset of the samples (auto's halves).

    Samples of one size (calibration: every sample of a tensor) are kept as the rows of one float32
    [samples, values] buffer, so all samples' values are a view of it, not a copy (`capacity`: the
    samples expected, allocated at once); samples of varying sizes as one array each."""

    def __init__(self, seed: int, capacity: int = 0, keep_values: bool = True) -> None:
        self._rng = np.random.default_rng(seed)
        self._capacity = capacity
        self._keep_values = keep_values  # False: extremes only (a graph input's range is always minmax)
        self._buf: np.ndarray | None = None  # [capacity, values] float32, rows [:_count] filled
        self._rows: list[np.ndarray] | None = None  # one array per sample once sizes vary
        self._count = 0
        self._lo: list[float] = []
        self._hi: list[float] = []
        self._memo: dict[tuple, object] = {}  # range / heldout_error results by arguments, until an update

    @property
    def lo(self) -> float:
        return min(self._lo, default=np.inf)

    @property
    def hi(self) -> float:
        return max(self._hi, default=-np.inf)

    @property
    def samples(self) -> int:
        """How many samples were recorded (update calls, plus the rows of update_many calls)."""
        return self._count

    def update(self, x: np.ndarray) -> None:
        """Record one calibration sample of the tensor (any shape, float)."""
        self.update_many(np.asarray(x).reshape(1, -1))

    def update_many(self, xs: np.ndarray, extremes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Record xs.shape[0] calibration samples of the tensor (xs[j]: one sample, any shape, float),
        exactly as that many update(xs[j]) calls in order would (same extremes, same subsample).
        extremes: each sample's (minimum, maximum) when the caller has them already."""
        flat = np.asarray(xs).reshape(len(xs), -1)
        self._memo.clear()
        lo, hi = extremes if extremes is not None else (flat.min(axis=1), flat.max(axis=1))
        self._lo.extend(np.asarray(lo).tolist())  # per row: the values of min() / max() of each sample
        self._hi.extend(np.asarray(hi).tolist())
        if not self._keep_values:
            self._count += len(flat)
            return
        if flat.shape[1] <= SAMPLE_PER_TENSOR:
            self._reserve(*flat.shape)[...] = flat
            return
        rows = self._reserve(len(flat), SAMPLE_PER_TENSOR)
        for row, kept in zip(flat, rows):  # one draw per sample, in sample order (the seeded stream)
            kept[...] = row[self._rng.choice(row.size, SAMPLE_PER_TENSOR, replace=False)]

    def _reserve(self, b: int, width: int) -> np.ndarray:
        """The float32 [b, width] rows of the next b samples, to be filled by the caller."""
        start, self._count = self._count, self._count + b
        if self._rows is None and (self._buf is None or self._buf.shape[1] == width):
            if self._buf is None or self._count > len(self._buf):
                grown = np.empty((max(self._count, self._capacity, 2 * start), width), np.float32)
                if self._buf is not None:
                    grown[:start] = self._buf[:start]
                self._buf = grown
            return self._buf[start:self._count]
        if self._rows is None:  # another size than the samples before: one array per sample from now on
            self._rows = list(self._buf[:start]) if self._buf is not None else []
            self._buf = None
        rows = np.empty((b, width), np.float32)
        self._rows.extend(rows)
        return rows

    def values(self, samples: Sequence[int] | None = None) -> np.ndarray:
        """The kept float32 values of `samples` (indices of the recorded samples; all by default), in
        sample order: a read-only view for all samples of one size, a copy otherwise. ValueError for an
        Observer made with keep_values=False."""
        if not self._keep_values:
            raise ValueError("this observer keeps the extremes of its tensor only (keep_values=False)")
        if self._rows is not None or self._buf is None:
            idx = range(self._count) if samples is None else samples
            return np.concatenate([(self._rows or [])[i] for i in idx])
        if samples is None:
            out = self._buf[:self._count].reshape(-1)
            out.flags.writeable = False
            return out
        return self._buf[np.asarray(list(samples), np.intp)].reshape(-1)

    def _select(self, samples: Sequence[int] | None, values: bool = True) -> tuple[np.ndarray | None, float, float]:
        idx = range(self._count) if samples is None else samples
        return (self.values(samples) if values else None), min(self._lo[i] for i in idx), max(self._hi[i] for i in idx)

    def range(self, method: str, samples: Sequence[int] | None = None) -> tuple[float, float]:
        """(lo, hi) by `method` (one of RANGE_METHODS) over `samples` (indices of update calls; all by
        default). Raises ValueError for another method."""
        if method not in RANGE_METHODS:
            raise ValueError(f"unknown range method {method!r}; choose from {RANGE_METHODS}")
        key = ("range", method, None if samples is None else tuple(samples))
        if key not in self._memo:  # (auto fits the same ranges for several candidates)
            vals, lo, hi = self._select(samples, values=method != "minmax")
            self._memo[key] = {"minmax": lambda: (lo, hi), "percentile": lambda: percentile_range(vals, lo, hi),
                               "kl": lambda: kl_range(vals, lo, hi), "mse": lambda: mse_range(vals, lo, hi)}[method]()
        return self._memo[key]

    def heldout_error(self, rng: tuple[float, float], samples: Sequence[int]) -> float:
        """Mean squared int8 quantization error (rounding plus clipping) of the values of `samples`
        on the grid of range `rng` (quantize.scheme's rule: 0 always inside)."""
        key = ("heldout", tuple(rng), tuple(samples))
        if key not in self._memo:
            vals, _, _ = self._select(samples)
            self._memo[key] = grid_error(vals.astype(np.float64), np.ones(vals.size), *rng) / max(vals.size, 1)
        return self._memo[key]

    # today's API, kept for callers and tests
    def minmax(self) -> tuple[float, float]:
        return self.range("minmax")

    def mse(self) -> tuple[float, float]:
        return self.range("mse")


def grid_error(vals: np.ndarray, weights: np.ndarray, lo: float, hi: float) -> float:
    """sum weights * (dequant(quant(v)) - v)^2 on the asymmetric int8 grid over [min(lo,0), max(hi,0)]."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo <= 0:
        return float(np.sum(weights * vals ** 2))
    scale = (hi - lo) / 255.0
    zp = np.round(-128 - lo / scale)
    q = np.clip(np.round(vals / scale) + zp, -128, 127)
    return float(np.sum(weights * ((q - zp) * scale - vals) ** 2))


def mse_range(vals: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """The shrink factor of [min(lo,0), max(hi,0)] (FRACTIONS) with the least squared error on a
    BINS-bin histogram of `vals`."""
    lo0, hi0 = min(lo, 0.0), max(hi, 0.0)
    if hi0 - lo0 <= 0:
        return lo0, hi0
    counts, edges = np.histogram(vals, bins=BINS, range=(lo0, hi0))
    keep = counts > 0
    centres, weights = ((edges[:-1] + edges[1:]) / 2)[keep], counts[keep].astype(np.float64)
    best = (np.inf, lo0, hi0)
    for frac in FRACTIONS:
        err = grid_error(centres, weights, lo0 * frac, hi0 * frac)
        if err < best[0] * (1 - 1e-9):
            best = (err, lo0 * frac, hi0 * frac)
    return best[1], best[2]


def percentile_range(vals: np.ndarray, lo: float, hi: float, q: float = PERCENTILE) -> tuple[float, float]:
    """[P(100 - q), P(q)] of `vals` (numpy's linear interpolation), inside [lo, hi]; a side that the
    data never cross (e.g. lo >= 0 after ReLU) keeps its exact bound."""
    if vals.size == 0:
        return lo, hi
    p_lo, p_hi = np.percentile(vals.astype(np.float64), [100.0 - q, q])
    return (float(max(p_lo, lo)) if lo < 0 else lo), (float(min(p_hi, hi)) if hi > 0 else hi)


def kl_range(vals: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """TensorRT entropy calibration (see module docstring): the threshold T minimising KL(P || Q),
    P = the histogram up to T with the clipped tail added to its last bin, Q = P merged into the
    grid's levels and spread back uniformly over P's non-empty bins. Returns (max(lo, -T), min(hi, T))
    for a signed tensor, (lo, T) for a non-negative one."""
    signed = lo < 0
    top = max(abs(lo), abs(hi)) if signed else hi
    if top <= 0 or vals.size == 0:
        return lo, hi
    levels = 128 if signed else 256
    vals = vals[vals != 0]
    if vals.size == 0:
        return lo, hi
    hist, _ = np.histogram(np.abs(vals) if signed else vals, bins=KL_BINS, range=(0.0, top))
    hist = hist.astype(np.float64)
    # Counts are integers (exact in float64 in any order): the tail sums, the level sums and the
    # non-empty bins per level come from cumulative sums; the rest is computed per threshold i on
    # arrays of i bins, as the plain definition does (the same float sums, the same result).
    cum = np.concatenate([[0.0], np.cumsum(hist)])                      # cum[k] = hist[:k].sum()
    cum_nz = np.concatenate([[0.0], np.cumsum(hist > 0, dtype=np.float64)])
    total = cum[-1]                                                      # = P's sum for every i
    best = (np.inf, KL_BINS)
    for i in range(levels, KL_BINS + 1, KL_STEP):
        starts = (np.arange(levels) * i) // levels
        ends = np.append(starts[1:], i)
        merged, spread = cum[ends] - cum[starts], cum_nz[ends] - cum_nz[starts]  # per level
        group = np.repeat(np.arange(levels), ends - starts)
        q = np.where(hist[:i] > 0, (merged / np.maximum(spread, 1))[group], 0.0)
        qs = q.sum()
        if total <= 0 or qs <= 0:
            continue
        p = hist[:i].copy()
        p[-1] += total - cum[i]                                          # the clipped tail into the last bin
        m = p > 0
        pm, qm = p[m] / total, q[m] / qs
        kl = float(np.sum(pm * np.log(pm / np.maximum(qm, 1e-12))))
        if kl < best[0] - 1e-12:
            best = (kl, i)
    t = best[1] * top / KL_BINS
    return (max(lo, -t), min(hi, t)) if signed else (lo, min(hi, t))


def auto_range(obs: Observer, methods: Sequence[str] = RANGE_METHODS,
               samples: Sequence[int] | None = None) -> tuple[str, tuple[float, float]]:
    """(chosen method, its range over `samples`, all by default): the method whose range fitted on
    one half of those samples (even / odd positions) has the least quantization MSE on the other
    half, summed over both directions. Fewer than 2 samples: mse. Ties go to the earlier method."""
    idx = list(range(obs.samples)) if samples is None else list(samples)
    if len(idx) < 2:
        return "mse", obs.range("mse", samples)
    halves = (idx[0::2], idx[1::2])
    best = (np.inf, methods[0])
    for m in methods:
        err = sum(obs.heldout_error(obs.range(m, fit), held) for fit, held in (halves, halves[::-1]))
        if err < best[0] * (1 - 1e-9):
            best = (err, m)
    return best[1], obs.range(best[1], samples)
