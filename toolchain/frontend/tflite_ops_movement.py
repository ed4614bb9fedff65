"""TFLite converters of the data-movement ops (STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, GATHER,
SQUEEZE, EXPAND_DIMS, PACK) and the folding of shape arithmetic on constants (SHAPE of a static
activation, STRIDED_SLICE / PACK / GATHER / SQUEEZE / EXPAND_DIMS of constants: a Keras Flatten's
SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE). Same contract as toolchain/frontend/tflite.py.

Every op here copies int8 elements (TFLM strided_slice.cc, slice.cc, split.cc, unpack.cc,
gather.cc, squeeze.cc, expand_dims.cc, pack.cc): the output must carry the input's qparams, so a
file whose output quantization differs is refused (a byte copy would silently change the meaning).
A folded value replaces the operator's output tensor by a constant (the RESHAPE converter takes its
target from the output tensor's static shape, so a folded shape input needs nothing more).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from toolchain.frontend.tflite import Builder, converter
from toolchain.ir import DType, Tensor
from toolchain.ops.concat import ConcatAttrs
from toolchain.ops.gather import GatherAttrs
from toolchain.ops.registry import OpKind
from toolchain.ops.slice import SliceAttrs, slice_count

_LOWEST, _MAX = -(2**31), 2**31 - 1
_INT_TYPES = ("INT32", "INT64")


def _multi_output(fn):
    fn.multi_output = True  # tflite.Builder.convert: the converter handles every output itself
    return fn


def _ints(b: Builder, idx: int, role: str, max_rank: int | None = 1) -> np.ndarray:
    """A constant int32/int64 tensor (TFLite allows both for begin/size/axis/indices) of rank at most
    `max_rank` (begin, end, strides, size and axis are scalars or 1-D in the TFLite schema)."""
    t = b.m.tensors[idx] if idx >= 0 else None
    if idx >= 0 and b.m.type_names[idx] == "INT64":
        raise b.unsupported(f"{role}: int64 tensors are not read by this frontend")
    t = b.tensor(idx, role)
    if not t.is_const or t.dtype != DType.INT32:
        raise b.unsupported(f"{role} {t.name!r}: needs a constant int32 tensor")
    if max_rank is not None and len(t.shape) > max_rank:
        raise b.unsupported(f"{role} {t.name!r} of shape {list(t.shape)} (must be 1-D)")
    return np.asarray(t.data, np.int64)


def _fold(b: Builder, idx: int, data: np.ndarray) -> None:
    """Make output tensor `idx` the constant `data` (shape arithmetic evaluated at compile time)."""
    t = b.tensor(idx, "output")
    data = np.asarray(data).astype(t.dtype.np)
    if tuple(data.shape) != t.shape:
        raise b.unsupported(f"folded value of shape {list(data.shape)} for output {list(t.shape)}")
    new = Tensor(t.name, t.shape, t.dtype, t.quant, data)
    tensors = list(b.m.tensors)
    tensors[idx] = new
    b.m = replace(b.m, tensors=tuple(tensors))
    b.tensors[t.name] = new


def _is_const(b: Builder, idx: int) -> bool:
    t = b.m.tensors[idx] if idx >= 0 else None
    return t is not None and t.is_const


def _out(b: Builder, k: int, x: Tensor) -> Tensor:
    """Output k of the operator: an int8 activation with the input's qparams (a copy of elements)."""
    y = b.act(b.op.outputs[k], "output")
    if y.quant != x.quant:
        raise b.unsupported(f"{b.op.name} from scale {x.quant.s}/zp {x.quant.zp} to "
                            f"{y.quant.s}/zp {y.quant.zp} (a copy keeps the input's quantization)")
    return y


