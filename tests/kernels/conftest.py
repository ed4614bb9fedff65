import os
import shutil
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
if str(_HERE.parents[1]) not in sys.path:      # repo root, for the toolchain.ops references
    sys.path.append(str(_HERE.parents[1]))
import ecc_kernel_harness as harness  # noqa: E402


@pytest.fixture(scope="session")
def portable(tmp_path_factory):
    """The portable kernels rendered, compiled once with host gcc and loaded through ctypes."""
    if shutil.which("gcc") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("host gcc not found (required when CI=true)")
        pytest.skip("host gcc not found")
    return harness.PortableKernels(harness.build_shared(tmp_path_factory.mktemp("ecc_portable")))


@pytest.fixture(scope="session")
def fixed_point_shim(tmp_path_factory, portable):
    """ecc_fixed_point.h helpers exported over int32 arrays (built with host gcc)."""
    return harness.build_fixed_point_shim(tmp_path_factory.mktemp("ecc_fp_shim"))
