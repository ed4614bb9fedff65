"""Jinja filters: the only Python that formats C text, each a literal or identifier at a time.

Each docstring example is executed by tests (doctest).
"""
from __future__ import annotations

import numpy as np


def c_values(arr: np.ndarray, per_line: int = 16) -> str:
    """Comma-separated integer initialiser lines of an array (row-major).

    >>> print(c_values(np.array([1, -2, 3], np.int8), per_line=2))
        1, -2,
        3
    """
    flat = [str(int(v)) for v in np.asarray(arr).ravel()]
    lines = [", ".join(flat[i:i + per_line]) for i in range(0, len(flat), per_line)]
    return ",\n".join("    " + ln for ln in lines)


def c_float(x: float) -> str:
    """A float literal that round-trips float32.

    >>> c_float(0.00390625)
    '0.00390625f'
    """
    return f"{float(np.float32(x))!r}f"


def c_int(x: int) -> str:
    """An int32 literal, INT32_MIN spelled so that no compiler warns.

    >>> c_int(-2147483648), c_int(7)
    ('(-2147483647 - 1)', '7')
    """
    return "(-2147483647 - 1)" if int(x) == -(2**31) else str(int(x))


def c_double(x: float) -> str:
    """A double literal that round-trips exactly (C99 hexadecimal floating constant).

    >>> c_double(0.00390625), c_double(-0.1)
    ('0x1.0000000000000p-8', '-0x1.999999999999ap-4')
    """
    return float(x).hex()


FILTERS = {"c_values": c_values, "c_float": c_float, "c_int": c_int, "c_double": c_double}
