"""tests/unit: no compiler, no QEMU; Python only (the whole folder runs in a few seconds).
Makes this folder importable so every test can `from graph_builder import ...` (appended, so it
never shadows the repository's packages)."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
