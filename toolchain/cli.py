"""The `edgecc` command line: parses arguments, calls the pipeline and the runner, prints.

  edgecc run   [CONFIG.yaml] [--model PATH] [--board NAME[,NAME...]|all] [--calibration DATA] [--verify DATA]
               [--out DIR] [--repeat N] [--warmup N] [--kernels auto|portable] [--quiet]
  edgecc build [CONFIG.yaml] [same flags]          write OUT/lib and OUT/fw without running
  edgecc compare A/report.json B/report.json [--max-regression 5%] [--force]
  edgecc boards                                    list the boards of boards.yaml
  edgecc ops                                       ops, dtypes and attributes per frontend; kernels per board

Exit status: 0 pass; 1 verification mismatch (complete OUT written) or, for compare, a budget
exceeded; 2 bad input or usage (nothing written); 3 guest fault or timeout (complete OUT with the
log and the running op). A sweep over several boards writes OUT/<board>/ each and OUT/summary.json
and exits with the worst board's status (3 > 2 > 1 > 0).
Everything is built in a temporary folder beside OUT and renamed into place at the end.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolchain.errors import EdgeccError, InputError

if TYPE_CHECKING:
    from targets import Target
    from toolchain.config import Config

VERDICTS = {0: "PASS", 1: "FAIL (verification)", 2: "ERROR", 3: "FAULT"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edgecc", description="Compile a trained network to verified int8 C for Arm boards.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, helptext in (("run", "build with profiling, run on the board, verify bit for bit, report"),
                           ("build", "write OUT/lib (model library) and OUT/fw (test firmware) without running")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("config", nargs="?", type=Path, help="pipeline YAML (optional with --model)")
        s.add_argument("--model", type=Path, help="float ONNX model")
        s.add_argument("--board", help="board name from boards.yaml (see `edgecc boards`), a comma-separated list "
                                       "of boards, or `all`: each into OUT/<board>/ plus OUT/summary.json")
        s.add_argument("--calibration", type=Path, help="calibration DATA: .npy, .npz or a folder of images")
        s.add_argument("--verify", type=Path, help="verification DATA: .npy, .npz or a folder of images")
        s.add_argument("--out", type=Path, help="output folder (default from the YAML, else ./out)")
        s.add_argument("--repeat", type=int, metavar="N", help="timed runs of sample 0 for measured timers "
                                                               "(median, min, max; default 5; exact counts run once)")
        s.add_argument("--optimize", choices=("speed", "ram"), help="speed (default): the board's fastest kernels; "
                                                                    "ram: per op the kernel needing the least scratch RAM")
        s.add_argument("--kernels", metavar="auto|portable", help="auto (default): the board's kernel variants "
                                                                   "(dsp, helium, neon); portable: portable C only")
        s.add_argument("--warmup", type=int, metavar="N", help="untimed runs of sample 0 before them (default 1)")
        s.add_argument("--debug-guards", action="store_true", default=None,
                       help="debug build: guard bytes after every arena buffer, checked after every op")
        s.add_argument("--quiet", action="store_true", help="no table and no progress, only errors and the final line")
    c = sub.add_parser("compare", help="per-op and total deltas of two report.json; non-zero exit over budget")
    c.add_argument("a", type=Path, help="baseline report.json")
    c.add_argument("b", type=Path, help="new report.json")
    c.add_argument("--max-regression", metavar="PCT", help="allowed growth of total cost, arena and flash, each "
                                                         "checked separately: 5%% (default), 0.05, or cost=5%%,arena=0,flash=1%%")
    c.add_argument("--force", action="store_true", help="compare reports of different boards or cost units")
    c.add_argument("--quiet", action="store_true", help="only the verdict lines")
    sub.add_parser("boards", help="list the boards")
    sub.add_parser("ops", help="the support matrix: ops, dtypes and attributes per frontend, kernels per board")
    return p


def _boards() -> int:
    from targets import list_targets

    for t in list_targets():
        feats = ",".join(sorted(t.isa_features)) or "-"
        kernels = ",".join(i.value for i in t.kernel_preference)
        print(f"{t.name:<12} {t.cpu:<11} features={feats:<18} kernels={kernels:<18} cost={t.run.cost_unit:<12} "
              f"time={t.run.time_source.value:<7} {t.description}")
    return 0


def _finalize(tmp: Path, out: Path) -> None:
    """Move the finished build into OUT, replacing a previous one."""
    if out.exists():
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)


def _targets(spec: str) -> list[Target]:
    """The boards of --board: one name, a comma-separated list, or `all` (InputError if unknown)."""
    from targets import TargetError, list_targets, load_target

    try:
        if spec.strip() == "all":
            return list_targets()
        names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
        if not names:
            raise InputError(f"--board {spec!r}: no board named")
        return [load_target(n) for n in names]
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
                                    "kernels": args.kernels})
    targets = _targets(cfg.board)
    out = cfg.out.resolve()
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: the output path exists and is not a folder; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        with progress.shown(progress.wanted(args.quiet)):  # nothing else prints while the bars are live
            job = _one if len(targets) == 1 else _sweep
            code, show = job(args, cfg, targets, tmp, out)
        show()
        return code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _one(args: argparse.Namespace, cfg: Config, targets: list[Target], tmp: Path,
         out: Path) -> tuple[int, Callable[[], None]]:
    """One board: OUT/lib, OUT/fw and (run) the report files in OUT."""
    from profiler.outputs import write_outputs
    from profiler.report import print_table
    from targets import TargetError
    from toolchain.pipeline import compile_model
    from toolchain.progress import step
    from toolchain.runner import run_and_verify

    target = targets[0]
    try:
        build = compile_model(cfg, target, tmp, profile=args.cmd == "run" or bool(cfg.profile))
        if args.cmd == "build":
            _finalize(tmp, out)
            return 0, lambda: print(f"edgecc: wrote {out}/lib (model library, arena {build.plan.arena_bytes} B) "
                                    f"and {out}/fw/firmware.elf")
        with step(f"{target.name}: run on the board, verify, measure the error per op"):
            outcome = run_and_verify(build)
    except TargetError as e:
        raise InputError(str(e)) from None
    write_outputs(outcome.report, tmp)
    _finalize(tmp, out)

    def show() -> None:
        if not args.quiet:
            print_table(outcome.report)
        print(f"edgecc: {VERDICTS[outcome.exit_code]}: report in {out}/report.json (also .md, .csv, .html)")

    return outcome.exit_code, show


def _sweep(args: argparse.Namespace, cfg: Config, targets: list[Target], tmp: Path,
           out: Path) -> tuple[int, Callable[[], None]]:
    """Several boards: the model is imported and quantized once, then built (and run) per board
    into OUT/<board>/; a board that fails to build is recorded and the sweep goes on."""
    from profiler.outputs import write_outputs
    from profiler.sweep import board_entry, print_sweep, summary, write_summary
    from targets import TargetError
    from toolchain.pipeline import compile_model, import_model
    from toolchain.progress import step
    from toolchain.runner import run_and_verify

    with step("import and quantize (shared by the boards)"):
        imported = import_model(cfg)
    entries, reports = [], {}
    with step(f"boards: {', '.join(t.name for t in targets)}", len(targets)) as advance:
        for target in targets:
            sub = tmp / target.name
            try:
                build = compile_model(cfg, target, sub, profile=args.cmd == "run" or bool(cfg.profile),
                                      imported=imported)
                if args.cmd == "run":
                    with step(f"{target.name}: run on the board, verify, measure the error per op"):
                        outcome = run_and_verify(build)
                    write_outputs(outcome.report, sub)
                    reports[target.name] = outcome.report
                entries.append(board_entry(target.name, outcome.exit_code if args.cmd == "run" else 0,
                                           reports.get(target.name)))
            except (EdgeccError, TargetError) as e:
                entries.append(board_entry(target.name, getattr(e, "exit_code", 2), None, str(e)))
            advance(1)
    doc = summary(str(cfg.model), entries)
    if args.cmd == "run":
        write_summary(doc, tmp / "summary.json")
    _finalize(tmp, out)

    def show() -> None:
        if args.cmd == "run" and not args.quiet:
            print_sweep(doc, reports)
        for e in entries:
            if args.cmd == "build":
                print(f"edgecc: {e['board']}: " + (f"ERROR: {e['error']}" if e["error"] else
                                                   f"wrote {out}/{e['board']}/lib and fw/firmware.elf"))
            else:
                where = e["error"] or f"{out}/{e['board']}/report.json"
                print(f"edgecc: {e['board']}: {VERDICTS[e['exit_code']]}: {where}")
        if args.cmd == "run":
            print(f"edgecc: {VERDICTS[doc['exit_code']]} (worst of {len(entries)} boards): summary in {out}/summary.json")

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `edgecc` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "boards":
            return _boards()
        if args.cmd == "ops":
            from toolchain.support import render

            print(render(), end="")
            return 0
        return _compare(args) if args.cmd == "compare" else _job(args)
    except EdgeccError as e:
        print(f"edgecc: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("edgecc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
