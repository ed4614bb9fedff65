"""The cases of the 16x8 kernel tests (dsp_s16_harness.py): every dsp *_s16 entry point and the portable
*_s16 kernel of the same op on the same call, expected output the numpy reference of toolchain/ops
(conv2d_s16, depthwise_conv2d_s16, fully_connected_s16: reference_s16, bit-exact with TFLM).

- direct cases: seeded layers built in numpy with the corners chosen by hand: odd channel counts, 1x1
  tails (in_c % 4 = 1, 2, 3), strides, dilation, padding on every side, depth multipliers, batches,
  per-tensor / per-channel requantization, full-range int16 inputs (-32768 included), weights in
  -127..127 and -128, int64 biases near TFLM's 2^47 accumulator limit, multipliers of 2^-31 up to
  almost 2^7 (t from 8 to 46: both forms of the requantization record, the int32 cast's wrap),
  multipliers 0 and >= 0x7FFF0000 (Q15 saturation), every clamp (full, relu, narrow), saturating
  outputs, and the worst-case accumulators (-128 weights against +-32768 inputs over thousands of
  taps: the int32 partial sums chunked, dsp_s16.accumulator_chunk). The dsp arguments come from the
  compiler's plans (toolchain/isa/dsp_s16.py), the portable ones from portable_args (the order of the
  ops' s16_args; test_dsp_s16_kernels checks it against them).
- graph cases: the 16x8 .tflite single-op sweep of tests/ops/tflite16_cases.py and a few more layers,
  loaded by the frontend; every s16 variant (dsp and portable) that applies to the node, with its own
  argument list from the compiler's glue; expected: the interpreter (reference_s16).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from dsp_s16_harness import Case, resolve
from toolchain.isa import dsp_s16
from toolchain.ops.common import Window
from toolchain.ops.conv2d import conv2d_s16
from toolchain.ops.depthwise_conv2d import depthwise_conv2d_s16
from toolchain.ops.fixed_point import quantize_multiplier
from toolchain.ops.fully_connected import fully_connected_s16
from toolchain.ops.registry import CArg

_OPS = str(Path(__file__).resolve().parents[1] / "ops")


# ---- argument lists ----------------------------------------------------------------------------
def portable_args(op: str, k: dict, x_shape, w: np.ndarray, bias, y_shape) -> list[CArg]:
    """The portable ecc_<op>_s16 arguments (after the scratch pointer) in the order of the op modules'
    s16_args: geometry, clamp, per-channel mult (int32) / shift (int8), input dims, input, weight
    dims, weights, int64 bias (NULL when None), output dims, output."""
    cout = w.shape[3] if op == "depthwise_conv2d" else w.shape[0]
    mult = CArg("array", np.broadcast_to(np.asarray(k["out_mult"], np.int32).reshape(-1), (cout,)).copy(), "mult")
    shift = CArg("array", np.broadcast_to(np.asarray(k["out_shift"], np.int8).reshape(-1), (cout,)).copy(), "shift")
    b = CArg("null") if bias is None else CArg("const", np.asarray(bias, np.int64))
    lit = lambda vs: [CArg.lit(v) for v in vs]  # noqa: E731
    if op == "fully_connected":
        return [*lit([k["act_min"], k["act_max"]]), mult, shift, *lit(x_shape), CArg("act", "input"),
                CArg("const", w), b, CArg.lit(y_shape[1]), CArg("act", "output")]
    geometry = [*k["stride"], *k["pad"], *k["dilation"]]
    if op == "depthwise_conv2d":
        geometry.append(k["depth_multiplier"])
    dims = w.shape[1:3] if op == "depthwise_conv2d" else w.shape[1:]
    return [*lit([*geometry, k["act_min"], k["act_max"]]), mult, shift, *lit(x_shape), CArg("act", "input"),
            *lit(dims), CArg("const", w), b, *lit(y_shape[1:]), CArg("act", "output")]


def op_cases(op: str, tag: str, x: np.ndarray, w: np.ndarray, bias, k: dict, expected: np.ndarray) -> list[Case]:
    """The cases of one layer: every dsp _s16 entry point whose plan accepts it, and the portable kernel."""
    plans = []
    if op == "conv2d":
        plans = [(f"ecc_dsp_conv2d{'_1x1' if p else ''}_s16",
                  dsp_s16.conv2d_plan_why(k, x.shape, w, bias, expected.shape, pointwise=p)) for p in (True, False)]
    elif op == "depthwise_conv2d":
        plans = [("ecc_dsp_depthwise_conv2d_s16", dsp_s16.depthwise_plan_why(k, x.shape, w, bias, expected.shape))]
    else:
        plans = [("ecc_dsp_fully_connected_s16", dsp_s16.fc_plan_why(k, x.shape, w, bias, expected.shape))]
    cases = [resolve(f"{tag}-{fn[4:-4]}", fn, plan[0], {"input": x}, "output", plan[1], expected)
             for fn, plan in plans if not isinstance(plan, str)]
    args = portable_args(op, k, x.shape, w, bias, expected.shape)
    cases.append(resolve(f"{tag}-portable_{op}", f"ecc_{op}_s16", args, {"input": x}, "output", 0, expected))
    return cases


# ---- seeded layers -----------------------------------------------------------------------------
def i16(rng: np.random.Generator, shape, extreme: bool = True) -> np.ndarray:
    """Full-range int16 values, -32768 and 32767 among them."""
    x = rng.integers(-32768, 32768, shape).astype(np.int16)
    if extreme and x.size >= 2:
        x.reshape(-1)[:2] = (-32768, 32767)
    return x


# requantization kinds: (real multiplier range, bias range, output range kind)
REQUANT = {
    "narrow": ((2**-22, 2**-14), 2**22, "full"),        # narrow path, SSAT
    "relu": ((2**-22, 2**-14), 2**24, "relu"),          # narrow path, USAT
    "big_bias": ((2**-31, 2**-24), 2**46, "narrow"),    # wide: biases near 2^47, t > 32, clamp
    "large_mult": ((0.3, 100.0), 2**10, "full"),         # wide: t < 17 (shift -1..7), wraps, saturation
}


def requant(rng: np.random.Generator, kind: str, n: int, taps: int, per_tensor: bool = False):
    """(mult, shift int arrays [n], int64 bias [n], act_min, act_max) of one kind of REQUANT, with the
    corners: a dead channel (multiplier 0) and one >= 0x7FFF0000 (the Q15 multiplier saturates)."""
    (lo_m, hi_m), b, act = REQUANT[kind]
    reals = np.exp(rng.uniform(np.log(lo_m), np.log(hi_m), 1 if per_tensor else n))
    pairs = [quantize_multiplier(float(r)) for r in np.broadcast_to(reals, (n,))]
    mult, shift = np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)
    if not per_tensor and n > 2:
        mult[1], mult[2] = 0x7FFF8000 + int(rng.integers(0, 0x7FFF)), 0
    shift = np.clip(shift, -31, 7)
    limit = (1 << 47) - taps * 128 * 32768 - 1  # |acc| < 2^47 (quant16.ACC_LIMIT)
    bias = rng.integers(-min(b, limit), min(b, limit) + 1, n).astype(np.int64)
    if kind == "big_bias" and n > 1:
        bias[0], bias[-1] = limit, -limit
    if kind == "large_mult":  # every third channel wraps in TFLM's int32 cast (|acc m| >= 2^31 * 2^t)
        bias[::3] = rng.integers(1 << 34, 1 << 38, bias[::3].size) * rng.choice([-1, 1], bias[::3].size)
    lo, hi = {"full": (-32768, 32767), "relu": (0, 32767), "narrow": (-3000, 20000)}[act]
    return mult, shift, bias, lo, hi


CONV_SHAPES = [  # (H, W, Cin, Cout, KH, KW, stride, pads t/l/b/r, dilation, batches)
    (7, 9, 3, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (8, 8, 16, 8, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1), 2),
    (6, 5, 8, 5, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1),
    (5, 7, 12, 6, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (9, 9, 7, 7, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (4, 5, 5, 4, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 2),
    (3, 6, 6, 3, 1, 1, (1, 2), (0, 0, 0, 0), (1, 1), 1),
    (5, 3, 1, 9, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (4, 6, 13, 9, 1, 3, (1, 2), (0, 1, 0, 1), (1, 1), 1),
    (6, 6, 4, 16, 5, 5, (1, 1), (2, 1, 2, 3), (1, 1), 1),
    (3, 3, 20, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (5, 5, 1, 3, 3, 3, (2, 1), (1, 1, 1, 1), (1, 2), 1),
    (4, 4, 2, 1, 2, 2, (1, 1), (0, 0, 1, 1), (1, 1), 1),
    (7, 7, 3, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
]
DW_SHAPES = [  # (H, W, C, mult, KH, KW, stride, pads, dilation, batches)
    (7, 7, 8, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (9, 8, 12, 1, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1), 2),
    (6, 6, 13, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (6, 7, 3, 2, 3, 3, (1, 2), (1, 1, 1, 1), (1, 1), 1),
    (5, 5, 4, 3, 3, 3, (1, 1), (1, 0, 1, 2), (1, 1), 1),
    (8, 8, 8, 1, 5, 5, (1, 1), (4, 4, 4, 4), (2, 2), 1),
    (5, 6, 5, 1, 2, 4, (2, 1), (0, 1, 1, 2), (1, 1), 1),
    (4, 4, 1, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
]
FC_SHAPES = [(1, 7, 5), (2, 16, 10), (3, 33, 1), (1, 64, 13), (1, 1, 1), (2, 3, 2), (4, 130, 7), (1, 6, 4)]


def conv_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    for i, (h, wd, cin, cout, kh, kw, st, pads, dil, nb) in enumerate(CONV_SHAPES):
        for kind in REQUANT:
            x = i16(rng, (nb, h, wd, cin))
            w = rng.integers(-127, 128, (cout, kh, kw, cin)).astype(np.int8)
            if kind == "large_mult":
                x = (x // 512).astype(np.int16)  # keeps some outputs inside the range at multipliers >= 0.3
                w.reshape(-1)[::7] = -128
            mult, shift, bias, lo, hi = requant(rng, kind, cout, kh * kw * cin, per_tensor=kind == "relu")
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            bias_arg = None if (i + len(kind)) % 5 == 0 else bias
            cases += op_cases("conv2d", f"conv{i}_{kind}", x, w, bias_arg, k, conv2d_s16(x, w, bias_arg, **k))
    return cases


def depthwise_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    for i, (h, wd, c, m, kh, kw, st, pads, dil, nb) in enumerate(DW_SHAPES):
        for kind in REQUANT:
            x = i16(rng, (nb, h, wd, c))
            w = rng.integers(-127, 128, (1, kh, kw, c * m)).astype(np.int8)
            if kind == "large_mult":
                x = (x // 256).astype(np.int16)
                w.reshape(-1)[::5] = -128
            mult, shift, bias, lo, hi = requant(rng, kind, c * m, kh * kw, per_tensor=kind == "relu")
            k = dict(stride=st, pad=pads[:2], dilation=dil, out_hw=Window((kh, kw), st, dil, pads).out_hw(h, wd),
                     depth_multiplier=m, out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            cases += op_cases("depthwise_conv2d", f"dw{i}_{kind}", x, w, bias, k,
                              depthwise_conv2d_s16(x, w, bias, **k))
    return cases


def fc_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    for i, (b, kdim, o) in enumerate(FC_SHAPES):
        for kind in REQUANT:
            x = i16(rng, (b, kdim))
            w = rng.integers(-127, 128, (o, kdim)).astype(np.int8)
            if kind == "large_mult":
                x = (x // 512).astype(np.int16)
                w.reshape(-1)[::3] = -128
            mult, shift, bias, lo, hi = requant(rng, kind, o, kdim, per_tensor=kind == "narrow")
            k = dict(out_mult=mult, out_shift=shift, act_min=lo, act_max=hi)
            bias_arg = None if i == 2 else bias
            cases += op_cases("fully_connected", f"fc{i}_{kind}", x, w, bias_arg, k,
                              fully_connected_s16(x, w, bias_arg, **k))
    return cases


def worst_case_cases(rng: np.random.Generator) -> list[Case]:
    """The largest accumulators the int16 x int8 products can reach: weights all -128 (or +-127 in
    runs) against inputs all -32768 (or +-32767 matching the sign), over enough taps that a whole
    output overflows int32 many times: the wide path sums `chunk` groups per int32 partial
    (accumulator_chunk; 127 groups of -128 weights reach 2^31 - 2^24 exactly), each flushed into the
    int64 accumulator. FC and 1x1 conv with k % 4 tails, a general conv (im2col), a depthwise kernel
    of 529 taps (one int32 partial per kernel row)."""
    cases: list[Case] = []
    tiny = dict(out_mult=np.full(3, 1 << 30, np.int64), out_shift=np.full(3, -31, np.int64), act_min=-32768,
                act_max=32767)
    for i, (b, kdim, o) in enumerate(((1, 2000, 3), (2, 1023, 3), (1, 509, 3), (3, 4097, 3))):
        x = np.full((b, kdim), -32768, np.int16)
        w = np.full((o, kdim), -128, np.int8)
        w[1] = np.where(np.arange(kdim) % 2, 127, -128)
        x[-1, ::2] = 32767
        w[2, : kdim // 2] = 127
        bias = np.array([0, -(1 << 46), (1 << 45) + 12345], np.int64)
        assert dsp_s16.accumulator_chunk(w) < -(-kdim // 4) or i == 2
        cases += op_cases("fully_connected", f"worst_fc{i}", x, w, bias, tiny, fully_connected_s16(x, w, bias, **tiny))
    for i, (cin, kh) in enumerate(((1031, 1), (600, 1), (70, 3))):
        x = np.full((1, 3, 4, cin), -32768, np.int16)
        x[0, 1] = 32767
        w = np.full((3, kh, kh, cin), -128, np.int8)
        w[2, ..., ::3] = 127
        k = dict(stride=(1, 1), pad=(kh // 2, kh // 2), dilation=(1, 1), out_hw=(3, 4), **tiny)
        cases += op_cases("conv2d", f"worst_conv{i}", x, w, None, k, conv2d_s16(x, w, None, **k))
    x = np.full((1, 23, 23, 5), -32768, np.int16)
    x[0, ::2, :, 1] = 32767
    w = np.full((1, 23, 23, 5), -128, np.int8)
    w[..., 3] = 127
    k = dict(stride=(1, 1), pad=(0, 0), dilation=(1, 1), out_hw=(1, 1), depth_multiplier=1,
             **{**tiny, "out_mult": np.full(5, 1 << 30, np.int64), "out_shift": np.full(5, -31, np.int64)})
    bias = np.array([1 << 40, 0, -(1 << 40), 7, 0], np.int64)
    cases += op_cases("depthwise_conv2d", "worst_dw", x, w, bias, k, depthwise_conv2d_s16(x, w, bias, **k))
    return cases


def direct_cases(seed: int = 16) -> list[Case]:
    """Every seeded layer above, in a fixed order."""
    rng = np.random.default_rng(seed)
    return conv_cases(rng) + depthwise_cases(rng) + fc_cases(rng) + worst_case_cases(rng)


# ---- graph cases: .tflite layers through the frontend and the compiler's own argument lists -------
def _extra_models(rng: np.random.Generator) -> dict[str, tuple[bytes, list[np.ndarray]]]:
    if _OPS not in sys.path:
        sys.path.append(_OPS)
    from tflite16_cases import conv16, fc16

    return {"conv_1x1_odd": conv16(rng, k=(1, 1), cin=7, cout=5, h=5, w=5),
            "conv_1x1_stride": conv16(rng, k=(1, 1), cin=16, cout=9, s=(2, 2), same=False, act="relu"),
            "conv_deep": conv16(rng, cin=24, cout=10, h=5, w=5, per_tensor=True),
            "conv_big_bias_relu": conv16(rng, big_bias=True, act="relu", scales=(np.float32(2e-4), np.float32(50.0))),
            "dw_big": conv16(rng, depthwise=True, cin=11, cout=11, h=6, w=6, k=(5, 5), act="relu6"),
            "fc_deep": fc16(rng, b=3, k=300, o=9, per_tensor=False)}


def graph_cases(seed: int = 17) -> list[Case]:
    """Every s16 variant (dsp, portable) applying to the weighted nodes of the 16x8 single-op sweep and
    _extra_models, with its own argument list; expected: the interpreter."""
    if _OPS not in sys.path:
        sys.path.append(_OPS)
    from tflite16_cases import single_op_cases

    from toolchain.frontend.tflite import load_tflite
    from toolchain.interpret import interpret
    from toolchain.ops.registry import opdef

    models = {n: m for n, m in single_op_cases().items() if n.startswith(("conv", "dw", "fc"))}
    models.update(_extra_models(np.random.default_rng(seed)))
    cases: list[Case] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, inputs) in sorted(models.items()):
            path = Path(tmp) / f"{name}.tflite"
            path.write_bytes(model)
            g = load_tflite(path)
            env = interpret(g, dict(zip(g.inputs, inputs, strict=True)), keep_all=True)
            consts = {t.name: t.data for t in g.tensors.values() if t.is_const}
            for node in g.nodes:
                op = opdef(node)
                if op.weight_out_axis is None:
                    continue
                acts = {node.inputs[0]: env[node.inputs[0]]}
                for v in op.variants:
                    if v.dtype == "s16" and v.applies(node, g):
                        args = (v.args or op.kernel_args)(node, g)
                        cases.append(resolve(f"graph_{name}-{v.name}", v.function, args, acts, node.outputs[0],
                                             v.scratch_bytes(node, g), env[node.outputs[0]], consts))
    return cases


def all_cases() -> list[Case]:
    """The case list of the 16x8 firmware: direct cases, then graph cases."""
    return direct_cases() + graph_cases()
