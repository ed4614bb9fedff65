"""passes/fold_constant_channels and passes/constant_channels on hand-made int8 graphs: where the
proofs must claim a constant channel and where they must not (padding with c != zero point, scale
changes, Relu clamps), each claim checked against the interpreter on random int8 inputs, and the
rewritten graph bit-exact with the original; plus the MLPerf VWW model."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import toolchain.ops  # noqa: F401 - registers every op
from toolchain.interpret import interpret
from toolchain.ir import DType, Graph, Node, QuantParams, Tensor
from toolchain.ir.verify import verify
from toolchain.ops.add import AddAttrs
from toolchain.ops.common import NO_ACT, Window
from toolchain.ops.concat import ConcatAttrs
from toolchain.ops.conv2d import Conv2DAttrs
from toolchain.ops.depthwise_conv2d import DepthwiseConv2DAttrs
from toolchain.ops.fully_connected import FullyConnectedAttrs
from toolchain.ops.pool2d import Pool2DAttrs
from toolchain.ops.registry import OpKind, opdef
from toolchain.ops.shape_ops import ReshapeAttrs
from toolchain.passes.constant_channels import LIVE, tensor_constants
from toolchain.passes.fold_constant_channels import fold_constant_channels

RELU = (0.0, math.inf)
VWW = Path(__file__).resolve().parents[3] / ".." / "shared" / "models" / "mlperf_tiny" / "vww_mobilenet_int8.tflite"


class Q8:
    """A tiny int8 graph builder: activations per-tensor int8, weights per-channel int8, int32 biases."""

    def __init__(self, seed: int = 0) -> None:
        self.t: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []
        self.rng = np.random.default_rng(seed)

    def input(self, shape, scale=0.05, zp=-3) -> str:
        self.t["x"] = Tensor("x", tuple(shape), DType.INT8, QuantParams.per_tensor(scale, zp))
        self.inputs.append("x")
        return "x"

    def _out(self, shape, scale, zp) -> str:
        name = f"y{len(self.nodes)}"
        self.t[name] = Tensor(name, tuple(shape), DType.INT8, QuantParams.per_tensor(scale, zp))
        return name

    def _consts(self, w: np.ndarray, b: np.ndarray, axis: int, s_in: float) -> tuple[str, str]:
        n = len(self.nodes)
        c = w.shape[axis]
        sw = tuple(0.01 + 0.002 * i for i in range(c))
        self.t[f"w{n}"] = Tensor(f"w{n}", w.shape, DType.INT8, QuantParams(sw, (0,) * c, axis), w.astype(np.int8))
        self.t[f"b{n}"] = Tensor(f"b{n}", b.shape, DType.INT32, QuantParams(tuple(s_in * s for s in sw), (0,) * c, 0),
                                 b.astype(np.int32))
        return f"w{n}", f"b{n}"

    def conv(self, x, w, b, k=1, pads=(0, 0, 0, 0), act=NO_ACT, scale=0.1, zp=-128) -> str:
        xt = self.t[x]
        wn, bn = self._consts(w, b, 0, xt.quant.s)
        win = Window((k, k), (1, 1), (1, 1), pads)
        oh, ow = win.out_hw(*xt.shape[1:3])
        y = self._out((1, oh, ow, w.shape[0]), scale, zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", OpKind.CONV2D, (x, wn, bn), (y,), Conv2DAttrs(win, 1, act)))
        return y

    def dw(self, x, w, b, k=3, pads=(1, 1, 1, 1), act=NO_ACT, scale=0.1, zp=-128) -> str:
        xt = self.t[x]
        wn, bn = self._consts(w, b, 3, xt.quant.s)
        win = Window((k, k), (1, 1), (1, 1), pads)
        oh, ow = win.out_hw(*xt.shape[1:3])
        y = self._out((1, oh, ow, w.shape[3]), scale, zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", OpKind.DEPTHWISE_CONV2D, (x, wn, bn), (y,),
                               DepthwiseConv2DAttrs(win, 1, act)))
        return y

    def fc(self, x, w, b, scale=0.1, zp=0) -> str:
        wn, bn = self._consts(w, b, 0, self.t[x].quant.s)
        y = self._out((1, w.shape[0]), scale, zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", OpKind.FULLY_CONNECTED, (x, wn, bn), (y,), FullyConnectedAttrs()))
        return y

    def unary(self, kind, x, attrs, shape=None, scale=None, zp=None) -> str:
        xt = self.t[x]
        y = self._out(shape or xt.shape, scale or xt.quant.s, xt.quant.zp if zp is None else zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", kind, (x,), (y,), attrs))
        return y

    def add(self, a, b, scale, zp) -> str:
        y = self._out(self.t[a].shape, scale, zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", OpKind.ADD, (a, b), (y,), AddAttrs()))
        return y

    def concat(self, a, b, scale, zp) -> str:
        sa, sb = self.t[a].shape, self.t[b].shape
        y = self._out((*sa[:-1], sa[-1] + sb[-1]), scale, zp)
        self.nodes.append(Node(f"n{len(self.nodes)}", OpKind.CONCAT, (a, b), (y,), ConcatAttrs(3)))
        return y

    def w(self, *shape) -> np.ndarray:
        return self.rng.integers(-127, 128, shape)

    def graph(self, *outputs) -> Graph:
        return Graph("q8", tuple(self.nodes), self.t, tuple(self.inputs), tuple(outputs))


def check(g: Graph, samples: int = 6, seed: int = 1) -> tuple[dict, Graph]:
    """Every claimed constant holds on random inputs (and on the extremes); the folded graph gives the
    same outputs bit for bit. Returns (claims, folded graph)."""
    claims = tensor_constants(g)
    h = fold_constant_channels(g)
    verify(h, lambda node, gr: opdef(node).infer_shapes(node, gr), after="fold_constant_channels")
    rng = np.random.default_rng(seed)
    feeds = [np.full(g.t("x").shape, v, np.int8) for v in (-128, 127)]
    feeds += [rng.integers(-128, 128, g.t("x").shape).astype(np.int8) for _ in range(samples)]
    for x in feeds:
        env = interpret(g, {"x": x}, keep_all=True)
        for name, vec in claims.items():
            v = env[name].reshape(-1, env[name].shape[-1])
            for j in np.flatnonzero(vec != LIVE):
                assert (v[:, j] == vec[j]).all(), (name, j)
        got = interpret(h, {"x": x})
        for o in g.outputs:
            np.testing.assert_array_equal(got[o], env[o])
    return claims, h


def macs(g: Graph) -> int:
    return sum(opdef(n).cost(n, g).macs for n in g.nodes)


def _pw_with_dead_channel(b: Q8, x: str, cout: int, dead: int, bias_dead: int, act=RELU):
    w = b.w(cout, 1, 1, b.t[x].shape[3])
    w[dead] = 0
    bias = b.rng.integers(-200, 200, cout)
    bias[dead] = bias_dead
    return b.conv(x, w, bias, act=act)


def test_dead_relu_channel_through_padded_depthwise_is_dropped():
    # channel 1 of the 1x1 conv has zero weights and a negative bias: Relu gives the zero point (-128)
    # at every pixel; the padded 3x3 depthwise then reads -128 inside and outside: its channel 1 is
    # constant too (its bias requantized); the next 1x1 conv folds it into its bias
    b = Q8()
    x = b.input((1, 6, 6, 3))
    y = _pw_with_dead_channel(b, x, 3, dead=1, bias_dead=-500)
    z = b.dw(y, b.w(1, 3, 3, 3), np.array([10, 900, -40]))
    o = b.conv(z, b.w(5, 1, 1, 3), b.rng.integers(-100, 100, 5), zp=4)
    g = b.graph(o)
    claims, h = check(g)
    assert claims[y].tolist() == [LIVE, -128, LIVE]
    assert claims[z][1] != LIVE and claims[z][0] == LIVE
    assert h.t(y).shape == (1, 6, 6, 2) and h.t(z).shape == (1, 6, 6, 2)
    assert sum(h.meta["macs_skipped"].values()) == macs(g) - macs(h) == 36 * 3 + 36 * 9 + 36 * 5


def test_padding_with_constant_off_the_zero_point_is_not_claimed():
    # channel 1 is a constant 5 steps above the zero point (no Relu): the padded depthwise sees 5 inside
    # and the zero point outside, so its border pixels differ; the 3x3 padded conv cannot fold it either
    b = Q8()
    x = b.input((1, 5, 5, 3))
    w = b.w(3, 1, 1, 3)
    w[1] = 0
    y = b.conv(x, w, np.array([0, 700, 0]), zp=-10)
    g0 = b.graph(y)
    c = int(tensor_constants(g0)[y][1])
    assert c != LIVE and c != -10
    z = b.dw(y, np.full((1, 3, 3, 3), 50), np.zeros(3, np.int64))
    o = b.conv(y, b.w(3, 3, 3, 3), np.zeros(3, np.int64), k=3, pads=(1, 1, 1, 1))
    g = b.graph(z, o)
    claims, h = check(g)
    assert claims[z][1] == LIVE
    assert h.t(y).shape == g.t(y).shape and macs(h) == macs(g)  # kept: the readers need it


def test_no_padding_folds_a_constant_off_the_zero_point():
    b = Q8()
    x = b.input((1, 5, 5, 3))
    w = b.w(3, 1, 1, 3)
    w[2] = 0
    y = b.conv(x, w, np.array([0, 0, 900]), zp=-10)
    z = b.dw(y, b.w(1, 3, 3, 3), np.array([5, 6, 7]), pads=(0, 0, 0, 0))
    o = b.conv(z, b.w(2, 3, 3, 3), np.array([3, -3]), k=3)  # valid 3x3 over 3x3: no padding
    g = b.graph(o)
    claims, h = check(g)
    assert claims[z][2] != LIVE
    assert h.t(z).shape[-1] == 2 and macs(h) < macs(g)


def test_relu_clamp_proves_channels_with_live_weights():
    # channel 0: the bias is so negative that no int8 input lifts the accumulator over 0: constant;
    # channel 1: the same weights with bias 0: the range straddles the clamp: live
    b = Q8()
    x = b.input((1, 4, 4, 3), zp=0)
    w = np.array([[1, -1, 1], [1, -1, 1]]).reshape(2, 1, 1, 3)
    y = b.conv(x, w, np.array([-400, 0]), act=RELU)
    claims, _ = check(b.graph(y))
    assert claims[y].tolist() == [-128, LIVE]
    # the largest accumulator is bias + 382 (x = 127, -128, 127); times the real multiplier 0.05 * 0.01 /
    # 0.1 = 0.005 it must reach 0.5 to leave the zero point: bias -300 gives 82 (0.41: still -128),
    # bias -250 gives 132 (0.66: rounds to 1, live)
    for bias, want in ((-300, -128), (-250, LIVE)):
        b2 = Q8()
        x = b2.input((1, 4, 4, 3), zp=0)
        y = b2.conv(x, w, np.array([bias, 0]), act=RELU)
        g = b2.graph(y)
        claims, _ = check(g)
        assert claims[y].tolist() == [want, LIVE]
        got = interpret(g, {"x": np.broadcast_to(np.array([127, -128, 127], np.int8), (1, 4, 4, 3)).copy()})[y]
        assert (got[..., 0] == (-128 if want == -128 else -127)).all()  # the extreme input shows it


def test_pool_add_and_scale_changes():
    # a constant through AvgPool (same qparams), MaxPool, and Add of two constants with different scales
    b = Q8()
    x = b.input((1, 4, 4, 3))
    y1 = _pw_with_dead_channel(b, x, 3, dead=0, bias_dead=800, act=NO_ACT)
    y2 = _pw_with_dead_channel(b, x, 3, dead=0, bias_dead=-900, act=NO_ACT)
    p = b.unary(OpKind.AVG_POOL2D, y1, Pool2DAttrs(Window((2, 2), (2, 2), (1, 1), (0, 0, 0, 0))), shape=(1, 2, 2, 3))
    m = b.unary(OpKind.MAX_POOL2D, y2, Pool2DAttrs(Window((3, 3), (2, 2), (1, 1), (1, 1, 1, 1))), shape=(1, 2, 2, 3))
    s = b.add(p, m, scale=0.37, zp=7)
    g = b.graph(s)
    claims, h = check(g)
    assert claims[p][0] == claims[y1][0] != LIVE and claims[m][0] == claims[y2][0] != LIVE
    assert claims[s][0] != LIVE and claims[s][1] == LIVE
    real = 0.1 * (claims[y1][0] + 128) + 0.1 * (claims[y2][0] + 128)  # both outputs at scale 0.1, zp -128
    assert abs((claims[s][0] - 7) * 0.37 - real) <= 0.37  # requantized to the Add's own scale
    assert macs(h) == macs(g)  # an Add reads them: nothing dropped


def test_avgpool_counting_padding_is_not_claimed_off_the_zero_point():
    b = Q8()
    x = b.input((1, 4, 4, 3))
    y = _pw_with_dead_channel(b, x, 3, dead=2, bias_dead=800, act=NO_ACT)
    win = Window((3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    p = b.unary(OpKind.AVG_POOL2D, y, Pool2DAttrs(win, count_include_pad=True))
    claims, _ = check(b.graph(p))
    assert claims[y][2] != LIVE and claims[p][2] == LIVE


def test_fc_after_reshape_and_alignment_keeps_multiples():
    # 8 channels, 3 dead: dropping them would leave 5 (not a multiple of 8/4/2): nothing is dropped;
    # 7 channels (no multiple) with 3 dead: all 3 go, through AvgPool and Reshape into the FC
    for cout, dropped in ((8, 0), (7, 3)):
        b = Q8()
        x = b.input((1, 3, 3, 4))
        w = b.w(cout, 1, 1, 4)
        w[[1, 4, 5]] = 0
        bias = b.rng.integers(-50, 50, cout)
        bias[[1, 4, 5]] = [-300, 400, -20]
        y = b.conv(x, w, bias, act=RELU)
        win = Window((3, 3), (1, 1), (1, 1), (0, 0, 0, 0))
        p = b.unary(OpKind.AVG_POOL2D, y, Pool2DAttrs(win), shape=(1, 1, 1, cout))
        r = b.unary(OpKind.RESHAPE, p, ReshapeAttrs((1, cout)), shape=(1, cout))
        o = b.fc(r, b.w(2, cout), np.array([1, 2]))
        g = b.graph(o)
        claims, h = check(g)
        assert int((claims[r] != LIVE).sum()) == 3
        assert h.t(y).shape[-1] == cout - dropped and h.t(r).shape == (1, cout - dropped)


def test_concat_moves_constants_only_on_one_grid():
    # both branches at scale 0.1, zero point -128: the constants keep their places (3 + j); a Concatenation
    # onto another grid rescales its inputs: nothing is claimed there
    for scale, claimed in ((0.1, True), (0.2, False)):
        b = Q8()
        x = b.input((1, 3, 3, 3))
        y1 = _pw_with_dead_channel(b, x, 3, dead=1, bias_dead=-500)
        y2 = _pw_with_dead_channel(b, x, 3, dead=2, bias_dead=900)
        c = b.concat(y1, y2, scale=scale, zp=-128)
        claims, _ = check(b.graph(c))
        want = [LIVE, claims[y1][1], LIVE, LIVE, LIVE, claims[y2][2]] if claimed else [LIVE] * 6
        assert claims[c].tolist() == want and claims[y2][2] != LIVE


def test_graph_output_keeps_its_channels():
    b = Q8()
    x = b.input((1, 3, 3, 3))
    y = _pw_with_dead_channel(b, x, 3, dead=1, bias_dead=-500)
    g = b.graph(y)
    _, h = check(g)
    assert h is g


@pytest.mark.skipif(not VWW.exists(), reason="MLPerf Tiny models not in ../shared")
def test_vww_constant_channels_exact():
    from toolchain.frontend.tflite import load_tflite

    g = load_tflite(str(VWW))
    h = fold_constant_channels(g)
    verify(h, lambda node, gr: opdef(node).infer_shapes(node, gr), after="fold_constant_channels")
    skipped = sum(h.meta["macs_skipped"].values())
    assert skipped == macs(g) - macs(h) == 3_499_736  # of 7,491,968
    claims = tensor_constants(g)
    rng = np.random.default_rng(0)
    name = g.inputs[0]
    for _ in range(2):
        x = rng.integers(-128, 128, g.t(name).shape).astype(np.int8)
        env = interpret(g, {name: x}, keep_all=True)
        for t, vec in claims.items():
            v = env[t].reshape(-1, env[t].shape[-1])
            keep = vec != LIVE
            assert (v[:, keep] == vec[keep]).all(), t
        got = interpret(h, {name: x})
        for o in g.outputs:
            np.testing.assert_array_equal(got[o], env[o])
