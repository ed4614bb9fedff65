"""ONNX frontend, BatchNormalization: folded into a preceding Conv / depthwise Conv / Gemm (no BATCH_NORM
left after the passes) or kept on a graph input, against onnxruntime (atol 1e-4)."""
import pytest
from _onnx_frontend import check, node, rnd

from graph_builder import load, onnx_model, ops
from toolchain.ops.registry import OpKind
from toolchain.passes import run_passes


# ---- BatchNormalization ---------------------------------------------------------------------
def _bn_inits(c, prefix=""):
    return {f"{prefix}s": rnd(c, lo=0.5, hi=1.5), f"{prefix}b": rnd(c), f"{prefix}m": rnd(c),
            f"{prefix}v": rnd(c, lo=0.5, hi=2)}


@pytest.mark.parametrize("epsilon", [1e-5, 1e-2])
def test_batchnorm_after_conv(epsilon, tmp_path):
    nodes = [node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "s", "b", "m", "v"], epsilon=epsilon)]
    model = onnx_model(nodes, {"x": (1, 3, 5, 4)}, ["y"], {"W": rnd(4, 3, 3, 3), "B": rnd(4), **_bn_inits(4)})
    assert OpKind.BATCH_NORM not in ops(run_passes(load(model, tmp_path)))
    check(model, tmp_path)


def test_batchnorm_after_depthwise_and_gemm(tmp_path):
    nodes = [node("Conv", ["x", "W"], ["c"], group=3), node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             node("Flatten", ["n"], ["f"]), node("Gemm", ["f", "G"], ["g"], transB=1),
             node("BatchNormalization", ["g", "2s", "2b", "2m", "2v"])]
    model = onnx_model(nodes, {"x": (1, 3, 4, 4)}, ["y"],
                       {"W": rnd(3, 1, 3, 3), "G": rnd(5, 12), **_bn_inits(3), **_bn_inits(5, "2")})
    assert OpKind.BATCH_NORM not in ops(run_passes(load(model, tmp_path)))
    check(model, tmp_path)


def test_batchnorm_on_graph_input(tmp_path):
    model = onnx_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (1, 3, 4, 5)}, ["y"],
                       _bn_inits(3))
    check(model, tmp_path)


def test_batchnorm_on_2d_input(tmp_path):
    model = onnx_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], {"x": (2, 6)}, ["y"], _bn_inits(6))
    check(model, tmp_path)
