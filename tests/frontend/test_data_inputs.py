"""DATA as the model input sees it (toolchain/data.py): image folders decoded to the input's channel
count (grayscale PNGs for the 1-channel digits model, RGB for 3 channels, a one-line error else), and
.npy data already in an ONNX model's own NCHW layout taken as is when only that reading fits."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from PIL import Image

from toolchain.config import Preprocess
from toolchain.data import load_data
from toolchain.errors import InputError
from toolchain.frontend.onnx import load_onnx

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "examples" / "digits"


def _relu_model(path: Path, shape: tuple[int, ...]) -> Path:
    vi = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(shape))]
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t", vi,
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def test_grayscale_png_folder_feeds_the_one_channel_digits_model(tmp_path: Path) -> None:
    graph = load_onnx(DIGITS / "model.onnx")
    x = np.load(DIGITS / "verify.npy")[:6]                       # uint8 [6, 1, 8, 8], pixels 0..16
    for i, img in enumerate(x[:, 0] * 15):                       # 0..240 so the PNGs are visible
        # grayscale files, and two saved as RGB (r == g == b): decoded to "L" they read the same
        im = Image.fromarray(img.astype(np.uint8), "L")
        (im.convert("RGB") if i % 3 == 0 else im).save(tmp_path / f"d{i}.png")
    got = load_data(tmp_path, graph, Preprocess(scale=1 / 15 / 16))
    name = graph.inputs[0]
    assert got[name].shape == (6, 1, 1, 8, 8)
    assert np.allclose(got[name], x[:, None].astype(np.float32) / 16, atol=1e-6)
    want = load_data(DIGITS / "verify.npy", graph, Preprocess(scale=0.0625, layout="NCHW"))[name][:6]
    assert np.allclose(got[name], want, atol=1e-6)


def test_rgb_png_folder_feeds_a_three_channel_model_and_other_counts_are_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    imgs = rng.integers(0, 256, (2, 5, 4, 3)).astype(np.uint8)
    (tmp_path / "png").mkdir()
    for i, im in enumerate(imgs):
        Image.fromarray(im, "RGB").save(tmp_path / "png" / f"{i}.png")
    g3 = load_onnx(_relu_model(tmp_path / "m3.onnx", (1, 3, 5, 4)))
    got = load_data(tmp_path / "png", g3, Preprocess())[g3.inputs[0]]
    assert np.array_equal(got, imgs.transpose(0, 3, 1, 2)[:, None].astype(np.float32))
    g2 = load_onnx(_relu_model(tmp_path / "m2.onnx", (1, 2, 5, 4)))
    with pytest.raises(InputError) as e:
        load_data(tmp_path / "png", g2, Preprocess())
    assert str(e.value) == (f"{tmp_path / 'png'}: an image folder feeds inputs of 1 (grayscale) or 3 (RGB) channels, "
                            "the model input has 2; pass a .npy/.npz instead")


def test_npy_in_the_models_own_nchw_layout_is_taken_as_is(tmp_path: Path) -> None:
    g = load_onnx(_relu_model(tmp_path / "m.onnx", (1, 16, 1, 8)))
    x = np.random.default_rng(4).uniform(-1, 1, (3, 16, 1, 8)).astype(np.float32)
    for data in (x, x[:, None]):                                 # with and without the batch axis of 1
        np.save(tmp_path / "d.npy", data)
        got = load_data(tmp_path / "d.npy", g, Preprocess())[g.inputs[0]]   # layout not set: NHWC default
        assert np.array_equal(got, x[:, None])
    nhwc = x.transpose(0, 2, 3, 1)                               # [3, 1, 8, 16]: the NHWC reading fits
    np.save(tmp_path / "d.npy", nhwc)
    assert np.array_equal(load_data(tmp_path / "d.npy", g, Preprocess())[g.inputs[0]], x[:, None])
    np.save(tmp_path / "d.npy", x)
    assert np.array_equal(load_data(tmp_path / "d.npy", g, Preprocess(layout="NCHW"))[g.inputs[0]], x[:, None])
    np.save(tmp_path / "d.npy", x[:, :, :, :4])
    with pytest.raises(InputError, match=r"samples have shape \[1, 4, 16, 1\].*--layout"):
        load_data(tmp_path / "d.npy", g, Preprocess())
    np.save(tmp_path / "d.npy", x)                               # the user said NHWC: no silent fallback
    with pytest.raises(InputError, match=r"samples have shape \[1, 8, 16, 1\]"):
        load_data(tmp_path / "d.npy", g, Preprocess(layout="NHWC"))


def test_square_inputs_keep_the_nhwc_reading(tmp_path: Path) -> None:
    g = load_onnx(_relu_model(tmp_path / "m.onnx", (1, 4, 4, 4)))        # C == H == W: both readings fit
    x = np.arange(2 * 64, dtype=np.float32).reshape(2, 4, 4, 4)
    np.save(tmp_path / "d.npy", x)
    assert np.array_equal(load_data(tmp_path / "d.npy", g, Preprocess())[g.inputs[0]], x.transpose(0, 3, 1, 2)[:, None])
    assert np.array_equal(load_data(tmp_path / "d.npy", g, Preprocess(layout="NCHW"))[g.inputs[0]], x[:, None])


def test_cli_layout_flag_is_parsed(edgecc, tmp_path: Path) -> None:
    res = edgecc("build", "--model", tmp_path / "missing.onnx", "--layout", "sideways", "--out", tmp_path / "o")
    assert res.code == 2 and "--layout" in res.err and "NCHW" in res.err and "Traceback" not in res.err


def _int8_tflite(tmp_path: Path) -> Path:
    """A one-op int8 .tflite (RELU keeping qparams) with input scale 0.05, zero point -7."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "frontend"))
    from _tflite_cases import Model, S

    m = Model()
    x = m.tensor((1, 2, 2, 3), S.TensorType.INT8, 0.05, -7)
    y = m.tensor((1, 2, 2, 3), S.TensorType.INT8, 0.05, -7)
    path = tmp_path / "relu.tflite"
    path.write_bytes(m.build_ops([(S.BuiltinOperator.RELU, 0, None, [x], [y])], [x], [y]))
    return path


