"""The compiler's user-facing errors: one line each (UnsupportedModel: a one-line summary and a short
indented body, see toolchain.frontend.unsupported), with the process exit status they map to.

EdgeccError and subclasses are caught by the CLI and printed as `edgecc: error: <message>`
(further lines indented), never as a traceback. Exit status: 2 bad input or usage; 1 verification mismatch; 3 guest fault
or timeout (see cli.py).
"""
from __future__ import annotations

NAME_WIDTH = 60  # characters of one model-controlled name in a message


def printable(name: str | bytes, width: int = NAME_WIDTH) -> str:
    """A model-controlled name (tensor, node, op, domain) made safe for a one-line message: every
    non-printable character (newline, tab, ESC, other controls) as its Python escape (`\\n`,
    `\\x1b`), bytes that are not UTF-8 as `\\xff`, cut to `width` characters with `…`. The one place
    that does this for every frontend; repr() of a str escapes the same characters.

    >>> printable("a\\nb\\x1b[31m"), printable(b"\\xffx"), printable("x" * 70, 8)
    ('a\\\\nb\\\\x1b[31m', '\\\\xffx', 'xxxxxxx…')
    """
    text = name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else str(name)
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


class EdgeccError(Exception):
    """A user-facing error; `exit_code` is the CLI's exit status for it."""

    exit_code = 2


class InputError(EdgeccError):
    """Bad model, config or data: names the file (and node/op) and what to do."""


class UnsupportedModel(InputError):
    """The model uses ops or attributes the compiler does not support (all summarised at once)."""
