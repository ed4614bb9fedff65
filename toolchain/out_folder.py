"""The OUT folder's life: refuse an OUT edgecc must not replace, build into a temporary folder beside
it (same file system), and move the finished build into place as a whole (atomic rename; the marker
file `.edgecc` says edgecc wrote it). Not here: what goes into OUT (pipeline, runner, profiler)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from toolchain.errors import InputError

MARKER = ".edgecc"  # in every OUT: edgecc replaces a folder as a whole only if it wrote it


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it; put it straight back
    os.umask(mask)
    return mask


def finalize(tmp: Path, out: Path) -> None:
    """Mark the finished build as edgecc's, move it into OUT (replacing a previous edgecc OUT,
    checked by `check_out`) and give OUT the mode of a folder made under the user's umask
    (mkdtemp makes it 0700)."""
    from toolchain import __version__

    (tmp / MARKER).write_text(f"written by edgecc {__version__}; the next job into this folder replaces it "
                              "as a whole\n", encoding="utf-8")
    try:
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))  # a fresh name: nothing else removed
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
        os.chmod(out, 0o777 & ~_umask())
    except OSError as e:
        raise InputError(f"{out}: cannot move the finished build into place ({e.strerror or e}); "
                         "check the folder's permissions or choose another --out") from None


# What an OUT of one board holds at its top level; an older OUT (before the marker) is recognised
# only when it holds nothing else, so a user's project that merely contains lib/model.h is never taken.
_OUT_ENTRIES = {"lib", "fw", "report.json", "report.md", "report.csv", "report.html", "cost.png", "cumulative.png",
                "sqnr.png", "memory.png"}


def _older_out(folder: Path) -> bool:
    """An OUT of an edgecc from before the marker: one board's (lib/model.h beside report.json or
    fw/firmware.elf, and only _OUT_ENTRIES) or a sweep's (summary.json and only such board folders)."""
    names = {e.name for e in folder.iterdir()}
    if (folder / "lib" / "model.h").is_file():
        return names <= _OUT_ENTRIES and ((folder / "report.json").is_file()
                                          or (folder / "fw" / "firmware.elf").is_file())
    boards = [folder / n for n in names - {"summary.json"}]
    return "summary.json" in names and bool(boards) and all(b.is_dir() and _older_out(b) for b in boards)


def check_out(out: Path, inputs: list[Path]) -> None:
    """Refuse (InputError, before anything is written) an OUT that edgecc must not replace: a file,
    a path under a file, a folder holding one of the job's inputs, or a non-empty folder edgecc did
    not write (`--out .` or `--out` naming the model's folder would otherwise be deleted)."""
    above = next(p for p in (out, *out.parents) if p.exists() or p == p.parent)
    if above != out and not above.is_dir():
        raise InputError(f"{out}: {above} is a file, not a folder; choose another --out")
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"{out}: the output path exists and is not a folder; choose another --out")
    for p in inputs:
        if out == p.resolve() or out in p.resolve().parents:
            raise InputError(f"{out}: the output folder holds the input {p}, and edgecc replaces OUT as a whole; "
                             "choose another --out")
    try:
        ours = (out / MARKER).is_file() or not any(out.iterdir()) or _older_out(out)
    except OSError as e:
        raise InputError(f"{out}: cannot read the output folder ({e.strerror}); choose another --out") from None
    if not ours:
        raise InputError(f"{out}: the folder exists, is not empty and was not written by edgecc, which replaces "
                         "OUT as a whole; choose a new or empty --out (nothing was changed)")


def make_tmp(out: Path) -> tuple[Path, list[Path]]:
    """The temporary build folder beside OUT (same filesystem: the final rename is atomic) and the
    parent folders created for it, deepest first (removed again if the job fails on bad input)."""
    created = [p for p in out.parents if not p.exists()]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent)), created
    except OSError as e:
        remove_empty(created)
        raise InputError(f"{out}: cannot create the output folder there ({e.strerror or e}); "
                         "choose a writable --out") from None


def remove_empty(folders: list[Path]) -> None:
    """Remove the folders `make_tmp` created for OUT's parents, deepest first, while they are empty."""
    for f in folders:  # deepest first; stop at the first that is not empty
        try:
            f.rmdir()
        except OSError:
            return
