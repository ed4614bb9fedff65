"""The one error every frontend (float ONNX, QDQ ONNX, int8 TFLite) raises for a model with
unsupported nodes: a one-line summary, then a short body grouped by op type and reason.

    FILE: 300 unsupported node(s) of 3 op type(s): Erf (150), Cos (100), Clip (50)
      Erf x150 (unknown op): erf_0, erf_1, #7, +147 more
      Clip x50 (non-constant min input '…' (must be an initializer)): clip_0, clip_1, clip_2, +47 more
      see `edgecc ops` for the supported ops

At most MAX_LINES lines and about MAX_WIDTH characters a line whatever the model (a 300-node
Paddle model once gave a 13.7 KB single line). The frontends collect `Problem`s; `summary_error`
turns them into the UnsupportedModel the CLI prints. Depends on toolchain.errors only, so every
frontend can import it.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from toolchain.errors import UnsupportedModel, printable

UNKNOWN_OP = "unknown op"
EDGES = ("graph input", "graph output")  # Problem.op of a model input / output that is not a node
MAX_LINES = 15       # the whole message, summary and pointer line included
MAX_WIDTH = 200      # characters a line (names and reasons are shortened to fit)
MAX_TYPES = 8        # op types named on the summary line
MAX_NAMES = 3        # node names per group line
NAME_WIDTH = 40      # characters of one node name
MIN_REASON = 40      # characters of a group's reason at least (it gets what the names leave)
POINTER = "  see `edgecc ops` for the supported ops"
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.-])")


@dataclass(frozen=True)
class Problem:
    """One unsupported node (or graph input / output): `where` names it (a node name, `#17` for
    an unnamed node at index 17 of the graph, `operator 3 't4'` for TFLite), `op` is its op type
    and `reason` what is unsupported (UNKNOWN_OP when the op has no converter)."""

    where: str
    op: str
    reason: str

    def __str__(self) -> str:
        """The one-line form used inside single-node errors: "node NAME (OP): unsupported REASON"."""
        what = "op" if self.reason == UNKNOWN_OP else self.reason
        if self.op in EDGES:
            return f"{self.op} {self.where}: {what}"
        where = self.where if self.where.startswith(("#", "operator ")) else f"node {self.where}"
        return f"{where} ({self.op}): unsupported {what}"


class NodeUnsupported(UnsupportedModel):
    """One node cannot be converted: raised by a converter, caught by its frontend, which collects
    `problem` and reports every node at once through summary_error."""

    def __init__(self, path: Path | str, problem: Problem) -> None:
        super().__init__(f"{path}: {problem}")
        self.problem = problem


def node_label(name: str, index: int | None) -> str:
    """How a node is named in errors: its name (control characters escaped, see errors.printable), or
    `#INDEX` (its position in the graph) when unnamed."""
    if name:
        return printable(name)
    return f"#{index}" if index is not None else "?"


def without_names(reason: str) -> str:
    """The reason with the tensor names it quotes replaced by '…'."""
    return _QUOTED.sub("'…'", reason)


def reason_key(reason: str) -> str:
    """The reason with node-specific names and values stripped (quoted strings -> '…', numbers ->
    …): nodes whose reasons differ only in the tensors, scales or sizes they name share one group."""
    return _NUMBER.sub("…", without_names(reason))


def _cut(text: str, width: int) -> str:
    """text shortened to `width` characters, the cut marked with '…' (a closing quote is kept)."""
    if len(text) <= width:
        return text
    if text.endswith("'") and width > 2:
        return text[: width - 2] + "…'"
    return text[: max(width - 1, 0)] + "…"


def _cut_middle(text: str, width: int) -> str:
    """text shortened to `width` characters by dropping its middle (a reason's subject and its
    conclusion both stay)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _head(path: Path | str, problems: list[Problem]) -> str:
    """`FILE: N unsupported node(s) of K op type(s): OpA (12), OpB (3), +M more`: op types by count,
    then name; at most MAX_TYPES of them, fewer when the line would pass MAX_WIDTH (the path is kept)."""
    nodes = [p for p in problems if p.op not in EDGES]
    counts = Counter(p.op for p in nodes)
    types = sorted(counts, key=lambda op: (-counts[op], op))
    edges = len(problems) - len(nodes)
    tail = f"; {edges} unsupported graph input(s)/output(s)" if edges else ""
    head = f"{path}: {len(nodes)} unsupported node(s) of {len(types)} op type(s)"
    items = [f"{op} ({counts[op]})" for op in types]
    for n in range(min(len(items), MAX_TYPES), -1, -1):
        more = [f"+{len(items) - n} more"] if n < len(items) else []
        listed = ": " + ", ".join(items[:n] + more) if items else ""
        if len(head + listed + tail) <= MAX_WIDTH or n == 0:
            return head + listed + tail
    return head + tail


def _group_line(op: str, members: list[Problem]) -> str:
    """`  OP xN (reason): name1, name2, name3, +M more`: the one node's own reason when N is 1; else
    the reason without tensor names, or without values too when the nodes' values differ."""
    shared = {without_names(p.reason) for p in members}
    reason = (members[0].reason if len(members) == 1 else
              shared.pop() if len(shared) == 1 else reason_key(members[0].reason))
    names = ", ".join(_cut(p.where, NAME_WIDTH) for p in members[:MAX_NAMES])
    more = f", +{len(members) - MAX_NAMES} more" if len(members) > MAX_NAMES else ""
    head, tail = f"  {_cut(op, NAME_WIDTH)} x{len(members)} (", f"): {names}{more}"
    reason = _cut_middle(reason, max(MAX_WIDTH - len(head) - len(tail), MIN_REASON))
    return _cut(head + reason + tail, MAX_WIDTH)


def summary_lines(path: Path | str, problems: list[Problem]) -> list[str]:
    """The message's lines: summary, one line per (op type, reason) group, the pointer line.
    Groups: op types by node count (then name), graph inputs / outputs last; within an op type,
    reasons by node count. Past MAX_LINES - 2 group lines the rest is counted on one line."""
    groups: dict[tuple[str, str], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.op, reason_key(p.reason)), []).append(p)
    per_op = Counter(p.op for p in problems)
    order = sorted(groups, key=lambda k: (k[0] in EDGES, -per_op[k[0]], k[0], -len(groups[k]), k[1]))
    room = MAX_LINES - 2
    shown = order if len(order) <= room else order[: room - 1]
    body = [_group_line(op, groups[(op, key)]) for op, key in shown]
    rest = order[len(shown):]
    if rest:
        n = sum(len(groups[k]) for k in rest)
        body.append(f"  +{_plural(len(rest), 'more group')} of {_plural(n, 'node')} "
                    f"({_cut(', '.join(sorted({op for op, _ in rest})), MAX_WIDTH - 50)})")
    return [_cut(_head(path, problems), MAX_WIDTH), *body, POINTER]


def summary_error(path: Path | str, problems: list[Problem]) -> UnsupportedModel:
    """The UnsupportedModel listing `problems` (see summary_lines); the caller raises it."""
    return UnsupportedModel("\n".join(summary_lines(path, problems)))


__all__ = ["UNKNOWN_OP", "NodeUnsupported", "Problem", "node_label", "reason_key", "summary_error", "summary_lines"]
