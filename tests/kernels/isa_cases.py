"""The ISA-independent half of the kernel case generators (dsp_cases.py, helium_cases.py,
neon_cases.py): the CMSIS-NN conformance sets and how a set becomes cases, the argument lists of
the pooling and add entry points (the same on every ISA), the loop that turns each accepted plan
of the compiler's glue into a case, and the seeded requantization / activation helpers of the dsp
and helium random cases.

The per-ISA modules keep what really differs: which entry points exist and which plans they
accept (the op builders pass their plans here), and the shapes and corners of their random cases.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from isa_harness import Case, case
from toolchain.ops.fixed_point import AddParams, quantize_multiplier
from toolchain.ops.registry import CArg

CONF = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "cmsis_nn"
FAMILIES = ("conv", "conv_1x1", "conv_1xn", "grouped_conv", "depthwise_conv", "fully_connected", "avgpool",
            "maxpool", "add")
Builder = Callable[..., list[Case]]


def prefix(isa: str) -> str:
    """The name prefix of every entry point of `isa`."""
    return f"ecc_{isa}_"


# ---- per-op case builders -----------------------------------------------------------------------
def planned_cases(isa: str, tag: str, x, expected, plans: Iterable[tuple[str, tuple | None]]) -> list[Case]:
    """One case per (entry point, plan) whose plan is not None: plan = (arguments, scratch bytes).
    The case is named `tag`-<entry point without the ecc_<isa>_ prefix and _s8>."""
    n = len(prefix(isa))
    return [case(f"{tag}-{fn[n:-3]}", fn, plan[0], {"input": x}, "output", plan[1], expected)
            for fn, plan in plans if plan is not None]


def pool_case(isa: str, tag: str, kind: str, x, kw: dict, expected, count_include_pad: bool = False,
              pad_end: tuple[int, int] = (0, 0), pad_value: int = 0) -> Case:
    """The `kind` ("avg"/"max") pooling case: the argument list every ISA's pool entry points take."""
    extra = [int(count_include_pad), *pad_end, pad_value] if kind == "avg" else []
    ints = [*kw["stride"], *kw["pad"], *kw["kernel"], *extra, kw["act_min"], kw["act_max"], *x.shape]
    args = [*map(CArg.lit, ints), CArg("act", "input"), *map(CArg.lit, kw["out_hw"]), CArg("act", "output")]
    return case(f"{tag}-{kind}_pool2d", f"{prefix(isa)}{kind}_pool2d_s8", args, {"input": x}, "output", 0, expected)


def pool_cases_for(isa: str, applies: Callable[[str, np.ndarray, dict], bool]) -> Builder:
    """The pool_cases builder of `isa`: pool_case when applies(kind, x, kw) (the ISA's pool entry
    point takes that window and input), else no case."""
    def pool_cases(tag: str, kind: str, x, kw: dict, expected, count_include_pad: bool = False,
                   pad_end: tuple[int, int] = (0, 0), pad_value: int = 0) -> list[Case]:
        if not applies(kind, x, kw):
            return []
        return [pool_case(isa, tag, kind, x, kw, expected, count_include_pad, pad_end, pad_value)]
    return pool_cases


def avg_window_fits_u8(kind: str, x, kw: dict) -> bool:
    """dsp and helium pools: an average window of at most 255 taps (its count is held in 8 bits)."""
    return kind != "avg" or kw["kernel"][0] * kw["kernel"][1] <= 255


def add_case(isa: str, tag: str, x1, x2, p: AddParams, lo: int, hi: int, expected, scratch: int) -> Case:
    """The elementwise add case: the argument list every ISA's add entry point takes."""
    ints = [p.input1_offset, p.input1_mult, p.input1_shift, p.input2_offset, p.input2_mult, p.input2_shift,
            p.left_shift, p.output_offset, p.output_mult, p.output_shift, lo, hi, x1.size]
    args = [*map(CArg.lit, ints), CArg("act", "a"), CArg("act", "b"), CArg("act", "output")]
    return case(f"{tag}-add", f"{prefix(isa)}add_s8", args, {"a": x1, "b": x2}, "output", scratch, expected)


