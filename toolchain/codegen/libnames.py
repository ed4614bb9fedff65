"""The model library's name (issue 15 item 1): `name: kws` prefixes everything OUT/lib exports, so
two or more libraries (even two of the same board, with the same kernels) link into one firmware.

Without a name the library keeps the names it always had (prefix `ecc`: `ecc_model_run`,
`ECC_ARENA_SIZE`, model.h, `$(EDGECC_SRCS)`, CMake target `edgecc_model`): existing firmware and
linker scripts keep building. With `name: kws`:

- symbols and macros: `ecc_` -> `kws_`, `ECC_` -> `KWS_` everywhere in the library (model API,
  weights arrays, kernels and their static helpers, include guards, the arena's section
  `.bss.kws_arena`, the profiling hooks `kws_profile_begin/end` and their switch `KWS_PROFILE`);
- files: model.h / model.c / weights.h / weights.c (or weights.S + weights.bin) -> kws_model.h, ...,
  and every `ecc_*` file -> `kws_*` (kernel sources, so two libraries' objects never share a name in
  a flat build folder);
- build fragments: edgecc.mk sets `KWS_SRCS` / `KWS_INC`, edgecc.cmake adds target `kws_model`.

A name is lower-case letters and digits, starting with a letter, no underscore: every exported
identifier is `<name>_...`, so the name ends at the first underscore and two libraries with
different names can never define the same symbol (`kws` and `kws_big` could: `kws_big_model_run`
against a `kws_big_...` kernel of `kws`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PREFIX = "ecc"
MAX_NAME = 32
NAME_RE = re.compile(r"[a-z][a-z0-9]*")
NAME_RULE = (f"lower-case letters and digits starting with a letter, at most {MAX_NAME} characters, "
             "no underscore (e.g. kws or cmd2)")
_LOWER = re.compile(r"\becc_")
_UPPER = re.compile(r"\bECC_")
_OWN_FILES = ("model.h", "model.c", "weights.h", "weights.c", "weights.S", "weights.bin")


def name_problem(value: object) -> str | None:
    """Why `value` cannot name a library (None if it can).

    >>> name_problem("kws"), name_problem("kws_small") is not None, name_problem("2kws") is not None
    (None, True, True)
    """
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        return f"must be {NAME_RULE}"
    if len(value) > MAX_NAME:
        return f"must be at most {MAX_NAME} characters"
    return None


@dataclass(frozen=True)
class LibNames:
    """How the library spells its files, symbols and macros: `prefix` (`ecc` unless named) and
    whether a name was given (`named`: the files are prefixed too)."""

    prefix: str = DEFAULT_PREFIX
    named: bool = False

    @staticmethod
    def of(name: str | None) -> LibNames:
        """The names for config `name` (None: today's `ecc` names). ValueError for a bad name."""
        if name is None:
            return LibNames()
        problem = name_problem(name)
        if problem:
            raise ValueError(f"library name {name!r} {problem}")
        return LibNames(name, True)

    @property
    def macro(self) -> str:
        """The macro prefix: `KWS` (`ECC` unless named)."""
        return self.prefix.upper()

    def rename(self, text: str) -> str:
        """C text written for the `ecc` names (kernels, headers) with this library's prefix.

        >>> LibNames("kws", True).rename('#include "ecc_dsp.h"\\nint ecc_add_s8(void); /* ECC_OK */')
        '#include "kws_dsp.h"\\nint kws_add_s8(void); /* KWS_OK */'
        """
        if self.prefix == DEFAULT_PREFIX:
            return text
        return _UPPER.sub(self.macro + "_", _LOWER.sub(self.prefix + "_", text))

    def file(self, name: str) -> str:
        """The shipped name of library file `name` as the templates call it.

        >>> LibNames("kws", True).file("model.h"), LibNames("kws", True).file("ecc_dsp_add_s8.c")
        ('kws_model.h', 'kws_dsp_add_s8.c')
        >>> LibNames().file("model.h")
        'model.h'
        """
        if self.named and name in _OWN_FILES:
            return f"{self.prefix}_{name}"
        return self.rename(name)

    @property
    def arena_section(self) -> str:
        """The static arena's section (NOBITS: GCC's rule for `.bss.*`), e.g. `.bss.kws_arena`."""
        return f".bss.{self.prefix}_arena"

    @property
    def make_prefix(self) -> str:
        """Prefix of the variables edgecc.mk sets: EDGECC (today's) unless named, else `KWS`."""
        return self.macro if self.named else "EDGECC"

    @property
    def cmake_target(self) -> str:
        """The library target edgecc.cmake adds: edgecc_model (today's) unless named, else `kws_model`."""
        return f"{self.prefix}_model" if self.named else "edgecc_model"
