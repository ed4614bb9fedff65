"""The `edgecc` command line: parses arguments, calls the pipeline and the runner, prints.

  edgecc run   [CONFIG.yaml] [--model PATH] [--board NAME[,NAME...]|all] [--boards FILE] [--calibration DATA] [--verify DATA]
               [--out DIR] [--repeat N] [--warmup N] [--optimize speed|ram] [--kernels auto|portable]
               [--debug-guards] [--name NAME] [--jobs N] [--executor local|ray[=ADDRESS]] [--verify-chunk N] [--quiet]
  edgecc build [CONFIG.yaml] [same flags]          write OUT/lib and OUT/fw without running
               (run, build: [--tuning FILE] the measured kernel per layer of `edgecc tune`)
  edgecc tune  [CONFIG.yaml] [same flags] [--output FILE]   measure every kernel candidate per layer on
               the board, write the winners to FILE (default OUT/tuning.json; docs/tuning.md)
  edgecc compare A/report.json B/report.json [--max-regression 5%] [--force]
  edgecc boards [--boards FILE]                    list the boards of boards.yaml (and of FILE)
  edgecc ops                                       ops, dtypes and attributes per frontend; kernels per board

Exit status: 0 pass; 1 verification mismatch (complete OUT written) or, for compare, a budget
exceeded; 2 bad input or usage (nothing written); 3 guest fault or timeout (complete OUT with the
log and the running op); 4 internal error: a bug in edgecc (an unexpected exception, or generated C that
does not build), one line, nothing written (EDGECC_DEBUG=1: the traceback, and the temp folder kept).
A sweep (several boards, or a YAML `matrix:` of boards x models x options) writes OUT/<unit>/ each and
OUT/summary.json and exits with the worst unit's status (4 > 3 > 2 > 1 > 0); a build sweep writes the
summary too. Units run --jobs N at once (default: the cores) in local processes or, with --executor ray,
as Ray tasks (toolchain.executors); --verify-chunk N splits a run's verification samples into board runs
of N samples (toolchain.split_verify).
Everything is built in a temporary folder beside OUT and renamed into place at the end; an existing
OUT is replaced only if edgecc wrote it (marker OUT/.edgecc) or it is empty.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolchain import signals
from toolchain.errors import EdgeccError, InputError, InternalError, one_line
from toolchain.out_folder import check_out, finalize, make_tmp, remove_empty

if TYPE_CHECKING:
    from targets import Target
    from toolchain.config import Config

VERDICTS = {0: "PASS", 1: "FAIL (verification)", 2: "ERROR", 3: "FAULT", 4: "INTERNAL ERROR"}
REPORT_HINT = ("this is a bug in edgecc, not in your input: please report it with the model and the command "
               "(EDGECC_DEBUG=1 shows the traceback and keeps the generated files)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edgecc", description="Compile a trained network to verified int8 C for Arm boards.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, helptext in (("run", "build with profiling, run on the board, verify bit for bit, report"),
                           ("build", "write OUT/lib (model library) and OUT/fw (test firmware) without running"),
                           ("tune", "measure every kernel candidate of every layer on the board (one firmware "
                                    "per candidate set) and write the winners to a tuning cache")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("config", nargs="?", type=Path, help="pipeline YAML (optional with --model)")
        s.add_argument("--model", type=Path, help="float ONNX model")
        s.add_argument("--board", help="board name from boards.yaml (see `edgecc boards`), a comma-separated list "
                                       "of boards, or `all`: each into OUT/<board>/ plus OUT/summary.json")
        s.add_argument("--boards", type=Path, metavar="FILE", help="your own boards file (boards.yaml's schema): "
                                                                  "its boards add to or override the stock ones")
        s.add_argument("--calibration", type=Path, help="calibration DATA: .npy, .npz or a folder of images")
        s.add_argument("--verify", type=Path, help="verification DATA: .npy, .npz or a folder of images")
        s.add_argument("--out", type=Path, help="output folder (default from the YAML, else ./out)")
        s.add_argument("--repeat", type=int, metavar="N", help="timed runs of sample 0 for measured timers "
                                                               "(median, min, max; default 5; exact counts run once)")
        s.add_argument("--optimize", choices=("speed", "ram"), help="speed (default): the board's fastest kernels; "
                                                                    "ram: per op the kernel needing the least scratch RAM")
        s.add_argument("--kernels", metavar="auto|portable", help="auto (default): the board's kernel variants "
                                                                   "(dsp, helium, neon); portable: portable C only")
        s.add_argument("--precision", metavar="int8|int16|auto",
                       help="activations: int8 (default); int16: 16x8 wherever the op has a kernel; auto: the layers "
                            "that lose most in int8 to 16x8 until precision_target (YAML) is met")
        s.add_argument("--warmup", type=int, metavar="N", help="untimed runs of sample 0 before them (default 1)")
        s.add_argument("--debug-guards", action="store_true", default=None,
                       help="debug build: guard bytes after every arena buffer, checked after every op")
        s.add_argument("--name", help="library name prefixing OUT/lib's symbols, macros and files (YAML name; "
                                      "lower-case letters and digits, e.g. kws): several libraries in one firmware")
        s.add_argument("--weights-format", metavar="auto|c|blob",
                       help="OUT/lib's constant arrays: c (weights.c), blob (weights.bin + weights.S, assembled: "
                            "fast to build), auto (default): blob above 256 KiB")
        s.add_argument("--layout", type=str.upper, choices=("NHWC", "NCHW"),
                       help="layout of 4-D DATA (YAML preprocess.layout; default NHWC, or the model's own when only that fits)")
        s.add_argument("--jobs", type=int, metavar="N", help="a sweep's units (board x model x matrix point) and "
                                                             "verification chunks run N at once (default: the cores)")
        s.add_argument("--executor", metavar="local|ray[=ADDRESS]", help="where a sweep's units run: local processes "
                                                                         "(default) or Ray tasks (pip install edgecc[ray])")
        s.add_argument("--verify-chunk", type=int, metavar="N", help="split verification: the board runs N samples "
                                                                     "per run, the runs at once, one merged report")
        s.add_argument("--quiet", action="store_true", help="no table and no progress, only errors and the final line")
        if name == "tune":
            s.add_argument("--output", type=Path, metavar="FILE", help="the tuning cache to write (default "
                                                                      "OUT/tuning.json); an existing cache is updated")
        else:
            s.add_argument("--tuning", type=Path, metavar="FILE", help="tuning cache of `edgecc tune`: per layer the "
                                                                      "measured fastest kernel (YAML `tuning`)")
    c = sub.add_parser("compare", help="per-op and total deltas of two report.json; non-zero exit over budget")
    c.add_argument("a", type=Path, help="baseline report.json")
    c.add_argument("b", type=Path, help="new report.json")
    c.add_argument("--max-regression", metavar="PCT", help="allowed growth of total cost, arena and flash, each "
                                                         "checked separately: 5%% (default), 0.05, or cost=5%%,arena=0,flash=1%%")
    c.add_argument("--force", action="store_true", help="compare reports of different boards or cost units")
    c.add_argument("--quiet", action="store_true", help="only the verdict lines")
    b = sub.add_parser("boards", help="list the boards")
    b.add_argument("--boards", type=Path, metavar="FILE", help="also list the boards of your own boards file")
    sub.add_parser("ops", help="the support matrix: ops, dtypes and attributes per frontend, kernels per board")
    return p


def _boards(extra: Path | None) -> int:
    from targets import TargetError, list_targets

    try:
        boards = list_targets(extra=extra)
    except TargetError as e:
        raise InputError(str(e)) from None
    for t in boards:
        feats = ",".join(sorted(t.isa_features)) or "-"
        kernels = ",".join(i.value for i in t.kernel_preference)
        print(f"{t.name:<12} {t.cpu:<11} features={feats:<18} kernels={kernels:<18} cost={t.run.cost_unit:<12} "
              f"time={t.run.time_source.value:<7} {t.description}")
    return 0


def _targets(spec: str, extra: Path | None = None) -> list[Target]:
    """The boards of --board: one name, a comma-separated list, or `all`, from boards.yaml and the
    user's boards file `extra` (InputError if unknown or invalid)."""
    from targets import TargetError, list_targets, load_target

    try:
        if spec.strip() == "all":
            return list_targets(extra=extra)
        names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
        if not names:
            raise InputError(f"--board {spec!r}: no board named")
        return [load_target(n, extra=extra) for n in names]
    except TargetError as e:
        raise InputError(str(e)) from None


