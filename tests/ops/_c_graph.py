"""Run an int8 Graph through the portable C kernels on the host, via ctypes, with the same argument
lists the code generator emits (each op's `kernel_args` or its variant's `args`): the generated C of
a model minus the arena, so a test can check C == numpy interpreter per op without a full build.

Every portable kernel template is rendered and compiled once into a shared library (-Wall -Wextra
-Werror -std=c99). Outputs get sentinel guards; a kernel writing outside its output fails the test.
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np

from toolchain.codegen.context import array_ctype
from toolchain.codegen.emit import TEMPLATE_DIR, template_env, write_kernel_headers
from toolchain.ir import Graph
from toolchain.lower import select_kernels
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import CArg, opdef

GUARD = 16
SENTINEL = 0x5A


def build_portable_library(out_dir: Path, cc: str = "gcc") -> ctypes.CDLL:
    """All of c_templates/kernels/portable/*.c.j2 in one host shared library."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kernels = TEMPLATE_DIR / "kernels"
    write_kernel_headers(out_dir)
    srcs = []
    for tpl in sorted((kernels / "portable").glob("*.c.j2")):
        src = out_dir / tpl.name.removesuffix(".j2")
        src.write_text(template_env().get_template(f"kernels/portable/{tpl.name}").render())
        srcs.append(str(src))
    lib = out_dir / "libecc_ops.so"
    cmd = [cc, "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-std=c99", "-I", str(out_dir), *srcs,
           "-o", str(lib), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{res.stderr}")
    return ctypes.CDLL(str(lib))


class _Buf:
    """A tensor's bytes with sentinel guards on both sides."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, data: np.ndarray | None = None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize
        self.raw = np.full(self.nbytes + 2 * GUARD, SENTINEL, np.uint8)
        if data is not None:
            self.raw[GUARD:GUARD + self.nbytes] = np.frombuffer(np.ascontiguousarray(data, self.dtype).tobytes(), np.uint8)

    @property
    def ptr(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.raw.ctypes.data + GUARD)

    def value(self) -> np.ndarray:
        guards = np.concatenate([self.raw[:GUARD], self.raw[GUARD + self.nbytes:]])
        assert np.all(guards == SENTINEL), "a kernel wrote outside its output buffer"
        return self.raw[GUARD:GUARD + self.nbytes].view(self.dtype).reshape(self.shape).copy()


def run_graph_c(lib: ctypes.CDLL, graph: Graph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run every node of an int8 graph with its portable kernel (the `_onnx` twins under the graph's
    `rounding: onnx`, argument values computed in that mode as toolchain.pipeline does); returns the
    graph outputs."""
    with rounding_mode(graph_rounding(graph)):
        return _run(lib, graph, inputs)


def _run(lib: ctypes.CDLL, graph: Graph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    variants = select_kernels(graph, ["portable"])
    env: dict[str, _Buf] = {n: _Buf(graph.t(n).shape, graph.t(n).dtype.np, inputs[n]) for n in graph.inputs}
    keep: list = []  # ctypes arrays that must outlive the call

    def ref(arg: CArg):
        if arg.kind == "act":
            return env[arg.value].ptr
        data = np.ascontiguousarray(graph.t(arg.value).data)
        keep.append(data)
        return ctypes.c_void_p(data.ctypes.data)

    for node in graph.nodes:
        op = opdef(node)
        if op.is_view:
            src = env[node.inputs[0]]
            env[node.outputs[0]] = _Buf(graph.t(node.outputs[0]).shape, src.dtype, src.value())
            continue
        for o in node.outputs:
            env[o] = _Buf(graph.t(o).shape, graph.t(o).dtype.np)
        v = variants[node.name]
        scratch = np.zeros(max(v.scratch_bytes(node, graph), 1), np.int8)
        args: list = [ctypes.c_void_p(scratch.ctypes.data)]
        for arg in (v.args or op.kernel_args)(node, graph):
            if arg.kind == "int":
                args.append(ctypes.c_int32(int(arg.value)))
            elif arg.kind == "real":
                args.append(ctypes.c_float(float(arg.value)))
            elif arg.kind in ("act", "const"):
                args.append(ref(arg))
            elif arg.kind == "ptrs":
                arr = (ctypes.c_void_p * len(arg.value))(*[ref(a).value for a in arg.value])
                keep.append(arr)
                args.append(arr)
            elif arg.kind == "array":
                a = np.ascontiguousarray(arg.value, array_ctype(np.asarray(arg.value))[1])
                keep.append(a)
                args.append(ctypes.c_void_p(a.ctypes.data))
            else:
                args.append(None)
        fn = getattr(lib, v.function)
        fn.restype = ctypes.c_int
        rc = fn(*args)
        assert rc == 0, f"{v.function} returned {rc} for node {node.name}"
    return {o: env[o].value() for o in graph.outputs}
