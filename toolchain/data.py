"""DATA loading: a .npy, a .npz (key = input name, or its only array) or a folder of images,
turned into float32 model inputs [S, *input shape] by the YAML `preprocess` block, and then into
int8 with the model input's scale and zero point (once, in Python).

Order of preprocessing: cast to float32 (uint8 data included) -> channel order -> x * scale ->
(x - mean) / std per channel -> the data's layout to the model input's layout (ONNX 4-D inputs
are NCHW). Images are decoded with Pillow to the model input's channel count (1: grayscale "L",
3: "RGB"), HWC, resized first when `resize` is given.

Layout when the user does not say (no preprocess.layout, no --layout): NHWC. When that reading does not
fit the model input but the samples already have the input's own shape (ONNX .npy data in NCHW),
they are taken as they are; when both fit (C == H == W) the NHWC reading wins (set
`preprocess.layout` / `--layout` to choose). With `io_layout: NHWC` an ONNX model's 4-D inputs are
NHWC: data in the file's NCHW shape (and not in the NHWC one) are read as NCHW and transposed here.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from toolchain.clip import clip_repr, clip_text
from toolchain.config import Preprocess
from toolchain.data_files import MAX_DATA_BYTES, MAX_IMAGES, open_image, read_data_file, shown
from toolchain.errors import InputError
from toolchain.io_dtypes import data_dtype_rule, host_quantized, quantized_dtype, quantized_qparams
from toolchain.io_layout import is_nhwc_io
from toolchain.ir import Graph
from toolchain.progress import warning

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm"}


IMAGE_MODES = {1: "L", 3: "RGB"}  # model input channels -> Pillow decoding mode


def _read_images(folder: Path, pre: Preprocess, channels: int = 3) -> np.ndarray:
    """Every image of `folder` decoded to `channels` channels (1 or 3): uint8 [S, H, W, channels]."""
    from PIL import Image

    if channels not in IMAGE_MODES:
        raise InputError(f"{shown(folder)}: an image folder feeds inputs of 1 (grayscale) or 3 (RGB) channels, the "
                         f"model input has {channels}; pass a .npy/.npz instead")
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    except OSError as e:
        raise InputError(f"{shown(folder)}: cannot list the image folder ({e.strerror or e})") from None
    if not files:
        raise InputError(f"{shown(folder)}: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in this folder")
    if len(files) > MAX_IMAGES:
        raise InputError(f"{shown(folder)}: {len(files)} images, more than {MAX_IMAGES}; use fewer samples")
    imgs, total = [], 0
    for f in files:
        img = open_image(f, IMAGE_MODES[channels])  # regular files only; InputError naming the file
        if pre.resize:
            img = img.resize((pre.resize[1], pre.resize[0]), Image.Resampling.BILINEAR)
        imgs.append(np.asarray(img, np.uint8))
        total += imgs[-1].nbytes
        if total > MAX_DATA_BYTES:
            raise InputError(f"{shown(folder)}: the images hold more than {MAX_DATA_BYTES} bytes; use fewer samples")
    if len({i.shape for i in imgs}) != 1:
        raise InputError(f"{shown(folder)}: images differ in size; set preprocess.resize: [H, W]")
    x = np.stack(imgs)
    return x[..., None] if channels == 1 else x  # [S, H, W, C] NHWC


def read_arrays(path: Path, names: tuple[str, ...], pre: Preprocess, channels: int = 3) -> dict[str, np.ndarray]:
    """Raw arrays per graph input from a DATA path (no preprocessing yet); an image folder is
    decoded to `channels` channels. Raises InputError naming the file for a missing, non-regular,
    empty, oversized or corrupt file (see toolchain.data_files) or arrays that do not match the inputs."""
    if not path.exists():
        raise InputError(f"{shown(path)}: no such data file or folder")
    if path.is_dir():
        if len(names) != 1:
            raise InputError(f"{shown(path)}: an image folder can feed only a single-input model")
        return {names[0]: _read_images(path, pre, channels)}
    loaded = read_data_file(path)
    if isinstance(loaded, np.ndarray):
        if len(names) != 1:
            raise InputError(f"{shown(path)}: the model has {len(names)} inputs; use a .npz keyed by input name")
        return {names[0]: loaded}
    keys = list(loaded)
    if len(names) == 1 and len(keys) == 1:
        return {names[0]: loaded[keys[0]]}
    missing = [n for n in names if n not in keys]
    if missing:
        raise InputError(f"{shown(path)}: no array for input(s) {clip_repr(missing, 60)}; the .npz has "
                         f"{clip_repr(keys, 60)}")
    return {n: loaded[n] for n in names}


def preprocess(arr: np.ndarray, shape: tuple[int, ...], pre: Preprocess, where: str,
               model_layout: str = "NCHW") -> np.ndarray:
    """One input's raw data -> float32 [S, *shape] in the model's layout (NCHW for ONNX, NHWC for
    TFLite 4-D inputs); InputError on mismatch. A model batch axis N > 1 (`batch: N`) takes the
    samples N at a time (a last partial group is dropped)."""
    # overflow (float64 data past float32, a huge scale) becomes inf, refused below in one line: no
    # RuntimeWarning on stderr beside it
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _preprocess(arr, shape, pre, where, model_layout)


def _preprocess(arr: np.ndarray, shape: tuple[int, ...], pre: Preprocess, where: str, model_layout: str) -> np.ndarray:
    if arr.dtype.kind not in "uif":
        raise InputError(f"{where}: data of dtype {clip_text(str(arr.dtype), 60)} (need integers or floats)")
    if arr.size == 0:
        raise InputError(f"{where}: no samples in the data")
    x = arr.astype(np.float32)
    if arr.dtype.kind == "f" and not np.isfinite(x).all():  # (integers are finite in float32: no check)
        raise InputError(f"{where}: the data contains NaN or inf values")
    rank = len(shape)
    batch1 = rank > 0 and shape[0] == 1  # data may omit the model's batch axis of 1
    if x.ndim == rank and batch1:
        x = x[:, None]
    elif x.ndim == rank - 1 and batch1:
        x = x[None, None]
    elif x.ndim == rank and shape[0] > 1 and x.shape[0] >= shape[0]:
        # a batched model (`batch: N`): consecutive groups of N samples; a last partial group is dropped
        x = x[:x.shape[0] // shape[0] * shape[0]].reshape(-1, shape[0], *x.shape[1:])
    elif x.ndim == rank:
        x = x[None]
    if x.ndim != rank + 1:
        raise InputError(f"{where}: data of shape {list(arr.shape)} does not fit input shape {list(shape)}")
    if len(x) == 0:  # e.g. 3 samples for a model batch of 8
        raise InputError(f"{where}: no complete sample: data of shape {list(arr.shape)} for input shape {list(shape)}")
    layout = pre.layout or "NHWC"  # None: not set by the user, NHWC unless only the model's own layout fits
    as_is = rank == 4 and pre.layout is None and layout != model_layout and tuple(x.shape[1:]) == tuple(shape) \
        and tuple(x.shape[1:]) != _from_nhwc(tuple(x.shape[1:]), model_layout)  # already in the model's layout
    nhwc_data = rank == 4 and layout == "NHWC" and not as_is
    if nhwc_data and pre.layout is None and model_layout != "NHWC" and tuple(x.shape[1:]) == tuple(shape):
        # C == H == W: both readings fit; say which one was taken, a wrong guess would run without error
        warning(f"{where}: samples of shape {list(shape)} fit the model input both as NHWC and as "
                f"{model_layout}; read as NHWC (the default) and transposed to {model_layout}: if they are "
                f"already {model_layout}, set preprocess.layout: {model_layout} (or --layout {model_layout})")
    cax = -1 if nhwc_data or rank != 4 else 2  # channel axis of [S, N, ...]
    if pre.channel_order == "BGR" and rank == 4:
        x = np.flip(x, axis=cax)
    x = x * np.float32(pre.scale)
    for vals, op in ((pre.mean, np.subtract), (pre.std, np.divide)):
        if vals:
            ch = x.shape[cax]
            if len(vals) not in (1, ch):
                raise InputError(f"{where}: preprocess mean/std has {len(vals)} values for {ch} channels")
            shp = [1] * x.ndim
            shp[cax] = -1
            x = op(x, np.asarray(vals, np.float32).reshape(shp) if len(vals) > 1 else np.float32(vals[0]))
    if rank == 4 and layout != model_layout and not as_is:
        x = x.transpose(0, 1, 4, 2, 3) if nhwc_data else x.transpose(0, 1, 3, 4, 2)
    if tuple(x.shape[1:]) != tuple(shape):
        raise InputError(f"{where}: samples have shape {list(x.shape[1:])} after preprocessing, "
                         f"model input expects {list(shape)} (check preprocess.layout / --layout / resize)")
    if not np.isfinite(x).all():  # finite data times a large scale, or over a tiny std, can overflow float32
        raise InputError(f"{where}: the data overflow float32 after preprocess scale / mean / std (inf values); "
                         "check the preprocess block")
    return np.ascontiguousarray(x, np.float32)


def _from_nhwc(s: tuple[int, ...], model_layout: str) -> tuple[int, ...]:
    """A 4-D sample shape read as NHWC, in the model's layout."""
    return (s[0], s[3], s[1], s[2]) if model_layout == "NCHW" else s


