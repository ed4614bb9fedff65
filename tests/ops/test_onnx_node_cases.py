"""The float reference of every ONNX op the frontend supports, checked against ONNX's own node test
cases (onnx.backend.test.case.node.collect_testcases()): each single-op case whose ops are all in
CONVERTERS goes through load_onnx + run_passes + interpret and must match the case's expected outputs
(the case's rtol/atol). Graph inputs that are not float32, or that our converters need as constants
(weights, pads, scales, ...), are frozen into initializers with the case's own values.

Every case not in SKIP must pass, and at least one case must run per supported op. SKIP is explicit,
one pattern per reason, and only lists what the frontend rejects on purpose (loudly, with Unsupported).
"""
from __future__ import annotations

import re
import warnings
from functools import cache

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from toolchain.errors import EdgeccError
from toolchain.frontend.onnx import CONVERTERS, load_onnx
from toolchain.interpret import interpret
from toolchain.passes import run_passes

SKIP = [
    # the float frontend takes float32 tensors; integer / float16 / double variants have no float path
    (r"_(u?int\d+|int32_trunc|float16|bfloat16|float64|double)$|_int8_", "non-float32 element type"),
    (r"pool_(1d|3d)_", "only 2-D pooling"),
    (r"pool.*dilations", "dilated pooling"),
    (r"training", "training-mode BatchNormalization / Dropout (inference only)"),
    (r"dropout.*mask", "Dropout's mask output"),
    (r"resize.*cubic", "cubic Resize"),
    (r"resize.*tf_crop_and_resize", "tf_crop_and_resize (roi) Resize"),
    (r"resize.*antialias", "antialiased Resize"),
    (r"resize.*not_(larger|smaller)", "keep_aspect_ratio_policy other than stretch"),
    (r"(edge|reflect|wrap)_pad", "Pad modes other than constant"),
    (r"matmul_(3d|4d|bcast|1d|4d_1d|1d_3d|1d_1d)", "MatMul other than [M,K] x constant [K,N]"),
    (r"gemm_default_matrix_bias", "Gemm with a matrix bias C [M,N]"),
    (r"spacetodepth_crd", "SpaceToDepth mode CRD"),
    (r"identity_(sequence|opt)", "sequence / optional values"),
    (r"maxpool_with_argmax", "MaxPool's Indices output"),
    (r"reshape_allowzero_reordered", "zero-sized dimensions"),
    (r"slice_start_out_of_bounds|split_zero_size_splits", "zero-sized Slice / Split outputs"),
    (r"reduce_.*empty_set", "zero-sized dimensions"),
    (r"reduce_max_bool", "non-float32 element type"),
    (r"convtranspose_(1d|3d)", "only 2-D ConvTranspose"),
    (r"convtranspose_(dilations|group_)", "ConvTranspose with dilations or groups"),
]


def _skip_reason(name: str) -> str | None:
    return next((why for pat, why in SKIP if re.search(pat, name)), None)


@cache
def _cases() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        return {tc.name: tc for tc in collect_testcases(None)
                if tc.kind == "node" and {n.op_type for n in tc.model.graph.node} <= set(CONVERTERS)}


def _frozen(m: onnx.ModelProto, inputs: list, keep: set[str]) -> tuple[onnx.ModelProto, dict]:
    """The model with every graph input outside `keep` (and every non-float32 one) as an initializer."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    g = out.graph
    feeds = {}
    for vi, val in zip(list(g.input), inputs, strict=False):
        arr = np.asarray(val)
        if vi.name in keep and arr.dtype == np.float32:
            feeds[vi.name] = arr
        else:
            g.initializer.append(numpy_helper.from_array(arr, vi.name))
    kept = [vi for vi in g.input if vi.name in feeds]
    del g.input[:]
    g.input.extend(kept)
    return out, feeds


def _run(tc, tmp_path) -> list[np.ndarray]:
    inputs, outputs = tc.data_sets[0]
    names = [i.name for i in tc.model.graph.input]
    err = None
    for keep in (set(names), set(names[:1])):   # activations as inputs first, then everything frozen
        m, feeds = _frozen(tc.model, inputs, keep)
        path = tmp_path / f"{tc.name}_{len(keep)}.onnx"
        onnx.save(m, str(path))
        try:
            g = run_passes(load_onnx(path))
        except EdgeccError as e:
            err = e
            continue
        res = interpret(g, feeds)
        return [res[o] for o in g.outputs], outputs
    raise err


def _params():
    out = []
    for name, tc in sorted(_cases().items()):
        why = _skip_reason(name)
        marks = [pytest.mark.skip(reason=f"SKIP list: {why}")] if why else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


@pytest.mark.parametrize("name", _params())
def test_node_case(name, tmp_path):
    tc = _cases()[name]
    got, want = _run(tc, tmp_path)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=tc.rtol, atol=max(tc.atol, 1e-6))


def test_every_supported_op_has_a_passing_case(tmp_path):
    ran: dict[str, int] = {}
    for name, tc in _cases().items():
        if _skip_reason(name):
            continue
        for op in {n.op_type for n in tc.model.graph.node}:
            ran[op] = ran.get(op, 0) + 1
    missing = sorted(set(CONVERTERS) - set(ran) - NO_FLOAT_NODE_CASE)
    assert not missing, f"supported ONNX ops without a runnable ONNX node test case: {missing}"


# Converters whose op has no float single-op case in ONNX's suite (quantized ops of the QDQ frontend).
NO_FLOAT_NODE_CASE = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
                      "MatMulInteger"}