def _job(args: argparse.Namespace) -> int:
    from toolchain import progress
    from toolchain.config import load_config

    if args.config is not None and args.config.suffix.lower() in (".onnx", ".tflite") and args.model is None:
        args.model, args.config = args.config, None  # `edgecc run model.tflite`: a model, not a YAML
    cfg = load_config(args.config, {"model": args.model, "board": args.board, "calibration": args.calibration,
                                    "verify": args.verify, "out": args.out, "repeats": args.repeat,
                                    "warmup": args.warmup, "optimize": args.optimize, "debug_guards": args.debug_guards,
                                    "kernels": args.kernels, "boards": args.boards, "name": args.name,
                                    "precision": args.precision, "weights_format": args.weights_format,
                                    "jobs": args.jobs, "executor": args.executor, "verify_chunk": args.verify_chunk,
                                    "tuning": getattr(args, "tuning", None)})
    if args.layout:  # the data's layout (preprocess.layout), over the YAML's
        from dataclasses import replace
        cfg = replace(cfg, preprocess=replace(cfg.preprocess, layout=args.layout))
    board_spec = cfg.board
    if cfg.matrix and "board" in cfg.matrix and args.board is None:  # the matrix's boards; --board wins
        board_spec = ",".join(str(b) for b in cfg.matrix["board"])
    targets = _targets(board_spec, cfg.boards)
    out = cfg.out.resolve()
    if args.cmd == "tune" and len(targets) != 1:
        raise InputError(f"edgecc tune measures one board; --board / `board:` names {len(targets)}")
    if args.cmd == "tune" and cfg.optimize != "speed":
        raise InputError(f"{cfg.source or 'command line'}: optimize: {cfg.optimize}: edgecc tune measures speed; "
                         "remove `optimize` (a tuning cache is not used under optimize: ram either)")
    check_out(out, [p for p in (cfg.source, cfg.model, cfg.calibration, cfg.verify, cfg.boards, cfg.tuning)
                    if p is not None])
    tmp, created = make_tmp(out)
    try:
        # nothing else prints while the bars are live but one-line notes (none under --quiet)
        with progress.shown(progress.wanted(args.quiet)), progress.notes_shown(not args.quiet):
            job = _tune if args.cmd == "tune" else _one \
                if len(targets) == 1 and not cfg.matrix and not (cfg.executor or "").startswith("ray") else _sweep
            try:
                code, show = job(args, cfg, targets, tmp, out)
            except OSError as e:  # a full disk, quota or read-only file system while writing: exit 2, one line
                from toolchain.write_errors import write_error
                raise write_error(e, tmp, out) from None
    except BaseException as e:  # bad input, a bug, an interrupt: leave no trace, not even the parents made for tmp
        if debugging() and not isinstance(e, InputError | KeyboardInterrupt):
            print(f"edgecc: EDGECC_DEBUG: the generated files are kept in {tmp}", file=sys.stderr)
            raise
        shutil.rmtree(tmp, ignore_errors=True)
        if not out.exists():
            remove_empty(created)
        raise
    shutil.rmtree(tmp, ignore_errors=True)  # normally moved into OUT already
    show()
    return code


