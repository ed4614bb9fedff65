"""The compiler's user-facing errors: one line each (UnsupportedModel: a one-line summary and a short
indented body, see toolchain.frontend.unsupported), with the process exit status they map to.

EdgeccError and subclasses are caught by the CLI and printed as `edgecc: error: <message>`
(further lines indented), never as a traceback. Exit status: 2 bad input or usage; 1 verification mismatch; 3 guest fault
or timeout (see cli.py).
"""
from __future__ import annotations


class EdgeccError(Exception):
    """A user-facing error; `exit_code` is the CLI's exit status for it."""

    exit_code = 2


class InputError(EdgeccError):
    """Bad model, config or data: names the file (and node/op) and what to do."""


class UnsupportedModel(InputError):
    """The model uses ops or attributes the compiler does not support (all summarised at once)."""
