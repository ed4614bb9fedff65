"""The compiler's user-facing errors: one line each (UnsupportedModel: a one-line summary and a short
indented body, see toolchain.frontend.unsupported), with the process exit status they map to.

EdgeccError and subclasses are caught by the CLI and printed as `edgecc: error: <message>`
(further lines indented), never as a traceback. Exit status: 2 bad input or usage; 1 verification mismatch; 3 guest fault
or timeout; 4 internal error (a bug in edgecc: any other exception, or generated C that does not compile; see cli.py).
"""
from __future__ import annotations

MAX_LINE = 500   # characters of one error line at most (a safety net: names are cut by `printable` first)
NAME_WIDTH = 60  # characters of one model-controlled name in a message


def escape(text: str) -> str:
    """`text` with every non-printable character (newline, tab, ESC, C1 controls, U+2028...) as its
    Python escape (`\\n`, `\\x1b`, `\\u2028`): the one place edgecc makes user-controlled text safe
    for a one-line message (printable, one_line and toolchain.clip use it)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def printable(name: str | bytes, width: int = NAME_WIDTH) -> str:
    """A model-controlled name (tensor, node, op, domain) made safe for a one-line message: escaped
    (see `escape`; bytes that are not UTF-8 as `\\xff`), cut to `width` characters with `…`.

    >>> printable("a\\nb\\x1b[31m"), printable(b"\\xffx"), printable("x" * 70, 8)
    ('a\\\\nb\\\\x1b[31m', '\\\\xffx', 'xxxxxxx…')
    """
    text = name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else str(name)
    text = escape(text[: width * 4])
    return text if len(text) <= width else text[: width - 1] + "…"


class EdgeccError(Exception):
    """A user-facing error; `exit_code` is the CLI's exit status for it."""

    exit_code = 2


class InputError(EdgeccError):
    """Bad model, config or data: names the file (and node/op) and what to do."""


class UnsupportedModel(InputError):
    """The model uses ops or attributes the compiler does not support (all summarised at once)."""


class InternalError(EdgeccError):
    """A fault of edgecc itself, not of the input (an unexpected exception, generated C that does
    not compile): printed as `edgecc: internal error: ...` with a hint to report it."""

    exit_code = 4


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` as one printable line of at most `limit` characters: control and other non-printable
    characters (newlines included: a model-controlled name may hold them) escaped as Python does,
    and an over-long middle elided (the start names the file, the end says what to do)."""
    flat = escape(text)
    if len(flat) <= limit:
        return flat
    head = (limit * 2) // 3
    return f"{flat[:head]} … {flat[len(flat) - (limit - head - 3):]}"
