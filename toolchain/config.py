"""The pipeline configuration: one YAML file (all keys optional but `model`), overridden by CLI
flags. Owns the schema, defaults, validation and path resolution (YAML paths are relative to the
YAML file, flag paths to the current directory). Every error is one InputError line."""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from toolchain.clip import clip_repr, clip_text
from toolchain.codegen.libnames import name_problem
from toolchain.errors import InputError
from toolchain.yaml_safe import read_yaml

PREPROCESS_KEYS = {"cast", "resize", "scale", "mean", "std", "channel_order", "layout"}
# The flag that sets each key from the command line (errors blame the flag, not the YAML).
FLAGS = {"board": "--board", "repeats": "--repeat", "warmup": "--warmup", "optimize": "--optimize",
         "debug_guards": "--debug-guards", "kernels": "--kernels", "name": "--name", "precision": "--precision",
         "weights_format": "--weights-format", "jobs": "--jobs", "executor": "--executor",
         "verify_chunk": "--verify-chunk"}
# Strict value checks per key: YAML has no schema, and Python's int()/float()/bool() would turn
# `repeats: 2.7` into 2, `profile: "false"` into True and `min_top1_agreement: 97` into a gate
# that can never pass, so each kind is checked as written.
_STRS = ("board", "weights_section", "name", "executor")
_CHOICES = {"calibration_method": ("mse", "minmax", "percentile", "kl", "auto"), "rounding": ("tflm", "onnx"),
            "optimize": ("speed", "ram"), "kernels": ("auto", "portable"), "io_layout": ("NHWC", "NCHW"),
            "io_dtype": ("int8", "uint8", "float32"), "precision": ("int8", "int16", "auto"),
            "weights_format": ("auto", "c", "blob")}
_INTS = {"repeats": (1, 1000), "warmup": (0, 1000), "batch": (1, 4096), "max_arena_bytes": (1, 1 << 40),
         "jobs": (1, 1024), "verify_chunk": (1, 1 << 24)}
_FLOATS = {"min_top1_agreement": (0.0, 1.0), "min_sqnr_db": (-math.inf, math.inf), "max_cost_ratio": (1.0, 1e6)}
# precision_target (precision: auto): the held-out figures at which the search stops moving layers to int16
TARGET_KEYS = {"agreement": (0.0, 1.0), "sqnr_db": (-math.inf, math.inf)}
_BOOLS = ("profile", "debug_guards")
# weights_section is pasted into C (__attribute__((section(...)))) and the linker script: a plain
# section name only, no quotes, spaces or escapes.
SECTION_RE = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_.$]*")  # fullmatch: `$` alone would let a final newline through
# Sections a toolchain treats as RAM (zeroed, copied at start-up or kept over reset) or as the arena:
# weights there would cost RAM or fail to build (GCC refuses initialised data in .bss).
RAM_SECTION_RE = re.compile(r"^\.(bss|data|noinit|sbss|sdata|tbss|tdata|heap|stack|arena)(\.|$)")
# Names (board, section, input names) go into messages, C and linker scripts: no control characters (a
# newline would split the error line) and a bounded length. Paths may hold them: see _path.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
MAX_TEXT = 200      # characters of a name (board, section, input name)
MAX_PATH = 4096     # characters of a path (PATH_MAX on Linux)
MAX_DIM = 1 << 16   # one dimension of an input_shapes entry
MAX_RANK = 8        # dimensions of an input_shapes entry


