"""Real exporter outputs (issue 11): every model of ../shared/models/exported/ (PyTorch legacy and
dynamo ONNX, an old opset, onnxruntime QDQ, Keras -> TFLite int8) through `edgecc run` as given,
its `.inputs.npy` as calibration and verification data (8 samples), on host and the Arm boards.

    .venv/bin/python bench/exported_corpus.py                       # 4 boards, 2 jobs in parallel
    .venv/bin/python bench/exported_corpus.py --boards mps2-an386 --files kws_cnn_legacy_op9.onnx

Per (file, board): exit status, status, instructions per inference (sample 0; host: µs), MACs per
instruction (the MACs of the graph as compiled, every channel counted), arena / flash bytes, SQNR
of our int8 against the model's own reference (onnxruntime on the ONNX file — the float model, or
the QDQ model itself; the dequantized twin for a .tflite), bit-exactness with our interpreter and,
for .tflite, with TFLM. Weights are random (seeded), so outputs are near uniform and SQNR is low
for the float models: it says the quantization is sane, not how accurate a trained model would be.
Writes bench/results/exported_corpus.json and .md.
"""
from __future__ import annotations

import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import REPO, edgecc_run, file_bench_args, fmt, header, row, snapshot, write_results  # noqa: E402

CORPUS = REPO.parent / "shared" / "models" / "exported"
BOARDS = ["host", "mps2-an386", "mps3-an547", "aarch64"]


def corpus_files() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".onnx", ".tflite"))


def job_yaml(name: str, folder: Path) -> Path:
    """A pipeline YAML for one corpus file: the model and its inputs by absolute path."""
    data = CORPUS / (Path(name).stem + ".inputs.npy")
    path = folder / f"{Path(name).stem}.yaml"
    path.write_text(f"model: {CORPUS / name}\ncalibration: {data}\nverify: {data}\n", encoding="utf-8")
    return path


def measure(name: str, board: str, work: Path, root: Path) -> dict:
    job = edgecc_run(job_yaml(name, work), board, work / f"out-{Path(name).stem}-{board}", root=root)
    r = row(board, name, job)
    rep = job["report"]
    r["tflm_bit_exact"] = rep["verification"].get("tflm_bit_exact") if rep else None
    if rep is not None:  # cost per output element of each op kind (instructions, or µs on host)
        kinds: dict[str, list[float]] = {}
        for op in rep["ops"]:
            k = kinds.setdefault(f"{op['op_type']} ({op['kernel']})", [0.0, 0])
            k[0] += op["cost"] or 0.0
            k[1] += int(np.prod(op["output_shape"]))
        r["per_op_kind"] = {k: {"cost": c, "output_elements": n} for k, (c, n) in sorted(kinds.items())}
    if rep is None:  # refused (exit 2) or failed before a report: keep the message
        r["error"] = next((line for line in job["stderr"].splitlines() if line.startswith("edgecc: error:")),
                          job["stderr"][-300:])
    return r


def render(doc: dict) -> str:
    h = doc["header"]
    md = ["# Real exporter outputs (../shared/models/exported) through edgecc", "",
          f"Measured {h['date_utc']}, edgecc {h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]} "
          f"({h['edgecc']['measured']}), {h['parallel_jobs']} jobs in parallel. Re-run: "
          "`.venv/bin/python bench/exported_corpus.py`.", "",
          "8 samples per file (its `.inputs.npy`, calibration = verification). Cost: exact instructions per "
          "inference of sample 0 under QEMU (host: µs, portable C at -O2). SQNR: our int8 vs the model's own "
          "reference (onnxruntime on the file: float model or QDQ model; a .tflite's dequantized twin); random "
          "weights, so low SQNR on float models is expected (see the script's docstring).", "",
          "| file | board | exit | cost / inference | MACs / instr. | arena B | flash B | SQNR dB | bit-exact | "
          "TFLM bit-exact | note |", "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in doc["rows"]:
        cost = r.get("host_us_per_inference") if r["board"] == "host" else r.get("total_instructions")
        unit = " µs" if r["board"] == "host" and cost is not None else ""
        note = (r.get("error") or "").removeprefix("edgecc: error: ").split(": ", 1)[-1][:110]
        md.append(f"| `{r['model']}` | {r['board']} | {r['exit_code']} | {fmt(cost, 1)}{unit} | "
                  f"{fmt(r.get('macs_per_instruction'))} | {fmt(r.get('arena_bytes'))} | {fmt(r.get('flash_bytes'))} | "
                  f"{fmt(r.get('sqnr_db'), 1)} | {fmt(r.get('bit_exact'))} | {fmt(r.get('tflm_bit_exact'))} | {note} |")
    md += ["", "Activations of the MobileNetV3 files on `mps2-an386`: instructions per output element, summed over "
           "the op kind's nodes (the fused hard-swish of the ONNX exports and TFLite's HARD_SWISH both run the "
           "`lut` kernel: one table load per element).", "",
           "| file | op (kernel) | nodes' output elements | instructions | per element |", "|---|---|---:|---:|---:|"]
    for r in doc["rows"]:
        if r["board"] != "mps2-an386" or "mobilenet_v3" not in r["model"]:
            continue
        for kind, v in (r.get("per_op_kind") or {}).items():
            if kind.split(" ")[0] in ("HardSwish", "HardSigmoid", "SiLU", "Logistic") and v["output_elements"]:
                md.append(f"| `{r['model']}` | {kind} | {v['output_elements']:,} | {fmt(v['cost'], 0)} | "
                          f"{v['cost'] / v['output_elements']:.2f} |")
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = file_bench_args(__doc__, BOARDS, "corpus file", argv)
    if args.render:
        write_results(args.results, "exported_corpus", None, render)
        return 0
    load0 = os.getloadavg()
    root = snapshot(args.rev) if args.rev else REPO
    work = Path(tempfile.mkdtemp(prefix="edgecc-corpus-"))
    files = args.files.split(",") if args.files else corpus_files()
    jobs = [(f, b) for f in files for b in args.boards.split(",")]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda fb: measure(*fb, work, root), jobs))
    for r in rows:
        print(f"{r['model']:<48} {r['board']:<11} exit {r['exit_code']} sqnr {fmt(r.get('sqnr_db'), 1)} "
              f"bit-exact {fmt(r.get('bit_exact'))} tflm {fmt(r.get('tflm_bit_exact'))}", flush=True)
    doc = {"header": header(args.jobs, load0, args.rev, root), "rows": rows}
    write_results(args.results, "exported_corpus", doc, render)
    return 0 if all(r["exit_code"] in (0, 2) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
