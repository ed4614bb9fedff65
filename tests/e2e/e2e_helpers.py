"""Helpers shared by the tests/e2e modules (paths of the digits example, the Job record)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DIGITS = REPO / "examples" / "digits"
DIGITS_YAML = DIGITS / "pipeline.yaml"
EXPECTED_COUNTS = Path(__file__).resolve().parent / "expected_counts.json"


@dataclass(frozen=True)
class Job:
    """One finished edgecc job: CLI result, its OUT folder and the parsed report (None if absent)."""

    code: int
    out_text: str
    err: str
    out: Path
    report: dict[str, Any] | None


def leftovers(out: Path) -> list[str]:
    """Temporary or backup folders the CLI left beside OUT (`.<name>.tmp-*`, `.<name>.old`)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def finish(res, out: Path) -> Job:
    rj = out / "report.json"
    return Job(res.code, res.out, res.err, out, json.loads(rj.read_text()) if rj.is_file() else None)
