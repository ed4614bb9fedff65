"""The front-door fuzz campaign (issue 12 "Done when"): seeded damaged ONNX (float, QDQ), TFLite,
YAML and data files, by default 600 of each kind (3,000) from seeds the test suite does not use
(1,000,000 up), every case through `edgecc` with the board compiler (no stub: invalid C counts).

    .venv/bin/python bench/fuzz_campaign.py                  # 5 kinds x 600, 2 processes
    .venv/bin/python bench/fuzz_campaign.py --cases 50 --kinds yaml,data

Each chunk of cases runs in its own process (tests/fuzz/fuzz_driver.py) under a 4 GiB address-space
limit; a case still running after 60 s is a hang. Counts per kind: exit 0 / exit 2 / internal error /
traceback / hang / other property broken (more than one line, no file named, a folder left), the
slowest case, and every failing case with its seed. Writes bench/results/fuzz_campaign.json and .md.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import REPO, RESULTS, header  # noqa: E402

DRIVER = REPO / "tests" / "fuzz" / "fuzz_driver.py"
KINDS = ("onnx", "qdq", "tflite", "yaml", "data")
FIRST_SEED = 1_000_000
CHUNK = 50
MEMORY_LIMIT = 4 << 30


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_chunk(kind: str, first: int, count: int) -> list[dict]:
    """Cases first..first+count-1 of `kind` in one process; a process that dies takes its
    remaining cases with it as 'crashed' verdicts."""
    proc = subprocess.run([sys.executable, str(DRIVER), kind, str(first), str(count), "--full"], cwd=REPO,
                          capture_output=True, text=True, preexec_fn=_limit, timeout=count * 90, check=False)
    done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    seen = {v["seed"] for v in done}
    tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    done += [{"kind": kind, "seed": s, "code": None, "seconds": 0.0, "first_line": "",
              "problems": [f"process died (exit {proc.returncode}): {tail}"]}
             for s in range(first, first + count) if s not in seen]
    return done


def classify(v: dict) -> str:
    """The verdict's class for the table."""
    p = " ".join(v["problems"])
    if "hang" in p:
        return "hang"
    if "traceback" in p or "escaped" in p or "process died" in p:
        return "traceback"
    if v["code"] == 4:
        return "internal error"
    if v["problems"]:
        return "other"
    return {0: "exit 0", 2: "exit 2"}.get(v["code"], "other")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=600, help="cases per kind")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    t0 = time.monotonic()
    chunks = [(k, FIRST_SEED + i, min(CHUNK, args.cases - i)) for k in kinds for i in range(0, args.cases, CHUNK)]
    with ThreadPoolExecutor(args.jobs) as pool:
        verdicts = [v for part in pool.map(lambda c: run_chunk(*c), chunks) for v in part]
    classes = ["exit 0", "exit 2", "internal error", "traceback", "hang", "other"]
    table = {k: Counter(classify(v) for v in verdicts if v["kind"] == k) for k in kinds}
    bad = [v for v in verdicts if classify(v) not in ("exit 0", "exit 2")]
    doc = {"header": header(args.jobs), "cases_per_kind": args.cases, "first_seed": FIRST_SEED,
           "wall_s": round(time.monotonic() - t0, 1), "counts": {k: dict(c) for k, c in table.items()},
           "slowest_s": max((v["seconds"] for v in verdicts), default=0.0), "failures": bad}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fuzz_campaign.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = ["# Front-door fuzz campaign", "", f"{args.cases} cases per kind, seeds from {FIRST_SEED}, "
             f"full builds (board compiler on every case that passes), {doc['wall_s']} s wall with {args.jobs} "
             f"processes; slowest case {doc['slowest_s']:.1f} s.", "",
             "| kind | " + " | ".join(classes) + " |", "|---|" + "---|" * len(classes)]
    lines += [f"| {k} | " + " | ".join(str(table[k].get(c, 0)) for c in classes) + " |" for k in kinds]
    lines += ["", f"Failing cases: {len(bad)}", ""]
    lines += [f"- {v['kind']} seed {v['seed']}: {classify(v)}: {'; '.join(v['problems'])} | {v['first_line'][:160]}"
              for v in bad[:50]]
    (RESULTS / "fuzz_campaign.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
