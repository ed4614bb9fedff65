"""Benchmark (issue 6 point 6): the four MLPerf Tiny int8 .tflite models (their own quantization) on
mps2-an386 (Cortex-M4), mps3-an547 (Cortex-M55) and aarch64, each with the board's kernels
(`kernels: auto`) and with the portable C kernels only (`--kernels portable`): exact instructions
per inference, the ratio to TFLM + CMSIS-NN (and to TFLM's reference kernels for portable), the
speed-up of the ISA path, MACs per instruction per op kind, flash and arena, TFLM bit-exactness.

One `edgecc run` per (model, board, kernels) on the first --samples samples of the model's YAML data
(sample 0 is measured, every sample is verified bit-exact against our interpreter and TFLM):

    .venv/bin/python bench/mlperf_int8.py                           # all 24 jobs, 2 in parallel
    .venv/bin/python bench/mlperf_int8.py --boards mps2-an386 --kernels auto   # re-run a subset:
        # its rows replace the same (model, board, kernels) rows of the committed JSON (--no-merge: only them)
    .venv/bin/python bench/mlperf_int8.py --rev HEAD                # measure a commit, not the work tree
    .venv/bin/python bench/mlperf_int8.py --render                  # rewrite the .md from the .json

Writes bench/results/mlperf_int8.json and .md. Exit 1 if a job did not pass bit-exact (ours and TFLM's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (INT8_MODELS, REPO, RESULTS, edgecc_run, fmt, header, snapshot,  # noqa: E402
                          update_readme, verify_subset)

BOARDS = ["mps2-an386", "mps3-an547", "aarch64"]
KERNELS = ["auto", "portable"]
# Issue 6: TFLM instructions per Invoke() on one input, same QEMU boards, -O2, GCC 12.
TFLM_CMSIS = {"mps2-an386": {"ic_resnet8_int8": 29.86e6, "vww_mobilenet_int8": 24.10e6, "kws_dscnn_int8": 7.70e6,
                             "ad_autoencoder_int8": 0.583e6},
              "mps3-an547": {"ic_resnet8_int8": 4.91e6, "vww_mobilenet_int8": 6.56e6, "kws_dscnn_int8": 1.82e6,
                             "ad_autoencoder_int8": 0.286e6}}
TFLM_REF_M4 = {"ic_resnet8_int8": 107.3e6, "vww_mobilenet_int8": 100.1e6, "kws_dscnn_int8": 43.0e6,
               "ad_autoencoder_int8": 1.95e6}
BAR, AIM = 0.75, 0.5  # issue 6: at most 3/4 of TFLM + CMSIS-NN's instructions, aim 1/2
FLASH_OVER_WEIGHTS = 16 * 1024  # issue 6: flash_bytes <= weights + 16 KB on mps2-an386
KINDS = ["Conv2D 1x1", "Conv2D general", "DepthwiseConv2D", "FullyConnected", "pools", "Add", "Softmax", "other"]

# Run in a subprocess with the measured sources: node name -> [op, kernel height, width or None].
_SHAPES = """import json, sys
from toolchain.frontend.tflite import load_tflite
g = load_tflite(sys.argv[1])
w = lambda n: list(n.attrs.window.kernel) if hasattr(getattr(n, "attrs", None), "window") else None
print(json.dumps({n.name: [n.op.value, w(n)] for n in g.nodes}))"""

NOTE = (
    "Instructions are exact retired guest instructions of one call of `ecc_model_run` on sample 0 "
    "(the unprofiled run between two markers), counted by edgecc's QEMU TCG plugin; QEMU has no cycle "
    "model, so they are not cycles (`est. cycles` is the plugin's instruction classes times the board's "
    "published timing tables: an estimate without pipeline or memory model). The TFLM figures are not "
    "re-measured by this script: they are the ones given in issue 6, TensorFlow Lite Micro's Invoke() on one input on the same QEMU boards (-O2, GCC 12), with "
    "CMSIS-NN kernels, or with TFLM's reference kernels (the bar of `portable`, measured on the M4 only). "
    "`auto` = the board's kernel preference (dsp on the M4, helium > dsp on the M55, neon on AArch64); "
    "`portable` = `kernels: portable`, the same build with portable C kernels only. MACs/instr per op kind "
    "= sum of the kind's MACs / sum of its instructions (per-op counts from the profiled run of sample 0; "
    "Add and pools count one MAC per output element, Softmax none); the share is of the per-op sum. Flash "
    "= the model library (text + rodata + weights + data of OUT/lib, from report.json), arena = the one "
    "static activation arena (incl. kernel scratch). Bit-exact: every verified sample equals our numpy "
    "interpreter; TFLM bit-exact: and equals TFLM's reference kernels (tflite-micro).")


def _kinds(config: Path, root: Path) -> dict[str, list]:
    model = (config.parent / yaml.safe_load(config.read_text(encoding="utf-8"))["model"]).resolve()
    p = subprocess.run([sys.executable, "-c", _SHAPES, str(model)], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    return json.loads(p.stdout)


def kind_of(op_type: str, window: list[int] | None) -> str:
    """The benchmark's op kind of one report op (op_type as in report.json, window = kernel [h, w])."""
    if op_type == "Conv2D":
        return "Conv2D 1x1" if window == [1, 1] else "Conv2D general"
    if op_type in ("AveragePool2D", "MaxPool2D"):
        return "pools"
    return op_type if op_type in KINDS else "other"