def load_data(path: Path, graph: Graph, pre: Preprocess, quantized: Graph | None = None) -> dict[str, np.ndarray]:
    """DATA -> {input name: float32 [S, *shape]} for every graph input of a float graph.

    `quantized`: the model's int8 graph; the DATA dtype rule is toolchain.io_dtypes.data_dtype_rule.
    Where the DATA array for an input has that input's quantized dtype (int8; uint8 for a uint8 input,
    or for a float input the model's QuantizeLinear makes uint8), the data are the model's own
    quantized values (e.g. an int8 .tflite's inputs as the TFLite tooling writes them), not real
    values: they become real values with that input's scale and zero point, so quantize_inputs gives
    the same int8 back (uint8: shifted by -128), and no preprocess scaling applies to them (a
    preprocess that changes values is refused). Another integer dtype for a float input the model
    quantizes itself is refused (InputError naming the file, the input, the dtype and the accepted ones)."""
    layout = graph.meta.get("input_layout", "NCHW")
    raw = read_arrays(path, graph.inputs, pre, _channels(graph.t(graph.inputs[0]).shape, layout))
    out = {}
    for n, a in raw.items():
        where = f"{shown(path)} (input {clip_repr(n, 60)})"
        pre_n = _file_layout_data(pre, a, graph, n, where)
        rule = data_dtype_rule(quantized, n, a.dtype, path.is_dir()) if quantized is not None and \
            n in quantized.inputs else "real"
        if rule == "refused":
            own = quantized_dtype(quantized, n)
            raise InputError(f"{where}: data of dtype {a.dtype}; the model's input is float32, quantized to {own} "
                             f"inside the model: pass {own} (its quantized values) or float32 / float64 (real values)")
        qp = _quantized_input_qparams(quantized, n) if rule == "quantized" else None
        if qp is None:
            out[n] = preprocess(a, graph.t(n).shape, pre_n, where, layout)
            continue
        if (pre.scale, pre.mean, pre.std, pre.channel_order) != (1.0, (), (), "RGB"):
            raise InputError(f"{where}: {a.dtype} data are the model's quantized input values; remove the preprocess "
                             "scale/mean/std/channel_order, or pass real values (float32)")
        real = (a.astype(np.float64) - qp.zp) * qp.s  # exact: quantize_inputs rounds it back to `a`
        out[n] = preprocess(real, graph.t(n).shape, pre_n, where, layout)
    if len({len(v) for v in out.values()}) != 1:
        raise InputError(f"{shown(path)}: inputs have different sample counts")
    return out


