"""The support matrix that `edgecc ops` prints: which ops each frontend reads (with their inputs and the
attributes / options a converter takes, defaults shown), the element types, and which kernel variants
each board tries per IR op.

Nothing here is a hand-kept list: frontend rows come from the converter registries (a converter's
positional parameters are the op's inputs, its keyword parameters the attributes or options it
handles), kernel rows from toolchain.ops.registry.REGISTRY and the boards' kernel preference in
boards.yaml. A board uses the first listed variant whose conditions hold for the node (shapes,
weights); portable always holds.
"""
from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Mapping

DTYPES = {
    "ONNX (float model)": "float32 model, quantized by edgecc to int8 (per-channel symmetric weights, "
                          "per-tensor asymmetric activations, int32 bias)",
    "ONNX (quantized: QDQ / QLinear)": "int8 / uint8 tensors with the model's own scales; the float ops below "
                                       "between QuantizeLinear / DequantizeLinear",
    "TFLite (.tflite)": "int8 activations (per-tensor), int8 weights (per-tensor or per-channel), int32 bias, "
                        "the file's own quantization; float32 only at the edges (QUANTIZE / DEQUANTIZE); "
                        "16x8 (int16 activations, zero point 0, int64 bias) for the ops listed under the "
                        "kernel table",
}


def _signature(fn: Callable) -> tuple[str, str]:
    """(inputs, attributes) of a converter: positional parameters after the builder, keyword ones."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    ins, attrs = [], []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            ins.append(f"{p.name}...")
        elif p.kind == p.KEYWORD_ONLY:
            attrs.append(p.name if p.default in (None, inspect.Parameter.empty) else f"{p.name}={p.default!r}")
        else:
            ins.append(p.name if p.default is inspect.Parameter.empty else f"[{p.name}]")
    return ", ".join(ins), " ".join(attrs) or "-"


def frontend_rows(converters: Mapping[str, Callable]) -> list[tuple[str, str, str]]:
    """(op, inputs, attributes) per converter, sorted by op name."""
    return [(name, *_signature(fn)) for name, fn in sorted(converters.items())]


def _qdq_ops() -> list[str]:
    try:
        from toolchain.frontend.onnx_qdq_strip import QDQ_OPS
    except ImportError:  # the quantized-ONNX frontend is optional in this listing
        return []
    return sorted(QDQ_OPS)


def _isa_cell(isa: str, variants: list) -> str:
    """One ISA's variants of an op in try order: "dsp{1x1,*}" (* = the plain variant), "portable",
    or "portable{add,add_broadcast}" when one ISA has several kernels told apart by template."""
    if not variants:
        return ""
    if len(variants) == 1:
        return variants[0].name
    if len({v.name for v in variants}) == len(variants):
        tags = [v.name.removeprefix(isa).removeprefix("_") or "*" for v in variants]
    else:
        tags = [v.template.split("/")[-1].removesuffix(".c.j2").removesuffix("_s8") for v in variants]
    return f"{isa}{{{','.join(tags)}}}"


def kernel_table() -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(board groups, rows): one column per group of boards with the same kernel preference; each
    row is an IR op with, per group, its variants in the order the boards try them."""
    import toolchain.isa  # noqa: F401 - registers every op and its ISA kernel variants
    from targets import list_targets
    from toolchain.ops.registry import REGISTRY

    groups: dict[tuple[str, ...], list[str]] = {}
    for t in list_targets():
        groups.setdefault(tuple(i.value for i in t.kernel_preference), []).append(t.name)
    rows = []
    for kind, op in sorted(REGISTRY.items(), key=lambda kv: kv[0].value):
        cells = []
        for pref in groups:
            order = [*pref, *(["portable"] if "portable" not in pref else [])]
            parts = [_isa_cell(isa, [v for v in op.variants if v.isa == isa and "_onnx" not in v.name
                                     and v.dtype == "s8"])
                     for isa in order]  # the rounding: onnx twins and the 16x8 kernels are listed under the table
            parts = [p for p in parts if p]
            cells.append(" > ".join(parts) if parts else ("view (no code)" if op.is_view else "none (folded)"))
        rows.append((kind.value, cells))
    return [", ".join(b) for b in groups.values()], rows


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
    return [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)]


