"""MAXIMUM / MINIMUM on every ISA (c_templates/kernels/{dsp,helium,neon}/maximum_minimum_s8.c.j2): the
raw int8 compare of inputs that share the output's qparams (the TFLite case; TFLM compares the raw
values), four lanes per SSUB8 + SEL on the DSP, sixteen per VMAX / VMIN on Helium and NEON, the
portable argument list and broadcast loop nest. Inputs our PTQ put on their own grids are rescaled
first: that stays portable. A raw compare does not round, so the variants apply under either
rounding mode. Not here: C (c_templates/).
"""
from __future__ import annotations

from toolchain.ir import Graph, Node
from toolchain.isa.helium import HELIUM_HEADERS, MVE
from toolchain.isa.neon import NEON_HEADERS
from toolchain.isa.packing import DSP_HEADERS
from toolchain.ops.concat import COPY, concat_params
from toolchain.ops.registry import KernelVariant, OpKind, add_variants


def raw_compare(node: Node, graph: Graph) -> bool:
    """Whether both inputs already sit on the output's qparams (the kernels' identity rescale)."""
    y = graph.t(node.outputs[0]).quant
    for name in node.inputs[:2]:
        off, m, k, out_off = concat_params(graph.t(name).quant, y)
        if (m, k) != COPY or off + out_off != 0:
            return False
    return True


ISAS = {"dsp": (DSP_HEADERS, frozenset()), "neon": (NEON_HEADERS, frozenset()), "helium": (HELIUM_HEADERS, MVE)}


def variant(isa: str, op: str) -> KernelVariant:
    """ecc_<isa>_<op>_s8 of <isa>/maximum_minimum_s8.c.j2, reported as kernel "<isa>"."""
    headers, requires = ISAS[isa]
    return KernelVariant(isa, isa, f"{isa}/maximum_minimum_s8.c.j2", f"ecc_{isa}_{op}_s8", raw_compare,
                         lambda n, g: 0, None, headers, requires=requires, why_not=_why_not)


def _why_not(node: Node, graph: Graph) -> str | None:
    """KernelVariant.why_not of every ISA's maximum / minimum."""
    return None if raw_compare(node, graph) else "an input's scale or zero point differs from the output's"


for _isa in ISAS:
    add_variants(OpKind.MAXIMUM, variant(_isa, "maximum"))
    add_variants(OpKind.MINIMUM, variant(_isa, "minimum"))