# ---- CMSIS-NN conformance sets ----------------------------------------------------------------
def conformance_sets() -> list[tuple[str, str]]:
    """(family, set) of every conformance set of FAMILIES; [] when the data is absent."""
    index = CONF / "index.json"
    if not index.is_file():
        return []
    return [(s["family"], s["set"]) for s in json.loads(index.read_text())["sets"] if s["family"] in FAMILIES]


def conformance_cases(family: str, name: str, conv_cases: Builder, depthwise_cases: Builder, fc_cases: Builder,
                      pool_cases: Builder, add_cases: Builder) -> list[Case]:
    """The cases of one conformance set, through the ISA's op builders."""
    d = dict(np.load(CONF / f"{name}.npz"))
    c = json.loads((CONF / f"{name}.json").read_text())["config"]
    ref, bias = d["output_ref"], d.get("bias")
    if family in ("conv", "conv_1x1", "conv_1xn", "grouped_conv", "depthwise_conv"):
        k = dict(stride=(c["STRIDE_Y"], c["STRIDE_X"]), pad=(c["PAD_Y"], c["PAD_X"]),
                 dilation=(c.get("DILATION_Y", 1), c.get("DILATION_X", 1)), out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]),
                 input_offset=c["INPUT_OFFSET"], output_offset=c["OUTPUT_OFFSET"], out_mult=d["output_mult"],
                 out_shift=d["output_shift"], act_min=c["OUT_ACTIVATION_MIN"], act_max=c["OUT_ACTIVATION_MAX"])
        if family == "depthwise_conv":
            return depthwise_cases(name, d["input"], d["weights"], bias, {**k, "depth_multiplier": c["CH_MULT"]}, ref)
        return conv_cases(name, d["input"], d["weights"], bias, k, ref)
    if family == "fully_connected":
        mult, shift = (d["output_mult"], d["output_shift"]) if "output_mult" in d else \
            ([c["OUTPUT_MULTIPLIER"]], [c["OUTPUT_SHIFT"]])
        k = dict(input_offset=c["INPUT_OFFSET"], filter_offset=c.get("FILTER_OFFSET", 0),
                 output_offset=c["OUTPUT_OFFSET"], out_mult=mult, out_shift=shift, act_min=c["OUT_ACTIVATION_MIN"],
                 act_max=c["OUT_ACTIVATION_MAX"])
        return fc_cases(name, d["input"], d["weights"], bias, k, ref)
    if family in ("avgpool", "maxpool"):
        kw = dict(kernel=(c["FILTER_H"], c["FILTER_W"]), stride=(c["STRIDE_H"], c["STRIDE_W"]),
                  pad=(c["PADDING_H"], c["PADDING_W"]), out_hw=(c["OUTPUT_H"], c["OUTPUT_W"]),
                  act_min=c["ACTIVATION_MIN"], act_max=c["ACTIVATION_MAX"])
        return pool_cases(name, family[:3], d["input"], kw, ref)
    p = AddParams(c["INPUT1_OFFSET"], c["INPUT1_MULT"], c["INPUT1_SHIFT"], c["INPUT2_OFFSET"], c["INPUT2_MULT"],
                  c["INPUT2_SHIFT"], c["LEFT_SHIFT"], c["OUTPUT_OFFSET"], c["OUTPUT_MULT"], c["OUTPUT_SHIFT"])
    return add_cases(name, d["input"], d["input2"], p, c["OUT_ACTIVATION_MIN"], c["OUT_ACTIVATION_MAX"], ref)


