"""Boards as data: load `boards.yaml` entries into validated `Target` records.

Public API: `load_target`, `list_targets`, the `Target` data types and the error classes.
Building (`targets.build`) and running (`targets.qemu`) live in their own modules and are not
imported here, so importing `targets` stays cheap and pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from targets.boards_file import BoardsFile, read_boards_file
from targets.errors import BoardError, BuildError, CompileError, RunError, TargetError
from targets.target import ISA, MemoryMap, MemoryRegion, RunKind, RunSpec, Target, TimeSource, target_from_mapping

__all__ = [
    "ISA",
    "BoardError",
    "BuildError",
    "CompileError",
    "MemoryMap",
    "MemoryRegion",
    "RunError",
    "RunKind",
    "RunSpec",
    "Target",
    "TargetError",
    "TimeSource",
    "default_boards_path",
    "list_targets",
    "load_target",
]


def default_boards_path() -> Path:
    """The package's own boards.yaml (package data beside this file; in the source tree a link to the
    repository's boards.yaml)."""
    return Path(__file__).resolve().parent / "boards.yaml"


def _label(path: Path) -> str:
    """A user's boards file as messages name it: as given ("./x.yaml" for a bare name, so it never
    reads as the package's own boards.yaml), its last 160 characters at most."""
    text = str(path) if path.parent != Path() else f"./{path}"
    return text if len(text) <= 160 else "..." + text[-157:]


def _boards(path: Path | str | None, extra: Path | str | None) -> dict[str, tuple[Any, BoardsFile]]:
    """name -> (raw fields, the file it comes from): the default file (or `path`), then `extra`,
    whose boards add to or replace (whole entries) those of the first."""
    p = Path(path) if path is not None else default_boards_path()
    files = [read_boards_file(p, p.name if path is None else _label(p))]
    if extra is not None:
        files.append(read_boards_file(Path(extra), _label(Path(extra))))
    return {name: (raw, f) for f in files for name, raw in f.boards.items()}


def _target(name: str, raw: Any, f: BoardsFile) -> Target:
    return target_from_mapping(name, raw, source=f.label, line_of=f.line_of)


def load_target(name: str, path: Path | str | None = None, extra: Path | str | None = None) -> Target:
    """Load and validate board `name` from boards.yaml (default: the package's) or from `extra`, a
    user's boards file in the same schema whose boards add to or override (by name) the others.

    Raises BoardError: unknown board (the message lists the known ones), bad YAML or a bad field
    (`FILE:LINE: board 'x': field 'y': why`).
    """
    boards = _boards(path, extra)
    if name not in boards:
        files = " and ".join(dict.fromkeys(f.label for _, f in boards.values()))
        raise BoardError(f"{files}: unknown board '{name}'; known boards: {', '.join(sorted(boards))}")
    return _target(name, *boards[name])


def list_targets(path: Path | str | None = None, extra: Path | str | None = None) -> list[Target]:
    """All boards, validated, in file order (`extra`'s new boards last, an overridden board where
    it was). Raises BoardError on the first bad entry."""
    return [_target(n, raw, f) for n, (raw, f) in _boards(path, extra).items()]
