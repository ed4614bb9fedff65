"""The pipeline configuration: one YAML file (all keys optional but `model`), overridden by CLI
flags. Owns the schema, defaults, validation and path resolution (YAML paths are relative to the
YAML file, flag paths to the current directory). Every error is one InputError line."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from toolchain.errors import InputError

PREPROCESS_KEYS = {"cast", "resize", "scale", "mean", "std", "channel_order", "layout"}


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
    layout: str = "NHWC"


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
    calibration_method: str = "mse"
    rounding: str = "tflm"  # tflm: TFLM's double rounding, ties away; onnx: one rounding, ties to even
    repeats: int = 5
    warmup: int = 1
    optimize: str = "speed"  # speed: the board's fastest kernels; ram: per op the kernel with the least scratch
    batch: int = 1  # inferences per run: the batch axis of every model input (per-inference figures = total / batch)
    debug_guards: bool = False  # guard bytes after every arena buffer, checked after every op (a debug build)
    kernels: str = "auto"  # auto: the board's kernel_preference; portable: the portable C kernels only (a baseline)
    source: Path | None = None  # the YAML file, for messages


def _path(value: Any, base: Path, key: str, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: `{key}` must be a path string")
    return (base / value) if not Path(value).is_absolute() else Path(value)


def _preprocess(raw: Any, where: str) -> Preprocess:
    if raw is None:
        return Preprocess()
    if not isinstance(raw, dict) or set(raw) - PREPROCESS_KEYS:
        bad = sorted(set(raw) - PREPROCESS_KEYS) if isinstance(raw, dict) else raw
        raise InputError(f"{where}: unknown preprocess key(s) {bad}; allowed: {sorted(PREPROCESS_KEYS)}")
    p = Preprocess()
    try:
        kw: dict[str, Any] = {}
        if "cast" in raw:
            if raw["cast"] != "float32":
                raise ValueError("cast must be float32")
            kw["cast"] = "float32"
        if raw.get("resize") is not None:
            kw["resize"] = tuple(int(v) for v in raw["resize"])
            if len(kw["resize"]) != 2:
                raise ValueError("resize must be [height, width]")
        if "scale" in raw:
            kw["scale"] = float(raw["scale"])
        for k in ("mean", "std"):
            if k in raw:
                v = raw[k]
                kw[k] = tuple(float(x) for x in (v if isinstance(v, list) else [v]))
        if "std" in kw and any(s == 0 or not math.isfinite(s) for s in kw["std"]):
            raise ValueError("std must be non-zero")
        if "channel_order" in raw:
            kw["channel_order"] = str(raw["channel_order"]).upper()
            if kw["channel_order"] not in ("RGB", "BGR"):
                raise ValueError("channel_order must be RGB or BGR")
        if "layout" in raw:
            kw["layout"] = str(raw["layout"]).upper()
            if kw["layout"] not in ("NHWC", "NCHW"):
                raise ValueError("layout must be NHWC or NCHW")
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: bad preprocess block: {e}") from None
    return replace(p, **kw)


def load_config(path: Path | None, overrides: dict[str, Any]) -> Config:
    """Read the YAML (if given) and apply the CLI overrides (None values are ignored).

    Raises InputError for a missing/unreadable YAML, unknown keys or bad values, and when no
    model is given at all.
    """
    raw: dict[str, Any] = {}
    base = Path.cwd()
    where = "command line"
    if path is not None:
        where = str(path)
        if not path.is_file():
            raise InputError(f"{path}: no such config file")
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:
            raise InputError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
        if not isinstance(raw, dict):
            raise InputError(f"{path}: expected a mapping of keys at the top level")
        base = path.parent
    known = {f.name for f in fields(Config)} - {"source"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(known)}")
    kw: dict[str, Any] = {"source": path}
    for key in ("model", "calibration", "verify", "out"):
        if raw.get(key) is not None:
            kw[key] = _path(raw[key], base, key, where)
    for key in ("board", "weights_section", "calibration_method", "rounding", "optimize", "kernels"):
        if key in raw:
            kw[key] = str(raw[key])
    for key, kind in (("min_top1_agreement", float), ("min_sqnr_db", float), ("repeats", int),
                      ("warmup", int), ("batch", int)):
        if raw.get(key) is not None:
            try:
                kw[key] = kind(raw[key])
            except (TypeError, ValueError):
                raise InputError(f"{where}: `{key}` must be a number, not {raw[key]!r}") from None
    if "profile" in raw:
        kw["profile"] = bool(raw["profile"])
    if "debug_guards" in raw:
        if not isinstance(raw["debug_guards"], bool):
            raise InputError(f"{where}: `debug_guards` must be true or false, not {raw['debug_guards']!r}")
        kw["debug_guards"] = raw["debug_guards"]
    kw["preprocess"] = _preprocess(raw.get("preprocess"), where)
    if raw.get("input_shapes"):
        try:
            kw["input_shapes"] = {str(k): tuple(int(s) for s in v) for k, v in raw["input_shapes"].items()}
        except (AttributeError, TypeError, ValueError):
            raise InputError(f"{where}: input_shapes must map input names to lists of integers") from None
    for key, value in overrides.items():
        if value is not None:
            kw[key] = Path(value) if key in ("model", "calibration", "verify", "out") else value
    cfg = Config(**kw)
    if cfg.model is None:
        raise InputError(f"{where}: no model given; pass --model PATH or set `model:` in the YAML")
    if cfg.calibration_method not in ("mse", "minmax"):
        raise InputError(f"{where}: calibration_method must be mse or minmax, not {cfg.calibration_method!r}")
    if cfg.rounding not in ("tflm", "onnx"):
        raise InputError(f"{where}: rounding must be tflm or onnx, not {cfg.rounding!r}")
    if cfg.optimize not in ("speed", "ram"):
        raise InputError(f"{where}: optimize must be speed or ram, not {cfg.optimize!r}")
    if cfg.kernels not in ("auto", "portable"):
        raise InputError(f"{where}: kernels must be auto or portable, not {cfg.kernels!r} "
                         "(YAML `kernels:` or --kernels)")
    if not 1 <= cfg.repeats <= 1000:
        raise InputError(f"{where}: repeats must be between 1 and 1000")
    if not 0 <= cfg.warmup <= 1000:
        raise InputError(f"{where}: warmup must be between 0 and 1000")
    if not 1 <= cfg.batch <= 4096:
        raise InputError(f"{where}: batch must be between 1 and 4096")
    return cfg
