"""Reading a boards file (the package's boards.yaml, or a user's own `--boards FILE`) with the line
of every key, so a bad field is reported as `FILE:LINE: board 'x': field 'y': why`.

Owns: the file's top-level shape (`boards:` mapping of name -> fields), size and nesting limits,
duplicate keys (YAML calls them an error; PyYAML silently keeps the last one), and the
line table. Not here: the schema of a board entry (targets.target.target_from_mapping) and which
files are merged (targets.__init__).
"""

from __future__ import annotations

import copy
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from targets.errors import BoardError

MAX_BYTES = 1 << 20  # a boards file is a few KB; refuse anything that would make parsing slow
MAX_DEPTH = 16       # the schema nests 4 levels (boards / name / memory / regions / NAME / field)
Lines = Mapping[tuple[str, ...], int]


@dataclass(frozen=True)
class BoardsFile:
    """A parsed boards file: `label` names it in messages; `boards` maps name -> raw fields;
    `lines` maps a key path ("boards", name, "memory", "arena") to its 1-based line."""

    label: str
    boards: dict[str, Any]
    lines: Lines

    def line_of(self, path: tuple[str, ...]) -> int | None:
        """Line of the longest prefix of `path` that the file spells out (None: not even the board)."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return None


def _walk(node: Node, path: tuple[str, ...], lines: dict[tuple[str, ...], int], label: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise BoardError(f"{label}:{node.start_mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            if not isinstance(k, ScalarNode):
                raise BoardError(f"{label}:{k.start_mark.line + 1}: a mapping key must be a plain name")
            key, line = str(k.value), k.start_mark.line + 1
            if key == "<<":  # a YAML merge key: its values are merged into this mapping by the loader
                _walk(v, path, lines, label, depth + 1)
                continue
            if key in seen:
                where = ".".join(path[1:] + (key,)) if path else key
                raise BoardError(f"{label}:{line}: duplicate key '{where}' (first at line {seen[key]}); "
                                 "remove one of them")
            seen[key] = line
            lines[path + (key,)] = line
            _walk(v, path + (key,), lines, label, depth + 1)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            lines.setdefault(path + (str(i),), item.start_mark.line + 1)
            _walk(item, path + (str(i),), lines, label, depth + 1)


_PARSED: dict[tuple[str, str], tuple[Any, dict[tuple[str, ...], int]]] = {}  # (label, text) -> _parse()


def _parse(text: str, label: str) -> tuple[Any, dict[tuple[str, ...], int]]:
    """The YAML document of `text` and its line table; BoardError for invalid YAML, too deep nesting or
    a duplicate key (in that order of precedence). One parse: the document is constructed from the
    composed nodes, as safe_load does, after the line table is read from them (constructing merges
    `<<` keys into the nodes)."""
    loader = yaml.SafeLoader(text)
    lines: dict[tuple[str, ...], int] = {}
    try:
        root, walk_error = loader.get_single_node(), None
        if root is not None:
            try:
                _walk(root, (), lines, label, 0)
            except BoardError as e:
                walk_error = e
        doc = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise BoardError(f"{label}{where}: invalid YAML: {getattr(e, 'problem', None) or e}") from None
    finally:
        loader.dispose()
    if walk_error is not None:
        raise walk_error
    return doc, lines


def read_boards_file(path: Path, label: str | None = None) -> BoardsFile:
    """Parse boards file `path` (messages call it `label`, default its name).

    Raises BoardError (one line, with the line number where known): unreadable, too large, not
    UTF-8, invalid YAML, duplicate keys, or no top-level `boards:` mapping of board names.
    """
    label = label or path.name
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise BoardError(f"{label}: not a regular file")
        if st.st_size > MAX_BYTES:
            raise BoardError(f"{label}: {st.st_size} bytes; a boards file is at most {MAX_BYTES} bytes")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BoardError(f"{label}: no such boards file") from None
    except OSError as e:
        raise BoardError(f"{label}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BoardError(f"{label}: not UTF-8 text (byte {e.start})") from None
    if (label, text) not in _PARSED:  # every load_target reads the file: parse a given text once
        if len(_PARSED) >= 8:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[(label, text)] = _parse(text, label)
    doc, lines = copy.deepcopy(_PARSED[(label, text)])  # callers own what they get
    boards = doc.get("boards") if isinstance(doc, dict) else None
    if not isinstance(boards, dict) or not boards:
        line = lines.get(("boards",))
        raise BoardError(f"{label}{f':{line}' if line else ''}: expected a top-level 'boards:' mapping of "
                         "board name -> fields")
    for name in boards:
        if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
            raise BoardError(f"{label}:{lines.get(('boards', str(name)), '?')}: board name {name!r}: use letters, "
                             "digits, '-', '_' and '.' only (it names OUT/<board>/ and the linker script)")
    return BoardsFile(label, boards, lines)
