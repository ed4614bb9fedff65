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


def assert_rejected(res, out, *needles: str, max_lines: int = 1) -> str:
    """Exit 2, one error line (up to `max_lines`: a summary line, then indented lines) containing
    every needle, no traceback, nothing written. Returns the error text."""
    assert "Traceback" not in res.err, f"traceback instead of a one-line error:\n{res.err}"
    assert res.code == 2, f"exit {res.code}, expected 2; stderr:\n{res.err}"
    lines = res.err.strip().splitlines()
    assert 1 <= len(lines) <= max_lines, f"expected at most {max_lines} error line(s), got {len(lines)}:\n{res.err}"
    assert lines[0].startswith("edgecc: error: "), lines[0]
    assert all(ln.startswith("  ") for ln in lines[1:]), f"continuation lines not indented:\n{res.err}"
    line = "\n".join(lines)
    for n in needles:
        assert n in line, f"{n!r} not in the error: {line}"
    assert res.out == "", f"stdout should be empty on bad input: {res.out!r}"
    assert not out.exists(), f"OUT {out} was written"
    if out.parent.exists():
        assert leftovers(out) == [], f"left beside OUT: {leftovers(out)}"
    return line
