"""Where a sweep's units run: in this process one after the other (`--jobs 1`), in local worker
processes (`--jobs N`, default the cores this process may use), or as Ray tasks (`executor: ray`, a
local Ray instance of N CPUs; `ray=ADDRESS`, a running cluster whose nodes have edgecc installed).

Every executor runs the same function (toolchain.units.run_unit) on the same UnitJob, each unit in a
folder of its own, and returns the results in the units' order, so OUT and summary.json are the same
whichever ran them. A Ray task builds in a temp folder of its worker and sends the folder back as a
tar, unpacked into OUT/<unit>/; a task that fails (its worker died, or Ray lost it) is retried once,
then recorded as that unit's internal error. Under Ray a unit's verification chunks
(toolchain.split_verify) are Ray tasks too (`ray_board_run`). Not here: what a unit does (toolchain.units).
"""
from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolchain.errors import InputError, InternalError
from toolchain.units import UnitJob, UnitResult, run_unit

RAY_MISSING = "executor ray needs Ray, an optional extra: pip install edgecc[ray]"


def default_jobs() -> int:
    """The cores this process may run on (its CPU affinity), else os.cpu_count(), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_units(jobs: Sequence[UnitJob], workers: int, executor: str | None,
              advance: Callable[[int], None]) -> list[UnitResult]:
    """Run every unit job with `executor` (None or "local": processes; "ray" or "ray=ADDRESS") on at
    most `workers` at once; results in the order of `jobs`. advance(1) after each finished unit."""
    if executor and executor.startswith("ray"):
        address = executor[4:].strip() if executor.startswith("ray=") else None
        return _ray(jobs, workers, address, advance)
    if workers <= 1 or len(jobs) == 1:
        out = []
        for job in jobs:
            out.append(run_unit(job))
            advance(1)
        return out
    return _processes(jobs, workers, advance)


def _worker_init() -> None:
    """A worker process: interrupts unwind like the CLI's (QEMU killed), no library warnings, no bars."""
    import warnings

    from toolchain import signals

    signals.install()
    from toolchain.cli import debugging

    if not debugging():
        warnings.simplefilter("ignore")


def _died(job: UnitJob, why: str) -> UnitResult:
    from profiler.sweep import board_entry

    entry = {"unit": job.unit.name, **board_entry(job.unit.board, InternalError.exit_code, None, why),
             "params": {k: str(v) for k, v in job.unit.patch.items()}}
    return UnitResult(job.unit.name, entry, None, InternalError.exit_code)


def _processes(jobs: Sequence[UnitJob], workers: int, advance: Callable[[int], None]) -> list[UnitResult]:
    import multiprocessing

    # spawn, not fork: the parent has threads (progress display, pools) whose locks a fork would copy held
    ctx = multiprocessing.get_context("spawn")
    results: dict[int, UnitResult] = {}
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_worker_init) as pool:
        futures = {pool.submit(run_unit, job): i for i, job in enumerate(jobs)}
        try:
            for f in as_completed(futures):
                i = futures[f]
                try:
                    results[i] = f.result()
                except BrokenProcessPool:
                    results[i] = _died(jobs[i], "the worker process running this unit died (killed, or out of memory)")
                advance(1)
        except BaseException:  # an interrupt (or SIGTERM) of the sweep: stop the workers now, not after their units
            pool.shutdown(wait=False, cancel_futures=True)
            procs = getattr(pool, "_processes", None) or {}  # concurrent.futures keeps them by pid
            for proc in list(procs.values()):
                proc.terminate()  # SIGTERM: the worker unwinds like the CLI (QEMU killed, its folder removed)
            raise
    return [results[i] for i in range(len(jobs))]


# ---- Ray ---------------------------------------------------------------------------------------------

def _ray_task(job: UnitJob) -> UnitResult:
    """On a Ray worker: run the unit in a temp folder there and return its result with the folder as tar bytes."""
    _worker_init()
    if job.cwd and Path(job.cwd).is_dir():  # relative paths as the driver gave them (one task per worker at a time)
        os.chdir(job.cwd)
    tmp = Path(tempfile.mkdtemp(prefix="edgecc-ray-"))
    try:
        result = run_unit(replace(job, dest=tmp / job.unit.name, chunks_on_ray=True))
        buf = io.BytesIO()
        if (tmp / job.unit.name).is_dir():
            with tarfile.open(fileobj=buf, mode="w") as tar:
                tar.add(tmp / job.unit.name, arcname=".")
        result.files = buf.getvalue()
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _ray_board_task(target: Any, elf: bytes, inputs: bytes, timeout_s: float, kw: dict[str, Any]) -> tuple[Any, bytes]:
    """On a Ray worker: one board run of a verification chunk in a temp folder (the ELF and inputs.bin
    sent along); returns its RunLog and outputs.bin."""
    from targets.qemu import run_firmware

    _worker_init()
    tmp = Path(tempfile.mkdtemp(prefix="edgecc-ray-chunk-"))
    try:
        (tmp / "firmware.elf").write_bytes(elf)
        (tmp / "inputs.bin").write_bytes(inputs)
        log = run_firmware(target, tmp / "firmware.elf", cwd=tmp, timeout_s=timeout_s, **kw)
        out = tmp / "outputs.bin"
        return replace(log, command=tuple(c.replace(str(tmp.resolve()), "{cwd}") for c in log.command)), \
            (out.read_bytes() if out.is_file() else b"")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ray_board_run(target: Any, elf: Path, *, cwd: Path, timeout_s: float, **kw: Any) -> Any:
    """targets.qemu.run_firmware's stand-in for split verification under the Ray executor: the chunk
    runs as a Ray task (retried once), its outputs.bin written into `cwd` as a local run leaves it."""
    import ray

    task = ray.remote(max_retries=1, num_cpus=1)(_ray_board_task)
    log, outputs = ray.get(task.remote(target, Path(elf).read_bytes(), (Path(cwd) / "inputs.bin").read_bytes(),
                                       timeout_s, kw))
    (Path(cwd) / "outputs.bin").write_bytes(outputs)
    return replace(log, command=tuple(c.replace("{cwd}", str(Path(cwd).resolve())) for c in log.command))


def _unpack(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(dest, filter="data")  # the data filter: no absolute paths, links or devices


def _ray(jobs: Sequence[UnitJob], workers: int, address: str | None,
         advance: Callable[[int], None]) -> list[UnitResult]:
    try:
        import ray
    except ImportError:
        raise InputError(RAY_MISSING) from None
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:  # a local instance; its workers must import this edgecc (a worktree, not only the installed one)
            root = str(Path(__file__).resolve().parents[1])
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     configure_logging=False, logging_level="ERROR")
    try:
        task = ray.remote(max_retries=1, retry_exceptions=True, num_cpus=1)(_ray_task)
        refs = [task.remote(job) for job in jobs]
        index = {r: i for i, r in enumerate(refs)}
        results: dict[int, UnitResult] = {}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            i = index[done[0]]
            try:
                r = ray.get(done[0])
            except Exception as e:  # noqa: BLE001 - Ray wraps the task's failure in its own types
                first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
                r = _died(jobs[i], f"the Ray task failed twice (retried once): {type(e).__name__}: {first}")
            if r.files is not None:
                _unpack(r.files, jobs[i].dest)
                r.files = None
            results[i] = r
            advance(1)
        return [results[i] for i in range(len(jobs))]
    finally:
        if started:
            ray.shutdown()
