"""Benchmark (issue 14 point 4): CPU seconds (user + sys, the compilers it runs included) of one
`edgecc build` of the MLPerf Tiny float models, calibration on all their images (VWW: 300 JPEGs,
ResNet-8: 200 CIFAR-10 images); goal: VWW at most 5 s on host (median of 5).

    .venv/bin/python bench/build_cpu.py                          # host, both models, 5 runs each
    .venv/bin/python bench/build_cpu.py --compare 4e2661d       # + that commit, runs interleaved
    .venv/bin/python bench/build_cpu.py --boards host,mps2-an386 --models vww_mobilenet_float
    .venv/bin/python bench/build_cpu.py --render                 # the .md from the committed .json
    .venv/bin/python bench/build_cpu.py --boards aarch64 --models vww_mobilenet_int8 --runs 3 \
        --bytecode cached --compare 87250c1 --name build_cpu_int8   # the int8 VWW, own result files

Each (model, board, code) pair runs once untimed (it fills the bytecode cache), then --runs timed
builds; the CPU of a build is the rusage wait4() returns for it. Bytecode: "cached" writes .pyc
files into a temporary PYTHONPYCACHEPREFIX, as an installed package has them; "none" sets
PYTHONDONTWRITEBYTECODE=1 (every module compiled from source each time, as in a sandbox that
forbids .pyc files). Writes bench/results/build_cpu.json and bench/results/build_cpu.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import MODELS, REPO, RESULTS, fmt, header, snapshot, write_results  # noqa: E402

GOAL_S = 5.0  # issue 14: float VWW build, host


def build_cpu(root: Path, config: Path, board: str, out: Path, pycache: Path | None) -> dict[str, float]:
    """One `edgecc build CONFIG --board BOARD` with the sources of ROOT: CPU (user, sys) and wall
    seconds. pycache: PYTHONPYCACHEPREFIX (bytecode cached there), None: no .pyc at all.
    Raises RuntimeError when the build fails."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # before the editable install's finder
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.update({"PYTHONPYCACHEPREFIX": str(pycache)} if pycache else {"PYTHONDONTWRITEBYTECODE": "1"})
    cmd = [sys.executable, "-m", "toolchain.cli", "build", str(config), "--board", board, "--out", str(out), "--quiet"]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)  # the build's own rusage, its gcc / as / ld included
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {err.read().decode(errors='replace')[-800:]}")
    return {"user_s": ru.ru_utime, "sys_s": ru.ru_stime, "cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": wall}


def markdown(doc: dict) -> str:
    h = doc["header"]
    product = [f for f in h["edgecc"].get("modified_files", []) if not f.startswith(("bench/", "tests/"))]
    floats = any("float" in r["model"] for r in doc["rows"])
    out = [f"# CPU time of `edgecc build`{' (float models, calibration included)' if floats else ''}", "",
           f"Measured {h['date_utc']} on {h['machine']['cpu_model']} ({h['machine']['nproc']} cores), "
           f"edgecc {h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]}"
           f"{' (uncommitted product files: ' + ', '.join(product) + ')' if product else ''}; python {h['python']}; "
           f"machine load average (1 min) {(h.get('loadavg_start') or ['?'])[0]} at the start, "
           f"{h['loadavg_end'][0]} at the end.", "",
           f"Command: `{doc['command']}`; how to re-run: [bench/README.md](../README.md).", "",
           f"Goal (issue 14): a float VWW build on host at most {GOAL_S:g} s of CPU (median of 5, bytecode cached). "
           "A commit in the `code` column: a snapshot of that commit (`--compare REV`), its runs interleaved "
           "with the work tree's.", "",
           "| model | board | code | bytecode | runs | CPU median (s) | CPU min (s) | CPU max (s) | user (s) | sys (s) | "
           "wall median (s) |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        cpu = [x["cpu_s"] for x in r["runs"]]
        out.append("| " + " | ".join([
            r["model"], r["board"], r["code"], r["bytecode"], str(len(cpu)), fmt(statistics.median(cpu)),
            fmt(min(cpu)), fmt(max(cpu)), fmt(statistics.median(x["user_s"] for x in r["runs"])),
            fmt(statistics.median(x["sys_s"] for x in r["runs"])),
            fmt(statistics.median(x["wall_s"] for x in r["runs"]))]) + " |")
    out += ["", "## What the numbers are", "",
            "CPU = user + sys seconds of the `python -m toolchain.cli build` process and every compiler, "
            "assembler and linker it ran (wait4 rusage), on a shared machine: other load makes CPU seconds "
            "grow too (caches, frequency), so compare rows measured together (`--compare` interleaves the "
            "runs of both codes). `cached`: the modules' bytecode in a temporary PYTHONPYCACHEPREFIX, as "
            "an installed edgecc has it; `none`: PYTHONDONTWRITEBYTECODE=1, every module compiled from "
            "source at each start (about 0.3-0.5 s more). Each pair runs once untimed first.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="host")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bytecode", default="cached,none", help="comma-separated: cached, none")
    ap.add_argument("--compare", metavar="REV", help="also measure commit REV (a snapshot), runs interleaved")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--name", default="build_cpu", help="the results' file stem (RESULTS/NAME.json and .md)")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the committed .json only")
    args = ap.parse_args(argv)
    if args.render:
        write_results(args.results, args.name, None, markdown)
        return 0
    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="edgecc-build-cpu-"))
    codes = {"work tree": REPO, **({args.compare: snapshot(args.compare)} if args.compare else {})}
    caches = {code: work / "pyc" / str(i) for i, code in enumerate(codes)}  # one bytecode cache per code
    rows = []
    for model in args.models.split(","):
        for board in args.boards.split(","):
            for bytecode in args.bytecode.split(","):
                pairs = {code: {"model": model, "board": board, "code": code, "bytecode": bytecode, "runs": []}
                         for code in codes}
                for i in range(args.runs + 1):
                    for code, root in codes.items():  # interleaved: load changes hit both codes alike
                        config = root / "tests" / "models" / f"{model}.yaml"
                        pycache = caches[code] if bytecode == "cached" else None
                        run = build_cpu(root, config, board, work / "out", pycache)
                        if i:  # run 0 fills the bytecode cache (and the disk cache): not timed
                            pairs[code]["runs"].append({k: round(v, 3) for k, v in run.items()})
                        print(f"{model} {board} {code} {bytecode} run {i}: {run['cpu_s']:.2f} s CPU", flush=True)
                rows += pairs.values()
    doc = {"header": header(1, load0), "command": "bench/build_cpu.py " + " ".join(argv or sys.argv[1:]),
           "goal_cpu_s": GOAL_S, "rows": rows}
    write_results(args.results, args.name, doc, markdown)
    print(markdown(doc))
    vww = [r for r in rows if r["model"] == "vww_mobilenet_float" and r["board"] == "host"
           and r["code"] == "work tree" and r["bytecode"] == "cached"]
    return 0 if all(statistics.median(x["cpu_s"] for x in r["runs"]) <= GOAL_S for r in vww) else 1


if __name__ == "__main__":
    raise SystemExit(main())
