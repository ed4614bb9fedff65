"""Models quantized by other tools (issue 13): every QDQ ONNX file of ../shared through `edgecc run`
with its DEFAULT settings, compared with onnxruntime on the QDQ file itself, and its cost against the
same network quantized by our own PTQ on the same board.

    .venv/bin/python bench/qdq_models.py                               # 4 boards, 2 jobs in parallel
    .venv/bin/python bench/qdq_models.py --boards mps2-an386 --files kws_dscnn_qdq.onnx

Per (file, board):
- exactness: `ort_max_abs_diff_lsb` / `ort_exact_fraction` of report.json (the board's int8 outputs
  against onnxruntime, ORT_DISABLE_ALL: QDQ as float simulation, on every output of every sample),
  `ort_default_*` (against ORT's default session: its fused integer QLinear kernels) and
  bit-exactness with our interpreter;
- cost: exact instructions of sample 0 under QEMU (host: µs), and the kernels that ran;
- the PTQ twin (Arm boards): the float network behind the QDQ file through our own PTQ, calibrated
  on the same samples, on the same board; the ratio QDQ / PTQ instructions (goal: at most 1.25).
  The float network: for the torchvision QDQ files the float export they were quantized from
  (`tv_mobilenet_v2_035_legacy_op13.onnx`); for kws_dscnn_qdq.onnx the QDQ graph with every
  DequantizeLinear of a constant replaced by its float value and every QuantizeLinear ->
  DequantizeLinear pair of an activation replaced by a Clip to its range (`float_core`).
Inputs: the `.inputs.npy` of the exported corpus (8 samples); kws_dscnn_qdq: 16 seeded uniform
samples over its input's int8 range (seed 0). Writes bench/results/qdq_models.json and .md.
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

SHARED = REPO.parent / "shared" / "models"
FILES = {  # QDQ file -> (inputs, float network for the PTQ twin or None = float_core of the file)
    "kws_dscnn_qdq.onnx": (None, None),
    "tv_mobilenet_v2_035_qdq_s8s8_perchannel.onnx": ("tv_mobilenet_v2_035_qdq_s8s8_perchannel.inputs.npy",
                                                     "tv_mobilenet_v2_035_legacy_op13.onnx"),
    "tv_mobilenet_v2_035_qdq_u8u8_pertensor.onnx": ("tv_mobilenet_v2_035_qdq_u8u8_pertensor.inputs.npy",
                                                    "tv_mobilenet_v2_035_legacy_op13.onnx"),
}
BOARDS = ["host", "mps2-an386", "mps3-an547", "aarch64"]
PTQ_BOARDS = ("mps2-an386", "mps3-an547", "aarch64")


def model_path(name: str) -> Path:
    """A shared model file by name (mlperf_tiny or exported)."""
    for folder in ("mlperf_tiny", "exported"):
        if (SHARED / folder / name).is_file():
            return SHARED / folder / name
    raise FileNotFoundError(name)


def float_core(src: Path, dst: Path) -> Path:
    """The float network of a QDQ ONNX file, saved at dst: DequantizeLinear of a constant -> that
    constant's float value (x - zero_point) * scale (ONNX DequantizeLinear-13, per-axis included);
    QuantizeLinear -> DequantizeLinear on an activation -> Clip to the pair's real range (what the
    pair does to a float value besides rounding: a zero point of -128 makes it a ReLU). Other nodes
    are kept as written. Only int8 activations and opset >= 11 (Clip bounds as inputs)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(src))
    g = m.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    rename: dict[str, str] = {}
    new_inits, keep = [], []
    producer = {o: n for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            q = inits[n.input[0]].astype(np.float64)
            s = inits[n.input[1]].astype(np.float64)
            z = inits[n.input[2]].astype(np.float64) if len(n.input) > 2 and n.input[2] else np.zeros_like(s)
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
            if s.ndim == 1 and q.ndim > 1:
                shape = [1] * q.ndim
                shape[axis] = -1
                s, z = s.reshape(shape), z.reshape(shape)
            new_inits.append(numpy_helper.from_array(((q - z) * s).astype(np.float32), n.output[0]))
        elif n.op_type == "DequantizeLinear" and producer.get(n.input[0]) is not None \
                and producer[n.input[0]].op_type == "QuantizeLinear":
            # the pair saturates to its int8 range: that is the network's activation (a zero point
            # of -128 is a ReLU), kept as a Clip for our PTQ to fuse
            qn = producer[n.input[0]]
            s_, z_ = float(inits[qn.input[1]]), int(inits[qn.input[2]])
            lo, hi = f"{n.output[0]}_clip_min", f"{n.output[0]}_clip_max"
            new_inits += [numpy_helper.from_array(np.array((-128 - z_) * s_, np.float32), lo),
                          numpy_helper.from_array(np.array((127 - z_) * s_, np.float32), hi)]
            keep.append(onnx.helper.make_node("Clip", [qn.input[0], lo, hi], [n.output[0]], name=f"{n.output[0]}_clip"))
        elif n.op_type == "QuantizeLinear":
            continue  # its DequantizeLinear consumers read its input instead
        else:
            keep.append(n)
    for n in keep:
        for i, name in enumerate(n.input):
            while name in rename:
                name = rename[name]
            n.input[i] = name
    for o in g.output:
        while o.name in rename:
            o.name = rename[o.name]
    del g.node[:]
    g.node.extend(keep)
    needed = {name for n in keep for name in n.input}
    kept_inits = [i for i in g.initializer if i.name in needed]
    del g.initializer[:]
    g.initializer.extend(kept_inits + new_inits)
    onnx.save(m, str(dst))
    return dst


def kws_inputs(path: Path) -> Path:
    """16 seeded uniform float samples over kws_dscnn_qdq's input int8 range (its input QuantizeLinear)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(model_path("kws_dscnn_qdq.onnx")))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear")
    s, z = float(inits[q.input[1]]), int(inits[q.input[2]])
    x = np.random.default_rng(0).uniform((-128 - z) * s, (127 - z) * s, (16, 1, 490)).astype(np.float32)
    np.save(path, x)
    return path


def jobs_for(name: str, work: Path) -> tuple[Path, Path]:
    """(YAML of the QDQ file with default settings, YAML of its PTQ twin), written under work."""
    inputs, float_name = FILES[name]
    stem = Path(name).stem
    data = kws_inputs(work / "kws_inputs.npy") if inputs is None else SHARED / "exported" / inputs
    twin = model_path(float_name) if float_name else float_core(model_path(name), work / f"{stem}_float.onnx")
    qdq_yaml, ptq_yaml = work / f"{stem}.yaml", work / f"{stem}_ptq.yaml"
    qdq_yaml.write_text(f"model: {model_path(name)}\nverify: {data}\n", encoding="utf-8")
    ptq_yaml.write_text(f"model: {twin}\ncalibration: {data}\nverify: {data}\n", encoding="utf-8")
    return qdq_yaml, ptq_yaml


def measure(name: str, board: str, kind: str, cfg: Path, work: Path, root: Path) -> dict:
    job = edgecc_run(cfg, board, work / f"out-{Path(name).stem}-{kind}-{board}", root=root)
    r = row(board, name, job)
    r["kind"] = kind
    rep = job["report"]
    if rep is not None:
        v = rep["verification"]
        r["ort_max_abs_diff_lsb"] = v.get("ort_max_abs_diff_lsb")
        r["ort_exact_fraction"] = v.get("ort_exact_fraction")
        r["ort_default_max_abs_diff_lsb"] = v.get("ort_default_max_abs_diff_lsb")
        r["ort_default_exact_fraction"] = v.get("ort_default_exact_fraction")
        r["rounding"] = rep.get("rounding") or v.get("reference")
    else:
        r["error"] = next((ln for ln in job["stderr"].splitlines() if ln.startswith("edgecc: error:")),
                          job["stderr"][-300:])
    return r


def render(doc: dict) -> str:
    h = doc["header"]
    md = ["# Models quantized by other tools (QDQ ONNX) through edgecc, default settings", "",
          f"Measured {h['date_utc']}, edgecc {h['edgecc']['version']} at {h['edgecc']['git_commit'][:12]} "
          f"({h['edgecc']['measured']}), {h['parallel_jobs']} jobs in parallel. Re-run: "
          "`.venv/bin/python bench/qdq_models.py`. What each column counts: see the script's docstring.", "",
          "ORT LSB: largest difference of the board's int8 outputs from onnxruntime over every output of every "
          "sample, float simulation (ORT_DISABLE_ALL) / default session (fused integer QLinear kernels where ORT fuses, float elsewhere); exact: "
          "fraction of output values equal, same order. Cost: instructions of sample 0 under "
          "QEMU (host: µs). PTQ twin: the same float network through our own PTQ on the same board.", "",
          "| file | board | exit | ORT LSB | exact | bit-exact | cost QDQ | cost PTQ twin | QDQ / PTQ | kernels (QDQ) |",
          "|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    ptq = {(r["model"], r["board"]): r for r in doc["rows"] if r["kind"] == "ptq"}
    for r in (r for r in doc["rows"] if r["kind"] == "qdq"):
        cost = r.get("host_us_per_inference") if r["board"] == "host" else r.get("total_instructions")
        twin = ptq.get((r["model"], r["board"]), {})
        tcost = twin.get("total_instructions")
        ratio = cost / tcost if cost and tcost else None
        md.append(f"| `{r['model']}` | {r['board']} | {r['exit_code']} | {fmt(r.get('ort_max_abs_diff_lsb'))} / "
                  f"{fmt(r.get('ort_default_max_abs_diff_lsb'))} | {fmt(r.get('ort_exact_fraction'), 4)} / "
                  f"{fmt(r.get('ort_default_exact_fraction'), 4)} | {fmt(r.get('bit_exact'))} | {fmt(cost, 1)} | "
                  f"{fmt(tcost)} | {fmt(ratio)} | {', '.join(r.get('kernels') or []) or r.get('error', '')[:80]} |")
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = file_bench_args(__doc__, BOARDS, "QDQ file", argv)
    if args.render:
        write_results(args.results, "qdq_models", None, render)
        return 0
    load0 = os.getloadavg()
    root = snapshot(args.rev) if args.rev else REPO
    work = Path(tempfile.mkdtemp(prefix="edgecc-qdq-"))
    files = args.files.split(",") if args.files else list(FILES)
    boards = args.boards.split(",")
    jobs = []
    for f in files:
        qdq, ptq = jobs_for(f, work)
        jobs += [(f, b, "qdq", qdq) for b in boards]
        jobs += [(f, b, "ptq", ptq) for b in boards if b in PTQ_BOARDS]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda j: measure(*j, work, root), jobs))
    for r in rows:
        print(f"{r['model']:<46} {r['kind']:<4} {r['board']:<11} exit {r['exit_code']} "
              f"ort_lsb {fmt(r.get('ort_max_abs_diff_lsb'))} instr {fmt(r.get('total_instructions'))}", flush=True)
    doc = {"header": header(args.jobs, load0, args.rev, root), "rows": rows}
    write_results(args.results, "qdq_models", doc, render)
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
