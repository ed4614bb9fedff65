"""The 256-entry table look-up (toolchain/ops/lut.py) on NEON (TBL/TBX over the table in 16 registers)
and Helium (a byte gather): attached to every op whose variants hold the portable `lut` kernel
(HardSwish, HardSigmoid, SiLU, ...), with that variant's predicate, argument list and in-place
rule, so the tables stay the op modules' (exact by construction under either rounding mode).
The DSP keeps the portable loop: a table look-up has no SIMD form there (see the kernel suites'
numbers in the report of the branch). Not here: C (c_templates/kernels/{neon,helium}/lut_s8.c.j2).
"""
from __future__ import annotations

from dataclasses import replace

from toolchain.isa.helium import HELIUM_HEADERS, MVE
from toolchain.isa.neon import NEON_HEADERS
from toolchain.ops.registry import REGISTRY, add_variants

PORTABLE_LUT = "portable/lut_s8.c.j2"
ISAS = {"neon": (NEON_HEADERS, frozenset()), "helium": (HELIUM_HEADERS, MVE)}


def lut_ops() -> dict:
    """op kind -> its portable lut variant, for every registered op that has one."""
    found = {}
    for kind, op in REGISTRY.items():
        for v in op.variants:
            if v.template == PORTABLE_LUT and v.isa == "portable":
                found[kind] = v
                break
    return found


for _kind, _v in lut_ops().items():
    add_variants(_kind, *(replace(_v, name=isa, isa=isa, template=f"{isa}/lut_s8.c.j2", function=f"ecc_{isa}_lut_s8",
                                  headers=headers, requires=requires)
                          for isa, (headers, requires) in ISAS.items()))
