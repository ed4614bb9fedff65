"""Exceptions raised by the targets package.

Each carries a one-line, user-facing message: the CLI prints ``str(exc)`` and no traceback for
these expected failures (bad boards.yaml entry, compiler error, linker overflow, QEMU trouble).
"""

from __future__ import annotations


class TargetError(Exception):
    """Base class: an expected failure with a one-line message."""

    def __init__(self, message: str) -> None:
        # Collapse newlines so the message stays one line even when it quotes tool output.
        super().__init__(" ".join(message.split()))


class BoardError(TargetError):
    """boards.yaml is malformed, a field is invalid, or a board name is unknown."""


class BuildError(TargetError):
    """Compiling or linking failed, or the model does not fit the board's memory regions."""


class RunError(TargetError):
    """The emulator/ELF could not be run, or its instrumentation output is malformed."""


class CompileError(BuildError):
    """The generated C did not compile, or did not link for a reason other than a region overflow:
    a fault of the generator, not of the model (the CLI reports it as an internal error, exit 4)."""

    exit_code = 4