def _file_layout_data(pre: Preprocess, arr: np.ndarray, graph: Graph, name: str, where: str) -> Preprocess:
    """`pre` reading `arr` as NCHW when input `name` is NHWC only through `io_layout: NHWC` (the ONNX
    file's NCHW), no layout is set, and the samples have the file's NCHW shape but not the NHWC one;
    when both fit (C == H == W) NHWC is kept, with a warning."""
    if pre.layout is not None or not is_nhwc_io(graph, name):
        return pre
    n, h, w, c = graph.t(name).shape
    tail = tuple(arr.shape[-3:])
    if tail == (c, h, w) == (h, w, c):
        warning(f"{where}: samples of shape {list(tail)} fit the input both as NHWC (io_layout: NHWC) and as the ONNX "
                "file's NCHW; read as NHWC: if they are NCHW, set preprocess.layout: NCHW (or --layout NCHW)")
    return replace(pre, layout="NCHW") if tail == (c, h, w) and tail != (h, w, c) else pre


def _quantized_input_qparams(quantized: Graph, name: str):
    """The per-tensor qparams of graph input `name` of the quantized graph on the grid of its
    quantized dtype (toolchain.io_dtypes.quantized_qparams: uint8 zero point for uint8), or None
    (per-channel)."""
    q = quantized_qparams(quantized, name)
    return q if q is not None and not q.is_per_channel else None


