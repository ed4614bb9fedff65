"""Benchmark (issue 6 point 6, host comparison): the generated C of the four MLPerf Tiny int8 models
compiled natively with `-O3 -march=native` (the `host` board, whose default build is -O2: the flags
are overridden here only) against the TFLite interpreter of ai-edge-litert (`Interpreter`,
num_threads=1, default delegates, i.e. XNNPACK) on the same model and the same int8 input,
microseconds per inference, both timed in this one run of the script.

Per model: compile + run + bit-exact verification (our interpreter and TFLM) on the first --samples
samples; then --rounds rounds, each running our firmware (its harness times --repeats whole
inferences of sample 0 with CLOCK_MONOTONIC after --warmup untimed ones) and then LiteRT
(--warmup untimed invoke() calls, then as many timed ones, time.perf_counter_ns, as take about as
long as our timed runs), so both sample the same machine load; the figure is the median over all
rounds' timed runs (the minimum is reported too: on a shared machine it is the steadier one).
LiteRT's outputs are compared with ours (XNNPACK's int8 kernels are not bit-exact with TFLite's
reference: max abs diff in LSB).
Also timed, as context: our default host build (-O2) and LiteRT without the default delegates
(TFLite's builtin optimized kernels).

    .venv/bin/python bench/host_vs_litert.py                    # ~2 min
    .venv/bin/python bench/host_vs_litert.py --models kws_dscnn_int8 --rounds 3 --results /tmp/b
    .venv/bin/python bench/host_vs_litert.py --render           # rewrite the .md from the .json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.common import INT8_MODELS, RESULTS, fmt, header, update_readme, verify_subset  # noqa: E402

NATIVE = ("-O3", "-march=native")
_RUN = re.compile(r"^ECC_RUN \d+ (\d+)$", re.M)  # harness whole-run times, ns (time_source clock)

NOTE = (
    "Times are microseconds per inference on sample 0, the median over every timed run of every round "
    "(ours: CLOCK_MONOTONIC around one `ecc_model_run` call inside the native test harness, profiling "
    "hooks compiled out; LiteRT: time.perf_counter_ns around one `Interpreter.invoke()` from Python, so "
    "LiteRT's figure includes the Python binding's per-call overhead, not measured separately, which can "
    "matter only for the microsecond-scale autoencoder). Both single-threaded, same int8 input bytes, rounds interleaved so both see the "
    "same machine load. Ratio = ours / LiteRT (below 1: ours is faster). Our code is the portable C "
    "kernels (the host board has no ISA kernel variants), auto-vectorised by gcc for this CPU; LiteRT "
    "runs XNNPACK's hand-written x86 SIMD kernels. Max abs diff: largest |ours - LiteRT| over the int8 "
    "outputs of sample 0, in LSB of the output scale (XNNPACK's and TFLite's optimized int8 kernels may "
    "round requantization differently from TFLite's reference kernels, with which our outputs are bit-exact: "
    "`bit-exact (TFLM)` = equal to our interpreter on every verified sample (and to TFLM's reference kernels)).")


def _host_target(flags: tuple[str, ...] | None):
    from targets import load_target

    t = load_target("host")
    if flags is None:
        return t
    return dataclasses.replace(t, cflags=tuple(f for f in t.cflags if not f.startswith(("-O", "-march"))) + flags)


def ours(config: Path, verify: Path, out: Path, flags: tuple[str, ...] | None, repeats: int, warmup: int) -> dict[str, Any]:
    """Compile, run and verify on host with `flags` (None: the board's own) -> the firmware and report."""
    from toolchain.config import load_config
    from toolchain.pipeline import compile_model
    from toolchain.runner import run_and_verify

    cfg = load_config(config, {"board": "host", "verify": str(verify), "repeats": repeats, "warmup": warmup})
    target = _host_target(flags)
    build = compile_model(cfg, target, out, profile=False)
    r = run_and_verify(build).report
    v = r["verification"]
    return {"fw": build.fw_dir, "cflags": list(target.cflags), "status": r["status"], "bit_exact": v["bit_exact"],
            "tflm_bit_exact": v.get("tflm_bit_exact"), "report_us": r["total_cost"], "flash_bytes": r["flash_bytes"]}


def time_ours(fw: Path) -> list[float]:
    """One run of the native firmware: its harness's whole-run times of sample 0, in microseconds."""
    p = subprocess.run(["./firmware.elf"], cwd=fw, capture_output=True, text=True, timeout=600, check=True)
    return [int(ns) / 1000 for ns in _RUN.findall(p.stdout)]


class LiteRT:
    """ai-edge-litert's TFLite interpreter, one thread, on the int8 input bytes of our sample 0."""

    def __init__(self, model: Path, inputs_bin: bytes, delegates: bool):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        kind = OpResolverType.AUTO if delegates else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self.it = Interpreter(model_path=str(model), num_threads=1, experimental_op_resolver_type=kind)
        self.it.allocate_tensors()
        pos = 0
        for d in self.it.get_input_details():  # inputs.bin: sample 0's inputs in order, then sample 1...
            n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
            self.it.set_tensor(d["index"], np.frombuffer(inputs_bin[pos:pos + n], d["dtype"]).reshape(d["shape"]))
            pos += n

    def time(self, repeats: int, warmup: int) -> list[float]:
        for _ in range(warmup):
            self.it.invoke()
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            self.it.invoke()
            out.append((time.perf_counter_ns() - t0) / 1000)
        return out

    def outputs(self) -> bytes:
        return b"".join(self.it.get_tensor(d["index"]).tobytes() for d in self.it.get_output_details())


def _diff_lsb(a: bytes, b: bytes) -> int | None:
    if len(b) < len(a):
        return None
    x, y = np.frombuffer(a, np.int8).astype(np.int16), np.frombuffer(b[:len(a)], np.int8).astype(np.int16)
    return int(np.abs(x - y).max())


def measure(model: str, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    import yaml

    config = INT8_MODELS[model]
    tflite = (config.parent / yaml.safe_load(config.read_text())["model"]).resolve()
    verify = verify_subset(config, args.samples, tmp / "data")
    o3 = ours(config, verify, tmp / f"{model}-o3", NATIVE, args.repeats, args.warmup)
    o2 = ours(config, verify, tmp / f"{model}-o2", None, args.repeats, args.warmup)
    inputs = (o3["fw"] / "inputs.bin").read_bytes()
    xnn, builtin = LiteRT(tflite, inputs, True), LiteRT(tflite, inputs, False)
    t = {"ours_o3": [], "ours_o2": [], "litert_xnnpack": [], "litert_builtin": []}
    n = {"litert_xnnpack": args.repeats, "litert_builtin": args.repeats}
    for i in range(args.rounds):
        t["ours_o3"] += time_ours(o3["fw"])
        t["litert_xnnpack"] += xnn.time(n["litert_xnnpack"], args.warmup)
        t["ours_o2"] += time_ours(o2["fw"])
        t["litert_builtin"] += builtin.time(n["litert_builtin"], args.warmup)
        if i == 0:  # LiteRT's rounds then last as long as ours, so both sample the machine's load alike
            for lite, mine in (("litert_xnnpack", "ours_o3"), ("litert_builtin", "ours_o2")):
                ratio = statistics.median(t[mine]) / statistics.median(t[lite])
                n[lite] = min(20_000, max(args.repeats, round(args.repeats * ratio)))
    med = {k: statistics.median(v) for k, v in t.items()}
    ours_out = (o3["fw"] / "outputs.bin").read_bytes()[:len(xnn.outputs())]  # sample 0's outputs
    row = {"model": model, "status": o3["status"], "bit_exact": o3["bit_exact"], "tflm_bit_exact": o3["tflm_bit_exact"],
           "o2_bit_exact": o2["bit_exact"], "cflags": o3["cflags"], "flash_bytes": o3["flash_bytes"],
           "us": med, "timed_runs": {k: len(v) for k, v in t.items()},
           "us_min": {k: min(v) for k, v in t.items()}, "us_max": {k: max(v) for k, v in t.items()},
           "report_us": {"ours_o3": o3["report_us"], "ours_o2": o2["report_us"]},
           "ratio_ours_to_xnnpack": med["ours_o3"] / med["litert_xnnpack"],
           "ratio_ours_to_xnnpack_min": min(t["ours_o3"]) / min(t["litert_xnnpack"]),
           "ratio_ours_to_builtin": med["ours_o3"] / med["litert_builtin"],
           "xnnpack_equal": xnn.outputs() == ours_out, "xnnpack_max_abs_diff_lsb": _diff_lsb(ours_out, xnn.outputs()),
           "builtin_equal": builtin.outputs() == ours_out,
           "builtin_max_abs_diff_lsb": _diff_lsb(ours_out, builtin.outputs())}
    print(f"{model:<20} ours -O3 {med['ours_o3']:9.1f} us  LiteRT/XNNPACK {med['litert_xnnpack']:9.1f} us  ratio "
          f"{row['ratio_ours_to_xnnpack']:.2f}  diff {row['xnnpack_max_abs_diff_lsb']} LSB  "
          f"{'bit-exact' if o3['bit_exact'] else 'MISMATCH'}", flush=True)
    return row


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    keep = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core", "CPU max MHz", "L1d cache", "L2 cache",
            "L3 cache", "Hypervisor vendor")
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs if k.strip() in keep}