def _checked(key: str, value: Any, where: str) -> Any:
    """`value` of config key `key` if it has the key's type and range, else InputError naming
    `where` (the YAML file or the flag), the key, the value and what is expected."""
    def bad(expected: str) -> InputError:
        return InputError(f"{where}: `{key}` must be {expected}, not {clip_repr(value)}")

    if key in _BOOLS:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if key in _INTS:
        lo, hi = _INTS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise bad(f"an integer between {lo} and {hi}")
        return value
    if key in _FLOATS:
        lo, hi = _FLOATS[key]
        what = "a fraction between 0 and 1 (0.97 means 97%)" if hi == 1.0 else "a finite number"
        if key == "max_cost_ratio":
            what = "a number of at least 1 (estimated instructions of the mixed graph / the int8 graph's)"
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or not lo <= value <= hi:
            raise bad(what)
        return float(value)
    if key in _CHOICES:
        allowed = _CHOICES[key]
        if not isinstance(value, str) or value not in allowed:
            raise InputError(f"{where}: {key} must be {' or '.join(allowed)}, not {clip_repr(value)}")
        return value
    if not isinstance(value, str) or not value.strip():
        raise bad("a non-empty string")
    if len(value) > MAX_TEXT or _CONTROL_RE.search(value):
        raise bad(f"a name of at most {MAX_TEXT} characters without control characters")
    if key == "weights_section" and not SECTION_RE.fullmatch(value):
        raise bad("a linker section name such as .weights (letters, digits, _ . $)")
    if key == "executor" and value != "local" and value != "ray" and not (value.startswith("ray=") and value[4:].strip()):
        raise bad("local, ray (a local Ray instance) or ray=ADDRESS (a running Ray cluster)")
    if key == "name" and name_problem(value):
        raise bad(f"a library name: {name_problem(value)}")
    if key == "weights_section" and RAM_SECTION_RE.match(value):
        raise bad("a read-only (flash) section such as .weights or .rodata.weights, not a RAM section")
    return value


@dataclass(frozen=True)
class Preprocess:
    """How DATA becomes model input: cast (float32), resize [H, W] (images), x * scale, then
    (x - mean) / std per channel, channel_order RGB|BGR, and the data's layout NHWC|NCHW."""

    cast: str = "float32"
    resize: tuple[int, int] | None = None
    scale: float = 1.0
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    channel_order: str = "RGB"
    layout: str | None = None  # the data's layout; None: NHWC, or the model's own when only that fits


@dataclass(frozen=True)
class Config:
    """One edgecc job. Units: repeats = timed runs of sample 0 and warmup = untimed runs before
    them, for measured timers (clock, systick, pmu); exact instruction counts need one run."""

    model: Path | None = None
    board: str = "host"
    calibration: Path | None = None
    verify: Path | None = None
    out: Path = Path("out")
    preprocess: Preprocess = field(default_factory=Preprocess)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    profile: bool | None = None
    min_top1_agreement: float | None = None
    min_sqnr_db: float | None = None
    weights_section: str = ".weights"
    calibration_method: str = "mse"  # quantize.observers / quantize.auto; measured effect: docs/calibration.md
    # tflm: TFLM's double rounding, ties away; onnx: one rounding, ties to even (onnxruntime's);
    # None: the model's own (rounding_of): onnx for a quantized (QDQ / QLinear) ONNX model, else tflm
    rounding: str | None = None
    repeats: int = 5
    warmup: int = 1
    optimize: str = "speed"  # speed: the board's fastest kernels; ram: per op the kernel with the least scratch
    batch: int = 1  # inferences per run: the batch axis of every model input (per-inference figures = total / batch)
    debug_guards: bool = False  # guard bytes after every arena buffer, checked after every op (a debug build)
    kernels: str = "auto"  # auto: the board's kernel_preference; portable: the portable C kernels only (a baseline)
    boards: Path | None = None  # the user's own boards file: its boards add to or override boards.yaml's
    # the library's name (toolchain/codegen/libnames.py): prefixes its symbols, macros and files so several
    # libraries link into one firmware; None: today's names (ecc_model_run, ECC_ARENA_SIZE, model.h)
    name: str | None = None
    # the layout of 4-D inputs / outputs in the generated API: NHWC (ONNX: no Transpose at the edges) or
    # NCHW; None: the model file's own (ONNX NCHW, TFLite NHWC). toolchain.frontend.onnx_builder
    io_layout: str | None = None
    # the element type of the quantized inputs / outputs in the generated API: int8, uint8 or float32 (the
    # library quantizes / dequantizes); None: the model file's own. toolchain.passes.set_io_dtype
    io_dtype: str | None = None
    # int8: every activation int8; int16: every op with a 16x8 kernel in 16x8; auto: the worst layers
    # (isolated error) moved to 16x8 until precision_target is met on held-out calibration samples, within
    # max_arena_bytes and max_cost_ratio (quantize.precision, quantize.precision_search; docs/precision.md)
    precision: str = "int8"
    precision_target: dict[str, float | None] = field(default_factory=dict)  # agreement, sqnr_db (None: off)
    max_arena_bytes: int | None = None  # precision auto: no move whose graph's arena exceeds it (bytes)
    max_cost_ratio: float | None = None  # precision auto: estimated instructions at most this x the int8 graph's
    # how OUT/lib ships the constant arrays: c (weights.c, C initialisers), blob (weights.bin placed by a
    # weights.S with .incbin: big models build in seconds), auto: blob above 256 KiB (toolchain.codegen.weights_blob)
    weights_format: str = "auto"
    # sweeps (toolchain.units, toolchain.executors): processes running units at once (None: the machine's
    # cores), where they run (local processes, ray, ray=ADDRESS), and the samples per verification chunk
    # (None: one board run over all samples)
    jobs: int | None = None
    executor: str | None = None
    verify_chunk: int | None = None
    # the YAML's `matrix:` ({key: [values]}, validated by toolchain.units.matrix_points): one unit per point
    matrix: dict[str, list[Any]] | None = None
    # a tuning cache of `edgecc tune` (toolchain.tuning): per layer its measured fastest kernel where the
    # cache has the layer's signature for this board and edgecc version; None: the static choice
    tuning: Path | None = None
    source: Path | None = None  # the YAML file, for messages


