"""Which external tools a board needs, and which of them are missing on this machine.

Used by tests (skip, or fail under CI=true) and by the CLI (one clear complaint instead of a
FileNotFoundError deep inside a build).
"""

from __future__ import annotations

import shutil

from targets.plugin import HOST_CC
from targets.target import RunKind, Target, TimeSource


def required_tools(target: Target) -> list[str]:
    """Executables needed to build and run images for `target`, in a stable order."""
    tools = [target.compiler]
    if target.run.kind is not RunKind.NATIVE and target.run.executable:
        tools.append(target.run.executable)
    if target.run.time_source is TimeSource.PLUGIN:
        tools += [target.nm, HOST_CC]  # marks need symbol addresses; the plugin is built with host gcc
    return list(dict.fromkeys(tools))


def missing_tools(target: Target) -> list[str]:
    """The subset of `required_tools(target)` not found on PATH (empty list: all present)."""
    return [t for t in required_tools(target) if shutil.which(t) is None]
