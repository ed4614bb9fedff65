"""The front door under a seeded mutation fuzzer (issue 12 item 5): damaged ONNX (float and QDQ),
TFLite, YAML and data files made from the repository's own inputs must each end in exit 0 or in
exit 2 with one line naming the file, never a traceback, an internal error or a hang, and leave
nothing behind (tests/fuzz/fuzz_driver.py judges each case).

Cases per kind: 120 by default, 600 with EDGECC_SLOW=1, or EDGECC_FUZZ_CASES=N. Seeds 0..N-1; the
outside campaign (bench/fuzz_campaign.py) uses other seeds. Reproduce one case with
`python tests/fuzz/fuzz_driver.py KIND SEED 1`.
"""
from __future__ import annotations

import os

import pytest
from fuzz_driver import KINDS, run_case


def _cases() -> int:
    if os.environ.get("EDGECC_FUZZ_CASES"):
        return int(os.environ["EDGECC_FUZZ_CASES"])
    return 600 if os.environ.get("EDGECC_SLOW") == "1" else 120


@pytest.mark.parametrize("kind", KINDS)
def test_damaged_inputs_end_in_exit_0_or_one_line_exit_2(kind, tmp_path, need_board):
    need_board("host")
    verdicts = [run_case(kind, seed, tmp_path, timeout_s=60.0) for seed in range(_cases())]
    bad = [v for v in verdicts if v.problems]
    refused = sum(v.code == 2 for v in verdicts)
    assert refused >= len(verdicts) // 5, f"only {refused} of {len(verdicts)} damaged {kind} inputs refused: " \
                                          "the mutators no longer reach the door"
    assert not bad, f"{len(bad)} of {len(verdicts)} {kind} cases broke the front door:\n" + "\n".join(
        f"  seed {v.seed}: exit {v.code}, {'; '.join(v.problems)} | {v.first_line[:200]}" for v in bad[:10])


def _campaign_failures() -> list[tuple[str, int]]:
    import json
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "bench" / "results" / "fuzz_campaign.json"
    return [(f["kind"], f["seed"]) for f in json.loads(doc.read_text())["failures"]]


@pytest.mark.parametrize("kind, seed", _campaign_failures())
def test_cases_the_campaign_found_stay_fixed(kind, seed, tmp_path, need_board):
    """Every case bench/fuzz_campaign.py found broken (bench/results/fuzz_campaign.json), with a full build."""
    need_board("host")
    v = run_case(kind, seed, tmp_path, timeout_s=60.0, fast=False)
    assert not v.problems, f"{kind} seed {seed}: exit {v.code}, {'; '.join(v.problems)} | {v.first_line}"
