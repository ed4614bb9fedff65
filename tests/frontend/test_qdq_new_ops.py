"""QDQ models of the ops added after the QDQ path (Slice, Split, Gather, Squeeze/Unsqueeze,
DepthToSpace/SpaceToDepth, Max/Min/Sum, ReduceSum/ReduceMax, GlobalMaxPool, ConvTranspose,
HardSigmoid, HardSwish, SiLU, Softmax(axis=1), LogSoftmax, Resize) as users get them: a float ONNX
model quantized by onnxruntime.quantization.quantize_static (QDQ, per channel, QInt8/QInt8, seeded
random calibration), then ours (the model's own grids) against onnxruntime's outputs of the QDQ
file (default session options), in LSB of our output grid, under `rounding: onnx` and `tflm`.
ORT leaves Max/Min/Sum/ReduceSum/HardSwish/GlobalMaxPool/HardSigmoid/LogSoftmax float (no Q on
their outputs) unless a quantized op reads them: the patterns end in a Conv where that matters.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from _qdq_cases import import_int8, on_grid, ours
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

ort = pytest.importorskip("onnxruntime")
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

OPSET = 17
SHAPE = (1, 3, 8, 8)


class G:
    def __init__(s, shape=SHAPE):
        s.nodes, s.inits, s.shape, s.rng, s.k = [], [], shape, np.random.default_rng(0), 0
    def c(s, v, dt=np.float32):
        s.k += 1; n = f"c{s.k}"; s.inits.append(numpy_helper.from_array(np.asarray(v, dt), n)); return n
    def n(s, op, ins, nout=1, **a):
        s.k += 1; outs = [f"t{s.k}_{i}" for i in range(nout)]
        s.nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{s.k}", **a)); return outs[0] if nout == 1 else outs
    def conv(s, x, cin, cout, k=3, **a):
        w = s.rng.normal(0, 0.4, (cout, cin, k, k)).astype(np.float32); b = s.rng.normal(0, 0.1, cout).astype(np.float32)
        return s.n("Conv", [x, s.c(w), s.c(b)], pads=[k // 2] * 4, **a)
    def model(s, out):
        g = helper.make_graph(s.nodes, "m", [helper.make_tensor_value_info("x", TP.FLOAT, list(s.shape))],
                              [helper.make_tensor_value_info(out, TP.FLOAT, None)], s.inits)
        g.output[0].type.tensor_type.elem_type = TP.FLOAT; g.output[0].type.tensor_type.ClearField("shape")
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]); m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m)
        o = [v for v in m.graph.value_info if v.name == out]
        if o: m.graph.output[0].CopyFrom(o[0])
        return m

def P_slice_concat(g):
    y = g.conv("x", 3, 6)
    a = g.n("Slice", [y, g.c([0], np.int64), g.c([2], np.int64), g.c([1], np.int64)])
    b = g.n("Slice", [y, g.c([3], np.int64), g.c([6], np.int64), g.c([1], np.int64)])
    return g.n("Concat", [a, b], axis=1)
def P_slice_hw(g):
    y = g.conv("x", 3, 4)
    return g.n("Slice", [y, g.c([1, 0], np.int64), g.c([7, 8], np.int64), g.c([2, 3], np.int64), g.c([2, 3], np.int64)])
def P_split_concat(g):
    y = g.conv("x", 3, 6)
    a, b, c = g.n("Split", [y, g.c([2, 1, 3], np.int64)], nout=3, axis=1)
    return g.n("Concat", [c, a, b], axis=1)
def P_split_add(g):
    y = g.conv("x", 3, 6)
    a, b = g.n("Split", [y], nout=2, axis=1, num_outputs=2) if OPSET >= 18 else g.n("Split", [y, g.c([3, 3], np.int64)], nout=2, axis=1)
    return g.n("Add", [a, b])
def P_gather(g):
    y = g.conv("x", 3, 5)
    return g.n("Gather", [y, g.c([4, 0, 2], np.int64)], axis=1)
def P_gather_scalar(g):
    y = g.conv("x", 3, 5)
    z = g.n("Gather", [y, g.c(2, np.int64)], axis=2)
    return z
def P_d2s(g):
    y = g.conv("x", 3, 8)
    return g.n("DepthToSpace", [y], blocksize=2, mode="DCR")
def P_d2s_crd(g):
    y = g.conv("x", 3, 8)
    return g.n("DepthToSpace", [y], blocksize=2, mode="CRD")
def P_s2d(g):
    y = g.conv("x", 3, 4)
    return g.n("SpaceToDepth", [y], blocksize=2)
def P_max(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4)
    return g.n("Max", [a, b])
def P_min(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4)
    return g.n("Min", [a, b])
def P_sum(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4); c = g.conv("x", 3, 4)
    return g.n("Sum", [a, b, c])
def P_convtranspose(g):
    y = g.conv("x", 3, 4)
    w = g.rng.normal(0, 0.4, (4, 5, 3, 3)).astype(np.float32); b = g.rng.normal(0, 0.1, 5).astype(np.float32)
    return g.n("ConvTranspose", [y, g.c(w), g.c(b)], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
def P_reducemax(g):
    y = g.conv("x", 3, 4)
    return g.n("ReduceMax", [y], axes=[2, 3], keepdims=1)
def P_reducesum(g):
    y = g.conv("x", 3, 4)
    return g.n("ReduceSum", [y, g.c([1], np.int64)], keepdims=1)
def P_gmp_gemm(g):
    y = g.conv("x", 3, 6)
    p = g.n("GlobalMaxPool", [y]); f = g.n("Flatten", [p])
    return g.n("Gemm", [f, g.c(g.rng.normal(0, .4, (4, 6))), g.c(g.rng.normal(0, .1, 4))], transB=1)
def P_hardsigmoid_mul(g):
    y = g.conv("x", 3, 4)
    h = g.n("HardSigmoid", [y], alpha=1 / 6, beta=0.5)
    return g.n("Mul", [y, h])
def P_hardsigmoid(g):
    y = g.conv("x", 3, 4)
    return g.n("HardSigmoid", [y])
def P_hardswish(g):
    y = g.conv("x", 3, 4)
    return g.n("HardSwish", [y])
def P_silu(g):
    y = g.conv("x", 3, 4)
    return g.n("Mul", [y, g.n("Sigmoid", [y])])
def P_softmax1(g):
    y = g.conv("x", 3, 5)
    return g.n("Softmax", [y], axis=1)
def P_logsoftmax(g):
    y = g.conv("x", 3, 5)
    return g.n("LogSoftmax", [y], axis=1)
def P_resize_nearest(g):
    y = g.conv("x", 3, 4)
    return g.n("Resize", [y, "", g.c([1, 1, 2, 2])], mode="nearest")
def P_resize_linear(g):
    y = g.conv("x", 3, 4)
    return g.n("Resize", [y, "", g.c([1, 1, 2, 2])], mode="linear")
def P_upsample(g):
    y = g.conv("x", 3, 4)
    return g.n("Resize", [y, "", "", g.c([1, 4, 16, 16], np.int64)], mode="nearest")
def P_squeeze(g):
    y = g.conv("x", 3, 4)
    p = g.n("GlobalMaxPool", [y]); s = g.n("Squeeze", [p, g.c([2, 3], np.int64)])
    u = g.n("Unsqueeze", [s, g.c([1], np.int64)])
    return u

def P_max_conv(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4)
    return g.conv(g.n("Max", [a, b]), 4, 3)
def P_min_conv(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4)
    return g.conv(g.n("Min", [a, b]), 4, 3)
def P_sum2_conv(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4)
    return g.conv(g.n("Sum", [a, b]), 4, 3)
def P_sum3_conv(g):
    a = g.conv("x", 3, 4); b = g.conv("x", 3, 4); c = g.conv("x", 3, 4)
    return g.conv(g.n("Sum", [a, b, c]), 4, 3)
def P_reducesum_conv(g):
    y = g.conv("x", 3, 4)
    return g.conv(g.n("ReduceSum", [y, g.c([1], np.int64)], keepdims=1), 1, 2)
def P_hardswish_conv(g):
    y = g.conv("x", 3, 4)
    return g.conv(g.n("HardSwish", [y]), 4, 3)
def P_maxpool_conv(g):
    y = g.conv("x", 3, 4)
    return g.conv(g.n("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2]), 4, 3)


# pattern: (max LSB from ORT under rounding onnx, under tflm; measured on these seeded inputs, which go
# past the calibration range: tflm's input quantization rounds ties away). onnx > 0 only where our int8 op
# approximates a float function ORT runs between DQ and Q: Softmax (TFLite fixed point, then a REQUANTIZE
# from the forced 1/256 onto the model's grid), bilinear Resize (TFLite fixed point). Element-wise ops
# between two grids (HardSwish, HardSigmoid, the Sigmoid of SiLU) are ORT's own tables in both modes
# (frontend/onnx_qdq_tables.py): 0 LSB.
PATTERNS = {
    "slice_concat": (P_slice_concat, 0, 1), "slice_hw": (P_slice_hw, 0, 1), "split_concat": (P_split_concat, 0, 1),
    "split_add": (P_split_add, 0, 2), "gather": (P_gather, 0, 1), "gather_scalar": (P_gather_scalar, 0, 1),
    "depth_to_space_dcr": (P_d2s, 0, 1), "depth_to_space_crd": (P_d2s_crd, 0, 1), "space_to_depth": (P_s2d, 0, 1),
    "max_conv": (P_max_conv, 0, 1), "min_conv": (P_min_conv, 0, 1), "sum2_conv": (P_sum2_conv, 0, 1),
    "conv_transpose": (P_convtranspose, 0, 1), "reduce_max": (P_reducemax, 0, 0),
    "reduce_sum_conv": (P_reducesum_conv, 0, 1), "global_max_pool_gemm": (P_gmp_gemm, 0, 0),
    "max_pool_conv": (P_maxpool_conv, 0, 1), "squeeze_unsqueeze": (P_squeeze, 0, 0),
    "hard_sigmoid": (P_hardsigmoid, 0, 2), "hard_sigmoid_mul": (P_hardsigmoid_mul, 0, 0),
    "hard_swish_conv": (P_hardswish_conv, 0, 0), "silu": (P_silu, 0, 1), "softmax_axis1": (P_softmax1, 1, 3),
    "log_softmax": (P_logsoftmax, 0, 1), "resize_nearest": (P_resize_nearest, 0, 1),
    "resize_sizes_nearest": (P_upsample, 0, 1), "resize_linear": (P_resize_linear, 1, 1),
}
# the model's float output has no grid (ORT left the op float) or partial sums have none: refused by name
REFUSED = {"max_float_out": P_max, "sum3_conv": P_sum3_conv}


class Reader(CalibrationDataReader):
    def __init__(self, data):
        self.it = iter([{"x": d} for d in data])

    def get_next(self):
        return next(self.it, None)


def make(build, d: Path, name: str) -> Path:
    g = G()
    out = build(g)
    m = g.model(out)
    onnx.checker.check_model(m)
    fp, qp = d / f"{name}_f32.onnx", d / f"{name}_qdq.onnx"
    onnx.save(m, fp)
    rng = np.random.default_rng(7)
    calib = [rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(8)]
    quantize_static(str(fp), str(qp), Reader(calib), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return qp


def ort_default(p: Path, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("name", list(PATTERNS))
def test_qdq_pattern_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    build, want_onnx, want_tflm = PATTERNS[name]
    p = make(build, tmp_path, name)
    g = import_int8(p)
    rng, worst = np.random.default_rng(11), {"onnx": 0, "tflm": 0}
    for _ in range(4):
        x = rng.uniform(-1.2, 1.2, SHAPE).astype(np.float32)
        ref = on_grid(ort_default(p, x), g)
        for mode, seen in list(worst.items()):
            o = ours(p, {"x": x}, mode, g)[0]
            worst[mode] = max(seen, int(np.abs(o.astype(int) - ref.reshape(o.shape).astype(int)).max()))
    assert worst["onnx"] == want_onnx and worst["tflm"] == want_tflm, worst


@pytest.mark.parametrize("name", list(REFUSED))
def test_unquantized_outputs_are_refused_by_name(name: str, tmp_path: Path) -> None:
    from toolchain.errors import UnsupportedModel

    p = make(REFUSED[name], tmp_path, name)
    with pytest.raises(UnsupportedModel, match=r"node (Max|Sum)_\d+ \((Maximum|Add)\): output .* no quantization"):
        import_int8(p)


@pytest.mark.parametrize("name", ["split_concat", "global_max_pool_gemm", "softmax_axis1", "hard_sigmoid_mul"])
def test_edgecc_run_on_host(name: str, edgecc, need_board, tmp_path: Path) -> None:
    """`edgecc run` under rounding onnx: exit 0, C bit-exact with the interpreter, ORT's LSB as above."""
    import json

    need_board("host")
    p = make(PATTERNS[name][0], tmp_path, name)
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(3).uniform(-1.2, 1.2, (4, *SHAPE[1:])).astype(np.float32))
    yaml = tmp_path / "m.yaml"
    yaml.write_text(f"model: {p}\ncalibration: {data}\nverify: {data}\nrounding: onnx\n")
    res = edgecc("run", yaml, "--board", "host", "--out", tmp_path / "out", "--quiet")
    assert res.code == 0, res.err[-3000:]
    v = json.loads((tmp_path / "out" / "report.json").read_text())["verification"]
    assert v["bit_exact"] is True, v
    assert v["ort_max_abs_diff_lsb"] <= PATTERNS[name][1], v
