"""Shared by the bench/ scripts: the environment header, one `edgecc run` as a subprocess, and
the fields a benchmark row takes from report.json."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
MODELS = {
    "ic_resnet8_float": REPO / "tests" / "models" / "ic_resnet8_float.yaml",
    "vww_mobilenet_float": REPO / "tests" / "models" / "vww_mobilenet_float.yaml",
}
BOARDS = ["host", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "aarch64", "aarch64-v80"]
TOOLS = ["gcc", "arm-none-eabi-gcc", "aarch64-linux-gnu-gcc", "qemu-system-arm", "qemu-aarch64"]


def _first_line(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (p.stdout or p.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def header(parallel_jobs: int, loadavg_start: tuple[float, ...] | None = None, rev: str | None = None,
           root: Path = REPO) -> dict[str, Any]:
    """Where and with what the numbers were measured (loadavg: 1/5/15-minute load of the whole
    machine at the start and at the end, since other work on a shared machine slows QEMU runs)."""
    version = subprocess.run([sys.executable, "-c", "import toolchain; print(toolchain.__version__)"], cwd=root,
                             env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                             check=False).stdout.strip() or None
    commit = _first_line(["git", "-C", str(REPO), "rev-parse", rev or "HEAD"])
    try:
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30, check=False).stdout.split("\n")
    except (OSError, subprocess.TimeoutExpired):
        dirty = []
    dirty = [] if rev else sorted(line[3:] for line in dirty if line.strip())
    return {
        "date_utc": _first_line(["date", "-u"]),
        "machine": {"nproc": os.cpu_count(), "cpu_model": _cpu_model(), "platform": platform.platform()},
        "tools": {t: _first_line([t, "--version"]) for t in TOOLS},
        "edgecc": {"version": version, "git_commit": commit,
                   "measured": f"snapshot of {rev} (git archive)" if rev else "work tree",
                   "worktree_dirty": bool(dirty), "modified_files": dirty},
        "python": sys.version.split()[0],
        "parallel_jobs": parallel_jobs,
        "loadavg_start": [round(x, 2) for x in loadavg_start] if loadavg_start else None,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }


def snapshot(rev: str) -> Path:
    """A read-only export of commit REV (`git archive`, the repository is not touched) into a
    temporary folder laid out like the checkout: SNAP/main beside SNAP/shared (a symlink to the
    real ../shared, which the YAMLs under tests/models point into). Returns SNAP/main.
    Measuring a snapshot keeps a benchmark clean of edits made in the work tree meanwhile."""
    base = Path(tempfile.mkdtemp(prefix="edgecc-bench-snap-"))
    (base / "shared").symlink_to(REPO.parent / "shared")
    root = base / "main"
    root.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def edgecc_run(config: Path, board: str, out: Path, *extra: str, root: Path = REPO,
               timeout_s: float = 1800) -> dict[str, Any]:
    """`edgecc run CONFIG --board BOARD --out OUT --quiet [extra]` as a subprocess, with the edgecc
    sources of ROOT (the checkout, or a snapshot()): exit status, wall seconds of the whole job,
    stderr tail and the parsed report (None if not written)."""
    cmd = [sys.executable, "-m", "toolchain.cli", "run", str(config), "--board", board, "--out", str(out),
           "--quiet", *extra]
    env = {**os.environ, "PYTHONPATH": str(root)}  # before the editable install's finder
    env.pop("EDGECC_DEBUG_FAULT_AT_OP", None)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    wall = time.perf_counter() - t0
    rj = out / "report.json"
    report = json.loads(rj.read_text()) if rj.is_file() else None
    return {"exit_code": p.returncode, "job_wall_s": round(wall, 2), "stderr": p.stderr[-2000:],
            "stdout": p.stdout[-500:], "report": report}


def row(board: str, model: str, job: dict[str, Any]) -> dict[str, Any]:
    """The benchmark fields of one (board, model) job."""
    r = job["report"]
    base = {"model": model, "board": board, "exit_code": job["exit_code"], "job_wall_s": job["job_wall_s"]}
    if r is None:
        return {**base, "status": "no report", "stderr": job["stderr"]}
    v, t = r["verification"], r["timings_s"]
    macs = sum(op["macs"] for op in r["ops"])
    instr = r["total_instructions"]
    return {
        **base,
        "status": r["status"],
        "build_python_s": t.get("build_python"),
        "build_gcc_s": t.get("build_gcc"),
        "run_s": t.get("run"),
        "samples": v.get("samples"),
        "arena_bytes": r["arena_bytes"],
        "flash_bytes": r["flash_bytes"],
        "harness_bytes": r["harness_bytes"],
        "cost_unit": r["cost_unit"],
        "total_instructions": instr,
        "host_us_per_inference": r["total_cost"] if r["cost_unit"] == "us" else None,
        "macs": macs,
        "macs_per_instruction": (macs / instr) if instr else None,
        "top1_agreement": v.get("top1_agreement"),
        "sqnr_db": v.get("sqnr_db"),
        "sqnr_db_per_output": v.get("sqnr_db_per_output"),
        "bit_exact": v.get("bit_exact"),
        "mismatches": v.get("mismatches"),
        "fault": r.get("fault"),
        "kernels": sorted({op["kernel"] for op in r["ops"]}),
    }


def fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


# The MLPerf Tiny int8 .tflite models (their own quantization), as tests/models configures them.
INT8_MODELS = {m: REPO / "tests" / "models" / f"{m}.yaml"
               for m in ("ic_resnet8_int8", "vww_mobilenet_int8", "kws_dscnn_int8", "ad_autoencoder_int8")}


def verify_subset(config: Path, n: int, where: Path) -> Path:
    """The first n samples of the `verify:` DATA of pipeline YAML `config`, written under `where`
    (.npy / .npz sliced; a folder of images: symlinks to its first n images in the sorted order
    toolchain.data reads them). Sample 0 is what the benchmarks measure; the others are verified."""
    import numpy as np
    import yaml

    from_yaml = yaml.safe_load(config.read_text(encoding="utf-8"))["verify"]
    src = (config.parent / from_yaml).resolve()
    where.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        from toolchain.data import IMAGE_SUFFIXES

        folder = where / f"{config.stem}_verify{n}"
        folder.mkdir(exist_ok=True)
        for f in sorted(p for p in src.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)[:n]:
            if not (folder / f.name).exists():
                (folder / f.name).symlink_to(f)
        return folder
    if src.suffix == ".npz":
        with np.load(src) as z:
            arrays = {k: z[k][:n] for k in z.files}
        path = where / f"{config.stem}_verify{n}.npz"
        np.savez(path, **arrays)
        return path
    path = where / f"{config.stem}_verify{n}.npy"
    np.save(path, np.load(src)[:n])
    return path


def update_readme(marker: str, text: str, readme: Path = REPO / "README.md") -> bool:
    """Replace what README.md holds between `<!-- bench:MARKER -->` and `<!-- /bench:MARKER -->`
    with `text` (the rest of the file untouched). False, README unchanged, if the markers are missing."""
    start, end = f"<!-- bench:{marker} -->", f"<!-- /bench:{marker} -->"
    doc = readme.read_text(encoding="utf-8")
    i, j = doc.find(start), doc.find(end)
    if i < 0 or j < i:
        return False
    readme.write_text(doc[:i + len(start)] + "\n" + text.strip("\n") + "\n" + doc[j:], encoding="utf-8")
    return True


def file_bench_args(doc: str, boards: list[str], what: str, argv: list[str] | None = None):
    """The command line shared by the per-file benchmarks (exported_corpus, qdq_models): --boards,
    --files (comma-separated `what` names), --jobs, --results, --rev, --render."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--boards", default=",".join(boards))
    ap.add_argument("--files", help=f"comma-separated {what} names (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--rev", help="measure commit REV from a read-only snapshot (git archive), not the work tree")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the committed .json only")
    return ap.parse_args(argv)


def write_results(results: Path, stem: str, doc: dict[str, Any] | None, render) -> None:
    """RESULTS/STEM.json (from `doc`; None: the committed one is re-read) and RESULTS/STEM.md = render(doc)."""
    out_json = results / f"{stem}.json"
    if doc is None:
        doc = json.loads(out_json.read_text())
    else:
        results.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (results / f"{stem}.md").write_text(render(doc), encoding="utf-8")
