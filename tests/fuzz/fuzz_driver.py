"""Runs one fuzz case of the front door (issue 12 item 5) in-process and judges it.

A case is (kind, seed): the kind's valid seed input (the repository's own digits example, a small
QDQ net and a TFLite conv built by the test helpers, the keras op-mix .tflite of ../shared when
present) damaged by tests/fuzz/fuzz_mutators.py, written into a fresh folder with the rest of a
valid job, and given to `edgecc build` (the `data` kind: `edgecc run` on the host board, which
reads and verifies the data too, for odd seeds when not `fast`). What must hold whatever the input:
  - exit status 0 or 2 (never 1 from a build, never 4: an internal error is a bug found);
  - no traceback; exit 2 prints `edgecc: error: ...` naming a file, one line (an unsupported-model
    summary may add indented lines), at most 300 characters a line besides the case folder's path;
  - nothing left behind on exit 2 (no OUT, no temp folder), a complete OUT on exit 0;
  - it ends within the time limit (a hang is a failure).
`fast=True` replaces the board compiler by a stub once a case reached it (the generated C of
cases that passed is still compiled by the first few of each kind): the front door is what is
fuzzed, and gcc takes 1-2 s a case.

Also a script: `python tests/fuzz/fuzz_driver.py KIND FIRST_SEED COUNT [--full]` prints one
JSON verdict per line (bench/fuzz_campaign.py runs it in subprocesses).
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO, REPO / "tests" / "frontend", REPO / "tests" / "fuzz"):
    if str(_p) not in sys.path:
        sys.path.append(str(_p))

import fuzz_mutators as mut  # noqa: E402

DIGITS = REPO / "examples" / "digits"
SHARED = REPO.parent / "shared"
KINDS = ("onnx", "qdq", "tflite", "yaml", "data")
FILE_RE = re.compile(r"\.(onnx|tflite|yaml|yml|npy|npz)\b|--\w|/")


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that ran past its limit (a BaseException: no handler of edgecc
    may swallow it)."""


@dataclass
class Verdict:
    """One case's outcome; `problems` is empty when every property held."""

    kind: str
    seed: int
    code: int | None
    seconds: float
    first_line: str
    problems: list[str] = field(default_factory=list)


@cache
def seeds() -> dict[str, bytes]:
    """The valid inputs every case starts from (built once per process)."""
    from _qdq_cases import qdq_convnet
    from _tflite_cases import conv_case

    s = {"digits.onnx": (DIGITS / "model.onnx").read_bytes(), "calibration.npy": (DIGITS / "calibration.npy").read_bytes(),
         "verify.npy": (DIGITS / "verify.npy").read_bytes(),
         "qdq.onnx": qdq_convnet().model().SerializeToString(),
         "conv.tflite": conv_case(np.random.default_rng(3), h=6, w=5, cin=3, cout=4, k=(3, 3))[0]}
    opmix = SHARED / "models" / "exported" / "keras_opmix_int8.tflite"
    if opmix.is_file():
        s["opmix.tflite"] = opmix.read_bytes()
    return s


DIGITS_YAML = ("model: {model}\nboard: host\ncalibration: calibration.npy\nverify: verify.npy\n"
               "preprocess:\n  scale: 0.0625\n  layout: NCHW\n")


def make_case(kind: str, seed: int, folder: Path, cmd_run: bool = False) -> list[str]:
    """Write case (kind, seed) into `folder` and return the edgecc argv (OUT: folder/out/result);
    `cmd_run`: the data kind damages the verification data and runs on the host board."""
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    s = seeds()
    files = {"calibration.npy": s["calibration.npy"], "verify.npy": s["verify.npy"], "model.onnx": s["digits.onnx"]}
    yaml_text = DIGITS_YAML.format(model="model.onnx")
    cmd = "build"
    if kind == "onnx":
        files["model.onnx"] = mut.mutate_onnx(s["digits.onnx"], rng)
    elif kind == "qdq":
        files = {"model.onnx": mut.mutate_onnx(s["qdq.onnx"], rng)}
        yaml_text = "model: model.onnx\nboard: host\n"
    elif kind == "tflite":
        base = mut._pick(rng, sorted(k for k in s if k.endswith(".tflite")))
        files = {"model.tflite": mut.mutate_tflite(s[base], rng)}
        yaml_text = "model: model.tflite\nboard: host\n"
    elif kind == "yaml":
        yaml_text = mut.mutate_yaml(yaml_text.encode(), rng)
    elif kind == "data":  # verification data is read after the build: `run` it where gcc runs (not fast)
        which = "verify.npy" if cmd_run else "calibration.npy"
        files[which] = mut.mutate_npy(s[which], rng)
        cmd = "run" if cmd_run else "build"
    else:
        raise ValueError(kind)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "pipeline.yaml").write_bytes(yaml_text if isinstance(yaml_text, bytes) else yaml_text.encode())
    return [cmd, str(folder / "pipeline.yaml"), "--out", str(folder / "out" / "result"), "--quiet", "--repeat", "1",
            "--warmup", "0"]


