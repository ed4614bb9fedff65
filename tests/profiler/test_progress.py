"""Progress of long steps (toolchain/progress.py): silent unless the CLI turns it on for a
terminal; when on, each step shows its label, done/total and elapsed time."""
from __future__ import annotations

import io
import sys

from toolchain import progress


def test_steps_are_silent_by_default(capsys):
    with progress.step("calibrate (3 samples)", 3) as advance:
        advance(3)
    assert capsys.readouterr() == ("", "")


def test_not_wanted_without_a_terminal_or_with_quiet(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.wanted(quiet=False)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Tty())
    assert progress.wanted(quiet=False) and not progress.wanted(quiet=True)


def test_shown_draws_labels_counts_and_elapsed_time(capsys):
    with progress.shown(True):
        with progress.step("calibrate (4 samples)", 4) as advance:
            for _ in range(4):
                advance(1)
        with progress.step("mps2-an386: compile and link"):
            pass
    err = capsys.readouterr().err
    assert "calibrate (4 samples)" in err and "4/4" in err and "mps2-an386: compile and link" in err
    assert "0:00:0" in err  # elapsed time column
    assert progress._display is None  # off again after the block
