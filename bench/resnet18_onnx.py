"""A torchvision-shaped ResNet-18 in ONNX with random weights (issue 17 item 1): the 11 MB-weight model
the build-time benchmark compiles. No torch: the graph is written with the onnx helper API as
torchvision's legacy exporter writes resnet18 in eval mode (BatchNorm folded into each Conv's bias,
opset 13): conv1 7x7/2 + Relu, MaxPool 3x3/2, four stages of two BasicBlocks (64, 128, 256, 512
channels; a 1x1/2 Conv on the shortcut where the shape changes), GlobalAveragePool, Flatten, Gemm
512 -> 1000. 11,684,712 parameters (torchvision's 11,689,512 less one of the two per-channel
vectors of each BatchNorm, folded away), input 1x3x224x224 float32 NCHW.

Weights are He-normal (std sqrt(2 / fan_in)) from numpy's PCG64 with a fixed seed, scaled by 0.5 on
each block's second conv so the activations stay in range over eight residual additions; biases are
small normals. Same seed, same file bytes.

    python bench/resnet18_onnx.py OUT.onnx [--calibration OUT.npy --samples 4]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

STAGES = (64, 128, 256, 512)
CLASSES = 1000
INPUT_SHAPE = (1, 3, 224, 224)


class _Builder:
    """Nodes and initializers of the graph, in order; names as torch's exporter spells them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []

    def const(self, name: str, values: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(values.astype(np.float32), name))
        return name

    def conv(self, x: str, name: str, cin: int, cout: int, k: int, stride: int, gain: float = 1.0) -> str:
        from onnx import helper

        std = gain * np.sqrt(2.0 / (cin * k * k))
        w = self.const(f"{name}.weight", self.rng.normal(0.0, std, (cout, cin, k, k)))
        b = self.const(f"{name}.bias", self.rng.normal(0.0, 0.05, (cout,)))
        y = f"/{name}/Conv_output_0"
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], name=f"/{name}/Conv", kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[k // 2] * 4))
        return y

    def op(self, op: str, inputs: list[str], name: str, **attrs) -> str:
        from onnx import helper

        y = f"/{name}/{op}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [y], name=f"/{name}/{op}", **attrs))
        return y

    def block(self, x: str, name: str, cin: int, cout: int, stride: int) -> str:
        """torchvision BasicBlock: relu(conv2(relu(conv1(x))) + shortcut(x))."""
        h = self.op("Relu", [self.conv(x, f"{name}.conv1", cin, cout, 3, stride)], f"{name}/relu")
        h = self.conv(h, f"{name}.conv2", cout, cout, 3, 1, gain=0.5)
        short = self.conv(x, f"{name}.downsample.0", cin, cout, 1, stride) if stride != 1 or cin != cout else x
        return self.op("Relu", [self.op("Add", [h, short], f"{name}/add")], f"{name}/relu_1")


def resnet18(seed: int = 0):
    """The onnx.ModelProto (opset 13, ir_version 8). Deterministic for a seed."""
    from onnx import TensorProto, checker, helper

    b = _Builder(seed)
    x = b.op("Relu", [b.conv("input", "conv1", 3, 64, 7, 2)], "relu")
    x = b.op("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for i, cout in enumerate(STAGES, 1):
        for j in range(2):
            x = b.block(x, f"layer{i}.{j}", cin, cout, 2 if (j == 0 and i > 1) else 1)
            cin = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x], "avgpool")], "flatten", axis=1)
    w = b.const("fc.weight", b.rng.normal(0.0, np.sqrt(1.0 / 512), (CLASSES, 512)))
    bias = b.const("fc.bias", b.rng.normal(0.0, 0.05, (CLASSES,)))
    b.nodes.append(helper.make_node("Gemm", [x, w, bias], ["output"], name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    graph = helper.make_graph(b.nodes, "resnet18",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, INPUT_SHAPE)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, (1, CLASSES))], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgecc-bench",
                              ir_version=8)
    checker.check_model(model)
    return model


def parameters(model) -> int:
    """Number of float parameters of the model's initializers."""
    return int(sum(np.prod(t.dims) for t in model.graph.initializer))


def calibration(samples: int, seed: int = 1) -> np.ndarray:
    """`samples` x 3 x 224 x 224 float32 inputs: ImageNet-normalised-like values (N(0, 1))."""
    return np.random.default_rng(seed).standard_normal((samples, *INPUT_SHAPE[1:])).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the .onnx file to write")
    ap.add_argument("--calibration", type=Path, help="also write calibration inputs (.npy)")
    ap.add_argument("--samples", type=int, default=4)
    args = ap.parse_args()
    import onnx

    model = resnet18()
    onnx.save(model, args.out)
    print(f"{args.out}: {parameters(model):,} parameters")
    if args.calibration:
        np.save(args.calibration, calibration(args.samples))


if __name__ == "__main__":
    main()