_compiled: dict[str, int] = {}


@contextlib.contextmanager
def _stub_compiler(kind: str, fast: bool, keep_real: int = 3):
    """In fast mode, after `keep_real` real builds of this kind, skip gcc (a stub raising a marker)."""
    import toolchain.pipeline as pipeline

    real = pipeline.build_firmware
    if not fast or _compiled.get(kind, 0) < keep_real:
        def counting(*a, **k):
            _compiled[kind] = _compiled.get(kind, 0) + 1
            return real(*a, **k)
        pipeline.build_firmware = counting
    else:
        def stub(*_a, **_k):
            raise _ReachedCompiler
        pipeline.build_firmware = stub
    try:
        yield
    finally:
        pipeline.build_firmware = real


class _ReachedCompiler(BaseException):
    """Fast mode: the case passed the front door, import, quantization and emission."""


def _alarm(_sig, _frame):
    raise CaseTimeout


def run_case(kind: str, seed: int, root: Path, timeout_s: float = 30.0, fast: bool = True) -> Verdict:
    """Make and run case (kind, seed) under `root`, and judge it (see the module docstring)."""
    from toolchain.cli import main

    folder = root / f"{kind}-{seed}"
    argv = make_case(kind, seed, folder, cmd_run=not fast and seed % 2 == 1)
    out = Path(argv[argv.index("--out") + 1])
    so, se = io.StringIO(), io.StringIO()
    code: int | None = None
    problems: list[str] = []
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    t0 = time.monotonic()
    try:
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se), _stub_compiler(kind, fast):
            code = main(argv)
    except _ReachedCompiler:
        code = 0
    except CaseTimeout:
        problems.append(f"hang: still running after {timeout_s:g} s")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    except BaseException as e:  # noqa: BLE001 - any escape is what the fuzzer looks for
        problems.append(f"escaped {type(e).__name__}: {e}"[:300])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    seconds = time.monotonic() - t0
    err = se.getvalue()
    lines = err.strip().splitlines()
    first = lines[0] if lines else ""
    if "Traceback" in err:
        problems.append("traceback on stderr")
    if code not in (0, 2, None):
        problems.append(f"exit {code}")
    if code == 2:
        problems += _judge_error([ln.replace(str(folder), "CASE") for ln in lines])  # the user's path is not ours
        left = sorted(p.name for p in out.parent.iterdir()) if out.parent.exists() else []
        if left:
            problems.append(f"left in the OUT folder's parent: {left}")
    if code == 0 and out.parent.exists() and any(p.name.startswith(".") for p in out.parent.iterdir()):
        problems.append("a temp folder left beside OUT")
    return Verdict(kind, seed, code, round(seconds, 3), first[:300], problems)


def _judge_error(lines: list[str]) -> list[str]:
    problems = []
    if not lines or not lines[0].startswith("edgecc: error: "):
        return [f"exit 2 without an `edgecc: error:` line: {lines[:1]}"]
    if len(lines) > 1 and not (lines[0].count("unsupported") and all(ln.startswith("  ") for ln in lines[1:])
                               and len(lines) <= 15):
        problems.append(f"{len(lines)} lines")
    if any(len(ln) > 300 for ln in lines):
        problems.append(f"a line of {max(len(ln) for ln in lines)} characters")
    if not FILE_RE.search(lines[0]):
        problems.append("the error names no file")
    return problems


if __name__ == "__main__":
    import tempfile

    kind, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with tempfile.TemporaryDirectory(prefix="edgecc-fuzz-") as tmp:
        for sd in range(first, first + count):
            v = run_case(kind, sd, Path(tmp), fast="--full" not in sys.argv)
            print(json.dumps(asdict(v)), flush=True)
