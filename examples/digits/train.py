#!/usr/bin/env python3
"""Train the bundled `digits` example model and export it to ONNX.

PyTorch is needed ONLY to re-train this example. The committed
`model.onnx`, `calibration.npy`, `verify.npy` and `verify_labels.npy` are
plain files: compiling them with edgecc (or checking them with onnxruntime)
needs no torch at all.

To re-train (CPU only, well under a minute):

    pip install torch==2.13.0 onnx onnxruntime numpy scikit-learn
    python examples/digits/train.py

Data: scikit-learn's bundled `load_digits()` (1797 8x8 grayscale images,
pixel values 0..16, 10 classes). It ships inside scikit-learn, so nothing is
downloaded. Split: `train_test_split(test_size=0.25, random_state=0,
stratify=None)` -> 1347 training / 450 held-out test images.

Preprocessing (the model input): float32 NCHW [1, 1, 8, 8] = pixel / 16.0,
i.e. values in [0, 1]. The data files hold the RAW uint8 pixels (0..16) in
NCHW [N, 1, 8, 8]; pipeline.yaml's `preprocess.scale: 0.0625` applies /16.

Architecture (ONNX op order):
    Conv3x3(1->8, pad 1) + BatchNormalization + Relu
    MaxPool 2x2                                   (8x8 -> 4x4)
    Conv3x3(8->16, pad 1) + BatchNormalization + Clip(0, 6)   (ReLU6)
    depthwise Conv3x3(16, group=16, pad 1) + Relu
    Conv1x1(16->16)
    Add(residual: the depthwise block's input) + Relu
    AveragePool 2x2                               (4x4 -> 2x2)
    GlobalAveragePool -> Flatten -> Gemm(16->10) -> Softmax  => `probs`

The export uses the TorchScript exporter (`dynamo=False`) with
`training=TrainingMode.PRESERVE` on a model in eval mode and
`do_constant_folding=False`, so the BatchNormalization nodes stay in the
graph as separate inference-mode nodes (edgecc folds them itself). The
Constant nodes that feed Clip's min/max are then turned into initializers
so that the graph holds only compute ops.

Determinism: fixed seeds, `torch.use_deterministic_algorithms(True)`, CPU,
one thread. Re-running the script on the same machine/software stack writes
a byte-identical model.onnx and identical data files.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 0
SPLIT_SEED = 0
TEST_SIZE = 0.25
N_CALIB = 64
N_VERIFY = 32
EPOCHS = 60
BATCH = 64
LR = 0.01
OPSET = 13


def load_split():
    """Return (x_train, x_test, y_train, y_test) with raw uint8 NCHW pixels."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = d.images.astype(np.uint8).reshape(-1, 1, 8, 8)  # raw 0..16, NCHW
    y = d.target.astype(np.int64)
    return train_test_split(x, y, test_size=TEST_SIZE, random_state=SPLIT_SEED)


def build_model():
    import torch
    from torch import nn

    class DigitsNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)  # 8x8 -> 4x4
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(16)
            self.relu6 = nn.ReLU6()  # exported as Clip(0, 6)
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.relu_dw = nn.ReLU()
            self.pw = nn.Conv2d(16, 16, 1)
            self.relu_add = nn.ReLU()
            self.pool2 = nn.AvgPool2d(2)  # 4x4 -> 2x2
            self.gap = nn.AdaptiveAvgPool2d(1)  # GlobalAveragePool
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(16, 10)  # Gemm

        def logits(self, x):
            x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
            r = self.relu6(self.bn2(self.conv2(x)))
            y = self.pw(self.relu_dw(self.dw(r)))
            x = self.relu_add(y + r)
            x = self.gap(self.pool2(x))
            return self.fc(self.flatten(x))

        def forward(self, x):
            return torch.softmax(self.logits(x), dim=1)

    return DigitsNet()