def _one(args: argparse.Namespace, cfg: Config, targets: list[Target], tmp: Path,
         out: Path) -> tuple[int, Callable[[], None]]:
    """One board: OUT/lib, OUT/fw and (run) the report files in OUT."""
    from targets import TargetError
    from toolchain.pipeline import compile_model, import_model
    from toolchain.progress import step

    if args.cmd == "run":  # (the runner and the report writers: not for a build)
        from profiler.outputs import write_outputs
        from profiler.report import print_table
        from toolchain.runner import run_and_verify, verification_data

    target = targets[0]
    try:
        imported = import_model(cfg, target)
        # bad verification DATA is refused before any C is built
        data = verification_data(cfg, imported.graph_f32, imported.graph_s8) if args.cmd == "run" else None
        build = compile_model(cfg, target, tmp, profile=args.cmd == "run" or bool(cfg.profile), imported=imported)
        if args.cmd == "build":
            finalize(tmp, out)
            return 0, lambda: print(f"edgecc: wrote {out}/lib (model library, arena {build.plan.arena_bytes} B) "
                                    f"and {out}/fw/firmware.elf")
        with step(f"{target.name}: run on the board, verify, measure the error per op"):
            from toolchain.executors import default_jobs

            outcome = run_and_verify(build, data, jobs=cfg.jobs or default_jobs())
    except TargetError as e:
        raise target_error(e, target) from None
    write_outputs(outcome.report, tmp)
    finalize(tmp, out)

    def show() -> None:
        if not args.quiet:
            print_table(outcome.report)
        why = "".join(f"{w}; " for w in (_emulator_said(outcome.report), _tflm_differs(outcome.report),
                                         _gates_failed(outcome.report)) if w)
        print(f"edgecc: {VERDICTS[outcome.exit_code]}: {why}report in {out}/report.json (also .md, .csv, .html)")

    return outcome.exit_code, show


