"""Subprocess side of test_vs_tflm.py: run single-op .tflite models in the TFLM Python interpreter.

Usage: python _tflm_runner.py <dir>. For every <dir>/<case>.tflite, reads <case>.in<k>.npy inputs
and writes <case>.out.npy (and <case>.out<k>.npy for outputs k >= 1), or <case>.err with the exception text. A process of its own, because
a failing TFLM CHECK aborts the process."""
import sys
from pathlib import Path

import numpy as np
from tflite_micro import runtime

for model in sorted(Path(sys.argv[1]).glob("*.tflite")):
    case = model.with_suffix("")
    try:
        interp = runtime.Interpreter.from_bytes(model.read_bytes(), arena_size=1 << 20)
        for k, f in enumerate(sorted(case.parent.glob(case.name + ".in*.npy"))):
            interp.set_input(np.load(f), k)
        interp.invoke()
        np.save(str(case) + ".out.npy", interp.get_output(0))
        k = 1
        while True:  # further outputs (SPLIT, UNPACK): <case>.out<k>.npy
            try:
                interp.get_output_details(k)
            except Exception:  # noqa: BLE001 - no output k
                break
            np.save(f"{case}.out{k}.npy", interp.get_output(k))
            k += 1
    except Exception as e:  # noqa: BLE001 - reported back to the test verbatim
        Path(str(case) + ".err").write_text(repr(e))
