"""tests/unit: no compiler, no QEMU; Python only. Makes the repository root and this folder
importable so every test can `from graph_builder import ...`."""
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (str(_HERE.parents[1]), str(_HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)
