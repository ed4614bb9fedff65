"""The `edgecc` command line: parses arguments, calls the pipeline and the runner, prints.

  edgecc run   [CONFIG.yaml] [--model PATH] [--board NAME] [--calibration DATA] [--verify DATA] [--out DIR]
  edgecc build [CONFIG.yaml] [same flags]          write OUT/lib and OUT/fw without running
  edgecc boards                                    list the boards of boards.yaml

Exit status: 0 pass; 1 verification mismatch (complete OUT written); 2 bad input or usage
(nothing written); 3 guest fault or timeout (complete OUT with the log and the running op).
Everything is built in a temporary folder beside OUT and renamed into place at the end.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from toolchain.errors import EdgeccError, InputError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edgecc", description="Compile a trained network to verified int8 C for Arm boards.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, helptext in (("run", "build with profiling, run on the board, verify bit for bit, report"),
                           ("build", "write OUT/lib (model library) and OUT/fw (test firmware) without running")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("config", nargs="?", type=Path, help="pipeline YAML (optional with --model)")
        s.add_argument("--model", type=Path, help="float ONNX model")
        s.add_argument("--board", help="board name from boards.yaml (see `edgecc boards`)")
        s.add_argument("--calibration", type=Path, help="calibration DATA: .npy, .npz or a folder of images")
        s.add_argument("--verify", type=Path, help="verification DATA: .npy, .npz or a folder of images")
        s.add_argument("--out", type=Path, help="output folder (default from the YAML, else ./out)")
        s.add_argument("--quiet", action="store_true", help="no table, only errors and the final line")
    sub.add_parser("boards", help="list the boards")
    return p


def _boards() -> int:
    from targets import list_targets

    for t in list_targets():
        feats = ",".join(sorted(t.isa_features)) or "-"
        kernels = ",".join(i.value for i in t.kernel_preference)
        print(f"{t.name:<12} {t.cpu:<11} features={feats:<18} kernels={kernels:<18} cost={t.run.cost_unit:<12} {t.description}")
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


def _job(args: argparse.Namespace) -> int:
    from targets import TargetError, load_target
    from toolchain.config import load_config
    from toolchain.pipeline import compile_model

    cfg = load_config(args.config, {"model": args.model, "board": args.board, "calibration": args.calibration,
                                    "verify": args.verify, "out": args.out})
    try:
        target = load_target(cfg.board)
    except TargetError as e:
        raise InputError(str(e)) from None
    out = cfg.out.resolve()
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: the output path exists and is not a folder; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        profile = args.cmd == "run" or bool(cfg.profile)
        try:
            build = compile_model(cfg, target, tmp, profile=profile)
        except TargetError as e:
            raise InputError(str(e)) from None
        if args.cmd == "build":
            _finalize(tmp, out)
            print(f"edgecc: wrote {out}/lib (model library, arena {build.plan.arena_bytes} B) and {out}/fw/firmware.elf")
            return 0
        try:
            return _run(build, tmp, out, args.quiet)
        except TargetError as e:
            raise InputError(str(e)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(build, tmp: Path, out: Path, quiet: bool) -> int:
    from profiler.report import print_table, write_json, write_markdown
    from toolchain.runner import run_and_verify

    outcome = run_and_verify(build)
    write_json(outcome.report, tmp / "report.json")
    write_markdown(outcome.report, tmp / "report.md")
    _finalize(tmp, out)
    if not quiet:
        print_table(outcome.report)
    verdict = {0: "PASS", 1: "FAIL (verification)", 3: "FAULT"}[outcome.exit_code]
    print(f"edgecc: {verdict}: report in {out}/report.json")
    return outcome.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `edgecc` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _boards() if args.cmd == "boards" else _job(args)
    except EdgeccError as e:
        print(f"edgecc: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("edgecc: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
