"""Model-controlled text in generated C: c_comment keeps it inside a comment, c_string makes it one
string literal with the same characters (non-printable / non-ASCII as '?'), checked on fuzzed
names and by the compiler itself (-std=c99 turns trigraphs on; -Wall -Wextra -Werror)."""
from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest

from toolchain.codegen.cnames import C_KEYWORDS, CNames
from toolchain.codegen.filters import c_comment, c_string

# the characters that matter to C comments, literals, trigraphs, Make and CMake, and a few others
ALPHABET = '*/?\\"\'\n\r\t\x00\x7f#=()!<>-$[]{}; aZ09_\u00e9\u2713\U0001f600'


def _fuzz(n: int = 400, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [''.join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(n)]


CASES = ["x */ static volatile int injected = 42; /* ", "a*/b", "/*", "*/", "/*/", "**/", "??/", "???/", "??=",
         "tail\\", "?\\", "line\nnext", "\u00e9\u2713", "conv/1:0", "", *_fuzz()]


@pytest.mark.parametrize("text", CASES[:16])
def test_c_comment_of_known_cases(text):
    got = c_comment(text)
    assert got.isascii() and got.isprintable()
    assert "*/" not in got and "/*" not in got and "??" not in got and not got.endswith("\\")


def test_c_comment_fuzzed_names_are_inert_and_plain_names_unchanged():
    for text in CASES:
        got = c_comment(text)
        assert got.isascii() and got.isprintable(), repr(text)
        assert not re.search(r"\*/|/\*|\?\?", got) and not got.endswith("\\"), (text, got)
        # nothing else changed: without the inserted backslashes it is the text, '?' for the rest
        want = _expected_string(text).decode()
        want = want[:-1] + "?" if want.endswith("\\") else want
        assert _unescape(got) == _unescape(want), (text, got)
    for plain in ("conv2d_1/BiasAdd:0", "input", "model.onnx sha256:0123 | board host", "a-b.c d(e)"):
        assert c_comment(plain) == plain


def _unescape(text: str) -> str:
    return re.sub(r"(?<=[*/?])\\(?=[*/?])", "", text)


def test_c_string_escapes_exactly():
    assert c_string('conv/1:0') == '"conv/1:0"'
    assert c_string('a"b\\c??=') == '"a\\"b\\\\c\\?\\?="'
    assert c_string("tab\there \u00e9") == '"tab?here ?"'
    assert c_string("\t\t=") == '"?\\?="'  # two replacements never form "??="
    assert c_string("?\n") == '"\\?\\?"'


def _expected_string(text: str) -> bytes:
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in text).encode()


def test_the_compiler_agrees(tmp_path):
    """One C file holds every case in a comment and as a literal; compiled with -std=c99 (trigraphs
    on) and -Werror, the program prints each literal's bytes: they equal the text ('?' for the
    rest), and the comments hide everything (the preprocessed file holds only the literals)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc missing")
    lines = ["#include <stdio.h>", "static const char *const s[] = {"]
    for text in CASES:
        com = c_comment(text)
        lines += [f"    /* {com} */", f"    {c_string(text)},", f"    /*{com}*/ /*{com} */ // {com}"]
    lines += ["};", "int main(void)", "{", "    for (unsigned i = 0; i < sizeof s / sizeof s[0]; i++)",
              '        printf("%s%c", s[i], 0);', "    return 0;", "}", ""]
    (tmp_path / "t.c").write_text("\n".join(lines), encoding="ascii")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", "t", "t.c"], cwd=tmp_path, check=True,
                   capture_output=True, text=True)
    out = subprocess.run(["./t"], cwd=tmp_path, check=True, capture_output=True).stdout
    assert out.split(b"\0")[:-1] == [_expected_string(t) for t in CASES]
    pre = subprocess.run(["gcc", "-std=c99", "-fpreprocessed", "-E", "-P", "t.c"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    code = [ln.strip() for ln in pre.splitlines() if ln.strip()]
    body = code[code.index("static const char *const s[] = {") + 1:code.index("};")]
    assert body == [f"{c_string(t)}," for t in CASES]


def test_cnames_sanitize_hostile_names():
    n = CNames("")
    ident = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
    names = list(dict.fromkeys(CASES + ["1abc", "9", "bool", "true", "_Atomic", "typeof", "constexpr", "\u00e9t\u00e9"]))
    got = [n(t) for t in names]
    assert all(ident.match(g) and g not in C_KEYWORDS for g in got)
    assert len(set(got)) == len(got)  # distinct names, distinct identifiers
    assert (n("1abc"), n("bool"), n("x */ y")) == ("t_1abc", "bool_1", "x____y")