def _path(value: Any, base: Path, key: str, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: `{key}` must be a path string, not {clip_repr(value)}")
    # a newline is a legal (if unwise) file-name character and kept; NUL is not, and every file API refuses it
    if len(value) > MAX_PATH or "\x00" in value:
        raise InputError(f"{where}: `{key}` must be a path of at most {MAX_PATH} characters without NUL "
                         f"characters, not {clip_repr(value)}")
    return (base / value) if not Path(value).is_absolute() else Path(value)


def _numbers(key: str, raw: Any, positive: bool) -> tuple[float, ...]:
    """preprocess mean/std: one finite number or a non-empty list of them (std: > 0), else ValueError."""
    vals = raw if isinstance(raw, list) else [raw]
    if not vals or len(vals) > MAX_DIM or any(isinstance(v, bool) or not isinstance(v, int | float) for v in vals) \
            or not all(math.isfinite(v) for v in vals) or (positive and any(v <= 0 for v in vals)):
        what = "positive" if positive else "finite"
        raise ValueError(f"{key} must be a {what} number or a list of them (one per channel), not {clip_repr(raw)}")
    return tuple(float(v) for v in vals)


def _choice(key: str, raw: Any, allowed: tuple[str, ...]) -> str:
    """preprocess channel_order / layout: one of `allowed` (any case), else ValueError."""
    if not isinstance(raw, str) or raw.upper() not in allowed:
        raise ValueError(f"{key} must be {' or '.join(allowed)}, not {clip_repr(raw)}")
    return raw.upper()


def _preprocess(raw: Any, where: str) -> Preprocess:
    if raw is None:
        return Preprocess()
    if not isinstance(raw, dict) or set(raw) - PREPROCESS_KEYS:
        bad = sorted(map(str, set(raw) - PREPROCESS_KEYS)) if isinstance(raw, dict) else raw
        raise InputError(f"{where}: preprocess: unknown key(s) {clip_repr(bad)}; allowed: {sorted(PREPROCESS_KEYS)}")
    p = Preprocess()
    try:
        kw: dict[str, Any] = {}
        if "cast" in raw:
            if raw["cast"] != "float32":
                raise ValueError(f"cast must be float32, not {clip_repr(raw['cast'])}")
            kw["cast"] = "float32"
        if raw.get("resize") is not None:
            r = raw["resize"]
            if not isinstance(r, list) or len(r) != 2 or any(isinstance(v, bool) or not isinstance(v, int)
                                                            or not 1 <= v <= MAX_DIM for v in r):
                raise ValueError(f"resize must be [height, width] of positive integers up to {MAX_DIM}, "
                                 f"not {clip_repr(r)}")
            kw["resize"] = tuple(r)
        if "scale" in raw:
            v = raw["scale"]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v == 0:
                raise ValueError(f"scale must be a finite non-zero number, not {clip_repr(v)}")
            kw["scale"] = float(v)
        for k in ("mean", "std"):
            if k in raw:
                kw[k] = _numbers(k, raw[k], positive=k == "std")
        if "channel_order" in raw:
            kw["channel_order"] = _choice("channel_order", raw["channel_order"], ("RGB", "BGR"))
        if "layout" in raw:
            kw["layout"] = _choice("layout", raw["layout"], ("NHWC", "NCHW"))
    except ValueError as e:
        raise InputError(f"{where}: preprocess: {e}") from None
    return replace(p, **kw)


def _input_shapes(shapes: Any, where: str) -> dict[str, tuple[int, ...]]:
    """input_shapes: {input name: [positive ints]} (bounded name length, rank and dimensions)."""
    def ok_dims(v: Any) -> bool:
        return isinstance(v, list) and 1 <= len(v) <= MAX_RANK and all(
            isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= MAX_DIM for d in v)

    if not isinstance(shapes, dict) or not all(
            isinstance(k, str) and k and len(k) <= MAX_TEXT and not _CONTROL_RE.search(k) and ok_dims(v)
            for k, v in shapes.items()):
        raise InputError(f"{where}: input_shapes must map input names to lists of positive integers (1 to "
                         f"{MAX_RANK} dimensions, each up to {MAX_DIM}), not {clip_repr(shapes)}")
    return {k: tuple(v) for k, v in shapes.items()}


def _precision_target(raw: Any, where: str) -> dict[str, float | None]:
    """precision_target: {agreement: fraction 0..1, sqnr_db: number}, each optional (null: not a target)."""
    if not isinstance(raw, dict) or not raw or set(raw) - set(TARGET_KEYS):
        raise InputError(f"{where}: precision_target must map some of {', '.join(TARGET_KEYS)} to numbers "
                         f"(agreement a fraction 0..1, sqnr_db in dB), not {clip_repr(raw)}")
    out: dict[str, float | None] = {}
    for key, value in raw.items():
        lo, hi = TARGET_KEYS[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value) or not lo <= value <= hi):
            what = "a fraction between 0 and 1 (0.99 means 99%)" if hi == 1.0 else "a finite number (dB)"
            raise InputError(f"{where}: precision_target.{key} must be {what} or null, not {clip_repr(value)}")
        out[key] = None if value is None else float(value)
    return out


