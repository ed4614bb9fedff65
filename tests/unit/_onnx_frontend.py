"""Helpers of the tests/unit/test_frontend_onnx_*.py files: random float weights, the edgecc float
path (load_onnx + run_passes(check) + interpret) and its comparison against onnxruntime with graph
optimisations disabled."""
import numpy as np
from onnx import helper

from graph_builder import load, outputs_in_order, run_ort
from toolchain.passes import run_passes

# One generator for every file: each weight draw differs from the last, reproducibly for a given run order.
RNG = np.random.default_rng(1234)


def rnd(*shape, lo=-1.0, hi=1.0):
    """float32 array of `shape`, uniform in [lo, hi) from the shared generator."""
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def edgecc(model, feeds, tmp_path):
    """load_onnx + run_passes(check) + interpret; outputs in ONNX output order."""
    g = run_passes(load(model, tmp_path), check=True)
    return outputs_in_order(g, feeds)


def check(model, tmp_path, shapes=None, seeds=(0, 1), atol=1e-4):
    """edgecc vs onnxruntime on random inputs; shapes: input name -> shape (default: from the model)."""
    if shapes is None:
        shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input
                  if i.name not in {t.name for t in model.graph.initializer}}
    for s in seeds:
        rng = np.random.default_rng(s)
        feeds = {k: (rng.standard_normal(v) * 2).astype(np.float32) for k, v in shapes.items()}
        want = run_ort(model, feeds)
        got = edgecc(model, feeds, tmp_path)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=atol, rtol=1e-4)


def node(op, ins, outs=("y",), **attrs):
    """onnx.helper.make_node with list inputs/outputs; the output defaults to "y"."""
    return helper.make_node(op, list(ins), list(outs), **attrs)