# ---- seeded random cases (dsp, helium) ----------------------------------------------------------
def _requant(rng: np.random.Generator, n: int, acc_scale: float, e0: bool = False):
    """Per-channel (mult, shift) mapping accumulators of size ~acc_scale onto ~64; optionally one
    channel with shift 0 (e = 0) and one dead channel (multiplier 0)."""
    pairs = [quantize_multiplier(64.0 / acc_scale * rng.uniform(0.5, 2.0)) for _ in range(n)]
    mult, shift = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    if e0 and n > 2:
        mult[1], shift[1] = quantize_multiplier(0.75)
        mult[2], shift[2] = 0, 0
    return mult.astype(np.int32), shift.astype(np.int32)


def _act(rng, kind: str, zp: int) -> tuple[int, int]:
    return {"full": (-128, 127), "relu": (max(zp, -128), 127), "narrow": (max(zp, -100), min(zp + 90, 110))}[kind]


# ---- maximum / minimum (every ISA: the portable argument list, inputs on the output's qparams) ----
MAXMIN_SHAPES = [  # (shape a, shape b): same shape, channel / pixel / scalar broadcast, both broadcast
    ((1, 5, 7, 13), (1, 5, 7, 13)), ((1, 4, 4, 16), (16,)), ((2, 3, 3, 5), (1, 1, 1, 5)),
    ((1, 6, 6, 3), (1, 6, 6, 1)), ((37,), (1,)), ((1,), (33,)), ((1, 1, 1, 203), (1, 1, 1, 203)),
    ((3, 1, 4, 17), (1, 5, 1, 17)), ((4, 1), (1, 9)), ((1, 2, 2, 40), (1, 2, 2, 40)), ((7,), (7,)),
]


def maxmin_cases(isa: str, rng: np.random.Generator) -> list[Case]:
    """ecc_<isa>_maximum_s8 / minimum_s8 over MAXMIN_SHAPES (sizes not a multiple of 4, 8 or 16),
    zero points -128, 127 and one between, inputs holding -128 and 127; expected: numpy."""
    from toolchain.ops.binary import broadcast_plan

    cases: list[Case] = []
    for i, (sa, sb) in enumerate(MAXMIN_SHAPES):
        zp = (-128, 127, 9)[i % 3]
        a = rng.integers(-128, 128, sa, dtype=np.int8)
        b = rng.integers(-128, 128, sb, dtype=np.int8)
        a.reshape(-1)[0], b.reshape(-1)[-1] = -128, 127
        if a.size == b.size:
            b.reshape(-1)[1 % b.size] = a.reshape(-1)[1 % a.size]  # a tie
        dims, st_a, st_b = broadcast_plan(sa, sb)
        ints = [-zp, 1, 0, -zp, 1, 0, zp, *dims, *st_a, *st_b]
        args = [*map(CArg.lit, ints), CArg("act", "a"), CArg("act", "b"), CArg("act", "output")]
        for op, f in (("maximum", np.maximum), ("minimum", np.minimum)):
            cases.append(case(f"maxmin{i}-{op}", f"{prefix(isa)}{op}_s8", args, {"a": a, "b": b}, "output", 0,
                              f(a, b).astype(np.int8)))
    return cases


# ---- lut (neon, helium: the portable argument list, a 256-entry int8 table) -------------------------
LUT_SIZES = (1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000)


def lut_cases(isa: str, rng: np.random.Generator) -> list[Case]:
    """ecc_<isa>_lut_s8 over LUT_SIZES (around the 16-lane blocks): random tables, the identity and a
    HardSwish-like table, inputs holding every int8 value (-128 and 127 at the ends); expected: numpy."""
    cases: list[Case] = []
    grid = np.arange(-128, 128)
    tables = [rng.integers(-128, 128, 256).astype(np.int8), grid.astype(np.int8),
              np.clip(np.round(grid * np.clip(grid + 64, 0, 128) / 128.0), -128, 127).astype(np.int8)]
    for i, n in enumerate(LUT_SIZES):
        table = tables[i % len(tables)]
        x = rng.integers(-128, 128, n, dtype=np.int8)
        x[: min(n, 256)] = rng.permutation(grid)[: min(n, 256)]
        x[0], x[-1] = -128, 127
        args = [CArg("array", table, "lut"), CArg.lit(n), CArg("act", "input"), CArg("act", "output")]
        cases.append(case(f"lut{i}_{n}-lut", f"{prefix(isa)}lut_s8", args, {"input": x}, "output", 0,
                          table[x.astype(np.int64) + 128]))
    return cases


