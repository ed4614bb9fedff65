"""The compiler's user-facing errors: one line each (UnsupportedModel: a one-line summary and a short
indented body, see toolchain.frontend.unsupported), with the process exit status they map to.

EdgeccError and subclasses are caught by the CLI and printed as `edgecc: error: <message>`
(further lines indented), never as a traceback. Exit status: 2 bad input or usage; 1 verification mismatch; 3 guest fault
or timeout; 4 internal error (a bug in edgecc: any other exception, or generated C that does not compile; see cli.py).
"""
from __future__ import annotations

MAX_LINE = 300  # characters of one error line: a model-controlled name must not flood the terminal


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
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(flat) <= limit:
        return flat
    head = (limit * 2) // 3
    return f"{flat[:head]} … {flat[len(flat) - (limit - head - 3):]}"