def test_int8_data_for_an_int8_model_are_its_quantized_values(tmp_path: Path) -> None:
    """Issue 13 (b) / the corpus's int8 .inputs.npy: int8 DATA for an int8 input are the model's own
    quantized values (not real values, which would saturate): quantize_inputs gives them back."""
    from quantize.dequantize import dequantize_graph
    from toolchain.data import quantize_inputs
    from toolchain.frontend.tflite import load_tflite

    g = load_tflite(_int8_tflite(tmp_path))
    raw = np.arange(-128, 128, dtype=np.int8)[:12 * 5].reshape(5, 1, 2, 2, 3)
    np.save(tmp_path / "q.npy", raw)
    data = load_data(tmp_path / "q.npy", dequantize_graph(g), Preprocess(), quantized=g)
    assert np.allclose(data[g.inputs[0]], (raw.astype(np.float64) + 7) * 0.05, atol=1e-6)
    assert np.array_equal(quantize_inputs(data, g)[g.inputs[0]], raw)
    with pytest.raises(InputError, match="quantized input values"):
        load_data(tmp_path / "q.npy", dequantize_graph(g), Preprocess(scale=2.0), quantized=g)
    # without the int8 graph (a float model) int8 data stay real values, as before
    assert np.array_equal(load_data(tmp_path / "q.npy", dequantize_graph(g), Preprocess())[g.inputs[0]], raw)


def test_a_sample_shape_that_fits_both_layouts_is_read_as_nhwc_with_a_warning(tmp_path: Path, capsys) -> None:
    """C == H == W: data in the model's own [C, H, W] shape also fits the NHWC reading; NHWC wins (README)
    and the terminal says so, naming the override, so a wrong guess does not run silently. With the
    layout set there is no warning and the data are taken as said."""
    g = load_onnx(_relu_model(tmp_path / "m.onnx", (1, 4, 4, 4)))
    x = np.random.default_rng(5).uniform(-1, 1, (2, 1, 4, 4, 4)).astype(np.float32)
    np.save(tmp_path / "d.npy", x)
    got = load_data(tmp_path / "d.npy", g, Preprocess())[g.inputs[0]]
    assert np.array_equal(got, x.transpose(0, 1, 4, 2, 3))      # read as NHWC, moved to NCHW
    err = capsys.readouterr().err
    assert "fit the model input both as NHWC and as NCHW" in err and "--layout NCHW" in err, err
    assert np.array_equal(load_data(tmp_path / "d.npy", g, Preprocess(layout="NCHW"))[g.inputs[0]], x)
    assert "both as NHWC" not in capsys.readouterr().err
