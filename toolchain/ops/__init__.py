"""Op modules. Importing this package imports every module in it (sorted by name), which registers
each op in toolchain.ops.registry.REGISTRY: a new op module needs no import list of its own.

ISA kernel plans are not here: toolchain/isa/ attaches them to these ops (import toolchain.isa).
"""
import importlib
import pkgutil

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_m.name}")

from toolchain.ops.registry import REGISTRY, OpKind, Unsupported, opdef  # noqa: E402

__all__ = ["REGISTRY", "OpKind", "Unsupported", "opdef"]
