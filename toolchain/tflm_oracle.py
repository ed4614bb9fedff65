"""The TFLM oracle of a .tflite run: the tflite-micro Python interpreter (TFLM's reference kernels)
run on the verification samples in a subprocess, its outputs compared with the board's, and, when
any output differs, the first op whose output differs found by running TFLM and our interpreter
layer by layer on the first differing sample.

A subprocess because a failing TFLM check aborts its process (e.g. the reference Softmax on wide
rows, BL-29). Owns only this comparison; the run itself is toolchain.runner. The module doubles as
the subprocess script: `python -m toolchain.tflm_oracle JOB_DIR` (job.npz in, result.npz out).
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from toolchain.io_dtypes import from_reference, to_default
from toolchain.ir import Graph

TIMEOUT_S = 600


def available() -> bool:
    """Whether the tflite-micro package (the TFLM Python interpreter) can be imported."""
    return importlib.util.find_spec("tflite_micro") is not None


def reference_name() -> str:
    try:
        from importlib.metadata import version

        v = version("tflite-micro")
    except Exception:  # noqa: BLE001 - metadata missing in odd installs: the name alone is enough
        v = "?"
    return f"tflite-micro {v} reference kernels (Python interpreter, in a subprocess)"


def run_tflm(model: Path, inputs: list[np.ndarray], layers_of: int | None = None) -> dict[str, Any]:
    """Run TFLM on every sample. inputs: one [S, ...] array per model input, in the file's input order.
    Returns {"outputs": [[S, ...] per model output], "layers": {tensor index: array of sample
    `layers_of`}} or {"error": text} when TFLM fails or aborts."""
    with tempfile.TemporaryDirectory(prefix="edgecc-tflm-") as tmp:
        job = Path(tmp)
        np.savez(job / "job.npz", layers_of=-1 if layers_of is None else layers_of,
                 **{f"in{k}": a for k, a in enumerate(inputs)})
        (job / "model.tflite").write_bytes(Path(model).read_bytes())
        try:
            proc = subprocess.run([sys.executable, "-m", "toolchain.tflm_oracle", str(job)], capture_output=True,
                                  text=True, timeout=TIMEOUT_S, check=False,
                                  cwd=str(Path(__file__).resolve().parents[1]))
        except subprocess.TimeoutExpired:
            return {"error": f"TFLM did not finish within {TIMEOUT_S} s"}
        if proc.returncode != 0 or not (job / "result.npz").is_file():
            lines = (proc.stdout + "\n" + proc.stderr).strip().splitlines()
            why = [ln.strip() for ln in lines if ".cc:" in ln or "failed to prepare" in ln] or lines[-2:]
            return {"error": f"TFLM failed (exit {proc.returncode}): {' | '.join(why)}"[:500]}
        with np.load(job / "result.npz") as r:
            outs = [r[f"out{k}"] for k in range(int(r["n_out"]))]
            layers = {int(k[1:]): r[k] for k in r.files if k.startswith("t")}
    return {"outputs": outs, "layers": layers}


def _tensor_index(model: Path) -> dict[str, int]:
    from toolchain.frontend.tflite_reader import read_tflite

    return {t.name: i for i, t in enumerate(read_tflite(Path(model)).tensors) if t is not None}


def first_difference(graph: Graph, model: Path, feeds: dict[str, np.ndarray], sample: int,
                     inputs: list[np.ndarray]) -> dict[str, Any] | None:
    """Run TFLM (all tensors preserved) and our interpreter on one sample and return the first op, in
    execution order, whose output differs: index, name, op type, tensor, differing elements and the
    max abs difference (in the tensor's units: LSB for int8). None when every layer agrees."""
    from toolchain.interpret import interpret  # not at module level: the subprocess side stays light

    res = run_tflm(model, [a[sample:sample + 1] for a in inputs], layers_of=0)
    if "error" in res:
        return {"error": res["error"]}
    index = _tensor_index(model)
    env = interpret(graph, feeds, keep_all=True)
    for k, node in enumerate(graph.nodes):
        t = node.outputs[0]
        if t not in index or index[t] not in res["layers"]:
            continue  # tensors our frontend added (views, split ops) have no TFLM twin
        ours, theirs = env[t], from_reference(graph, t, res["layers"][index[t]]).reshape(env[t].shape)
        if not np.array_equal(ours, theirs):
            d = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
            return {"op_index": k, "name": node.name, "op_type": node.op.value, "source": node.source, "tensor": t,
                    "sample": sample, "elements": int(np.count_nonzero(d)), "max_abs_diff": float(d.max())}
    return None


def tflm_verification(graph: Graph, model: Path, inputs: dict[str, np.ndarray],
                      got: list[np.ndarray] | None, real: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """report.verification fields of a .tflite run: tflm_bit_exact (the board's outputs, or our
    interpreter's when the run produced none, vs TFLM on every sample) and a `tflm` section naming the
    reference and, on a difference, the first op whose output differs. inputs: the samples as the graph
    holds them; real: the float32 data they were quantized from (TFLM's feed for a float32 input of
    the file that io_dtype made int8; defaults to `inputs`)."""
    section: dict[str, Any] = {"reference": reference_name(), "compared": "board outputs" if got is not None
                               else "no board outputs", "mismatches": None, "first_difference": None, "error": None}
    if not available():
        section["error"] = "tflite-micro is not installed (pip install tflite-micro)"
        return {"tflm_bit_exact": None, "tflm": section}
    if got is None:
        section["error"] = "the board produced no outputs"
        return {"tflm_bit_exact": None, "tflm": section}
    real = real or inputs  # TFLM takes the file's dtypes (uint8; float32 where io_dtype moved the Quantize out)
    ordered = [to_default(graph, n, inputs[n], real[n]) for n in graph.inputs]
    res = run_tflm(model, ordered)
    if "error" in res:
        section["error"] = res["error"]
        return {"tflm_bit_exact": None, "tflm": section}
    theirs = [from_reference(graph, o, b) for o, b in zip(graph.outputs, res["outputs"], strict=True)]
    diffs = [np.abs(a.astype(np.float64) - b.reshape(a.shape).astype(np.float64))
             for a, b in zip(got, theirs, strict=True)]
    count = int(sum(np.count_nonzero(d) for d in diffs))
    if count:
        bad = [np.nonzero(d.reshape(len(d), -1).any(axis=1))[0] for d in diffs]
        sample = int(min(b[0] for b in bad if len(b)))
        section["mismatches"] = {"count": count, "first_sample": sample,
                                 "max_abs_diff": float(max(d.max() for d in diffs))}
        feeds = {n: inputs[n][sample] for n in graph.inputs}
        section["first_difference"] = first_difference(graph, model, feeds, sample, ordered) or \
            {"note": "TFLM and the numpy interpreter agree on every layer: the board differs from both"}
    return {"tflm_bit_exact": count == 0, "tflm": section}


def _main(job: Path) -> int:
    """Subprocess side: job.npz (in0.., layers_of) + model.tflite -> result.npz (out0.., n_out, t<i>)."""
    from tflite_micro import runtime

    data = (job / "model.tflite").read_bytes()
    with np.load(job / "job.npz") as j:
        inputs = [j[f"in{k}"] for k in range(sum(f.startswith("in") for f in j.files))]
        layers_of = int(j["layers_of"])
    # every tensor kept for the per-layer comparison (the keyword is spelled so in tflite-micro)
    kw = {"intrepreter_config": runtime.InterpreterConfig.kPreserveAllTensors} if layers_of >= 0 else {}
    interp = runtime.Interpreter.from_bytes(data, arena_size=1 << 24, **kw)
    n_out = len(runtime.convert_bytearray_to_object(data).subgraphs[0].outputs)
    outs: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    layers: dict[str, np.ndarray] = {}
    for s in range(len(inputs[0])):
        for k, a in enumerate(inputs):
            interp.set_input(a[s], k)
        interp.invoke()
        for k in range(n_out):
            outs[k].append(interp.get_output(k).copy())
        if s == layers_of:
            ops = runtime.convert_bytearray_to_object(data).subgraphs[0].operators
            for i in sorted({int(o) for op in ops for o in op.outputs}):
                layers[f"t{i}"] = np.array(interp.GetTensor(i, 0)["tensor_data"])
    np.savez(job / "result.npz", n_out=n_out, **{f"out{k}": np.stack(o) for k, o in enumerate(outs)}, **layers)
    return 0


if __name__ == "__main__":
    sys.exit(_main(Path(sys.argv[1])))