def _tune(args: argparse.Namespace, cfg: Config, targets: list[Target], tmp: Path,
          out: Path) -> tuple[int, Callable[[], None]]:
    """`edgecc tune` (toolchain.tune.tune_command): the rounds in tmp, the cache at --output."""
    from targets import TargetError
    from toolchain.tune import tune_command

    try:
        return tune_command(cfg, targets[0], tmp, out, args.output, args.quiet)
    except TargetError as e:
        raise target_error(e, targets[0]) from None


def target_error(e: Exception, target: Target | None = None) -> EdgeccError:
    """A board-side failure as the CLI's error: generated C that does not compile or link is edgecc's
    fault (InternalError, exit 4), unless the board comes from the user's own boards file (its
    toolchain flags are the likelier cause: exit 2, naming the file); a board that cannot take the
    model, a missing tool, QEMU trouble: exit 2."""
    from targets import CompileError, default_boards_path

    if isinstance(e, CompileError) and target is not None and target.source != default_boards_path().name:
        return InputError(f"the generated C does not build for board '{target.name}' of {target.source}: {e}; "
                          "check the board's toolchain flags (compiler, cflags, ldflags) there")
    if isinstance(e, CompileError):
        return InternalError(f"the generated C does not build: {e}; {REPORT_HINT}")
    return InputError(str(e))


def _emulator_said(report: dict) -> str | None:
    """'the emulator stopped the run: <what it said> (fw/run.log)' when QEMU itself ended the run
    (fault kind emulator: an unknown -cpu, a lockup), else None."""
    f = report.get("fault") or {}
    return f"the emulator stopped the run: {f.get('line', '')} (see fw/run.log)" if f.get("kind") == "emulator" else None


def _gates_failed(report: dict) -> str | None:
    """'gate failed: ...' naming each failed YAML gate (verification.gates_failed), else None."""
    gates = (report.get("verification") or {}).get("gates_failed") or []
    return f"gate failed: {'; '.join(gates)}" if gates else None


