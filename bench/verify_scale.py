"""Benchmark (issue 17): verification at data-set scale. MLPerf Tiny ResNet-8 (the int8 .tflite) verified on
1,000 CIFAR-10-style images on mps2-an386, split into chunks (`--verify-chunk`), with three executors:
local --jobs 1 (the chunks one after the other), local --jobs 2 (two at once) and Ray (a local instance,
`--executor ray --jobs 2`: the job runs as a Ray task). Records samples per second (verification samples /
wall seconds of the whole `edgecc run`, and / the board-run seconds of the report) and checks that the
merged reports are equal (top-1 agreement, SQNR, per-op error, bit-exactness; everything but timings)
to one unsplit run's.

The 1,000 images: the 200 of ../shared/data/cifar10_calib_200.npz and four deterministic variants of each
(horizontal flip, shifted 2 px right, 2 px down, flip + shift), written to a temp folder, never to the
repository.

    .venv/bin/python bench/verify_scale.py                 # all four runs (several minutes on 2 cores)
    .venv/bin/python bench/verify_scale.py --samples 200 --chunk 50 --no-serial   # a quick look
    .venv/bin/python bench/verify_scale.py --render        # rewrite the .md from the .json

Writes bench/results/verify_scale.json and .md. Exit 1 if a run failed or a merged report differs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import REPO, RESULTS, edgecc_run, fmt, header  # noqa: E402

SHARED = REPO.parent / "shared"
MODEL = SHARED / "models" / "mlperf_tiny" / "ic_resnet8_int8.tflite"
DATA = SHARED / "data" / "cifar10_calib_200.npz"
BOARD = "mps2-an386"
RUNS = {"serial (one run)": [], "local --jobs 1": ["--jobs", "1"], "local --jobs 2": ["--jobs", "2"],
        "ray (local) --jobs 2": ["--executor", "ray", "--jobs", "2"]}


def images(n: int) -> np.ndarray:
    """n uint8 [32, 32, 3] images: the 200 of the npz, then flipped / shifted variants of them."""
    with np.load(DATA) as z:
        base = z["images"]
    variants = [base, base[:, :, ::-1], np.roll(base, 2, axis=2), np.roll(base, 2, axis=1),
                np.roll(base[:, :, ::-1], 2, axis=1)]
    out = np.concatenate(variants)
    reps = -(-n // len(out))
    return np.ascontiguousarray(np.concatenate([out] * reps)[:n])


def _report(out: Path) -> dict[str, Any] | None:
    """The run's report.json: OUT/report.json, or a unit folder's (the Ray executor writes OUT/<board>/)."""
    for p in (out / "report.json", out / BOARD / "report.json"):
        if p.is_file():
            return json.loads(p.read_text())
    return None


def measure(samples: int, chunk: int, serial: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="edgecc-verify-scale-"))
    data = work / f"cifar_{samples}.npz"
    np.savez(data, images=images(samples))
    cfg = work / "resnet8.yaml"
    cfg.write_text(f"model: {MODEL}\nboard: {BOARD}\nverify: {data}\n", encoding="utf-8")
    loadavg = os.getloadavg()
    rows, reports = [], {}
    for name, flags in RUNS.items():
        if name.startswith("serial") and not serial:
            continue
        extra = flags + (["--verify-chunk", str(chunk)] if flags else [])
        job = edgecc_run(cfg, BOARD, work / f"out-{len(rows)}", *extra)
        job["report"] = job["report"] or _report(work / f"out-{len(rows)}")
        r = job["report"]
        run_s = r["timings_s"]["run"] if r else None
        v = (r or {}).get("verification", {})
        rows.append({"executor": name, "flags": " ".join(extra), "exit_code": job["exit_code"],
                     "job_wall_s": job["job_wall_s"], "run_s": run_s, "samples": v.get("samples"),
                     "samples_per_s_job": round(samples / job["job_wall_s"], 2),
                     "samples_per_s_run": round(samples / run_s, 2) if run_s else None,
                     "top1_agreement": v.get("top1_agreement"), "sqnr_db": v.get("sqnr_db"),
                     "bit_exact": v.get("bit_exact"), "tflm_bit_exact": v.get("tflm_bit_exact"),
                     "stderr": job["stderr"][-400:] if job["exit_code"] else ""})
        if r:
            reports[name] = {k: x for k, x in r.items() if k != "timings_s"}
    first = next(iter(reports.values()), None)
    for row in rows:
        row["report_equals_first"] = reports.get(row["executor"]) == first if first is not None else None
    return {"header": header(2, loadavg), "model": str(MODEL.relative_to(SHARED.parent)), "board": BOARD,
            "samples": samples, "chunk": chunk, "rows": rows}


def render(doc: dict[str, Any]) -> str:
    h = doc["header"]
    lines = [f"# Verification at scale: ResNet-8 int8, {doc['samples']:,} images on {doc['board']}",
             "", f"Chunks of {doc['chunk']} samples (`--verify-chunk`), measured {h['date_utc']} on "
             f"{h['machine']['nproc']} cores ({h['machine']['cpu_model']}), load {h['loadavg_start']} -> "
             f"{h['loadavg_end']}, commit {h['edgecc']['git_commit']}. `bench/verify_scale.py`.", "",
             "| executor | flags | exit | job wall s | board run s | samples/s (job) | samples/s (run) | top-1 "
             "agreement | SQNR dB | bit-exact | TFLM bit-exact | report = first row's |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append(f"| {r['executor']} | `{r['flags'] or '-'}` | {r['exit_code']} | {fmt(r['job_wall_s'])} | "
                     f"{fmt(r['run_s'])} | {fmt(r['samples_per_s_job'])} | {fmt(r['samples_per_s_run'])} | "
                     f"{fmt(r['top1_agreement'], 4)} | {fmt(r['sqnr_db'])} | {fmt(r['bit_exact'])} | "
                     f"{fmt(r['tflm_bit_exact'])} | {fmt(r['report_equals_first'])} |")
    lines += ["", "Job wall: the whole `edgecc run` (import, build, references, board runs, report); board run: "
              "the report's `timings_s.run` (the QEMU runs, chunks overlapping). Reports compared without "
              "`timings_s`."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--chunk", type=int, default=250)
    p.add_argument("--no-serial", action="store_true", help="skip the unsplit reference run")
    p.add_argument("--render", action="store_true", help="only rewrite the .md from the .json")
    a = p.parse_args(argv)
    js, md = RESULTS / "verify_scale.json", RESULTS / "verify_scale.md"
    if a.render:
        md.write_text(render(json.loads(js.read_text())), encoding="utf-8")
        return 0
    doc = measure(a.samples, a.chunk, not a.no_serial)
    js.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md.write_text(render(doc), encoding="utf-8")
    print(render(doc))
    ok = all(r["exit_code"] == 0 and r["report_equals_first"] for r in doc["rows"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