def setup_determinism():
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def train(model, x_train, y_train):
    import torch
    from torch import nn

    xt = torch.from_numpy(x_train.astype(np.float32) / 16.0)
    yt = torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(SEED)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = perm[i : i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model.logits(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if (epoch + 1) % 10 == 0:
            print(f"epoch {epoch + 1:3d}  loss {total / len(xt):.4f}")
    model.eval()


def torch_accuracy(model, x, y):
    import torch

    with torch.no_grad():
        p = model(torch.from_numpy(x.astype(np.float32) / 16.0))
    return float((p.argmax(1).numpy() == y).mean())


def constants_to_initializers(model_proto):
    """Move Constant nodes (Clip's min/max) into graph initializers."""
    from onnx import numpy_helper

    g = model_proto.graph
    keep = []
    for node in g.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            t = numpy_helper.to_array(node.attribute[0].t)
            g.initializer.append(numpy_helper.from_array(t, name=node.output[0]))
        else:
            keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    return model_proto


def export(model, path: Path):
    import io

    import onnx
    import torch

    buf = io.BytesIO()
    dummy = torch.zeros(1, 1, 8, 8, dtype=torch.float32)
    kwargs = dict(
        input_names=["input"],
        output_names=["probs"],
        opset_version=OPSET,
        do_constant_folding=False,
        training=torch.onnx.TrainingMode.PRESERVE,  # model is in eval mode: keeps BN nodes
        dynamic_axes=None,
        dynamo=False,
    )
    with warnings.catch_warnings():
        # dynamo=False is deliberate: it keeps BatchNormalization nodes and plain static ops
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (dummy,), buf, **kwargs)
    m = onnx.load_from_string(buf.getvalue())
    m = constants_to_initializers(m)
    m.doc_string = "edgecc bundled example: digits CNN (see examples/digits/README.md)"
    onnx.checker.check_model(m, full_check=True)
    path.write_bytes(m.SerializeToString(deterministic=True))


def check_onnx(path: Path, x_test, y_test, verify, verify_labels):
    import onnx
    import onnxruntime as ort

    m = onnx.load(str(path))
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    print("ONNX ops:", " ".join(ops))
    assert ops.count("BatchNormalization") == 2, "BatchNormalization nodes must stay in the graph"
    assert "Constant" not in ops
    inp, out = m.graph.input[0], m.graph.output[0]
    in_shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    out_shape = [d.dim_value for d in out.type.tensor_type.shape.dim]
    assert inp.name == "input" and in_shape == [1, 1, 8, 8], (inp.name, in_shape)
    assert out.name == "probs" and out_shape == [1, 10], (out.name, out_shape)

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run(x):
        return np.concatenate(
            [sess.run(["probs"], {"input": xi[None].astype(np.float32) / 16.0})[0] for xi in x]
        )

    test_acc = float((run(x_test).argmax(1) == y_test).mean())
    pv = run(verify)
    verify_acc = float((pv.argmax(1) == verify_labels).mean())
    print(f"onnxruntime test accuracy ({len(y_test)} held-out): {test_acc:.4f}")
    print(f"onnxruntime top-1 on verify.npy: {int(round(verify_acc * len(verify)))}/{len(verify)} = {verify_acc:.4f}")
    print("verify[0] label", int(verify_labels[0]), "probs", " ".join(f"{v:.4f}" for v in pv[0]))
    return test_acc, verify_acc


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=HERE, help="where to write model.onnx and the .npy files")
    args = ap.parse_args(argv)
    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)

    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("train.py needs torch to re-train: pip install torch==2.13.0 (model.onnx itself needs no torch)")

    setup_determinism()
    x_train, x_test, y_train, y_test = load_split()
    print(f"train {len(x_train)}  test {len(x_test)}")

    calibration = np.ascontiguousarray(x_train[:N_CALIB], dtype=np.uint8)
    verify = np.ascontiguousarray(x_test[:N_VERIFY], dtype=np.uint8)
    verify_labels = np.ascontiguousarray(y_test[:N_VERIFY], dtype=np.uint8)
    np.save(out / "calibration.npy", calibration)
    np.save(out / "verify.npy", verify)
    np.save(out / "verify_labels.npy", verify_labels)

    model = build_model()
    train(model, x_train, y_train)
    print(f"torch float test accuracy: {torch_accuracy(model, x_test, y_test):.4f}")

    model_path = out / "model.onnx"
    export(model, model_path)
    check_onnx(model_path, x_test, y_test, verify, verify_labels)
    for name in ("model.onnx", "calibration.npy", "verify.npy", "verify_labels.npy"):
        p = out / name
        print(f"{name:18s} {p.stat().st_size:7d} bytes  sha256 {sha(p)}")


if __name__ == "__main__":
    main()
