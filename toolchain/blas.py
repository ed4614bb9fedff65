"""One BLAS thread while edgecc computes: the reference interpreter's float products (conv_f32, the
int8 accumulators in float64) are many mid-sized matrix products, which a multi-threaded OpenBLAS
splits over the cores and then spins waiting for them. On the shared 2-core bench machine, with
another process on the second core, one VWW calibration took 7-14 s of CPU instead of 1.4 s
(threads spinning for a busy core); alone it still costs more CPU than one thread. The results
do not depend on it: a product's every element is summed by one thread in the same order.

The `edgecc` command sets OPENBLAS_NUM_THREADS=1 before numpy loads (toolchain.cli); this module
covers edgecc used as a library (tests, benches): one_blas_thread() sets the OpenBLAS that numpy
loaded to one thread for a block and restores it after. Linux only (the loaded library is found
in /proc/self/maps); elsewhere, or for another BLAS, it does nothing.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

# (getter, setter) names exported by numpy's OpenBLAS builds: scipy-openblas (numpy >= 2 wheels, 64-bit
# integers), OpenBLAS's own names with and without the 64-bit interface suffix
_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))


@cache
def _openblas() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """The thread-count getter and setter of the OpenBLAS loaded in this process (numpy's), or None."""
    import numpy  # noqa: F401 - loads the BLAS to look for

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = sorted({ln.split()[-1] for ln in f if "openblas" in ln.rsplit("/", 1)[-1].lower()
                            and ln.split()[-1].startswith("/")})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _NAMES:
            get, put = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with numpy's OpenBLAS on one thread (its previous count restored after); a no-op
    when none is found. Costs about 2 microseconds."""
    fns = _openblas()
    before = fns[0]() if fns is not None else 1
    if before != 1:
        fns[1](1)
    try:
        yield
    finally:
        if before != 1:
            fns[1](before)
