"""Progress of the long steps (calibration, per-board builds, board runs) on a terminal.

The pipeline, the runner and calibration announce steps with `step(label, total)`; nothing is
shown unless the CLI turned a display on with `shown(True)` (stderr is a terminal and no
--quiet), so library use, tests and pipes stay silent. The display is rich.progress: a spinner
or a bar, done/total and the elapsed time per step, kept on screen when the step ends.
Also one-line notes (`note`: what the compiler changed in the user's model, e.g. an upgraded
opset; `warning`: what makes a run's figures suspect, e.g. saturated inputs) on stderr, above the
bars when they are drawn; `notes_shown(False)` (--quiet) silences them.
Not here: what the steps do, or any other output.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

_display: Any = None  # a rich.progress.Progress while shown(True) is active, else None
_notes = True         # False inside notes_shown(False) (--quiet)


def _noop(advance: int = 1) -> None:
    return None


@contextmanager
def step(label: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A step of the job; yields advance(n=1) to move its bar (`total` units; None: a spinner)."""
    display = _display
    if display is None:
        yield _noop
        return
    task = display.add_task(label, total=total, counted=total is not None)

    def advance(n: int = 1) -> None:
        display.advance(task, n)

    try:
        yield advance
    finally:
        done = total if total is not None else 1
        display.update(task, total=done, completed=done)
        display.stop_task(task)  # freezes the elapsed time of this step


def note(text: str, kind: str = "note") -> None:
    """Print `edgecc: KIND: TEXT` (one line; kind note or warning) on stderr, unless notes are silenced
    (--quiet)."""
    if not _notes:
        return
    line = f"edgecc: {kind}: {text}"
    if _display is not None:  # rich keeps the live bars below the line
        _display.console.print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        print(line, file=sys.stderr)


def warning(text: str) -> None:
    """Print `edgecc: warning: TEXT` (one line) on stderr: something in the run makes its figures
    suspect (e.g. input saturation); silenced with the notes (--quiet: the report still says it)."""
    note(text, "warning")


def show_notes(notes: Iterable[str]) -> None:
    """note() each of `notes`."""
    for text in notes:
        note(text)


@contextmanager
def notes_shown(enabled: bool) -> Iterator[None]:
    """Notes printed (True) or silenced (False) inside this block."""
    global _notes
    before, _notes = _notes, enabled
    try:
        yield
    finally:
        _notes = before


def wanted(quiet: bool) -> bool:
    """True when progress should be drawn: stderr is a terminal and the user did not ask for quiet."""
    return not quiet and sys.stderr.isatty()


@contextmanager
def shown(enabled: bool) -> Iterator[None]:
    """Draw the steps announced inside this block on stderr (no-op when not enabled)."""
    global _display
    if not enabled or _display is not None:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Count(ProgressColumn):
        """done/total for steps with a total, nothing for spinners."""

        def render(self, task: Any) -> Text:
            return Text(f"{task.completed:.0f}/{task.total:.0f}" if task.fields.get("counted") else "")

    progress = Progress(SpinnerColumn(finished_text="[green]✓"), TextColumn("{task.description}"), BarColumn(),
                        Count(), TimeElapsedColumn(), console=Console(stderr=True))
    with progress:
        _display = progress
        try:
            yield
        finally:
            _display = None
