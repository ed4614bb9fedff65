"""Make the repository root importable (`import toolchain`) however pytest is invoked."""
import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# ---- shared fixtures of the op tests of issue 4 --------------------------------------------------
import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.append(str(_HERE))

SLOW = os.environ.get("EDGECC_SLOW") == "1"


@pytest.fixture(scope="session")
def portable_lib(tmp_path_factory):
    """Every portable kernel template compiled into one host shared library (ctypes)."""
    if shutil.which("gcc") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("host gcc not found (required when CI=true)")
        pytest.skip("host gcc not found")
    from _c_graph import build_portable_library

    return build_portable_library(tmp_path_factory.mktemp("ecc_ops_lib"))


@pytest.fixture(scope="session")
def tflm_cases(tmp_path_factory):
    """Every generated single-op .tflite of tflite_op_cases (the full sweep under EDGECC_SLOW=1), run
    through the TFLM Python interpreter in one subprocess. name -> (path, inputs, output or error text)."""
    pytest.importorskip("tflite_micro", reason="tflite-micro (the TFLM oracle) is not installed")
    from tflite_op_cases import all_cases

    from _op_checks import run_tflm

    return run_tflm(all_cases(full=SLOW), tmp_path_factory.mktemp("tflm_ops"))
