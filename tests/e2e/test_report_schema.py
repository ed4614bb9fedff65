"""report.json of a real run validates against profiler/schema.json, the one documented schema."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.needs_gcc
def test_host_report_matches_schema(tmp_path: Path) -> None:
    from toolchain.cli import main

    out = tmp_path / "out"
    assert main(["run", str(ROOT / "examples/digits/pipeline.yaml"), "--board", "host", "--out", str(out), "--quiet"]) == 0
    schema = json.loads((ROOT / "profiler/schema.json").read_text())
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, schema)
    assert report["cost_unit"] == "us" and report["verification"]["bit_exact"] is True


def test_schema_rejects_a_report_without_ops() -> None:
    schema = json.loads((ROOT / "profiler/schema.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"schema_version": "1.0"}, schema)
