"""Short, printable renderings of user-supplied values for one-line error messages: a value from a
YAML, a path or a data file may be huge or hold control characters (a newline would split the
`edgecc: error:` line, an escape sequence would drive the terminal)."""
from __future__ import annotations

from typing import Any

from toolchain.errors import escape

LIMIT = 80  # characters of a value shown in a message; the rest is elided


def clip_text(text: str, limit: int = LIMIT) -> str:
    """`text` with control characters escaped (toolchain.errors.escape) and cut to about `limit`
    characters (`...` marks the cut)."""
    flat = escape(text[: limit + 1])
    return flat if len(flat) <= limit else flat[:limit] + "..."


def clip_repr(value: Any, limit: int = LIMIT) -> str:
    """repr(value), control characters escaped, cut to about `limit` characters. Never renders more
    than it shows: containers are rendered element by element and the rendering stops at the limit
    (a YAML alias bomb or a million-element list must not be turned into a 250 MB string)."""
    return clip_text(_bounded_repr(value, limit + 4), limit)


def _bounded_repr(value: Any, budget: int, depth: int = 0) -> str:
    """repr of `value`, stopping once about `budget` characters are produced (depth-limited)."""
    if depth > 8:
        return "..."
    if isinstance(value, dict):
        parts, size = [], 0
        for k, v in value.items():
            if size > budget:
                parts.append("...")
                break
            p = f"{_bounded_repr(k, budget - size, depth + 1)}: {_bounded_repr(v, budget - size, depth + 1)}"
            parts.append(p)
            size += len(p) + 2
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list | tuple):
        parts, size = [], 0
        for v in value:
            if size > budget:
                parts.append("...")
                break
            p = _bounded_repr(v, budget - size, depth + 1)
            parts.append(p)
            size += len(p) + 2
        text = ", ".join(parts)
        return f"[{text}]" if isinstance(value, list) else f"({text}{',' if len(value) == 1 else ''})"
    if isinstance(value, str | bytes) and len(value) > budget:
        return repr(value[:budget]) + "..."
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of {value.bit_length()} bits>"  # str() of a huge int is slow (and limited)
    try:
        return repr(value)[:budget + 1]
    except Exception:  # noqa: BLE001 - a repr that fails must not replace the real error
        return f"<{type(value).__name__}>"