def _tflm_differs(report: dict) -> str | None:
    """'TFLM differs ... at op k (name, type)' when a .tflite run's outputs differ from TFLM's
    (verification.tflm_bit_exact false; the runner makes that a mismatch), else None."""
    v = report.get("verification") or {}
    if v.get("tflm_bit_exact") is not False:
        return None
    first = (v.get("tflm") or {}).get("first_difference") or {}
    if "op_index" in first:
        return (f"TFLM differs from the board's outputs, first at op {first['op_index']} ({first['name']}, "
                f"{first['op_type']}, max {first['max_abs_diff']:g} LSB)")
    return f"TFLM differs from the board's outputs ({first.get('note') or first.get('error') or 'op not located'})"


def _sweep(args: argparse.Namespace, cfg: Config, targets: list[Target], tmp: Path,
           out: Path) -> tuple[int, Callable[[], None]]:
    """Several units (boards x the YAML's matrix points, toolchain.units), each built (and run) into
    OUT/<unit>/ by the executor (toolchain.executors: --jobs N processes, or Ray); a unit that fails is
    recorded in summary.json and the sweep goes on. Bad model or data fails the whole sweep (exit 2,
    nothing written), as for one board."""
    from profiler.sweep import print_sweep, summary, write_summary
    from toolchain.executors import default_jobs, run_units
    from toolchain.progress import step
    from toolchain.units import UnitJob, expand_units

    where = str(cfg.source) if cfg.source else "command line"
    units = expand_units([t.name for t in targets], cfg.matrix, where)
    workers = cfg.jobs or default_jobs()
    overrides = {"calibration": args.calibration, "verify": args.verify, "repeats": args.repeat,
                 "warmup": args.warmup, "optimize": args.optimize, "debug_guards": args.debug_guards,
                 "kernels": args.kernels, "boards": args.boards, "name": args.name, "precision": args.precision,
                 "weights_format": args.weights_format, "verify_chunk": args.verify_chunk, "model": args.model}
    # paths stay as given (reports name them so); workers run in this folder (Ray tasks change into it)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    chunk_jobs = max(1, workers // len(units))  # verification chunks share what the units leave
    jobs = [UnitJob(args.cmd, cfg.source, overrides, args.layout, u, tmp / u.name,
                    chunk_jobs, str(Path.cwd())) for u in units]
    how = cfg.executor or "local"
    with step(f"{len(units)} units, {min(workers, len(units))} at once ({how})", len(units)) as advance:
        results = run_units(jobs, workers, cfg.executor, advance)
    fatal = next((r.fatal for r in results if r.fatal), None)
    if fatal:
        raise InputError(fatal)
    entries = [r.entry for r in results]
    reports = {r.name: r.report for r in results if r.report is not None}
    models = list(dict.fromkeys(e.get("model") or str(cfg.model) for e in entries))
    doc = summary(", ".join(models), entries)
    write_summary(doc, tmp / "summary.json")  # build too: which units built, with arena and flash
    finalize(tmp, out)

    def show() -> None:
        if args.cmd == "run" and not args.quiet:
            print_sweep(doc, reports)
        for e in entries:
            if args.cmd == "build":
                print(f"edgecc: {e['unit']}: " + (f"ERROR: {e['error']}" if e["error"] else
                                                  f"wrote {out}/{e['unit']}/lib and fw/firmware.elf"))
            else:
                where = e["error"] or f"{out}/{e['unit']}/report.json"
                rep = reports.get(e["unit"]) or {}
                why = "".join(f"{w}; " for w in (_emulator_said(rep), _tflm_differs(rep), _gates_failed(rep)) if w)
                print(f"edgecc: {e['unit']}: {VERDICTS[e['exit_code']]}: {why}{where}")
        verdict = VERDICTS[doc["exit_code"]] if args.cmd == "run" or doc["exit_code"] else "BUILT"
        noun = "units" if cfg.matrix else "boards"
        print(f"edgecc: {verdict} (worst of {len(entries)} {noun}): summary in {out}/summary.json")

    return doc["exit_code"], show