# (outer, dim, inner, indices): the table form with several short rows per store (RGB widened to 4),
# one row per store, rows of 17..64 bytes (2..4 stores, the last overlapping), tables of 1..4
# registers, spans over 64 bytes (the byte loop), rows over 64 bytes (vector runs, runs of 1..15
# bytes writing past their end), inner > 1, tails of every length, a single pixel
GATHER_SHAPES = [
    (9216 // 64, 3, 1, (0, 1, 2, 1)), (37, 3, 1, (0, 1, 2, 1)), (5, 3, 1, (2, 0)), (23, 16, 1, (8, 8)),
    (41, 16, 1, (*range(16), *range(4))), (29, 48, 1, (*range(48), *range(8))), (31, 8, 1, (*range(8), 0, 1, 2, 3)),
    (19, 48, 1, (22, 47, 22, 47)), (17, 48, 1, (0, 47, 3, 45, 10, 11)), (13, 96, 1, (*range(96), 10, 45, *range(6))),
    (11, 144, 1, (5, 140)), (7, 144, 1, (*range(144), 3, 143, 0, 1, 2, 3, 4, 5)), (1, 24, 1, (*range(24), 0, 1, 2, 3)),
    (2, 16, 1, tuple(range(16))), (27, 6, 2, (5, 0, 0)), (9, 5, 4, (4, 3, 2, 1, 0)), (21, 70, 1, tuple(range(64))),
    (15, 64, 1, (63, 0, *range(16, 30))), (33, 20, 3, (19, 0, 1, 2, 7)), (3, 1, 16, (0, 0, 0, 0, 0)),
]
# (outer, c, channels): one and two channels (8 / 4 pixels per vector, tails), more (per pixel)
SCATTER_SHAPES = [(2304 // 16, 16, (8,)), (37, 48, (0,)), (7, 96, (95,)), (1, 16, (3,)), (41, 48, (22, 47)),
                  (6, 144, (143, 0)), (3, 8, (1, 5)), (19, 192, (7, 100, 33)), (5, 16, tuple(range(0, 16, 2)))]


def copy_cases(isa: str, rng: np.random.Generator) -> list[Case]:
    """ecc_<isa>_gather_s8 over GATHER_SHAPES and ecc_<isa>_scatter_channels_s8 over SCATTER_SHAPES
    (output a separate buffer: the memcpy of base, then the scatter), random int8 data, the ops'
    own argument lists (ops.gather.gather_args, ops.scatter_channels.scatter_args); expected: numpy
    take / the reference scatter."""
    from toolchain.ops.gather import gather_args
    from toolchain.ops.scatter_channels import scatter_args, scatter_channels

    cases: list[Case] = []
    for i, (outer, dim, inner, indices) in enumerate(GATHER_SHAPES):
        x = rng.integers(-128, 128, (outer, dim, inner), dtype=np.int8)
        cases.append(case(f"gather{i}_{outer}x{dim}x{inner}_{len(indices)}-gather", f"{prefix(isa)}gather_s8",
                          gather_args(outer, dim, inner, indices, "input", "output"), {"input": x}, "output", 0,
                          np.take(x, list(indices), axis=1)))
    for i, (outer, c, channels) in enumerate(SCATTER_SHAPES):
        base = rng.integers(-128, 128, (outer, c), dtype=np.int8)
        upd = rng.integers(-128, 128, (outer, len(channels)), dtype=np.int8)
        cases.append(case(f"scatter{i}_{outer}x{c}_{len(channels)}-scatter_channels",
                          f"{prefix(isa)}scatter_channels_s8", scatter_args(outer, c, channels, "base", "update",
                                                                            "output"),
                          {"base": base, "update": upd}, "output", 0, scatter_channels(base, upd, channels)))
    return cases
