"""What the quantizer leaves in graph.meta for the report: the wording of its notes (quantize.bias_fit,
quantize.precision)
and the key of the tensors the model quantizes itself, shared by the code that writes them (quantize)
and the code that reads them back (profiler.findings, profiler.qdq_reference), so neither imports the
other."""
from __future__ import annotations

from toolchain.ir import Node

OVERFLOW_RISK = "int32 accumulator can overflow"  # the words of an accumulator-risk note
KEPT_INT8 = "kept in int8"  # the words of a note on an op chosen for 16x8 that TFLM's int16 kernels cannot take
NOTES_KEY = "accumulator_notes"  # graph.meta: one line per op whose constants were refitted / are at risk
GIVEN_TENSORS = "given_tensors"  # graph.meta: names of the activations whose grid the model gives (a Q/DQ pair)


def note_subject(node: Node) -> str:
    """How a note names its node ("node conv1 (Conv2D)"): profiler.findings finds the op of a note by it."""
    return f"node {node.source or node.name} ({node.op.value})"
