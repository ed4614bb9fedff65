"""Frontends: model files -> Graph (toolchain.ir). One module per format (onnx.py, onnx_qdq.py,
tflite.py); their per-op converters live in modules named onnx_ops*.py / tflite_ops*.py, which the
format module imports by discovery (converter_modules), so a new op's converters need no import list."""
import importlib
import pkgutil


def converter_modules(prefix: str) -> None:
    """Import every module of this package whose name starts with `prefix` (sorted by name): each
    registers its converters with the format module's @converter decorator on import."""
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if m.name.startswith(prefix):
            importlib.import_module(f"{__name__}.{m.name}")
