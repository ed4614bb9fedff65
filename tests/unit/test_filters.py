"""Codegen helpers: the doctest examples of filters.py and cnames.py run (architecture P14), and
CNames gives unique, valid, non-keyword C identifiers."""
import doctest
import re

import numpy as np
import pytest

import toolchain.codegen.cnames as cnames
import toolchain.codegen.filters as filters
from toolchain.codegen.cnames import C_KEYWORDS, CNames
from toolchain.codegen.filters import FILTERS, c_float, c_int, c_values

C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
C99_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
                "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
                "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
                "volatile", "while", "_Bool", "_Complex", "_Imaginary"}


@pytest.mark.parametrize("module", [filters, cnames], ids=["filters", "cnames"])
def test_doctests(module):
    res = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert res.attempted > 0, f"{module.__name__} has no doctest examples"
    assert res.failed == 0


def test_every_filter_has_an_example():
    for name, fn in FILTERS.items():
        assert fn.__doc__ and ">>>" in fn.__doc__, name


def test_c_values():
    assert c_values(np.array([], np.int8)) == ""
    assert c_values(np.arange(3, dtype=np.int32)) == "    0, 1, 2"
    assert c_values(np.array([[1, 2], [3, 4]], np.int8), per_line=3) == "    1, 2, 3,\n    4"
    assert c_values(np.array([-128, 127], np.int8)) == "    -128, 127"


@pytest.mark.parametrize("x", [0.1, 1 / 256, 1e-30, 3.4e38, -2.5, 0.0, 1 / 3])
def test_c_float_round_trips_float32(x):
    s = c_float(x)
    assert s.endswith("f")
    assert np.float32(float(s[:-1])) == np.float32(x)


def test_c_int():
    assert c_int(-(2**31)) == "(-2147483647 - 1)"
    assert c_int(2**31 - 1) == "2147483647"
    assert c_int(np.int32(-5)) == "-5"


def test_c_keyword_list_is_complete():
    assert C99_KEYWORDS <= C_KEYWORDS


@pytest.mark.parametrize("kw", sorted(C99_KEYWORDS))
def test_cnames_never_returns_a_keyword(kw):
    n = CNames("")
    name = n(kw)
    assert name not in C_KEYWORDS and C_IDENT.match(name)
    assert n(kw) == name  # stable


def test_cnames_unique_valid_and_stable():
    n = CNames("ecc_")
    raw = ["conv/1.weight", "conv_1_weight", "conv-1-weight", "conv 1 weight", "a", "a_1", "a", "1x", "", "///",
           "_", "é", "x.y", "x_y", "x_y_1", "int", "for"]
    got = [n(r) for r in raw]
    distinct = {r: g for r, g in zip(raw, got, strict=True)}
    assert len(set(distinct.values())) == len(distinct)            # different names -> different C names
    assert got[4] == got[6]                                         # the same name -> the same C name
    for g in got:
        assert C_IDENT.match(g), g
        assert g.startswith("ecc_")
    assert [n(r) for r in raw] == got                               # stable on second use


def test_cnames_with_prefix_leading_digit():
    assert C_IDENT.match(CNames("t_")("1x"))


def test_cnames_without_prefix_leading_digit():
    assert C_IDENT.match(CNames("")("1x"))


def test_cnames_first_come_order_and_suffixes():
    n = CNames("w_")
    assert n("a.b") == "w_a_b"
    assert n("a_b") == "w_a_b_1"
    assert n("a-b") == "w_a_b_2"
    assert n("a_b_1") == "w_a_b_1_1"
