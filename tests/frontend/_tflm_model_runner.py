"""Subprocess side of test_tflite.py: run whole .tflite models in the TFLM Python interpreter.

Usage: python _tflm_model_runner.py <dir> <model.tflite>... For each model, reads <dir>/<stem>.in.npy
(int8 [S, *input shape], single-input models) and writes <dir>/<stem>.npz with "out" (the output of
every sample, stacked) and "t<index>" (every operator output tensor of sample 0, for per-layer
comparison), or <dir>/<stem>.err with the exception text. A process of its own because a failing
TFLM check aborts the process."""
import sys
from pathlib import Path

import numpy as np
from tflite_micro import runtime

out_dir = Path(sys.argv[1])
for model in map(Path, sys.argv[2:]):
    try:
        data = model.read_bytes()
        interp = runtime.Interpreter.from_bytes(data, arena_size=1 << 22,
                                                intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
        ops = runtime.convert_bytearray_to_object(data).subgraphs[0].operators
        layer_outputs = sorted({int(o) for op in ops for o in op.outputs})
        outs, layers = [], {}
        for s, x in enumerate(np.load(out_dir / f"{model.stem}.in.npy")):
            interp.set_input(x, 0)
            interp.invoke()
            outs.append(interp.get_output(0).copy())
            if s == 0:
                layers = {f"t{i}": np.array(interp.GetTensor(i, 0)["tensor_data"]) for i in layer_outputs}
        np.savez(out_dir / f"{model.stem}.npz", out=np.stack(outs), **layers)
    except Exception as e:  # noqa: BLE001 - reported back to the test verbatim
        (out_dir / f"{model.stem}.err").write_text(repr(e))
