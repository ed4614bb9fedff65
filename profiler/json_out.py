"""report.json and summary.json as strict JSON: a float that is NaN or infinite (a diverged SQNR,
a 0/0 ratio) has no JSON spelling; json.dumps would write a bare NaN that strict parsers (JSON.parse,
jq, most CI tools) refuse. Such values become null, and the dump refuses any that slipped past."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def finite_json(value: Any) -> Any:
    """`value` with every non-finite float (Python or numpy) replaced by None, numpy scalars and
    arrays turned into Python numbers and lists; dict keys, strings and other values unchanged."""
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return finite_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(doc: Any, indent: int = 2) -> str:
    """Strict JSON text of `doc` (non-finite floats as null), ending in a newline; raises ValueError
    only if a non-finite float hides in a type finite_json does not walk."""
    return json.dumps(finite_json(doc), indent=indent, allow_nan=False) + "\n"


def write_json_file(doc: Any, path: Path) -> None:
    """Write `doc` to `path` as strict JSON (see dumps)."""
    path.write_text(dumps(doc), encoding="utf-8")
