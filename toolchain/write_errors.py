"""An OSError while a job writes its output (a full disk, a quota, a read-only file system, a
permission change) as the one-line InputError the CLI prints: the path as the user knows it (OUT,
not the temporary build folder beside it) and what to do. The CLI removes the temporary folder."""
from __future__ import annotations

import errno
import os
from pathlib import Path

from toolchain.clip import clip_text
from toolchain.errors import InputError

# errno -> what to do about it (the strerror text names the problem)
_ADVICE = {
    errno.ENOSPC: "free some space or choose another --out",
    errno.EDQUOT: "free some of your quota or choose another --out",
    errno.EROFS: "choose a writable --out",
    errno.EACCES: "check the folder's permissions or choose another --out",
    errno.EPERM: "check the folder's permissions or choose another --out",
    errno.EFBIG: "choose another --out (the file system refuses files this large)",
    errno.EMFILE: "raise the open-file limit (ulimit -n)",
    errno.EIO: "check the disk, or choose another --out",
}


def write_error(e: OSError, tmp: Path, out: Path) -> InputError:
    """The InputError for OSError `e` raised while the job built into `tmp` (to become `out`): names
    the file (under OUT when it was under the temporary folder), the system's reason and what to do
    (`cannot access` for a path outside OUT, e.g. an input that became unreadable)."""
    name = Path(os.fsdecode(e.filename)) if e.filename else out
    verb = "cannot write"
    try:
        name = out / name.relative_to(tmp)
    except ValueError:  # not under the temporary folder: an input, or OUT's parent
        verb = "cannot write" if name in (out, out.parent) else "cannot access"
    reason = (e.strerror or os.strerror(e.errno) if e.errno else str(e) or type(e).__name__).lower()
    advice = _ADVICE.get(e.errno or 0, "check the path and the disk, or choose another --out")
    return InputError(f"{clip_text(str(name), 200)}: {verb}: {clip_text(reason, 80)}; {advice}")
