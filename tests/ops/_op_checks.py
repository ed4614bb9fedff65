"""Checks the op tests of issue 4 share: a generated .tflite through our frontend and interpreter
against TFLM, and through the portable C kernels (ctypes, the code generator's argument lists)
against our interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolchain.frontend.tflite import load_tflite
from toolchain.interpret import interpret


def run_tflm(cases: dict[str, tuple[bytes, list[np.ndarray]]], folder: Path) -> dict:
    """Run generated .tflite cases (name -> (model bytes, [inputs])) through the TFLM Python
    interpreter in one subprocess (a failing TFLM CHECK aborts its process). Returns name -> (path,
    inputs, output) where output is TFLM's array, a list of arrays for several outputs, or the error
    text. An op's test module builds its own cases and calls this (no central case list)."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    for name, (model, inputs) in cases.items():
        (folder / f"{name}.tflite").write_bytes(model)
        for k, arr in enumerate(inputs):
            np.save(folder / f"{name}.in{k}.npy", arr)
    runner = Path(__file__).resolve().parent / "_tflm_runner.py"
    proc = subprocess.run([sys.executable, str(runner), str(folder)], capture_output=True, text=True, timeout=300,
                          check=False)
    if proc.returncode != 0:
        pytest.fail(f"TFLM runner died (rc {proc.returncode}): {proc.stderr[-2000:]}")
    out = {}
    for name, (_model, inputs) in cases.items():
        err = folder / f"{name}.err"
        if err.exists():
            out[name] = (folder / f"{name}.tflite", inputs, err.read_text())
            continue
        extra = sorted(folder.glob(f"{name}.out[0-9]*.npy"), key=lambda p: int(p.name.rsplit(".out", 1)[1][:-4]))
        first = np.load(folder / f"{name}.out.npy")
        out[name] = (folder / f"{name}.tflite", inputs, [first, *map(np.load, extra)] if extra else first)
    return out


def check_tflm_and_c(tflm_cases: dict, portable_lib, prefix: str, min_cases: int = 1) -> int:
    """Every case whose name starts with `prefix`: interpreter == TFLM and C == interpreter, bit for
    bit. Returns the number of cases checked; fails listing every bad case."""
    from _c_graph import run_graph_c

    bad, n = [], 0
    for name, (path, inputs, want) in sorted(tflm_cases.items()):
        if not name.startswith(prefix):
            continue
        n += 1
        if isinstance(want, str):
            bad.append(f"{name}: TFLM error {want[:200]}")
            continue
        g = load_tflite(path)
        feeds = dict(zip(g.inputs, inputs, strict=True))
        wants = want if isinstance(want, list) else [want]
        if len(wants) != len(g.outputs):
            bad.append(f"{name}: {len(g.outputs)} outputs, TFLM gave {len(wants)}")
            continue
        ref, c_out = interpret(g, feeds), run_graph_c(portable_lib, g, feeds)
        for k, (out, w) in enumerate(zip(g.outputs, wants, strict=True)):
            got = ref[out]
            w = w.reshape(got.shape)
            if not np.array_equal(got, w):
                d = np.abs(got.astype(np.float64) - w.astype(np.float64))
                bad.append(f"{name}[{k}]: interpreter vs TFLM: {np.count_nonzero(d)} of {got.size} differ, max {d.max()}")
            if not np.array_equal(c_out[out], got):
                bad.append(f"{name}[{k}]: C vs interpreter: {np.count_nonzero(c_out[out] != got)} of {got.size} differ")
    assert not bad, "\n".join(bad)
    assert n >= min_cases, f"only {n} cases named {prefix}*"
    return n
