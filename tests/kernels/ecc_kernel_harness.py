"""Render the portable C kernel templates, build them into a host shared library and call them
through ctypes with numpy arrays.

The Python call signatures mirror the numpy references in ``toolchain/ops`` (see the kernel
contract), so a test can run the same arguments through both.
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
from jinja2 import Environment, FileSystemLoader, StrictUndefined

REPO = Path(__file__).resolve().parents[2]
KERNELS_DIR = REPO / "c_templates" / "kernels"
PORTABLE_DIR = KERNELS_DIR / "portable"
# every portable kernel template (a new op's template is picked up without editing this list)
OPS = tuple(sorted(p.name.removesuffix(".c.j2") for p in PORTABLE_DIR.glob("*.c.j2")))
WARN_FLAGS = ["-Wall", "-Wextra", "-Werror", "-std=c99"]
GUARD = 32          # sentinel bytes on each side of every output buffer
SENTINEL = 0x5A

_I8P = ctypes.POINTER(ctypes.c_int8)
_I32P = ctypes.POINTER(ctypes.c_int32)
_I32 = ctypes.c_int32


def environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(KERNELS_DIR)), undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(op: str) -> str:
    """Render ``portable/<op>.c.j2`` (no template variables are needed today)."""
    return environment().get_template(f"portable/{op}.c.j2").render()


def write_sources(out_dir: Path) -> list[Path]:
    """Render every template into ``out_dir`` (next to the headers: ecc_kernels.h generated)."""
    from toolchain.codegen.emit import write_kernel_headers

    write_kernel_headers(out_dir)
    paths = []
    for op in OPS:
        p = out_dir / f"{op}.c"
        p.write_text(render(op))
        paths.append(p)
    return paths


def build_shared(out_dir: Path, cc: str = "gcc") -> Path:
    srcs = write_sources(out_dir)
    lib = out_dir / "libecc_portable.so"
    cmd = [cc, "-O2", "-fPIC", "-shared", *WARN_FLAGS, "-I", str(out_dir), *map(str, srcs), "-o", str(lib)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{res.stderr}")
    return lib


_SHIM = r"""
#include "ecc_fixed_point.h"
#define MAP2(name, expr) \
    void shim_##name(const int32_t *a, const int32_t *b, int32_t *out, int32_t n) \
    { int32_t i; for (i = 0; i < n; ++i) { out[i] = (expr); } }
