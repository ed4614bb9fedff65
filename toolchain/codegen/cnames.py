"""C identifiers from tensor/node names: sanitized, prefixed, unique and stable."""
from __future__ import annotations

import re

# C99 keywords, then C11's and C23's (a library compiled with -std=c2x must not use them either)
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary
_Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local
alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual _BitInt
_Decimal32 _Decimal64 _Decimal128""".split())


class CNames:
    """Maps arbitrary names to unique C identifiers `<prefix><sanitized>` in first-come order.

    >>> n = CNames("ecc_w_"); n("conv/1.weight"), n("conv_1_weight")
    ('ecc_w_conv_1_weight', 'ecc_w_conv_1_weight_1')
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._map: dict[str, str] = {}
        self._used: set[str] = set()

    def __call__(self, name: str) -> str:
        if name not in self._map:
            base = self.prefix + (re.sub(r"[^0-9A-Za-z_]", "_", name).strip("_") or "t")
            if base[0].isdigit():  # a C identifier cannot start with a digit
                base = "t_" + base
            cand, i = base, 1
            while cand in self._used or cand in C_KEYWORDS:
                cand, i = f"{base}_{i}", i + 1
            self._map[name] = cand
            self._used.add(cand)
        return self._map[name]
