"""Build-on-demand of the project's `tcount` QEMU TCG plugin (targets/plugin/tcount.c).

The shared object is cached under `$XDG_CACHE_HOME/edgecc` (or `~/.cache/edgecc`) in a file named
by the hash of the plugin sources, so an edited source rebuilds and parallel processes never see
a half-written file (build to a temp name, then atomic rename).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from targets.errors import BuildError

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
PLUGIN_SOURCES = (PLUGIN_DIR / "tcount.c", PLUGIN_DIR / "tc_qemu_plugin_api.h", PLUGIN_DIR / "tc_classify.h")
HOST_CC = "gcc"


def cache_dir() -> Path:
    """The edgecc cache folder ($XDG_CACHE_HOME/edgecc, else ~/.cache/edgecc)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "edgecc"


def _source_hash() -> str:
    h = hashlib.sha256()
    for src in PLUGIN_SOURCES:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def plugin_path() -> Path:
    """Path of the built tcount plugin (.so), building it with host gcc if not cached.

    Raises BuildError if host gcc is missing or the plugin does not compile.
    """
    out = cache_dir() / f"libtcount-{_source_hash()}.so"
    if out.is_file():
        return out
    if shutil.which(HOST_CC) is None:
        raise BuildError(f"cannot build the tcount QEMU plugin: host compiler '{HOST_CC}' not found")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".libtcount-", suffix=".so", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        cmd = [HOST_CC, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
               "-o", str(tmp), str(PLUGIN_SOURCES[0])]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
            raise BuildError(f"building the tcount QEMU plugin failed: {first}")
        os.replace(tmp, out)  # atomic: concurrent builders race harmlessly to the same content
    finally:
        tmp.unlink(missing_ok=True)
    return out
