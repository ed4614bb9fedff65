"""Issue 3 on the MLPerf Tiny float VWW MobileNetV1-0.25 (300 VWW JPEGs): edgecc's own INT8 PTQ,
bit-exact on every board, top-1 agreement and SQNR, costs, the M4's DSP kernels (the checks:
tests/e2e/mlperf_float_checks.py; ResNet-8: tests/e2e/test_mlperf_float.py)."""
from __future__ import annotations

import pytest
from mlperf_float_checks import *  # noqa: F403 - the checks and their fixtures, collected here


@pytest.fixture(params=["vww_mobilenet_float"])
def model(request):
    return request.param