def job_row(model: str, board: str, kernels: str, job: dict[str, Any], shapes: dict[str, list]) -> dict[str, Any]:
    """The benchmark fields of one (model, board, kernels) edgecc run."""
    r = job["report"]
    base = {"model": model, "board": board, "kernels": kernels, "exit_code": job["exit_code"],
            "job_wall_s": job["job_wall_s"]}
    if r is None:
        return {**base, "status": "no report", "stderr": job["stderr"]}
    v = r["verification"]
    ops = [{"name": o["name"], "op_type": o["op_type"], "kind": kind_of(o["op_type"], (shapes.get(o["name"]) or [0, None])[1]),
            "kernel": o["kernel"], "macs": o.get("macs_live", o["macs"]), "macs_skipped": o.get("macs_skipped", 0),
            "instructions": o.get("instructions")} for o in r["ops"]]  # macs: the MACs done (live)
    per_op_total = sum(o["instructions"] or 0 for o in ops)
    kinds = {}
    for k in KINDS:
        mine = [o for o in ops if o["kind"] == k]
        if mine:
            m, i = sum(o["macs"] for o in mine), sum(o["instructions"] or 0 for o in mine)
            kinds[k] = {"ops": len(mine), "macs": m, "instructions": i, "macs_per_instruction": m / i if i else None,
                        "share": i / per_op_total if per_op_total else None}
    batch = r.get("batch") or 1
    instr = r["total_instructions"] if batch == 1 else r["instructions_per_inference"]  # per inference
    macs = sum(o["macs"] for o in ops)  # live MACs; skipped: channels proven constant (passes/fold_constant_channels)
    skipped = sum(o["macs_skipped"] for o in ops)
    return {**base, "status": r["status"], "bit_exact": v.get("bit_exact"), "tflm_bit_exact": v.get("tflm_bit_exact"),
            "samples": v.get("samples"), "instructions": instr, "est_cycles": r.get("est_cycles_total"),
            "macs": macs, "macs_skipped": skipped, "macs_per_instruction": macs / instr if instr else None,
            "flash_bytes": r["flash_bytes"], "sections": r["sections"], "weights_bytes": r.get("weights_bytes"),
            "flash_overhead_bytes": r.get("flash_overhead_bytes"), "weights_breakdown": r.get("weights_breakdown"),
            "arena_bytes": r["arena_bytes"], "ram_bytes": r.get("ram_bytes"),
            "kernel_variants": sorted({o["kernel"] for o in ops}), "kinds": kinds, "ops": ops,
            "stderr": job["stderr"] if job["exit_code"] else None}


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, board): auto and portable instructions, speed-up, ratios to the TFLM figures."""
    out = []
    for model in INT8_MODELS:
        for board in BOARDS:
            by = {r["kernels"]: r for r in rows if r["model"] == model and r["board"] == board}
            if not by:
                continue
            a, p = (by.get(k, {}).get("instructions") for k in ("auto", "portable"))
            cmsis, ref = TFLM_CMSIS.get(board, {}).get(model), TFLM_REF_M4.get(model) if board == "mps2-an386" else None
            out.append({"model": model, "board": board, "auto": a, "portable": p,
                        "speedup": p / a if a and p else None,
                        "tflm_cmsis_nn": cmsis, "ratio_auto_to_tflm_cmsis_nn": a / cmsis if a and cmsis else None,
                        "tflm_reference": ref, "ratio_portable_to_tflm_reference": p / ref if p and ref else None})
    return out


def _ratio(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f} {'✅' if x <= AIM else '✔' if x <= BAR else '❌'}"


def _m(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e6:,.3f} M"


def markdown(doc: dict[str, Any]) -> str:
    h, rows = doc["header"], doc["rows"]
    commits = sorted({r.get("git_commit") or h["edgecc"]["git_commit"] for r in rows})
    out = ["# MLPerf Tiny int8 models: edgecc against TFLM + CMSIS-NN (issue 6)", "",
           f"Measured {h['date_utc']} on {h['machine']['cpu_model']} ({h['machine']['nproc']} cores), edgecc "
           f"{h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]} ({h['edgecc']['measured']}"
           f"{', uncommitted changes in the tree' if h['edgecc']['worktree_dirty'] else ''}); "
           + ", ".join(v for v in h["tools"].values() if v) + ". "
           f"{doc['samples']} verification samples per job, sample 0 measured.", "",
           f"Command: `{h.get('command')}`; how to re-run: [bench/README.md](../README.md)."]
    if len(commits) > 1:
        out.append(f"Rows merged from re-runs at commits {', '.join(c[:12] for c in commits)} (each row's "
                   "`git_commit` in the JSON).")
    dirty = [f for f in h["edgecc"].get("modified_files", []) if not f.startswith(("bench/", "tests/"))]
    if dirty:
        out.append("Uncommitted product files at measurement time: " + ", ".join(f"`{f}`" for f in dirty) + ".")
    out += ["", "## Instructions per inference", "",
            f"Ratio marks: ✅ at most {AIM} (the aim), ✔ at most {BAR} (the bar of issue 6), ❌ above.", "",
            "| model | board | board kernels | portable only | speed-up | TFLM + CMSIS-NN | ratio | TFLM reference "
            "| portable ratio | est. cycles (auto) | bit-exact (auto/portable) | TFLM bit-exact (auto/portable) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for s in doc["summary"]:
        js = [r for r in rows if r["model"] == s["model"] and r["board"] == s["board"]]
        auto = next((r for r in js if r["kernels"] == "auto"), {})
        out.append("| " + " | ".join([
            s["model"], s["board"], _m(s["auto"]), _m(s["portable"]),
            "-" if s["speedup"] is None else f"{s['speedup']:.2f}x", _m(s["tflm_cmsis_nn"]),
            _ratio(s["ratio_auto_to_tflm_cmsis_nn"]), _m(s["tflm_reference"]), _ratio(s["ratio_portable_to_tflm_reference"]),
            _m(auto.get("est_cycles")), "/".join(fmt(r.get("bit_exact")) for r in js),
            "/".join(fmt(r.get("tflm_bit_exact")) for r in js)]) + " |")
    out += ["", "## MACs per instruction per op kind", "",
            "Cell: live MACs / instruction (share of the model's per-op instructions); live: the MACs done, "
            "without those of channels proven constant (column skipped).", "",
            "| model | board | kernels | live MACs | skipped | all | " + " | ".join(KINDS) + " |",
            "|---|---|---|---:|---:|---:|" + "---:|" * len(KINDS)]
    for r in rows:
        if "kinds" not in r:
            continue
        cells = []
        for k in KINDS:
            c = r["kinds"].get(k)
            cells.append("-" if c is None else f"{fmt(c['macs_per_instruction'], 2)} ({c['share']:.1%})")
        out.append(f"| {r['model']} | {r['board']} | {r['kernels']} | {_m(r.get('macs'))} | "
                   f"{_m(r.get('macs_skipped') or 0)} | {fmt(r['macs_per_instruction'], 3)} | "
                   + " | ".join(cells) + " |")
    out += ["", "## Memory", "",
            f"Issue 6 asks flash <= weights + 16 KB ({FLASH_OVER_WEIGHTS:,} B) on mps2-an386. Flash: the model "
            "library's text + rodata + weights section + data (linker map of the profiled test firmware, so "
            "ecc_model_run carries the per-op profiling calls). Weights: the model's own parameters, int8 weights "
            "+ int32 biases as the source model stores them, before re-packing (report.json weights_bytes); "
            "flash - weights is report.json flash_overhead_bytes.", "",
            "| model | board | kernels | flash (B) | weights (B) | flash - weights (B) | text | rodata | data | arena (B) |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "sections" not in r:
            continue
        sec, over = r["sections"], r["flash_bytes"] - (r["weights_bytes"] or 0)
        mark = (" ✔" if over <= FLASH_OVER_WEIGHTS else " ❌") if r["board"] == "mps2-an386" else ""
        out.append(f"| {r['model']} | {r['board']} | {r['kernels']} | {fmt(r['flash_bytes'])} | {fmt(r['weights_bytes'])} | "
                   f"{fmt(over)}{mark} | {fmt(sec.get('text'))} | {fmt(sec.get('rodata'))} | {fmt(sec.get('data'))} | "
                   f"{fmt(r['arena_bytes'])} |")
    out += ["", "## Kernel variants (board kernels)", "", "| model | board | variants |", "|---|---|---|"]
    for r in rows:
        if r["kernels"] == "auto" and "ops" in r:
            counts: dict[str, int] = {}
            for o in r["ops"]:
                counts[o["kernel"]] = counts.get(o["kernel"], 0) + 1
            out.append(f"| {r['model']} | {r['board']} | " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())) + " |")
    failed = [r for r in rows if r.get("status") != "pass"]
    if failed:
        out += ["", "## Failed jobs", ""] + [f"- {r['model']} on {r['board']} ({r['kernels']}): {r.get('status')}, exit "
                                             f"{r['exit_code']}: `{(r.get('stderr') or '').strip()[-300:]}`" for r in failed]
    out += ["", "## What the numbers are", "", NOTE, ""]
    return "\n".join(out)


TITLES = {"ic_resnet8_int8": "ResNet-8", "vww_mobilenet_int8": "VWW MobileNetV1-0.25", "kws_dscnn_int8": "DS-CNN KWS",
          "ad_autoencoder_int8": "FC autoencoder"}


def readme_table(doc: dict[str, Any]) -> str:
    """The "Speed" table of README.md's headline numbers (between its bench:mlperf_int8 markers)."""
    def cell(s: dict[str, Any] | None, key: str, ratio: str | None, of: str) -> str:
        if not s or s.get(key) is None:
            return "-"
        return _m(s[key]) + (f" ({s[ratio]:.2f} x {of})" if ratio and s.get(ratio) else "")

    out = ["| model (live MACs, skipped) | Cortex-M4 `mps2-an386` | Cortex-M55 `mps3-an547` | AArch64 `aarch64` | M4, portable C only |",
           "|---|---:|---:|---:|---:|"]
    for model in INT8_MODELS:
        s = {x["board"]: x for x in doc["summary"] if x["model"] == model}
        if not s:
            continue
        row = next((r for r in doc["rows"] if r["model"] == model and r.get("macs")), {})
        macs, skipped = row.get("macs") or 0, row.get("macs_skipped") or 0
        out.append(f"| {TITLES[model]} int8 ({macs / 1e6:.2f} M, {skipped / 1e6:.2f} M skipped) | "
                   f"{cell(s.get('mps2-an386'), 'auto', 'ratio_auto_to_tflm_cmsis_nn', 'TFLM')} | "
                   f"{cell(s.get('mps3-an547'), 'auto', 'ratio_auto_to_tflm_cmsis_nn', 'TFLM')} | "
                   f"{cell(s.get('aarch64'), 'auto', None, '')} | "
                   f"{cell(s.get('mps2-an386'), 'portable', 'ratio_portable_to_tflm_reference', 'TFLM ref.')} |")
    ok = all(r.get("bit_exact") and r.get("tflm_bit_exact") for r in doc["rows"])
    out += ["", f"Exact instructions per inference (sample 0) of the int8 .tflite models with their own quantization, "
            f"{'every run bit-exact with our interpreter and TFLM' if ok else 'NOT every run bit-exact: see the details'}; "
            "(0.50 x TFLM) = our instructions over TensorFlow Lite Micro + CMSIS-NN's on the same QEMU board as given "
            "in issue 6 (not re-measured here; bar 0.75, aim 0.5), TFLM ref. = TFLM's reference kernels. Measured at "
            f"{doc['header']['edgecc']['git_commit'][:12]}{' (work tree)' if doc['header']['edgecc']['worktree_dirty'] else ''}; "
            "details, MACs per instruction per op kind, flash and arena: "
            "[`bench/results/mlperf_int8.md`](bench/results/mlperf_int8.md)."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(INT8_MODELS), help="comma-separated models (default: all four)")
    ap.add_argument("--boards", default=",".join(BOARDS), help=f"comma-separated boards (default: {','.join(BOARDS)})")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="auto, portable or both (default)")
    ap.add_argument("--samples", type=int, default=10, help="verification samples per job (default 10)")
    ap.add_argument("--jobs", type=int, default=2, help="edgecc runs in parallel (default 2)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder for mlperf_int8.json/.md")
    ap.add_argument("--no-merge", action="store_true", help="write only this run's rows (default: a subset run "
                                                            "replaces its rows in the existing JSON, keeps the others)")
    ap.add_argument("--keep", type=Path, help="keep every OUT folder under this directory")
    ap.add_argument("--rev", help="measure commit REV from a read-only snapshot (git archive), e.g. HEAD")
    ap.add_argument("--render", action="store_true", help="only rewrite mlperf_int8.md from mlperf_int8.json")
    ap.add_argument("--readme", action="store_true", help="also rewrite README.md's Speed table from the results")
    args = ap.parse_args(argv)
    jpath, mpath = args.results / "mlperf_int8.json", args.results / "mlperf_int8.md"
    if args.render:
        doc = json.loads(jpath.read_text(encoding="utf-8"))
        mpath.write_text(markdown(doc), encoding="utf-8")
        return 0 if not args.readme or _readme(doc) else 1
    models, boards, kernels = args.models.split(","), args.boards.split(","), args.kernels.split(",")
    for bad, known, what in ((set(models) - set(INT8_MODELS), INT8_MODELS, "model"), (set(boards) - set(BOARDS), BOARDS, "board"),
                             (set(kernels) - set(KERNELS), KERNELS, "kernels")):
        if bad:
            ap.error(f"unknown {what} {sorted(bad)}; known: {', '.join(known)}")
    load0 = os.getloadavg()
    command = " ".join([".venv/bin/python bench/mlperf_int8.py", *(argv if argv is not None else sys.argv[1:])])
    root = snapshot(args.rev) if args.rev else REPO
    work = args.keep or Path(tempfile.mkdtemp(prefix="edgecc-bench-int8-"))
    configs = {m: root / INT8_MODELS[m].relative_to(REPO) for m in models}
    verify = {m: verify_subset(configs[m], args.samples, work / "data") for m in models}
    shapes = {m: _kinds(configs[m], root) for m in models}
    jobs = [(m, b, k) for m in models for b in boards for k in kernels]
    # Slowest first so the workers finish together: the conv models, MVE emulation and portable M-profile code.
    jobs.sort(key=lambda j: (j[0] not in ("vww_mobilenet_int8", "ic_resnet8_int8"), j[1] == "aarch64"))

    def one(j: tuple[str, str, str]) -> dict[str, Any]:
        m, b, k = j
        job = edgecc_run(configs[m], b, work / f"{m}-{b}-{k}", "--verify", str(verify[m]),
                         *(["--kernels", "portable"] if k == "portable" else []), root=root)
        r = job_row(m, b, k, job, shapes[m])
        print(f"{m:<20} {b:<11} {k:<8} exit {job['exit_code']} {r['status']:<9} {job['job_wall_s']:6.1f} s "
              f"instr {fmt(r.get('instructions'))} tflm {fmt(r.get('tflm_bit_exact'))}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = list(pool.map(one, jobs))
    head = {"command": command, **header(args.jobs, load0, args.rev, root)}
    for r in done:
        r["git_commit"], r["date_utc"] = head["edgecc"]["git_commit"], head["date_utc"]
    old = json.loads(jpath.read_text(encoding="utf-8")) if jpath.is_file() and not args.no_merge else {"rows": []}
    fresh = {(r["model"], r["board"], r["kernels"]) for r in done}
    rows = [r for r in old["rows"] if (r["model"], r["board"], r["kernels"]) not in fresh] + done
    order = {(m, b, k): i for i, (m, b, k) in enumerate((m, b, k) for m in INT8_MODELS for b in BOARDS for k in KERNELS)}
    rows.sort(key=lambda r: order[(r["model"], r["board"], r["kernels"])])
    doc = {"header": head, "samples": args.samples, "tflm_cmsis_nn": TFLM_CMSIS, "tflm_reference_m4": TFLM_REF_M4,
           "note": NOTE, "summary": summary(rows), "rows": rows}
    args.results.mkdir(parents=True, exist_ok=True)
    jpath.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    mpath.write_text(markdown(doc), encoding="utf-8")
    print(f"wrote {jpath} and {mpath}")
    if args.readme:
        _readme(doc)
    return 0 if all(r["exit_code"] == 0 and r.get("bit_exact") and r.get("tflm_bit_exact") for r in done) else 1


def _readme(doc: dict[str, Any]) -> bool:
    done = update_readme("mlperf_int8", readme_table(doc))
    print("updated README.md's Speed table" if done else "README.md has no <!-- bench:mlperf_int8 --> markers")
    return done


if __name__ == "__main__":
    sys.exit(main())
