"""Jinja filters: the only Python that formats C text, each a literal or identifier at a time.

Each docstring example is executed by tests (doctest).
"""
from __future__ import annotations

import re

import numpy as np


def c_values(arr: np.ndarray, per_line: int = 16) -> str:
    """Comma-separated integer initialiser lines of an array (row-major).

    >>> print(c_values(np.array([1, -2, 3], np.int8), per_line=2))
        1, -2,
        3
    """
    flat = [str(int(v)) for v in np.asarray(arr).ravel().tolist()]  # (Python ints: 5x faster than numpy scalars)
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


def _printable_ascii(text: str) -> str:
    """`text` with every character that is not printable ASCII (newlines, tabs, other controls,
    non-ASCII) replaced by `?`: what may reach generated text from a model is one line of ASCII."""
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in str(text))


# In a comment: "*/" would close it, "/*" inside one is an error under -Wall -Werror (-Wcomment), and
# "??" may start a trigraph ("??/" is a backslash under -std=c99). A backslash goes between the pair.
_COMMENT_PAIRS = re.compile(r"\*(?=/)|/(?=\*)|\?(?=\?)")


def c_comment(text: str) -> str:
    """Model-controlled text (tensor, node, op names, the model file name) made inert inside a C
    block comment and a Make / CMake `#` comment: one line of printable ASCII (anything else is
    `?`), `*/` -> `*\\/`, `/*` -> `/\\*`, `??` -> `?\\?`, and no backslash at the end (it would
    continue a `#` comment onto the next line; it becomes `?`). Plain names pass unchanged.

    >>> print(c_comment('x */ int evil; /* ??/'), c_comment('a\\nb\\\\'), c_comment('conv/1:0'))
    x *\\/ int evil; /\\* ?\\?/ a?b? conv/1:0
    """
    body = _printable_ascii(text)
    body = body[:-1] + "?" if body.endswith("\\") else body  # before the pairs: "?\\" ends in "??"
    return _COMMENT_PAIRS.sub(lambda m: m.group() + "\\", body)


def c_string(text: str) -> str:
    """A C string literal of `text`: quotes, backslashes and `?` escaped, other non-printable or
    non-ASCII characters as `?` (escaped as well after a `?`, so that no two `?` ever meet: no
    trigraph, which -std=c99 would translate before the escapes).

    >>> print(c_string('conv/1:0'), c_string('a"b\\\\c??='), c_string('tab\\t\\t='))
    "conv/1:0" "a\\"b\\\\c\\?\\?=" "tab?\\?="
    """
    out: list[str] = []
    for c in str(text):
        if c in '"\\?':
            out.append("\\" + c)
        elif c.isascii() and c.isprintable():
            out.append(c)
        else:
            out.append("\\?" if out and out[-1].endswith("?") else "?")
    return '"' + "".join(out) + '"'


def make_word(text: str) -> str:
    """A board flag as a word in a Make variable: one line of printable ASCII, `$` doubled, `#` escaped.

    >>> print(make_word("-mcpu=cortex-m4"), make_word("-DX=$1#2"))
    -mcpu=cortex-m4 -DX=$$1\\#2
    """
    return _printable_ascii(text).replace("$", "$$").replace("#", "\\#")


def cmake_arg(text: str) -> str:
    """A board flag as one quoted CMake argument (no variable expansion, no list splitting).

    >>> print(cmake_arg("-mfpu=fpv4-sp-d16"), cmake_arg('-DX="a;b${Y}"'))
    "-mfpu=fpv4-sp-d16" "-DX=\\"a\\;b\\${Y}\\""
    """
    body = _printable_ascii(text)
    for c in '\\"$;':
        body = body.replace(c, "\\" + c)
    return f'"{body}"'


FILTERS = {"c_values": c_values, "c_float": c_float, "c_int": c_int, "c_double": c_double,
           "c_comment": c_comment, "c_string": c_string, "make_word": make_word, "cmake_arg": cmake_arg}