def _compare(args: argparse.Namespace) -> int:
    from profiler.compare import CompareError, compare, load_report, parse_budget, print_comparison

    try:
        budget = parse_budget(args.max_regression)
        c = compare(load_report(args.a), load_report(args.b), budget, args.force)
    except CompareError as e:
        raise InputError(str(e)) from None
    if not args.quiet:
        print_comparison(c, str(args.a), str(args.b))
    for f in c.failures:
        print(f"edgecc: budget exceeded: {f}")
    limits = ", ".join(f"{k} {v:.1%}" for k, v in budget.items())
    print(f"edgecc: compare: {'FAIL' if c.failures else 'PASS'} (budget: {limits})")
    return 1 if c.failures else 0


def error_text(e: EdgeccError) -> str:
    """`edgecc: error: <message>` on one line (control characters escaped, at most MAX_LINE characters);
    an unsupported-model summary keeps its indented body lines, each made printable the same way."""
    from toolchain.errors import UnsupportedModel

    if isinstance(e, InternalError):
        return f"edgecc: internal error: {one_line(str(e), 600)}"
    if not isinstance(e, UnsupportedModel):
        return f"edgecc: error: {one_line(str(e))}"
    first, *rest = str(e).splitlines() or [""]
    return "\n".join([f"edgecc: error: {one_line(first)}", *("  " + one_line(r.strip()) for r in rest)])


def internal_error_text(e: BaseException) -> str:
    """The one line for an exception edgecc did not expect: its type, message and where it was
    raised (the innermost frame in edgecc's own code), and whom to tell."""
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if "site-packages" not in f.filename]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    what = one_line(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__, 200)
    return f"edgecc: internal error: {what}{where}; {REPORT_HINT}"


def debugging() -> bool:
    """EDGECC_DEBUG=1: unexpected exceptions show their traceback, and failed jobs keep their temp folder."""
    return os.environ.get("EDGECC_DEBUG", "") not in ("", "0")


# numpy's runtime knobs, read when numpy is first imported (the pipeline imports it lazily, after this):
# one BLAS thread (toolchain.blas: a multi-threaded OpenBLAS spins for a busy core; results do not
# change), and no transparent huge pages for numpy's arrays of 4 MiB and more (the kernel compacts
# memory to fault them in: 0.3-0.5 s more system time in a float VWW build on the 2-core bench
# machine). A value set by the user wins.
NUMPY_ENV = {"OPENBLAS_NUM_THREADS": "1", "NUMPY_MADVISE_HUGEPAGE": "0"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `edgecc` console script; returns the exit status."""
    for var, value in NUMPY_ENV.items():
        os.environ.setdefault(var, value)
    args = _parser().parse_args(argv)
    signals.install()  # SIGTERM/SIGHUP unwind like Ctrl-C (temp folder removed, QEMU killed)
    if not debugging():  # library warnings (numpy, onnx) are not edgecc's messages: one line per error stays one
        import warnings
        warnings.simplefilter("ignore")
    try:
        if args.cmd == "boards":
            return _boards(args.boards)
        if args.cmd == "ops":
            from toolchain.support import render

            print(render(), end="")
            return 0
        return _compare(args) if args.cmd == "compare" else _job(args)
    except EdgeccError as e:
        print(error_text(e), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return signals.interrupted(e)
    except Exception as e:  # the last line of defence: a bug of ours is one line and exit 4, never a traceback
        if debugging():
            raise
        print(internal_error_text(e), file=sys.stderr)
        return InternalError.exit_code


if __name__ == "__main__":
    sys.exit(main())
