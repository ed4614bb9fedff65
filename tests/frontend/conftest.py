"""tests/frontend: model-file frontends. Makes this folder importable so tests can
`from _tflite_cases import ...` (appended, so it never shadows the repository's packages)."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
