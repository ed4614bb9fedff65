"""Boards as data: load `boards.yaml` entries into validated `Target` records.

Public API: `load_target`, `list_targets`, the `Target` data types and the error classes.
Building (`targets.build`) and running (`targets.qemu`) live in their own modules and are not
imported here, so importing `targets` stays cheap and pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
    """The repository's boards.yaml (the package is installed editable, so it sits next to it)."""
    return Path(__file__).resolve().parent.parent / "boards.yaml"


def _read_boards(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise BoardError(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise BoardError(f"{path.name}: invalid YAML{where}: {getattr(e, 'problem', e)}") from None
    boards = doc.get("boards") if isinstance(doc, dict) else None
    if not isinstance(boards, dict) or not boards:
        raise BoardError(f"{path.name}: expected a top-level 'boards:' mapping of board name -> fields")
    return boards


def load_target(name: str, path: Path | str | None = None) -> Target:
    """Load and validate board `name` from boards.yaml (default: the repo's).

    Raises BoardError: unknown board (the message lists the known ones), bad YAML or a bad field.
    """
    p = Path(path) if path is not None else default_boards_path()
    boards = _read_boards(p)
    if name not in boards:
        raise BoardError(f"{p.name}: unknown board '{name}'; known boards: {', '.join(sorted(boards))}")
    return target_from_mapping(name, boards[name], source=p.name)


def list_targets(path: Path | str | None = None) -> list[Target]:
    """All boards in boards.yaml, validated, in file order. Raises BoardError on the first bad entry."""
    p = Path(path) if path is not None else default_boards_path()
    return [target_from_mapping(n, d, source=p.name) for n, d in _read_boards(p).items()]
