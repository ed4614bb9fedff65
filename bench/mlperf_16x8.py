"""What 16x8 costs (issue 14 point 2): the MLPerf Tiny int8 files against their 16x8 twins
(tests/models/tflite_16x8_from_int8.py: the same weights and real ranges, int16 activations, int64
biases) on the Cortex-M4 (mps2-an386), Cortex-M55 (mps3-an547) and AArch64: instructions per
inference (sample 0), arena, flash, the kernels that ran, and the verification (bit-exact with our
interpreter and with TFLM on every sample; SQNR against each file's own dequantized float twin on
the same data, so it says how far each grid is from the real-valued network).

    .venv/bin/python bench/mlperf_16x8.py                      # 4 models x 3 boards x 2, ~10 min
    .venv/bin/python bench/mlperf_16x8.py --boards mps2-an386 --models ic_resnet8_int8
    .venv/bin/python bench/mlperf_16x8.py --render              # the .md from the committed .json
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
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "models"))
from bench.common import INT8_MODELS, RESULTS, edgecc_run, fmt, header, row, verify_subset  # noqa: E402

BOARDS = ("mps2-an386", "mps3-an547", "aarch64")
JSON, MD = RESULTS / "mlperf_16x8.json", RESULTS / "mlperf_16x8.md"
SAMPLES = 3


def _configs(model: str, tmp: Path) -> dict[str, Path]:
    """The int8 YAML (its verify data cut to SAMPLES) and the 16x8 twin's YAML on the same real data
    (int8 DATA, the int8 file's quantized values, written as the real values they stand for)."""
    from tflite_16x8_from_int8 import convert

    from toolchain.frontend.tflite_reader import read_tflite

    src = INT8_MODELS[model]
    cfg = yaml.safe_load(src.read_text(encoding="utf-8"))
    model_file = (src.parent / cfg["model"]).resolve()
    data = verify_subset(src, SAMPLES, tmp)
    if data.suffix == ".npy" and np.load(data).dtype == np.int8:
        m = read_tflite(model_file)
        q = m.tensors[m.inputs[0]].quant
        real = tmp / f"{model}_real.npy"
        np.save(real, ((np.load(data).astype(np.float64) - q.zp) * q.s).astype(np.float32))
        data = real
    (tmp / f"{model}_16x8.tflite").write_bytes(convert(model_file.read_bytes())[0])
    out = {}
    for prec, f in (("int8", model_file), ("16x8", tmp / f"{model}_16x8.tflite")):
        c = {**cfg, "model": str(f), "verify": str(data)}
        c.pop("out", None)
        out[prec] = tmp / f"{model}_{prec}.yaml"
        out[prec].write_text(yaml.safe_dump(c), encoding="utf-8")
    return out


def measure(models: list[str], boards: list[str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="edgecc-16x8-") as d:
        tmp = Path(d)
        for model in models:
            configs = _configs(model, tmp)
            for board in boards:
                for prec, config in configs.items():
                    job = edgecc_run(config, board, tmp / f"out_{model}_{board}_{prec}")
                    r = {**row(board, model, job), "precision": prec}
                    rep = job["report"] or {}
                    r["tflm_bit_exact"] = rep.get("verification", {}).get("tflm_bit_exact")
                    rows.append(r)
                    print(f"{model} {board} {prec}: {r.get('status')} {fmt(r.get('total_instructions'))} instr, "
                          f"arena {fmt(r.get('arena_bytes'))}", flush=True)
    return rows


def render(doc: dict[str, Any]) -> str:
    h = doc["header"]
    lines = ["# 16x8 (int16 activations) against int8: the MLPerf Tiny files", "",
             f"Measured {h['date_utc']} on {h['machine']['cpu_model']} ({h['machine']['nproc']} cores), edgecc "
             f"{h['edgecc']['version']} at {(h['edgecc']['git_commit'] or '?')[:12]}. Re-run: "
             "`.venv/bin/python bench/mlperf_16x8.py`.", "",
             "The 16x8 file is the int8 file with every activation int16 over the same real range (scale "
             "max(|lo|, |hi|) / 32767, zero point 0) and int64 biases (tests/models/tflite_16x8_from_int8.py); "
             f"verification on {SAMPLES} samples of each YAML's data. Instructions: sample 0, counted by the QEMU "
             "plugin. SQNR: against the file's own dequantized float twin (weights dequantized, float math), "
             "so it measures the activation grid alone. `x int8`: 16x8 instructions / int8 instructions.", "",
             "| model | board | precision | status | bit-exact | TFLM bit-exact | instructions | x int8 | arena (B) | "
             "flash (B) | SQNR (dB) | kernels |", "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    base = {(r["model"], r["board"]): r for r in doc["rows"] if r["precision"] == "int8"}
    for r in doc["rows"]:
        b = base.get((r["model"], r["board"]), {})
        ratio = (r["total_instructions"] / b["total_instructions"]) if r.get("total_instructions") and \
            b.get("total_instructions") else None
        lines.append(f"| {r['model']} | {r['board']} | {r['precision']} | {r.get('status')} | {fmt(r.get('bit_exact'))} | "
                     f"{fmt(r.get('tflm_bit_exact'))} | {fmt(r.get('total_instructions'))} | {fmt(ratio)} | "
                     f"{fmt(r.get('arena_bytes'))} | {fmt(r.get('flash_bytes'))} | {fmt(r.get('sqnr_db'), 1)} | "
                     f"{', '.join(r.get('kernels') or [])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default=",".join(INT8_MODELS))
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the committed .json")
    a = ap.parse_args(argv)
    if not a.render:
        load = os.getloadavg()
        rows = measure(a.models.split(","), a.boards.split(","))
        JSON.write_text(json.dumps({"header": header(1, load), "rows": rows}, indent=1) + "\n", encoding="utf-8")
    MD.write_text(render(json.loads(JSON.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {MD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