def render(doc: dict[str, Any]) -> str:
    h = doc["header"]
    cpu = doc.get("lscpu", {})
    out = ["# Host: edgecc's generated C (-O3 -march=native) against LiteRT (XNNPACK, one thread)", "",
           f"Measured {h['date_utc']} on {cpu.get('Model name', h['machine']['cpu_model'])} "
           f"({cpu.get('CPU(s)', h['machine']['nproc'])} CPUs"
           f"{', ' + cpu['Hypervisor vendor'] + ' guest' if cpu.get('Hypervisor vendor') else ''}; "
           f"L2 {cpu.get('L2 cache', '?')}), {h['tools'].get('gcc')}, ai-edge-litert {doc['litert_version']}, edgecc "
           f"{h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]} ({h['edgecc']['measured']}"
           f"{', uncommitted changes in the tree' if h['edgecc']['worktree_dirty'] else ''}). Load average (1 min) "
           f"{(h.get('loadavg_start') or ['?'])[0]} at the start, {h['loadavg_end'][0]} at the end "
           f"({h['machine']['nproc']} cores).", "",
           f"Command: `{h.get('command')}`: {doc['rounds']} interleaved rounds, each {doc['repeats']} timed runs of ours "
           f"after {doc['warmup']} warm-up runs, then LiteRT's warm-up and as many invoke() calls as take about as "
           "long; how to re-run: [bench/README.md](../README.md).", "",
           "| model | ours -O3 -march=native (µs) | LiteRT XNNPACK (µs) | ratio ours / XNNPACK | min ours / min XNNPACK (µs) "
           "| outputs equal | max abs diff (LSB) "
           "| ours -O2, default host (µs) | LiteRT builtin, no delegate (µs) | ratio ours / builtin | builtin equal (max diff) "
           "| bit-exact (TFLM) |",
           "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|"]
    for r in doc["rows"]:
        u = r["us"]
        out.append(f"| {r['model']} | {fmt(u['ours_o3'], 1)} | {fmt(u['litert_xnnpack'], 1)} | "
                   f"{r['ratio_ours_to_xnnpack']:.2f} | {fmt(r['us_min']['ours_o3'], 1)} / "
                   f"{fmt(r['us_min']['litert_xnnpack'], 1)} = {r['ratio_ours_to_xnnpack_min']:.2f} | "
                   f"{fmt(r['xnnpack_equal'])} | {fmt(r['xnnpack_max_abs_diff_lsb'])} | "
                   f"{fmt(u['ours_o2'], 1)} | {fmt(u['litert_builtin'], 1)} | {r['ratio_ours_to_builtin']:.2f} | "
                   f"{fmt(r['builtin_equal'])} ({fmt(r['builtin_max_abs_diff_lsb'])}) | {fmt(r['bit_exact'])} ({fmt(r['tflm_bit_exact'])}) |")
    out += ["", "## What the numbers are", "", NOTE, ""]
    loads = [x[0] for x in (h.get("loadavg_start"), h.get("loadavg_end")) if x]
    if loads and max(loads) > h["machine"]["nproc"] / 2:
        out += [f"The machine was shared with other work (1-minute load average up to {max(loads):.1f} on "
                f"{h['machine']['nproc']} cores): absolute times are inflated and noisy; the interleaved rounds keep "
                "the ratio fairer than the absolute figures.", ""]
    return "\n".join(out)


