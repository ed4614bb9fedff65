"""Issue 6 point 6: `kernels: portable` (YAML) / `--kernels portable` forces the portable C kernels
on a board whose kernel_preference has ISA variants, the baseline of bench/mlperf_int8.py. On the
digits example on mps2-an386 (Cortex-M4, dsp > portable): every op runs a `portable` kernel, the run
stays bit-exact, its outputs equal the default (dsp) build's byte for byte, and it costs more
instructions than the dsp build (else the option would be ignored). A value other than auto or
portable is bad input: one `edgecc: error:` line naming the file and the key, exit 2."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from e2e_helpers import DIGITS, DIGITS_YAML, finish, leftovers

BOARD = "mps2-an386"


def _yaml(tmp: Path, **keys) -> Path:
    """A copy of the digits pipeline.yaml with absolute paths and `keys` set."""
    raw = yaml.safe_load(DIGITS_YAML.read_text())
    for key in ("model", "calibration", "verify"):
        raw[key] = str((DIGITS / raw[key]).resolve())
    raw.update(keys)
    path = tmp / "pipeline.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.fixture(scope="module")
def portable_job(tmp_path_factory, edgecc, need_board):
    need_board(BOARD)
    tmp = tmp_path_factory.mktemp("kernels-portable")
    out = tmp / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("EDGECC_DEBUG_FAULT_AT_OP", raising=False)
        res = edgecc("run", _yaml(tmp, kernels="portable"), "--board", BOARD, "--out", out, "--quiet")
    return finish(res, out)


def test_portable_kernels_only_and_bit_exact(portable_job, digits_run):
    job = portable_job
    assert job.report is not None, f"no report.json; exit {job.code}; stderr:\n{job.err}"
    assert job.code == 0 and job.report["status"] == "pass", f"exit {job.code}; stderr:\n{job.err}"
    kernels = [op["kernel"] for op in job.report["ops"]]
    assert len(kernels) == 10 and set(kernels) == {"portable"}, kernels
    v = job.report["verification"]
    assert v["bit_exact"] is True and v["samples"] == 32 and v["mismatches"] is None

    auto = digits_run(BOARD)  # the same model and board with the default `kernels: auto`
    assert auto.code == 0
    assert any(op["kernel"].startswith("dsp") for op in auto.report["ops"])
    assert (job.out / "fw" / "outputs.bin").read_bytes() == (auto.out / "fw" / "outputs.bin").read_bytes()
    # The dsp kernels save instructions on this model (109,356 vs 393,408 when this test was written).
    assert auto.report["total_instructions"] * 2 < job.report["total_instructions"]


def test_flag_overrides_the_yaml(tmp_path):
    from toolchain.config import load_config

    cfg = _yaml(tmp_path, kernels="portable")
    assert load_config(cfg, {}).kernels == "portable"
    assert load_config(cfg, {"kernels": "auto"}).kernels == "auto"
    assert load_config(DIGITS_YAML, {}).kernels == "auto"  # the default


@pytest.mark.parametrize("where", ["yaml", "flag"])
def test_bad_value_is_a_one_line_error(tmp_path, edgecc, where):
    out = tmp_path / "out"
    if where == "yaml":
        res = edgecc("run", _yaml(tmp_path, kernels="dsp"), "--out", out)
    else:
        res = edgecc("run", DIGITS_YAML, "--kernels", "fast", "--out", out)
    assert res.code == 2, (res.code, res.err)
    assert "Traceback" not in res.err and res.out == ""
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    bad = "'dsp'" if where == "yaml" else "'fast'"
    assert lines[0].startswith("edgecc: error: ") and "kernels must be auto or portable" in lines[0]
    blamed = "pipeline.yaml" if where == "yaml" else "--kernels"  # a flag's value blames the flag
    assert bad in lines[0] and blamed in lines[0], lines[0]
    assert not out.exists() and leftovers(out) == []