def _slice(b: Builder, x: Tensor, begin, step, size, out: Tensor) -> Tensor:
    if any(n < 1 for n in size):
        raise b.unsupported(f"empty slice (size {list(size)})")
    attrs = SliceAttrs(tuple(int(v) for v in begin), tuple(int(v) for v in step), tuple(int(v) for v in size))
    if tuple(attrs.size) == x.shape and all(v == 0 for v in attrs.begin) and all(v == 1 for v in attrs.step):
        return b.reshape(x, out.shape, out)  # the whole tensor: a view
    if tuple(attrs.size) == out.shape:
        return b.emit(OpKind.SLICE, [x], attrs, out)
    sliced = b.fresh(f"{out.name}_slice", x, attrs.size)
    b.emit(OpKind.SLICE, [x], attrs, sliced)
    return b.reshape(sliced, out.shape, out)


def strided_slice_bounds(shape, begin, end, strides, begin_mask=0, end_mask=0, shrink_axis_mask=0,
                         offset=False) -> tuple[list[int], list[int], list[int]]:
    """(start, step, count) per axis as TFLM resolves them (strided_slice_logic.h StartForAxis /
    StopForAxis: masks, negative indices, clamping; a shrunk axis takes one element at start)."""
    starts, counts = [], []
    for k, d in enumerate(shape):
        s, e, st = int(begin[k]), int(end[k]), int(strides[k])
        if offset:
            e += s
        if begin_mask >> k & 1:
            s = _LOWEST if st > 0 else _MAX
        if s < 0:
            s += d
        s = min(max(s, 0), d) if st > 0 else min(max(s, -1), d - 1)
        if shrink_axis_mask >> k & 1:
            e = s + 1
        else:
            if end_mask >> k & 1:
                e = _MAX if st > 0 else _LOWEST
            if e < 0:
                e += d
            e = min(max(e, 0), d) if st > 0 else min(max(e, -1), d - 1)
        starts.append(s)
        counts.append(slice_count(s, e, st))
    return starts, [int(v) for v in strides], counts


@converter("STRIDED_SLICE")
def strided_slice(b: Builder, input: int, begin: int, end: int, strides: int = -1, *, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  offset: bool = False) -> None:
    if ellipsis_mask or new_axis_mask:
        raise b.unsupported(f"STRIDED_SLICE ellipsis_mask={ellipsis_mask} / new_axis_mask={new_axis_mask}")
    t = b.tensor(input, "input")
    bg, en = _ints(b, begin, "begin"), _ints(b, end, "end")
    st = _ints(b, strides, "strides") if strides >= 0 else np.ones_like(bg)
    if not len(bg) == len(en) == len(st) == len(t.shape):
        raise b.unsupported(f"begin/end/strides of length {len(bg)}/{len(en)}/{len(st)} for rank {len(t.shape)}")
    if np.any(st == 0):
        raise b.unsupported("stride 0")
    starts, steps, counts = strided_slice_bounds(t.shape, bg, en, st, begin_mask, end_mask, shrink_axis_mask, offset)
    if t.is_const:  # shape arithmetic (Keras Flatten): evaluate now
        if min(counts, default=1) < 1:
            raise b.unsupported(f"empty slice of a constant (counts {counts})")
        idx = np.ix_(*[s + p * np.arange(n) for s, p, n in zip(starts, steps, counts, strict=True)])
        _fold(b, b.op.outputs[0], np.asarray(t.data)[idx].reshape(b.tensor(b.op.outputs[0], "output").shape))
        return
    x = b.act(input)
    _slice(b, x, starts, steps, counts, _out(b, 0, x))


@converter("SLICE")
def slice_(b: Builder, input: int, begin: int, size: int) -> None:
    x = b.act(input)
    bg, sz = _ints(b, begin, "begin"), _ints(b, size, "size")
    if not len(bg) == len(sz) == len(x.shape):
        raise b.unsupported(f"begin/size of length {len(bg)}/{len(sz)} for rank {len(x.shape)}")
    sz = [d - s if n == -1 else n for d, s, n in zip(x.shape, bg, sz, strict=True)]  # TFLM: -1 = to the end
    if any(s < 0 or n < 0 or s + n > d for d, s, n in zip(x.shape, bg, sz, strict=True)):
        raise b.unsupported(f"slice begin {bg.tolist()} size {sz} outside {list(x.shape)}")
    _slice(b, x, bg, [1] * len(bg), sz, _out(b, 0, x))


