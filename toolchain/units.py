"""The units of a sweep: one board x model x option-grid point each, built (and run) on its own into
OUT/<unit>/ by `run_unit`, in whatever process an executor (toolchain.executors) gives it.

A sweep's units come from `--board a,b,c` (or `all`) and the YAML's `matrix:` ({config key: [values]}),
in a fixed order (boards outermost, as listed, then the matrix keys as written, each key's values as
listed), so OUT and summary.json do not depend on which unit finished first. A unit is named by the
values that vary: the board alone when only boards vary (OUT/<board>/, as before), else
<board>_<value>... (a path's file stem, e.g. mps2-an386_model).
Not here: where the units run (toolchain.executors) or the summary (profiler.sweep).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from toolchain.clip import clip_repr
from toolchain.errors import EdgeccError, InputError, InternalError

# Keys a matrix may vary: the per-job settings of the YAML (not where OUT goes, nor the sweep's own knobs).
NOT_IN_MATRIX = {"out", "source", "matrix", "jobs", "executor"}
MAX_VALUES = 64     # values per matrix key
MAX_UNITS = 1024    # points of a whole sweep
PATH_KEYS = ("model", "calibration", "verify", "boards")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def check_matrix(raw: Any, where: str) -> dict[str, list[Any]]:
    """The YAML's `matrix:` checked: a mapping of config keys (not out, jobs, executor) to non-empty
    lists of at most MAX_VALUES distinct scalars. InputError naming `where` and the key otherwise;
    each value itself is checked later, as the key's own value (load_config)."""
    from dataclasses import fields

    from toolchain.config import Config

    allowed = {f.name for f in fields(Config)} - NOT_IN_MATRIX
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"{where}: matrix must map config keys to lists of values, e.g. "
                         f"matrix: {{board: [mps2-an386, host]}}, not {clip_repr(raw)}")
    for key, values in raw.items():
        if not isinstance(key, str) or key not in allowed:
            raise InputError(f"{where}: matrix: {clip_repr(key)} is not a key a matrix can vary; "
                             f"allowed: {', '.join(sorted(allowed))}")
        if not isinstance(values, list) or not values or len(values) > MAX_VALUES \
                or any(isinstance(v, dict | list) for v in values):
            raise InputError(f"{where}: matrix.{key} must be a list of 1 to {MAX_VALUES} values, "
                             f"not {clip_repr(values)}")
        if len({repr(v) for v in values}) != len(values):
            raise InputError(f"{where}: matrix.{key} lists a value twice: {clip_repr(values)}")
    return dict(raw)


@dataclass(frozen=True)
class Unit:
    """One point of a sweep: its name (OUT/<name>/), the matrix values it sets (`patch`, as in the YAML)
    and the board whose budgets the import uses (the sweep's first board, as a serial sweep did)."""

    name: str
    board: str
    patch: dict[str, Any] = field(default_factory=dict)
    import_board: str = ""


def _part(key: str, value: Any) -> str:
    text = Path(str(value)).stem if key in PATH_KEYS else str(value)
    return _UNSAFE.sub("-", text).strip("-") or "x"


def expand_units(boards: list[str], matrix: dict[str, list[Any]] | None, where: str) -> list[Unit]:
    """The sweep's units in their fixed order: `boards` (from --board or the matrix's `board`)
    outermost, then the matrix's other keys. InputError when two units would share a name (e.g. two
    models with the same file name in different folders) or the sweep exceeds MAX_UNITS."""
    rest = {k: v for k, v in (matrix or {}).items() if k != "board"}
    varying = [k for k, v in rest.items() if len(v) > 1]
    units = []
    for board in boards:
        for point in itertools.product(*rest.values()):
            patch = dict(zip(rest, point, strict=True))
            parts = [board] + [_part(k, patch[k]) for k in varying]
            units.append(Unit("_".join(parts), board, patch, boards[0]))
    if len(units) > MAX_UNITS:
        raise InputError(f"{where}: matrix: {len(units)} units, at most {MAX_UNITS}")
    names = [u.name for u in units]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"{where}: matrix: two units would both be named {dup!r} (OUT/{dup}/); give the "
                         "files different names")
    return units


@dataclass(frozen=True)
class UnitJob:
    """Everything a worker needs to run one unit (picklable): the command, the YAML and the CLI's
    overrides, the data layout flag, the unit, and the folder to build into (made by the worker)."""

    cmd: str
    config: Path | None
    overrides: dict[str, Any]
    layout: str | None
    unit: Unit
    dest: Path
    chunk_jobs: int = 1   # verification chunks run at once (split verification)
    cwd: str = ""         # the driver's working folder (relative paths; Ray workers start elsewhere)
    chunks_on_ray: bool = False  # split verification's chunks as Ray tasks (the unit runs in a Ray task)


