"""ISA kernel plans: one module (or a few) per instruction set beside the kernels of
c_templates/kernels/<isa>/ — dsp (Cortex-M4/M7/M33), helium (Cortex-M55 MVE), neon (AArch64) — each
attaching its KernelVariants to the ops of toolchain/ops with registry.add_variants.

Importing this package imports toolchain.ops and then every module here (sorted by name), so
lowering sees every variant. Op modules never import this package: the dependency runs one way.
"""
import importlib
import pkgutil

import toolchain.ops  # noqa: F401 - the ops the plans attach to

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_m.name}")
