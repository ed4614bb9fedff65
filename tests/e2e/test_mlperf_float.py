"""Issue 3 on the MLPerf Tiny float ResNet-8 (200 CIFAR-10 images): edgecc's own INT8 PTQ, bit-exact on
every board, top-1 agreement and SQNR, costs, the M4's DSP kernels (the checks:
tests/e2e/mlperf_float_checks.py; VWW: tests/e2e/test_mlperf_float_vww.py)."""
from __future__ import annotations

import pytest
from mlperf_float_checks import *  # noqa: F403 - the checks and their fixtures, collected here


@pytest.fixture(params=["ic_resnet8_float"])
def model(request):
    return request.param