def _split(b: Builder, x: Tensor, axis: int, sizes: list[int]) -> None:
    ax = axis % len(x.shape) if -len(x.shape) <= axis < len(x.shape) else None
    if ax is None:
        raise b.unsupported(f"split axis {axis} for rank {len(x.shape)}")
    if len(sizes) != len(b.op.outputs) or sum(sizes) != x.shape[ax] or min(sizes) < 1:
        raise b.unsupported(f"split of {x.shape[ax]} into {sizes} over {len(b.op.outputs)} outputs")
    start = 0
    for k, n in enumerate(sizes):
        begin = [start if i == ax else 0 for i in range(len(x.shape))]
        size = [n if i == ax else d for i, d in enumerate(x.shape)]
        _slice(b, x, begin, [1] * len(x.shape), size, _out(b, k, x))
        start += n


@converter("SPLIT")
@_multi_output
def split(b: Builder, axis: int, input: int, *, num_splits: int = 0) -> None:
    x = b.act(input)
    (ax,) = _ints(b, axis, "axis").reshape(-1)[:1] if _ints(b, axis, "axis").size == 1 else (None,)
    if ax is None or num_splits < 1 or x.shape[int(ax) % len(x.shape)] % num_splits:
        raise b.unsupported(f"SPLIT of {list(x.shape)} into {num_splits} along {ax}")
    d = x.shape[int(ax) % len(x.shape)]
    _split(b, x, int(ax), [d // num_splits] * num_splits)


@converter("SPLIT_V")
@_multi_output
def split_v(b: Builder, input: int, size_splits: int, axis: int, *, num_splits: int = 0) -> None:
    x = b.act(input)
    ax_arr, sizes = _ints(b, axis, "axis").reshape(-1), [int(v) for v in _ints(b, size_splits, "size_splits")]
    if ax_arr.size != 1 or len(sizes) != num_splits or sizes.count(-1) > 1:
        raise b.unsupported(f"SPLIT_V size_splits {sizes} num_splits {num_splits} axis {ax_arr.tolist()}")
    ax = int(ax_arr[0])
    if -1 in sizes:  # TFLM: one -1 takes what the others leave
        d = x.shape[ax % len(x.shape)] if -len(x.shape) <= ax < len(x.shape) else 0
        sizes[sizes.index(-1)] = d - (sum(sizes) + 1)
    _split(b, x, ax, sizes)


@converter("UNPACK")
@_multi_output
def unpack(b: Builder, input: int, *, num: int = 0, axis: int = 0) -> None:
    x = b.act(input)
    r = len(x.shape)
    if not -r <= axis < r or x.shape[axis % r] != num or len(b.op.outputs) != num:
        raise b.unsupported(f"UNPACK of {list(x.shape)} into {num} along {axis}")
    ax = axis % r
    for k in range(num):
        begin = [k if i == ax else 0 for i in range(r)]
        size = [1 if i == ax else d for i, d in enumerate(x.shape)]
        _slice(b, x, begin, [1] * r, size, _out(b, k, x))  # the output shape drops the axis: a view


@converter("GATHER")
def gather(b: Builder, params: int, indices: int, *, axis: int = 0, batch_dims: int = 0) -> None:
    if batch_dims:
        raise b.unsupported(f"GATHER batch_dims={batch_dims}")
    t = b.tensor(params, "params")
    r = len(t.shape)
    if not -r <= axis < r:
        raise b.unsupported(f"GATHER axis {axis} for rank {r}")
    ax = axis % r
    if not _is_const(b, indices):
        raise b.unsupported("GATHER with non-constant indices")
    idx = _ints(b, indices, "indices", max_rank=None)
    if np.any(idx < 0) or np.any(idx >= t.shape[ax]):  # TFLM gather.cc rejects them too
        raise b.unsupported(f"GATHER indices {idx.reshape(-1).tolist()} outside [0, {t.shape[ax]})")
    if t.is_const:
        _fold(b, b.op.outputs[0], np.take(np.asarray(t.data), idx, axis=ax))
        return
    x = b.act(params)
    attrs = GatherAttrs(ax, tuple(int(i) for i in idx.reshape(-1)), tuple(idx.shape))
    b.emit(OpKind.GATHER, [x], attrs, _out(b, 0, x))


def _view(b: Builder, input: int, new_shape: tuple[int, ...]) -> None:
    t = b.tensor(input, "input")
    y = b.tensor(b.op.outputs[0], "output")
    if tuple(new_shape) != y.shape:
        raise b.unsupported(f"{b.op.name}: output {list(y.shape)} in the file, {list(new_shape)} computed")
    if t.is_const:
        _fold(b, b.op.outputs[0], np.asarray(t.data).reshape(new_shape))
        return
    x = b.act(input)
    b.reshape(x, tuple(new_shape), _out(b, 0, x))


@converter("SQUEEZE")
def squeeze(b: Builder, input: int, *, squeeze_dims=None) -> None:
    shape = b.tensor(input, "input").shape
    r = len(shape)
    dims = [int(d) for d in (squeeze_dims if squeeze_dims is not None else [])]
    if any(not -r <= d < r for d in dims):
        raise b.unsupported(f"squeeze_dims {dims} for rank {r}")
    dims = {d % r for d in dims} or {i for i, s in enumerate(shape) if s == 1}
    if any(shape[d] != 1 for d in dims):
        raise b.unsupported(f"squeeze of axes {sorted(dims)} of {list(shape)} (not of size 1)")
    _view(b, input, tuple(s for i, s in enumerate(shape) if i not in dims))


@converter("EXPAND_DIMS")
def expand_dims(b: Builder, input: int, axis: int) -> None:
    shape = b.tensor(input, "input").shape
    a = _ints(b, axis, "axis").reshape(-1)
    r = len(shape)
    if a.size != 1 or not -(r + 1) <= int(a[0]) <= r:
        raise b.unsupported(f"EXPAND_DIMS axis {a.tolist()} for rank {r}")
    ax = int(a[0]) % (r + 1)
    _view(b, input, shape[:ax] + (1,) + shape[ax:])


@converter("PACK")
def pack(b: Builder, *inputs: int, values_count: int = 0, axis: int = 0) -> None:
    ts = [b.tensor(i, f"input{k}") for k, i in enumerate(inputs)]
    if len(ts) != values_count or len({t.shape for t in ts}) != 1:
        raise b.unsupported(f"PACK of {[list(t.shape) for t in ts]} (values_count {values_count})")
    r = len(ts[0].shape)
    if not -(r + 1) <= axis <= r:
        raise b.unsupported(f"PACK axis {axis} for rank {r}")
    ax = axis % (r + 1)
    if all(t.is_const for t in ts):  # shape arithmetic (Keras Flatten): evaluate now
        _fold(b, b.op.outputs[0], np.stack([np.asarray(t.data) for t in ts], axis=ax))
        return
    xs = [b.act(i, f"input{k}") for k, i in enumerate(inputs)]
    y = _out(b, 0, xs[0])
    for x in xs[1:]:
        _out(b, 0, x)
    expanded = ts[0].shape[:ax] + (1,) + ts[0].shape[ax:]
    parts = [b.reshape(x, expanded) for x in xs]
    b.emit(OpKind.CONCAT, parts, ConcatAttrs(ax), y)


@converter("SHAPE")
def shape(b: Builder, input: int, *, out_type: int = 2) -> None:
    t = b.tensor(input, "input")
    y = b.tensor(b.op.outputs[0], "output")
    if y.dtype != DType.INT32:
        raise b.unsupported(f"SHAPE with output type {y.dtype.value} (int32 only)")
    _fold(b, b.op.outputs[0], np.array(t.shape, np.int32))  # static shapes (batch 1): a constant