def render() -> str:
    """The whole support matrix as plain text (what `edgecc ops` prints and README.md shows)."""
    from toolchain.frontend.onnx import CONVERTERS as ONNX
    from toolchain.frontend.tflite import CONVERTERS as TFLITE

    out = []
    for title, conv in (("ONNX (float model)", ONNX), ("TFLite (.tflite)", TFLITE)):
        out += [f"{title}: {DTYPES[title]}", ""]
        out += _table(["op", "inputs", "attributes / options handled (default)"],
                      [list(r) for r in frontend_rows(conv)])
        out.append("")
    qdq = _qdq_ops()
    if qdq:
        title = "ONNX (quantized: QDQ / QLinear)"
        out += [f"{title}: {DTYPES[title]}, plus: {', '.join(qdq)}", ""]
    groups, rows = kernel_table()
    out += ["Kernel variants per IR op and board (int8 kernels; a node gets the first variant whose",
            "conditions hold; portable always holds):", ""]
    out += _table(["IR op", *groups], [[op, *cells] for op, cells in rows])
    isa_twins = "; ".join(f"{isa} ones for {', '.join(ops)}" for isa, ops in _isa_twinned().items())
    out += ["", *textwrap.wrap("With `rounding: onnx` (YAML) these ops run a twin that rounds as onnxruntime does (Conv2D, "
                               "DepthwiseConv2D, FullyConnected: its float32 requantization; the others once, ties to even) "
                               "(kernel `portable_onnx` in the report, or `<isa>..._onnx` where an ISA has one: "
                               f"{isa_twins or 'none'}; the other ISA kernels round as TFLM does and are not used): "
                               + ", ".join(_twinned()) + ".", 100)]
    isa_s16 = "; ".join(f"{', '.join(names)} on {isa} boards for {', '.join(ops)}"
                        for isa, (names, ops) in _isa_s16().items())
    out += ["", *textwrap.wrap("16x8 (TFLite files with int16 activations; kernel `portable_s16` on every board"
                               + (f", or {isa_s16}" if isa_s16 else "") + "): "
                               + ", ".join(_s16_ops()) + "; TFLite operators " + ", ".join(_s16_tflite())
                               + ". Any other operator with an int16 tensor is refused by name.", 100)]
    return "\n".join(out) + "\n"


def _s16_ops() -> list[str]:
    """IR ops with a 16x8 (int16 activation) kernel variant (registry.portable_s16)."""
    from toolchain.ops.registry import REGISTRY

    return sorted(k.value for k, op in REGISTRY.items() if any(v.dtype == "s16" for v in op.variants))


def _isa_s16() -> dict[str, tuple[list[str], list[str]]]:
    """ISA -> (its 16x8 kernel names, the IR ops they run), for the ISAs with 16x8 kernels."""
    from toolchain.ops.registry import REGISTRY

    found: dict[str, tuple[set[str], set[str]]] = {}
    for kind, op in REGISTRY.items():
        for v in op.variants:
            if v.dtype == "s16" and v.isa != "portable":
                names, ops = found.setdefault(v.isa, (set(), set()))
                names.add(f"`{v.name}`")
                ops.add(kind.value)
    return {isa: (sorted(n), sorted(o)) for isa, (n, o) in sorted(found.items())}


def _s16_tflite() -> list[str]:
    from toolchain.frontend.tflite_16x8 import S16_OPS

    return list(S16_OPS)


def _isa_twinned() -> dict[str, list[str]]:
    """ISA -> IR ops with a `rounding: onnx` kernel variant of that ISA (name containing "_onnx")."""
    from toolchain.ops.registry import REGISTRY

    out: dict[str, list[str]] = {}
    for k, op in sorted(REGISTRY.items(), key=lambda kv: kv[0].value):
        for isa in sorted({v.isa for v in op.variants if v.isa != "portable" and "_onnx" in v.name}):
            out.setdefault(isa, []).append(k.value)
    return out


def _twinned() -> list[str]:
    """IR ops with a `rounding: onnx` portable twin (toolchain.ops.registry.rounding_twins)."""
    from toolchain.ops.registry import REGISTRY

    return sorted(k.value for k, op in REGISTRY.items()
                  if any(v.isa == "portable" and v.name.endswith("_onnx") for v in op.variants))
