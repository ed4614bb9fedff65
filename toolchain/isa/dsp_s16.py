"""DSP (Cortex-M4/M7/M33, ACLE SMLAD) kernel plans of the 16x8 weighted ops: Conv2D (general and 1x1),
DepthwiseConv2D and FullyConnected with int16 activations (zero point 0), int8 weights and int64
biases (c_templates/kernels/dsp/*_s16.c.j2, ecc_dsp_s16.h). For each: the predicate, scratch bytes,
argument list and why_not, attached with registry.add_variants as KernelVariant dtype "s16" (so they
only ever see int16 nodes), bit-exact with the portable *_s16 kernels and reference_s16 (TFLM).

The numbers prepared offline:
- weights reordered per 4-k group as w0 w2 w1 w3 (reorder_groups): SXTB16 / SXTB16 ROR 8 give the
  int16 pairs (w0, w1), (w2, w3) of the activation words;
- how the products are summed, from the actual weights and biases (products |w x| <= 2^22): narrow
  (chunk 0, `narrow`): every |bias| + 32768 * sum |w| < 2^31, so TFLM's int64 accumulator always holds
  an int32 and SMLAD sums it from the bias (every t >= 17 too: the SMMLA record); else
  (accumulator_chunk) how many 4-k groups each int32 partial sum may take before it is added to the
  int64 accumulator, the largest for which 32768 * sum |w| over every chunk of every output channel
  stays below 2^31. No sum can wrap either way: the int64 sum is TFLM's exactly;
- the requantization records: TFLM's 64-bit MultiplyByQuantizedMultiplier
  (quant16.multiply_by_quantized_multiplier_s64) rewritten as one SMMLA for narrow layers
  (narrow_records, 3 words per channel) or as one UMLAL and two MLAs (requant_records, 5 words);
  emulate_narrow / emulate_rq are the numpy twins of the C (ecc_dsp_s16_rq32 / _rq64).
Not here: C (c_templates/), the int8 plans (dsp.py), the 16x8 semantics (toolchain/ops, quant16.py).
"""
from __future__ import annotations

import numpy as np

from toolchain.ir import Graph, Node
from toolchain.ops import conv2d, depthwise_conv2d
from toolchain.ops.quant16 import weighted_requant_s16
from toolchain.ops.registry import CArg, KernelVariant, OpKind, add_variants

HEADERS = ("dsp/ecc_dsp_kernels.h", "dsp/ecc_dsp.h", "dsp/ecc_dsp_s16.h")
INT16_MAGNITUDE = 32768  # the largest |x| of an int16 activation
INT32_LIMIT = 2**31
RQ_WORDS = 5  # ecc_dsp_s16.h ECC_DSP_S16_RQ_WORDS
Plan = tuple[list[CArg], int]  # (argument list, scratch bytes) of one kernel call