@dataclass
class UnitResult:
    """A finished unit: its summary.json entry, report (None on error or for a build) and exit status;
    `fatal`: bad input found before anything was built (the whole sweep fails like a single run)."""

    name: str
    entry: dict[str, Any]
    report: dict[str, Any] | None
    exit_code: int
    fatal: str | None = None
    files: bytes | None = None   # the unit's folder as a tar (remote executors), unpacked by the caller


_IMPORTS: dict[str, Any] = {}   # per process: import and quantize once per (model, settings, budget board)
IMPORTS_KEPT = 8                # imported models kept per process (oldest dropped first)


def _imported(cfg: Any, target: Any) -> Any:
    from toolchain.pipeline import import_model

    key = repr((replace(cfg, board="", out=Path("."), jobs=None, executor=None, verify_chunk=None), target.name))
    if key not in _IMPORTS:
        if len(_IMPORTS) >= IMPORTS_KEPT:  # units come ordered by board, then point: the few points of a board
            _IMPORTS.pop(next(iter(_IMPORTS)))
        _IMPORTS[key] = import_model(cfg, target)
    return _IMPORTS[key]


def unit_config(job: UnitJob) -> Any:
    """The Config of one unit: the YAML with the unit's matrix values, the CLI's overrides, its board."""
    from toolchain.config import load_config

    cfg = load_config(job.config, {**job.overrides, "board": job.unit.board}, patch=job.unit.patch)
    if job.layout:
        cfg = replace(cfg, preprocess=replace(cfg.preprocess, layout=job.layout))
    return cfg


def run_unit(job: UnitJob) -> UnitResult:
    """Build (and for `run`: run, verify, report) one unit into job.dest. Bad input, a board that
    cannot take the model and edgecc's own bugs become the unit's error entry (exit 2, 3 or 4), not
    an exception; bad model or data (refused before anything is built) is `fatal`."""
    from profiler.sweep import board_entry, build_entry
    from targets import TargetError, load_target
    from toolchain.cli import target_error, debugging, internal_error_text

    unit, target, cfg = job.unit, None, None
    stage = "input"
    try:
        cfg = unit_config(job)
        target = load_target(unit.board, extra=cfg.boards)
        imported = _imported(cfg, load_target(unit.import_board, extra=cfg.boards))
        data = None
        if job.cmd == "run":
            from toolchain.runner import verification_data

            data = verification_data(cfg, imported.graph_f32, imported.graph_s8)
        stage = "build"
        from toolchain.pipeline import compile_model

        build = compile_model(cfg, target, job.dest, profile=job.cmd == "run" or bool(cfg.profile), imported=imported)
        if job.cmd == "build":
            return _result(unit, build_entry(unit.board, build), None, 0, cfg)
        from profiler.outputs import write_outputs
        from toolchain.runner import run_and_verify

        board_run = None
        if job.chunks_on_ray:
            from toolchain.executors import ray_board_run as board_run
        outcome = run_and_verify(build, data, jobs=job.chunk_jobs, board_run=board_run)
        write_outputs(outcome.report, job.dest)
        return _result(unit, board_entry(unit.board, outcome.exit_code, outcome.report),
                       outcome.report, outcome.exit_code, cfg)
    except (EdgeccError, TargetError) as e:
        err = e if isinstance(e, EdgeccError) else target_error(e, target)
        if stage == "input" and isinstance(err, InputError):
            return UnitResult(unit.name, {}, None, err.exit_code, fatal=str(err))
        return _result(unit, board_entry(unit.board, err.exit_code, None, str(err)), None, err.exit_code, cfg)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # a bug of ours: this unit's entry says so in one line, the others go on
        if debugging():
            raise
        msg = internal_error_text(e).removeprefix("edgecc: internal error: ")
        return _result(unit, board_entry(unit.board, InternalError.exit_code, None, msg), None,
                       InternalError.exit_code, cfg)


def _result(unit: Unit, entry: dict[str, Any], report: dict[str, Any] | None, code: int, cfg: Any) -> UnitResult:
    entry = {"unit": unit.name, **entry, "params": {k: str(v) for k, v in unit.patch.items()}}
    if cfg is not None:
        entry["model"] = str(cfg.model)
    if entry.get("report"):
        entry["report"] = f"{unit.name}/report.json"
    return UnitResult(unit.name, entry, report, code)
