"""Benchmark (issue 3 point 5): the two MLPerf Tiny float models (ResNet-8, VWW MobileNetV1-0.25)
through edgecc's own INT8 PTQ on all seven boards, one `edgecc run` per (model, board).

    .venv/bin/python bench/mlperf_float.py                 # everything, 2 jobs in parallel
    .venv/bin/python bench/mlperf_float.py --jobs 1        # serial: quieter wall times
    .venv/bin/python bench/mlperf_float.py --boards host,aarch64 --models ic_resnet8_float

Writes bench/results/mlperf_float.json (header + one row per job) and bench/results/mlperf_float.md.
Exit status 0 when every job passed bit-exact verification, else 1.
"""
from __future__ import annotations

import argparse
import os
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import BOARDS, MODELS, REPO, RESULTS, edgecc_run, fmt, header, row, snapshot  # noqa: E402

NOTE = (
    "Instruction counts are exact retired guest instructions per inference, counted by edgecc's QEMU "
    "TCG plugin (qemu-system-arm for the MPS2/MPS3 boards, qemu-aarch64 user mode for the AArch64 "
    "boards). QEMU has no cycle model: these are instructions, not cycles, and they say nothing about "
    "pipeline stalls, memory wait states or the dual-issue of the real cores; compare them between "
    "code versions on the same board, not as latency. The host row is wall-clock microseconds per "
    "inference of the native build (median of repeats on sample 0), not instructions. MACs/instr is "
    "the sum of the model's MACs divided by the instructions of one inference. Build and run times "
    "are wall seconds as measured on the machine in the header, with {jobs} job(s) running in parallel "
    "on {nproc} cores, so QEMU run times are noisy (parallel jobs compete for the cores); the run time "
    "covers all verification samples in one QEMU/native run, including QEMU start-up and the "
    "instruction-counting plugin. Flash bytes are the model library (text + rodata + weights + data); "
    "harness bytes are everything else in the test firmware (harness, board support, libc, libgcc), which on "
    "the AArch64 boards is a statically linked glibc Linux binary, hence about 0.5 MB there."
)