def readme_table(doc: dict[str, Any]) -> str:
    """README.md's host comparison (between its bench:host_vs_litert markers)."""
    cpu = doc.get("lscpu", {}).get("Model name") or doc["header"]["machine"]["cpu_model"]
    out = ["| model | ours, -O3 -march=native (µs) | LiteRT, XNNPACK, 1 thread (µs) | ours / LiteRT | LiteRT outputs equal ours |",
           "|---|---:|---:|---:|---|"]
    for r in doc["rows"]:
        diff = r["xnnpack_max_abs_diff_lsb"]
        out.append(f"| {r['model']} | {fmt(r['us']['ours_o3'], 1)} | {fmt(r['us']['litert_xnnpack'], 1)} | "
                   f"{r['ratio_ours_to_xnnpack']:.1f} | {'yes' if r['xnnpack_equal'] else f'no, up to {diff} LSB'} |")
    out += ["", f"Host ({cpu}): median microseconds per inference, both measured in one run of "
            "`bench/host_vs_litert.py` (ours / LiteRT above 1: LiteRT is faster); the host board runs the portable C "
            "kernels (no x86 SIMD variants). "
            "Details: [`bench/results/host_vs_litert.md`](bench/results/host_vs_litert.md)."]
    return "\n".join(out)


def _readme(doc: dict[str, Any]) -> bool:
    done = update_readme("host_vs_litert", readme_table(doc))
    print("updated README.md's host table" if done else "README.md has no <!-- bench:host_vs_litert --> markers")
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(INT8_MODELS), help="comma-separated models (default: all four)")
    ap.add_argument("--samples", type=int, default=4, help="verification samples (default 4)")
    ap.add_argument("--repeats", type=int, default=50, help="our timed runs per round (default 50, max 1000); LiteRT's "
                                                            "are scaled to take as long")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs before them (default 10)")
    ap.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder for host_vs_litert.json/.md")
    ap.add_argument("--render", action="store_true", help="only rewrite host_vs_litert.md from the .json")
    ap.add_argument("--readme", action="store_true", help="also rewrite README.md's host table from the results")
    args = ap.parse_args(argv)
    jpath, mpath = args.results / "host_vs_litert.json", args.results / "host_vs_litert.md"
    if args.render:
        doc = json.loads(jpath.read_text(encoding="utf-8"))
        mpath.write_text(render(doc), encoding="utf-8")
        return 0 if not args.readme or _readme(doc) else 1
    models = args.models.split(",")
    if set(models) - set(INT8_MODELS):
        ap.error(f"unknown model(s) {sorted(set(models) - set(INT8_MODELS))}; known: {', '.join(INT8_MODELS)}")
    from importlib.metadata import version

    load0 = os.getloadavg()
    command = " ".join([".venv/bin/python bench/host_vs_litert.py", *(argv if argv is not None else sys.argv[1:])])
    with tempfile.TemporaryDirectory(prefix="edgecc-bench-host-") as tmp:
        rows = [measure(m, Path(tmp), args) for m in models]
    doc = {"header": {"command": command, **header(1, load0)}, "lscpu": _lscpu(),
           "litert_version": version("ai-edge-litert"), "repeats": args.repeats, "warmup": args.warmup,
           "rounds": args.rounds, "samples": args.samples, "cflags": list(NATIVE), "note": NOTE, "rows": rows}
    args.results.mkdir(parents=True, exist_ok=True)
    jpath.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    mpath.write_text(render(doc), encoding="utf-8")
    print(f"wrote {jpath} and {mpath}")
    if args.readme:
        _readme(doc)
    return 0 if all(r["bit_exact"] and r["o2_bit_exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