# ---- offline numbers -----------------------------------------------------------------------------
def reorder_groups(w: np.ndarray) -> np.ndarray:
    """[..., K] int8 -> [..., 4 * ceil(K / 4)] with each group of four stored w0 w2 w1 w3 (a partial
    last group zero-padded first), the order whose SXTB16 / SXTB16 ROR 8 are the int16 pairs
    (w0, w1), (w2, w3)."""
    k = w.shape[-1]
    padded = np.zeros((*w.shape[:-1], -(-k // 4) * 4), np.int8)
    padded[..., :k] = w
    return padded.reshape(*w.shape[:-1], -1, 4)[..., [0, 2, 1, 3]].reshape(padded.shape)


def accumulator_chunk(w2d: np.ndarray) -> int:
    """The largest number of 4-k groups (>= 1) whose products an int32 may sum, for every row of the
    [O, K] int8 weights and every input: the kernels sum groups [0, c), [c, 2c), ... (the last one
    with the k % 4 tail group) and need 32768 * sum |w| < 2^31 over each. One group (at most 4 * 128
    * 32768 = 2^24) always fits; the whole K (chunk >= the group count) in any ordinary layer."""
    o, k = w2d.shape
    groups = max(1, -(-k // 4))
    padded = np.zeros((o, groups * 4), np.int64)
    padded[:, :k] = np.abs(w2d.astype(np.int64))
    prefix = np.concatenate([np.zeros((o, 1), np.int64), np.cumsum(padded.reshape(o, groups, 4).sum(axis=2), axis=1)],
                            axis=1)
    full = k // 4
    for chunk in range(groups, 0, -1):
        starts = np.arange(0, max(full, 1), chunk)
        ends = np.append(starts[1:], groups)  # the tail group, if any, joins the last chunk
        if o == 0 or int((prefix[:, ends] - prefix[:, starts]).max()) * INT16_MAGNITUDE < INT32_LIMIT:
            return chunk
    raise AssertionError("one group always fits")  # pragma: no cover


def narrow(w2d: np.ndarray, bias, shift) -> bool:
    """Whether every output channel's int64 accumulator provably fits int32 (|bias| + 32768 * sum |w|
    < 2^31 over the [O, K] weights, for every input) and every t = 15 - shift is at least 17 (the
    multiplier M of the narrow record is then below 2^31): the kernels' narrow path, int32 sums from the
    bias and one SMMLA per output (narrow_records, ecc_dsp_s16_rq32)."""
    o = w2d.shape[0]
    b = np.zeros(o, np.int64) if bias is None else np.abs(np.asarray(bias, np.int64).reshape(o))
    top = b + INT16_MAGNITUDE * np.abs(w2d.astype(np.int64)).sum(axis=1)
    return bool(np.all(top < INT32_LIMIT) and np.all(15 - np.asarray(shift, np.int64) >= 17))


def requant_records(mult, shift) -> np.ndarray:
    """Per output channel the 5 int32 words (M_lo, M_hi, R_lo, R_hi, S) of ecc_dsp_s16_rq for TFLM's
    (int32)((acc * m15 + 2^(t-1)) >> t), m15 the Q15 multiplier (quant16), t = 15 - shift in [8, 46]:
    t <= 32: M = m15 << (32 - t), R = 2^31, S = 0 (the high word of acc M + R is bits t..t+31 of the
    exact sum: TFLM's int32 cast, wrap included); t > 32: M = m15, R = 2^(t-1), S = t - 32 (the high
    word holds the whole sum, |acc m15| < 2^62). int64 [C, 5] holding the words' unsigned values."""
    mult, shift = np.asarray(mult, np.int64).reshape(-1), np.asarray(shift, np.int64).reshape(-1)
    m15 = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    t = 15 - shift
    if np.any(t < 8) or np.any(t > 46):
        raise ValueError(f"int16 requantization shift outside [-31, 7]: {shift.tolist()}")
    low = t <= 32
    m = np.where(low, m15 << np.where(low, 32 - t, 0), m15)
    r = np.where(low, np.int64(1) << 31, np.int64(1) << np.where(low, 0, t - 1))
    s = np.where(low, 0, t - 32)
    mask = np.int64(0xFFFFFFFF)
    return np.stack([m & mask, m >> 32, r & mask, r >> 32, s], axis=1)


def narrow_records(mult, shift) -> np.ndarray:
    """Per output channel the 3 int32 words (M, A, S) of ecc_dsp_s16_rq32 for narrow layers (int32
    accumulators, every t = 15 - shift >= 17): TFLM's value is (hi32(A * 2^32 + acc * M)) >> S, one
    SMMLA: t <= 32: M = m15 << (33 - t) (< 2^31), A = 1, S = 1 (floor((P + 2^(t-1)) / 2^(t-1)) for P =
    acc m15, halved once more: nested floors); t > 32: M = m15, A = 2^(t-33), S = t - 32. int64 [C, 3]."""
    mult, shift = np.asarray(mult, np.int64).reshape(-1), np.asarray(shift, np.int64).reshape(-1)
    m15 = np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)
    t = 15 - shift
    if np.any(t < 17) or np.any(t > 46):
        raise ValueError(f"narrow requantization needs shifts in [-31, -2]: {shift.tolist()}")
    low = t <= 32
    m = np.where(low, m15 << np.where(low, 33 - t, 0), m15)
    a = np.where(low, 1, np.int64(1) << np.where(low, 0, t - 33))
    return np.stack([m, a, np.where(low, 1, t - 32)], axis=1)


def emulate_narrow(acc, records: np.ndarray) -> np.ndarray:
    """ecc_dsp_s16_rq32 in numpy: ((A << 32) + acc * M) >> 32 >> S for int32 acc [..., C] (exact in
    int64: |acc M| < 2^62)."""
    acc = np.asarray(acc, np.int64)
    m, a, s = (records[:, i] for i in range(3))
    return (((a << 32) + acc * m) >> 32) >> s


def emulate_rq(acc, records: np.ndarray) -> np.ndarray:
    """ecc_dsp_s16_rq in numpy (before the clamp): (int32)(hi32(acc * M + R) >> S) with the C's
    modular arithmetic (python ints). acc: int64 [..., C]; records [C, 5]. Returns int64 holding
    int32 -- equal to quant16.multiply_by_quantized_multiplier_s64 (tests)."""
    acc = np.asarray(acc, np.int64)
    out = np.empty(acc.shape, np.int64)
    recs = [tuple(int(v) for v in r) for r in np.asarray(records)]
    for idx in np.ndindex(acc.shape):
        m_lo, m_hi, r_lo, r_hi, s = recs[idx[-1]]
        a = int(acc[idx]) % 2**64
        a_lo, a_hi = a & 0xFFFFFFFF, a >> 32
        r = ((r_hi << 32) | r_lo) + a_lo * m_lo  # UMLAL (mod 2^64)
        hi = ((r >> 32) + a_hi * m_lo + a_lo * m_hi) % 2**32  # two MLAs
        out[idx] = (hi - 2**32 if hi >= 2**31 else hi) >> s
    return out


def _int32(values) -> np.ndarray:
    """The low 32 bits of each value as int32 (two's complement)."""
    return ((np.asarray(values, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _words(values) -> np.ndarray:
    """int32 words (the low 32 bits of each value) as little-endian int8 bytes."""
    return _int32(values).astype("<i4").view(np.int8)


def _requant(k: dict, o: int) -> tuple[np.ndarray, np.ndarray]:
    """k's out_mult / out_shift over the o output channels (a per-tensor pair broadcast)."""
    return tuple(np.broadcast_to(np.asarray(k[n], np.int64).reshape(-1), (o,)) for n in ("out_mult", "out_shift"))


def _bias64(bias, o: int) -> np.ndarray:
    """The int64 bias [o] (zeros when absent) as [o, 2] words (lo, hi)."""
    b = np.zeros(o, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(o)
    return np.stack([b & 0xFFFFFFFF, (b >> 32) & 0xFFFFFFFF], axis=1)


def pack_gemm_blob(w2d: np.ndarray, bias, mult, shift, narrow_layer: bool) -> np.ndarray:
    """The GEMM blob of dsp/conv2d_s16, conv2d_1x1_s16 and fully_connected_s16 (ecc_dsp_s16.h), int8:
    per pair of output channels their biases (narrow_layer: int32, one word each; else int64, two), the
    two rows (reorder_groups) interleaved per 4-k group, their requantization records (narrow_records
    or requant_records); an odd last channel: bias, row, record."""
    o = w2d.shape[0]
    rows = reorder_groups(w2d).reshape(o, -1, 4)
    bias64 = _bias64(bias, o)
    bias, rq = (bias64[:, :1], narrow_records(mult, shift)) if narrow_layer else (bias64, requant_records(mult, shift))
    parts = []
    for r in range(0, o, 2):
        pair = slice(r, min(r + 2, o))
        parts += [_words(bias[pair].reshape(-1)), rows[pair].transpose(1, 0, 2).reshape(-1),
                  _words(rq[pair].reshape(-1))]
    return np.concatenate(parts) if parts else np.zeros(0, np.int8)


# ---- plans: argument lists and scratch -----------------------------------------------------------
def conv2d_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias, y_shape: tuple[int, ...], *,
                    pointwise: bool, x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of ecc_dsp_conv2d_1x1_s16 (pointwise) or ecc_dsp_conv2d_s16 for
    the conv2d_s16 keyword arguments `k` (conv2d.s16_kwargs), OHWI weights, the int64 bias and the
    tensor names x, y; else the reason (grouped convolution; for 1x1 a kernel other than 1x1, padding,
    an output beyond the strided input). General: K = KH * KW * Cin padded to k4 = a multiple of 4
    (zero weights), two int16 im2col columns of k4 values in the scratch."""
    cin, (oh, ow) = x_shape[3], y_shape[1:3]
    if w.shape[3] != cin:
        return "grouped convolution"
    if pointwise:
        if w.shape[1:3] != (1, 1):
            return "kernel is not 1x1"
        if any(k["pad"]):
            return "padding"
        if (oh - 1) * k["stride"][0] >= x_shape[1] or (ow - 1) * k["stride"][1] >= x_shape[2]:
            return "output larger than the strided input"
    w2d = w.reshape(w.shape[0], -1)
    if not pointwise:  # the im2col columns are zero-padded to k4: so are the weights (no tail)
        w2d = np.pad(w2d, ((0, 0), (0, -w2d.shape[1] % 4)))
    mult, shift = _requant(k, w2d.shape[0])
    chunk = 0 if narrow(w2d, bias, shift) else accumulator_chunk(w2d)
    blob = pack_gemm_blob(w2d, bias, mult, shift, chunk == 0)
    geometry = [*k["stride"]] if pointwise else [*k["stride"], *k["pad"], *k["dilation"]]
    args = [*map(CArg.lit, [*geometry, chunk, k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            *map(CArg.lit, [] if pointwise else w.shape[1:3]), CArg("array", blob, "wpack"),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    return args, 0 if pointwise else 2 * 2 * w2d.shape[1]


def depthwise_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias, y_shape: tuple[int, ...], *,
                       x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of ecc_dsp_depthwise_conv2d_s16 for the depthwise_conv2d_s16
    keyword arguments `k` and [1, KH, KW, C * mult] weights: each tap's channel quads reordered (depth
    multiplier 1; the last C % 4 channels, and every channel for multiplier > 1, stay in place); narrow
    = 1 when every channel's window fits the int32 sum from its bias (`narrow`), with 4 int32 words per
    channel (bias, narrow record), else 7 (int64 bias, wide record: int64 sums, one int32 partial per
    kernel row); else the reason: a kernel row whose products an int32 cannot hold."""
    _, kh, kw, cout = w.shape
    taps = w.reshape(kh, kw, cout)
    if int(np.abs(taps.astype(np.int64)).sum(axis=1).max(initial=0)) * INT16_MAGNITUDE >= INT32_LIMIT:
        return "a kernel row's products could overflow an int32 sum"
    wr = taps.reshape(kh * kw, cout).copy()
    if k["depth_multiplier"] == 1:
        quads = cout & ~3
        wr[:, :quads] = reorder_groups(wr[:, :quads])
    mult, shift = _requant(k, cout)
    narrow_layer = narrow(taps.reshape(kh * kw, cout).T, bias, shift)
    bias64 = _bias64(bias, cout)
    rq = (np.concatenate([bias64[:, :1], narrow_records(mult, shift)], axis=1) if narrow_layer else
          np.concatenate([bias64, requant_records(mult, shift)], axis=1))
    ints = [*k["stride"], *k["pad"], *k["dilation"], k["depth_multiplier"], int(narrow_layer), k["act_min"],
            k["act_max"]]
    args = [*map(CArg.lit, ints), CArg("array", _int32(rq.reshape(-1)), "rq"), *map(CArg.lit, x_shape),
            CArg("act", x), CArg.lit(kh), CArg.lit(kw), CArg("array", wr.reshape(-1), "w"),
            *map(CArg.lit, y_shape[1:]), CArg("act", y)]
    return args, 0


def fc_plan_why(k: dict, x_shape: tuple[int, ...], w: np.ndarray, bias, y_shape: tuple[int, ...], *,
                x: str = "input", y: str = "output") -> Plan | str:
    """(argument list, scratch bytes) of ecc_dsp_fully_connected_s16 for quant16.weighted_requant_s16's
    `k` (per-channel out_mult / out_shift), [O, K] weights and the int64 bias: the GEMM blob, chunk."""
    mult, shift = _requant(k, w.shape[0])
    chunk = 0 if narrow(w, bias, shift) else accumulator_chunk(w)
    blob = pack_gemm_blob(w, bias, mult, shift, chunk == 0)
    args = [*map(CArg.lit, [chunk, k["act_min"], k["act_max"], *x_shape]), CArg("act", x),
            CArg("array", blob, "wpack"), CArg.lit(y_shape[1]), CArg("act", y)]
    return args, 0


# ---- variants ------------------------------------------------------------------------------------
def _bias(node: Node, graph: Graph):
    return graph.t(node.inputs[2]).data if len(node.inputs) > 2 and node.inputs[2] else None


def _conv_node(node: Node, graph: Graph, pointwise: bool) -> Plan | str:
    if node.attrs.groups != 1:
        return "grouped convolution"
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    return conv2d_plan_why(conv2d.s16_kwargs(node, graph), x.shape, w.data, _bias(node, graph), y.shape,
                           pointwise=pointwise, x=x.name, y=y.name)


def _depthwise_node(node: Node, graph: Graph) -> Plan | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    return depthwise_plan_why(depthwise_conv2d.s16_kwargs(node, graph), x.shape, w.data, _bias(node, graph),
                              y.shape, x=x.name, y=y.name)


def _fc_node(node: Node, graph: Graph) -> Plan | str:
    x, w, y = graph.t(node.inputs[0]), graph.t(node.inputs[1]), graph.t(node.outputs[0])
    return fc_plan_why(weighted_requant_s16(node, graph, out_axis=0), x.shape, w.data, _bias(node, graph),
                       y.shape, x=x.name, y=y.name)


def s16_variant(op: str, variant: str, plan) -> KernelVariant:
    """The dsp/<op>[_<variant>]_s16.c.j2 entry point ecc_dsp_<op>[_<variant>]_s16, reported as kernel
    "dsp[_<variant>]_s16", whose predicate, scratch, arguments and why_not all come from
    plan(node, graph): (arguments, scratch bytes) or the reason it does not apply (a string)."""
    stem = f"{op}_{variant}" if variant else op

    def why_not(node: Node, graph: Graph) -> str | None:
        p = plan(node, graph)
        return p if isinstance(p, str) else None

    return KernelVariant(f"dsp{'_' + variant if variant else ''}_s16", "dsp", f"dsp/{stem}_s16.c.j2",
                         f"ecc_dsp_{stem}_s16", lambda n, g: why_not(n, g) is None,
                         lambda n, g: plan(n, g)[1], lambda n, g: plan(n, g)[0], HEADERS, why_not=why_not,
                         dtype="s16")


CONV2D = (s16_variant("conv2d", "1x1", lambda n, g: _conv_node(n, g, True)),
          s16_variant("conv2d", "", lambda n, g: _conv_node(n, g, False)))
DEPTHWISE_CONV2D = s16_variant("depthwise_conv2d", "", _depthwise_node)
FULLY_CONNECTED = s16_variant("fully_connected", "", _fc_node)

add_variants(OpKind.CONV2D, *CONV2D)
add_variants(OpKind.DEPTHWISE_CONV2D, DEPTHWISE_CONV2D)
add_variants(OpKind.FULLY_CONNECTED, FULLY_CONNECTED)