MAP2(srdhm, ecc_sat_rounding_doubling_high_mul(a[i], b[i]))
MAP2(rdbp, ecc_rounding_divide_by_pot(a[i], b[i]))
MAP2(sat_shl, ecc_saturating_left_shift(a[i], b[i]))
MAP2(exp_q5, ecc_exp_on_negative_values_q5(a[i]) + 0 * b[i])
MAP2(one_over_one_plus_x, ecc_one_over_one_plus_x_for_x_in_0_1(a[i]) + 0 * b[i])
MAP2(clz, ecc_count_leading_zeros((uint32_t)a[i]) + 0 * b[i])
void shim_mbqm(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t n)
{ int32_t i; for (i = 0; i < n; ++i) { out[i] = ecc_multiply_by_quantized_multiplier(x[i], m[i], s[i]); } }
void shim_window(int32_t origin, int32_t dilation, int32_t k, int32_t in_size, int32_t *start_end)
{ ecc_window_bounds(origin, dilation, k, in_size, &start_end[0], &start_end[1]); }
"""


def build_fixed_point_shim(out_dir: Path, cc: str = "gcc") -> ctypes.CDLL:
    """Export the static inline helpers of ecc_fixed_point.h over int32 arrays, for unit tests."""
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "fixed_point_shim.c"
    src.write_text(_SHIM)
    lib = out_dir / "libecc_fp_shim.so"
    cmd = [cc, "-O2", "-fPIC", "-shared", *WARN_FLAGS, "-I", str(PORTABLE_DIR), str(src), "-o", str(lib)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{res.stderr}")
    return ctypes.CDLL(str(lib))


def _i8(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int8)


def _i32(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a).reshape(-1), dtype=np.int32)


def _shift8(a) -> np.ndarray:
    """Per-channel shifts as the kernels read them (int8_t); refuses values int8 cannot hold."""
    s = np.asarray(a, np.int64).reshape(-1)
    if s.size and (s.min() < -128 or s.max() > 127):
        raise ValueError(f"shifts {s.min()}..{s.max()} do not fit the kernels' int8_t out_shift")
    return np.ascontiguousarray(s, dtype=np.int8)


def _p8(a: np.ndarray):
    return a.ctypes.data_as(_I8P)


def _p32(a):
    return None if a is None else a.ctypes.data_as(_I32P)


class _Out:
    """Output buffer with sentinel guards on both sides; ``result()`` checks they are intact."""

    def __init__(self, shape):
        self.shape = tuple(int(s) for s in shape)
        n = int(np.prod(self.shape, dtype=np.int64))
        self.buf = np.full(n + 2 * GUARD, SENTINEL, dtype=np.uint8).view(np.int8)
        self.n = n

    @property
    def ptr(self):
        return self.buf[GUARD:].ctypes.data_as(_I8P)

    def result(self) -> np.ndarray:
        guards = np.concatenate([self.buf[:GUARD], self.buf[GUARD + self.n:]]).view(np.uint8)
        assert np.all(guards == SENTINEL), "kernel wrote outside its output buffer"
        return self.buf[GUARD:GUARD + self.n].reshape(self.shape).copy()


def _check(rc: int, name: str):
    if rc != 0:
        raise RuntimeError(f"ecc_{name} returned {rc}")


class PortableKernels:
    """ctypes front end of the compiled portable kernels."""

    def __init__(self, lib_path: Path):
        self.lib = ctypes.CDLL(str(lib_path))
        for op in OPS:
            getattr(self.lib, f"ecc_{op}").restype = ctypes.c_int

    def conv2d_s8(self, x, w, bias, *, stride, pad, dilation=(1, 1), out_hw, input_offset, output_offset,
                  out_mult, out_shift, act_min, act_max, filter_offset=0):
        x, w = _i8(x), _i8(w)
        n, h, wd, c = x.shape
        oc, kh, kw, wc = w.shape
        b = None if bias is None else _i32(bias)
        mult, shift = _i32(out_mult), _shift8(out_shift)
        out = _Out((n, out_hw[0], out_hw[1], oc))
        rc = self.lib.ecc_conv2d_s8(
            None, _I32(stride[0]), _I32(stride[1]), _I32(pad[0]), _I32(pad[1]), _I32(dilation[0]),
            _I32(dilation[1]), _I32(input_offset), _I32(filter_offset), _I32(output_offset), _I32(act_min),
            _I32(act_max),
            _p32(mult), _p8(shift), _I32(n), _I32(h), _I32(wd), _I32(c), _p8(x),
            _I32(kh), _I32(kw), _I32(wc), _p8(w), _p32(b), _I32(out_hw[0]), _I32(out_hw[1]), _I32(oc), out.ptr)
        _check(rc, "conv2d_s8")
        return out.result()

    def depthwise_conv2d_s8(self, x, w, bias, *, stride, pad, dilation=(1, 1), out_hw, depth_multiplier,
                            input_offset, output_offset, out_mult, out_shift, act_min, act_max, filter_offset=0):
        x, w = _i8(x), _i8(w)
        n, h, wd, c = x.shape
        _, kh, kw, oc = w.shape
        b = None if bias is None else _i32(bias)
        mult, shift = _i32(out_mult), _shift8(out_shift)
        out = _Out((n, out_hw[0], out_hw[1], oc))
        rc = self.lib.ecc_depthwise_conv2d_s8(
            None, _I32(stride[0]), _I32(stride[1]), _I32(pad[0]), _I32(pad[1]), _I32(dilation[0]),
            _I32(dilation[1]), _I32(depth_multiplier), _I32(input_offset), _I32(filter_offset), _I32(output_offset),
            _I32(act_min), _I32(act_max), _p32(mult), _p8(shift), _I32(n), _I32(h), _I32(wd), _I32(c), _p8(x),
            _I32(kh), _I32(kw), _p8(w), _p32(b), _I32(out_hw[0]), _I32(out_hw[1]), _I32(oc), out.ptr)
        _check(rc, "depthwise_conv2d_s8")
        return out.result()

    def fully_connected_s8(self, x, w, bias, *, input_offset, filter_offset, output_offset, out_mult, out_shift,
                           act_min, act_max):
        x, w = _i8(x), _i8(w)
        batches, depth = x.shape
        o = w.shape[0]
        b = None if bias is None else _i32(bias)
        mult, shift = _i32(out_mult), _shift8(out_shift)
        out = _Out((batches, o))
        rc = self.lib.ecc_fully_connected_s8(
            None, _I32(input_offset), _I32(filter_offset), _I32(output_offset), _I32(act_min), _I32(act_max),
            _p32(mult), _p8(shift), _I32(1 if mult.size > 1 else 0), _I32(batches), _I32(depth), _p8(x),
            _p8(w), _p32(b), _I32(o), out.ptr)
        _check(rc, "fully_connected_s8")
        return out.result()

    def avg_pool2d_s8(self, x, *, kernel, stride, pad, out_hw, act_min, act_max, count_include_pad=False,
                      pad_end=None, pad_value=0):
        """pad_end (bottom, right) bounds the cells count_include_pad counts (default: the kernel
        size, i.e. every window cell counts); padding cells add pad_value."""
        x = _i8(x)
        pad_end = tuple(kernel) if pad_end is None else pad_end
        n, h, wd, c = x.shape
        out = _Out((n, out_hw[0], out_hw[1], c))
        rc = self.lib.ecc_avg_pool2d_s8(
            None, _I32(stride[0]), _I32(stride[1]), _I32(pad[0]), _I32(pad[1]), _I32(kernel[0]), _I32(kernel[1]),
            _I32(1 if count_include_pad else 0), _I32(pad_end[0]), _I32(pad_end[1]), _I32(pad_value),
            _I32(act_min), _I32(act_max),
            _I32(n), _I32(h), _I32(wd), _I32(c), _p8(x), _I32(out_hw[0]), _I32(out_hw[1]), out.ptr)
        _check(rc, "avg_pool2d_s8")
        return out.result()

    def max_pool2d_s8(self, x, *, kernel, stride, pad, out_hw, act_min, act_max):
        x = _i8(x)
        n, h, wd, c = x.shape
        out = _Out((n, out_hw[0], out_hw[1], c))
        rc = self.lib.ecc_max_pool2d_s8(
            None, _I32(stride[0]), _I32(stride[1]), _I32(pad[0]), _I32(pad[1]), _I32(kernel[0]), _I32(kernel[1]),
            _I32(act_min), _I32(act_max), _I32(n), _I32(h), _I32(wd), _I32(c), _p8(x),
            _I32(out_hw[0]), _I32(out_hw[1]), out.ptr)
        _check(rc, "max_pool2d_s8")
        return out.result()

    def add_s8(self, x1, x2, p, act_min, act_max, *, alias_output_to_input1=False):
        """``p`` has the AddParams fields (input1_offset, input1_mult, ..., output_shift)."""
        x1, x2 = _i8(x1), _i8(x2)
        assert x1.shape == x2.shape
        args = [_I32(getattr(p, f)) for f in ("input1_offset", "input1_mult", "input1_shift", "input2_offset",
                                             "input2_mult", "input2_shift", "left_shift", "output_offset",
                                             "output_mult", "output_shift")]
        if alias_output_to_input1:
            buf = x1.copy()
            rc = self.lib.ecc_add_s8(None, *args, _I32(act_min), _I32(act_max), _I32(buf.size),
                                     _p8(buf), _p8(x2), _p8(buf))
            _check(rc, "add_s8")
            return buf
        out = _Out(x1.shape)
        rc = self.lib.ecc_add_s8(None, *args, _I32(act_min), _I32(act_max), _I32(x1.size), _p8(x1), _p8(x2),
                                 out.ptr)
        _check(rc, "add_s8")
        return out.result()

    def softmax_s8(self, x, p):
        """``p`` has input_multiplier, input_left_shift, diff_min (SoftmaxParams)."""
        x = _i8(x)
        rows, row_size = x.shape
        out = _Out(x.shape)
        rc = self.lib.ecc_softmax_s8(None, _I32(p.input_multiplier), _I32(p.input_left_shift), _I32(p.diff_min),
                                     _I32(rows), _I32(row_size), _p8(x), out.ptr)
        _check(rc, "softmax_s8")
        return out.result()

    def clamp_s8(self, x, act_min, act_max):
        x = _i8(x)
        out = _Out(x.shape)
        rc = self.lib.ecc_clamp_s8(None, _I32(act_min), _I32(act_max), _I32(x.size), _p8(x), out.ptr)
        _check(rc, "clamp_s8")
        return out.result()

    def transpose_s8(self, x, perm):
        x = _i8(x)
        dims, perm_a = _i32(x.shape), _i32(perm)
        out = _Out(tuple(x.shape[p] for p in perm))
        rc = self.lib.ecc_transpose_s8(None, _I32(x.ndim), _p32(dims), _p32(perm_a), _p8(x), out.ptr)
        _check(rc, "transpose_s8")
        return out.result()

    def mul_s8(self, x1, x2, p, act_min, act_max):
        """Flat element-wise multiply (one loop level of the broadcast kernel); ``p`` has the MulParams
        fields (input1_offset, input2_offset, output_offset, output_mult, output_shift)."""
        x1, x2 = _i8(x1), _i8(x2)
        assert x1.shape == x2.shape
        out = _Out(x1.shape)
        loops = [1, 1, 1, x1.size, 0, 0, 0, 1, 0, 0, 0, 1]
        rc = self.lib.ecc_mul_s8(None, *(_I32(v) for v in (p.input1_offset, p.input2_offset, p.output_offset,
                                                           p.output_mult, p.output_shift, act_min, act_max, *loops)),
                                 _p8(x1), _p8(x2), out.ptr)
        _check(rc, "mul_s8")
        return out.result()

    def pad_s8(self, x, pads, *, pad_value):
        """Constant pad of a rank <= 4 tensor; pads[i] = (before, after)."""
        x = _i8(x)
        lead = 4 - x.ndim
        dims = (1,) * lead + x.shape
        pads = [(0, 0)] * lead + [tuple(p) for p in pads]
        out = _Out(tuple(d + a + b for d, (a, b) in zip(dims, pads)))
        rc = self.lib.ecc_pad_s8(None, *(_I32(d) for d in dims), *(_I32(p[0]) for p in pads),
                                 *(_I32(p[1]) for p in pads), _I32(pad_value), _p8(x), out.ptr)
        _check(rc, "pad_s8")
        return out.result().reshape(tuple(d + a + b for d, (a, b) in zip(x.shape, pads[lead:])))

    def raw(self, op: str):
        """The bare ctypes function ``ecc_<op>`` (for status-code tests)."""
        return getattr(self.lib, f"ecc_{op}")
