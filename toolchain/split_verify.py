"""Split verification: many verification samples run on the board in chunks (`verify_chunk: N` samples
each, `--verify-chunk N`), several at once, with the same built firmware; the board's outputs are put
back together in sample order, so the report (agreement, SQNR, per-op error, bit-exactness) is computed
from exactly the arrays one run over all samples gives, and equals its report. The cost, the stack
high-water mark and the data accesses come from the chunk holding sample 0 (the harness profiles
the first sample of every run; the later chunks' profiles are not used).

Chunk 0 runs in fw/ itself (its run.log and command read as a single run's); chunk k > 0 in
fw/.chunk-k/, removed afterwards. fw/inputs.bin and fw/outputs.bin end up holding every sample, as
after one run. Not here: the references or the report (toolchain.runner).
"""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np


def chunk_bounds(samples: int, chunk: int | None) -> list[tuple[int, int]]:
    """[start, end) sample ranges of `chunk` samples each (the last may be shorter); one range
    when chunk is None or covers every sample."""
    if not chunk or chunk >= samples:
        return [(0, samples)]
    return [(a, min(a + chunk, samples)) for a in range(0, samples, chunk)]


def run_chunks(build: Any, q: dict[str, np.ndarray], bounds: Sequence[tuple[int, int]], jobs: int,
               run: Callable[..., Any], timeout_of: Callable[[int], float], **run_kw: Any) -> tuple[Any, float]:
    """Run build's firmware once per sample range of `bounds`, at most `jobs` at once (each run is a
    QEMU process: the threads only wait), and leave fw/outputs.bin holding every chunk's outputs in
    sample order. `run` is targets.qemu.run_firmware (its keywords `run_kw`); timeout_of(samples) the
    timeout of a chunk. Returns (the RunLog to report: chunk 0's, or the first chunk's that did not
    finish cleanly, with wall_s the wall time of all chunks; and that chunk's timeout in seconds)."""
    from toolchain.pipeline import write_inputs

    fw, g = build.fw_dir, build.graph_s8
    dirs = [fw if k == 0 else fw / f".chunk-{k}" for k in range(len(bounds))]

    def one(k: int) -> Any:
        a, b = bounds[k]
        dirs[k].mkdir(exist_ok=True)
        write_inputs(dirs[k] / "inputs.bin", {n: v[a:b] for n, v in q.items()}, g)
        (dirs[k] / "outputs.bin").unlink(missing_ok=True)
        return run(build.target, build.firmware.elf, cwd=dirs[k], timeout_s=timeout_of(b - a), **run_kw)

    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(bounds)))) as pool:
            logs = list(pool.map(one, range(len(bounds))))
        parts = [(d / "outputs.bin").read_bytes() if (d / "outputs.bin").is_file() else b"" for d in dirs]
    finally:
        for d in dirs[1:]:
            shutil.rmtree(d, ignore_errors=True)
    (fw / "outputs.bin").write_bytes(b"".join(parts))
    write_inputs(fw / "inputs.bin", q, g)  # every sample, as one run leaves it
    bad = next((k for k, log in enumerate(logs) if not _clean(log)), 0)
    # the report's run seconds: all chunks' wall time, not chunk 0's alone
    return replace(logs[bad], wall_s=time.perf_counter() - t0), timeout_of(bounds[bad][1] - bounds[bad][0])


def _clean(log: Any) -> bool:
    return not log.timed_out and log.fault is None and log.returncode == 0 and "ECC_DONE" in log.stdout