def markdown(doc: dict) -> str:
    h = doc["header"]
    out = ["# MLPerf Tiny float models through edgecc INT8, all boards", "",
           f"Measured {h['date_utc']} on {h['machine']['cpu_model']} ({h['machine']['nproc']} cores), "
           f"edgecc {h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]}"
           f"{' (' + h['edgecc']['measured'] + ')' if h['edgecc'].get('measured', '').startswith('snap') else ''}"
           f"{' (uncommitted changes in the tree)' if h['edgecc']['worktree_dirty'] else ''}; "
           + ", ".join(f"{v}" for v in h["tools"].values() if v) + ". "
           f"{h['parallel_jobs']} benchmark job(s) in parallel; machine load average (1 min) "
           f"{(h.get('loadavg_start') or ['?'])[0]} at the start, {h['loadavg_end'][0]} at the end.", "",
           f"Command: `{h.get('command') or 'bench/mlperf_float.py'}`; how to re-run: [bench/README.md](../README.md).",
           ""]
    product = [f for f in h["edgecc"].get("modified_files", []) if not f.startswith(("bench/", "tests/"))]
    if product:
        out += ["Uncommitted product files at measurement time: " + ", ".join(f"`{f}`" for f in product) + ".", ""]
    cols = ["board", "status", "bit-exact", "samples", "top-1 agreement (%)", "SQNR (dB)",
            "instructions / inference", "host time / inference (µs)", "MACs / instr",
            "arena (B)", "flash (B)", "harness (B)", "build Python (s)", "build gcc (s)", "run, all samples (s)",
            "kernels"]
    for model in doc["models"]:
        rows = [r for r in doc["rows"] if r["model"] == model]
        if not rows:
            continue
        macs = next((r["macs"] for r in rows if r.get("macs")), None)
        out += [f"## {model}", "", f"{fmt(macs)} MACs per inference.", "",
                "| " + " | ".join(cols) + " |", "|" + "|".join("---" if c in ("board", "status", "kernels") else "---:"
                                                          for c in cols) + "|"]
        for r in rows:
            agree = r.get("top1_agreement")
            out.append("| " + " | ".join([
                r["board"], r["status"], fmt(r.get("bit_exact")), fmt(r.get("samples")),
                fmt(agree * 100 if agree is not None else None, 1), fmt(r.get("sqnr_db"), 2),
                fmt(r.get("total_instructions")), fmt(r.get("host_us_per_inference"), 0),
                fmt(r.get("macs_per_instruction"), 3), fmt(r.get("arena_bytes")), fmt(r.get("flash_bytes")),
                fmt(r.get("harness_bytes")), fmt(r.get("build_python_s"), 2), fmt(r.get("build_gcc_s"), 2),
                fmt(r.get("run_s"), 1), ", ".join(r.get("kernels") or [])]) + " |")
        out.append("")
    out += ["## What the numbers are", "", NOTE.format(jobs=h["parallel_jobs"], nproc=h["machine"]["nproc"]), ""]
    loads = [x[0] for x in (h.get("loadavg_start"), h.get("loadavg_end")) if x]
    if loads and max(loads) > h["machine"]["nproc"]:
        out += [f"The machine was shared with other work during this measurement (1-minute load average up to "
                f"{max(loads):.1f} on {h['machine']['nproc']} cores): wall times (build, run) are inflated several "
                "times over an idle machine and vary from run to run. Instruction counts, sizes, agreement and "
                "SQNR do not depend on load.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS), help="comma-separated boards (default: all seven)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated models (default: both)")
    ap.add_argument("--jobs", type=int, default=2, help="edgecc runs in parallel (default 2)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder for mlperf_float.json/.md")
    ap.add_argument("--keep", type=Path, help="keep every OUT folder under this directory")
    ap.add_argument("--rev", help="measure commit REV from a read-only snapshot (git archive) instead of the "
                                  "work tree, so concurrent edits cannot leak into the numbers (e.g. --rev HEAD)")
    ap.add_argument("--render", action="store_true", help="only rewrite mlperf_float.md from mlperf_float.json")
    args = ap.parse_args(argv)
    if args.render:
        doc = json.loads((args.results / "mlperf_float.json").read_text(encoding="utf-8"))
        (args.results / "mlperf_float.md").write_text(markdown(doc), encoding="utf-8")
        return 0
    load0 = os.getloadavg()
    command = " ".join([".venv/bin/python bench/mlperf_float.py", *(argv if argv is not None else sys.argv[1:])])
    boards, models = args.boards.split(","), args.models.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; known: {', '.join(MODELS)}")

    work = args.keep or Path(tempfile.mkdtemp(prefix="edgecc-bench-"))
    root = snapshot(args.rev) if args.rev else REPO
    jobs = [(m, b) for m in models for b in boards]
    # Slowest first, so the two workers finish together: VWW on the M-profile boards is the longest.
    jobs.sort(key=lambda mb: (mb[1] in ("host", "aarch64", "aarch64-v80"), mb[0] != "vww_mobilenet_float"))

    def one(mb: tuple[str, str]) -> dict:
        m, b = mb
        job = edgecc_run(root / MODELS[m].relative_to(REPO), b, work / f"{m}-{b}", root=root)
        r = row(b, m, job)
        print(f"{m:<20} {b:<12} exit {job['exit_code']} status {r['status']:<8} job {job['job_wall_s']:6.1f} s "
              f"instr {fmt(r.get('total_instructions'))} agree {fmt(r.get('top1_agreement'), 4)}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = list(pool.map(one, jobs))
    order = {(m, b): i for i, (m, b) in enumerate((m, b) for m in models for b in boards)}
    done.sort(key=lambda r: order[(r["model"], r["board"])])

    head = {"command": command, **header(args.jobs, load0, args.rev, root)}
    doc = {"header": head, "models": models, "boards": boards,
           "note": NOTE.format(jobs=args.jobs, nproc=head["machine"]["nproc"]), "rows": done}
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "mlperf_float.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (args.results / "mlperf_float.md").write_text(markdown(doc), encoding="utf-8")
    print(f"wrote {args.results / 'mlperf_float.json'} and {args.results / 'mlperf_float.md'}")
    ok = all(r["exit_code"] == 0 and r.get("bit_exact") for r in done)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
