"""A `.tflite` build imports only what building needs (issue 17 item 2, "lean start"): no onnx or
onnxruntime (ONNX files only), no matplotlib (the PNG charts are drawn by `run`), no OR-Tools (the
CP-SAT planner only), and not the tflite_micro package (its interpreter runtime and compression
tools: reading the file needs its generated schema module alone)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VWW_INT8 = REPO.parent / "shared" / "models" / "mlperf_tiny" / "vww_mobilenet_int8.tflite"
NOT_FOR_A_TFLITE_BUILD = ("onnx", "onnxruntime", "matplotlib", "ortools", "tflite_micro", "profiler.charts")


def test_tflite_build_imports_no_onnx_matplotlib_ortools_or_tflm_runtime(tmp_path, need_board):
    need_board("host")
    if not VWW_INT8.is_file():
        pytest.skip("the MLPerf Tiny files of ../shared are not here")
    code = ("import sys\nfrom toolchain.cli import main\n"
            f"sys.argv = ['edgecc', 'build', {str(VWW_INT8)!r}, '--board', 'host', '--out', "
            f"{str(tmp_path / 'out')!r}, '--quiet']\n"
            "assert main() == 0\nprint(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, check=True).stdout
    mods = set(out.split())
    assert "toolchain.frontend.tflite" in mods and (tmp_path / "out" / "lib" / "model.c").is_file()
    assert sorted(m for m in mods if m.split(".")[0] in NOT_FOR_A_TFLITE_BUILD or m in NOT_FOR_A_TFLITE_BUILD) == []