def _channels(shape: tuple[int, ...], layout: str) -> int:
    """The channel count of a model input (4-D: by its layout; 3-D HWC / CHW by the same rule; else 1)."""
    if len(shape) == 4:
        return shape[1] if layout == "NCHW" else shape[3]
    if len(shape) == 3:
        return shape[0] if layout == "NCHW" else shape[2]
    return 1


def quantize_inputs(data: dict[str, np.ndarray], graph: Graph) -> dict[str, np.ndarray]:
    """float32 model inputs -> int8 (int16 for a 16x8 input) with each input's scale and zero point
    (TFLite rounding; ONNX QuantizeLinear's, float32 division and ties to even, under `rounding: onnx`);
    a float32 input (quantized inside the model by a Quantize op) stays float32. An input whose model
    Quantize io_dtype moved to the host (io_dtypes.host_quantized) is quantized with that op's own
    arithmetic (quantize_ops.quantize_f32_s8: TFLM's float32 division), as the model file would."""
    from toolchain.ops.fixed_point import graph_rounding, quantize_real, rounding_mode
    from toolchain.ops.quantize_ops import quantize_f32_s8

    def q(n: str, v: np.ndarray) -> np.ndarray:
        qp = graph.t(n).quant
        if host_quantized(graph, n):
            with rounding_mode(graph_rounding(graph)):
                return quantize_f32_s8(v, qp.s, qp.zp)
        if graph_rounding(graph) == "onnx" and not qp.is_per_channel:
            return quantize_real(v, qp.s, qp.zp, "onnx")
        return qp.quantize(v, graph.t(n).dtype)

    return {n: q(n, v) if graph.t(n).quant else np.asarray(v, np.float32) for n, v in data.items()}


SATURATION_LIMIT = 0.01  # more than 1% of an input's values clipped by quantizing: warned, and fails a min_sqnr_db run


def input_saturation(data: dict[str, np.ndarray], data_q: dict[str, np.ndarray], graph: Graph) -> dict:
    """How much quantizing the inputs clipped (toolchain.runner reports it; README DATA rule).

    data: real values per input (float32 [S, *shape], as load_data gives them); data_q: the same
    quantized by quantize_inputs (int8). A value saturates when it lands on the dtype's min or max and
    its real value lies beyond the input's grid by more than the rounding (half a step): real / scale
    + zp < qmin - 0.5 or > qmax + 0.5. Data given as the model's own quantized values never do.
    Returns {"fraction": over every value of every quantized input, "per_input": {name: fraction}};
    inputs that stay float32 (quantized inside the model) are left out; fraction 0.0 without any."""
    per, hit, total = {}, 0, 0
    for n, q in data_q.items():
        qp = graph.t(n).quant
        if qp is None or q.size == 0:
            continue
        info = np.iinfo(q.dtype)
        r = np.asarray(data[n], np.float64) / qp.s + qp.zp
        sat = ((q == info.min) & (r < info.min - 0.5)) | ((q == info.max) & (r > info.max + 0.5))
        per[n] = float(np.count_nonzero(sat) / q.size)
        hit, total = hit + int(np.count_nonzero(sat)), total + q.size
    return {"fraction": hit / total if total else 0.0, "per_input": per}