def load_config(path: Path | None, overrides: dict[str, Any], patch: dict[str, Any] | None = None) -> Config:
    """Read the YAML (if given), replace its keys by `patch` (a matrix point: values as written in
    the YAML, paths relative to it) and apply the CLI overrides (None values are ignored).

    Raises InputError for a missing/unreadable YAML, unknown keys or bad values, and when no
    model is given at all.
    """
    raw: dict[str, Any] = {}
    base = Path.cwd()
    where = "command line"
    if path is not None:
        where = clip_text(str(path), 200)
        raw = read_yaml(path)  # bounded, UTF-8, no alias bombs, no duplicate keys (InputError)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InputError(f"{where}: expected a mapping of keys at the top level, not {clip_repr(raw)}")
        base = path.parent
    if patch:
        raw = {**raw, **patch}
    known = {f.name for f in fields(Config)} - {"source"}
    unknown = sorted(clip_repr(k, 40) if not isinstance(k, str) else clip_text(k, 40) for k in raw if k not in known)
    if unknown:
        close = sorted({m for k in unknown for m in difflib.get_close_matches(k, known, n=2, cutoff=0.75)})[:2]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        # the allowed keys fill the rest of one short line (README "The YAML" lists them all)
        room = 190 - len(hint) - min(len(", ".join(unknown)), 60)
        raise InputError(f"{where}: unknown key(s) {clip_text(', '.join(unknown), 60)}; {hint}"
                         f"allowed: {clip_text(', '.join(sorted(known)), room)}")
    kw: dict[str, Any] = {"source": path}
    for key in ("model", "calibration", "verify", "out", "boards", "tuning"):
        if raw.get(key) is not None:
            kw[key] = _path(raw[key], base, key, where)
    for key in (*_STRS, *_CHOICES, *_INTS, *_FLOATS, *_BOOLS):
        if raw.get(key) is not None and overrides.get(key) is None:  # null: the default; a flag wins
            kw[key] = _checked(key, raw[key], where)
    kw["preprocess"] = _preprocess(raw.get("preprocess"), where)
    if raw.get("input_shapes") is not None:
        kw["input_shapes"] = _input_shapes(raw["input_shapes"], where)
    if raw.get("matrix") is not None:
        from toolchain.units import check_matrix
        kw["matrix"] = check_matrix(raw["matrix"], where)
    if raw.get("precision_target") is not None:
        kw["precision_target"] = _precision_target(raw["precision_target"], where)
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("model", "calibration", "verify", "out", "boards", "tuning"):
            kw[key] = Path(value)
        else:  # a flag's value: blame the flag, not the YAML
            flag = FLAGS.get(key, f"--{key}")
            kw[key] = _checked(key, value, f"command line {flag}")
    cfg = Config(**kw)
    if cfg.model is None:
        raise InputError(f"{where}: no model given; pass --model PATH or set `model:` in the YAML")
    if cfg.io_layout == "NCHW" and cfg.model.suffix.lower() == ".tflite":
        raise InputError(f"{where}: io_layout: NCHW applies to ONNX models; a .tflite model's inputs and outputs are "
                         f"NHWC ({cfg.model.name}): remove `io_layout` or set it to NHWC")
    if cfg.rounding == "onnx" and cfg.model.suffix.lower() == ".tflite":
        raise InputError(f"{where}: rounding: onnx applies to ONNX models; a .tflite follows TFLite's arithmetic "
                         f"({cfg.model.name}): remove `rounding: onnx`")
    return cfg


def rounding_of(cfg: Config) -> tuple[str, str]:
    """(rounding mode in effect, why) for `cfg`: the YAML's `rounding` when set; else the arithmetic
    the model was made for: "onnx" (onnxruntime: one rounding, ties to even) for a quantized ONNX
    model (QDQ / QLinear: its producer's reference is onnxruntime), "tflm" for a .tflite (TFLM) and
    for a float ONNX model (our own PTQ follows the TFLite int8 spec)."""
    if cfg.rounding is not None:
        return cfg.rounding, "set in the configuration"
    tflite = cfg.model is not None and cfg.model.suffix.lower() == ".tflite"
    if cfg.model is not None and not tflite:
        # reads the model (cached); imports onnx, so only for an ONNX file
        from toolchain.frontend.onnx_qdq import is_quantized_onnx

        if is_quantized_onnx(cfg.model):
            return "onnx", "the default for a quantized ONNX model (onnxruntime's arithmetic)"
    spec = "int8 spec" if cfg.precision == "int8" else "int8 and 16x8 specs"
    return "tflm", ("the default for a .tflite model (TFLM's arithmetic)" if tflite
                    else f"the default for a float ONNX model (edgecc's PTQ follows the TFLite {spec})")
