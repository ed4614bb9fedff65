"""Batched inference (`batch: N` in the YAML): the batch axis of every model input set to N, so one
call of the generated run function computes N inferences (per-inference figures = total / N).

Owns the input shapes of a batched ONNX model and the float reference of a model declared with
batch 1 run on batched data (onnxruntime one batch row at a time). The graph itself needs nothing
else: every op is defined over the batch axis, and the layout pass (passes/select_layout.py) may
put batched activations into CHWN, batch innermost, where NEON vectorises across the batch.
"""
from __future__ import annotations

from pathlib import Path

from toolchain.errors import InputError, UnsupportedModel


def batched_input_shapes(model: Path, input_shapes: dict[str, tuple[int, ...]], batch: int) -> dict[str, tuple[int, ...]]:
    """input_shapes with the leading (batch) axis of every ONNX model input set to `batch`; inputs
    not in input_shapes take the model's declared shape (batch axis 1 or dynamic). batch 1: unchanged."""
    if batch == 1:
        return input_shapes
    if Path(model).suffix.lower() == ".tflite":
        raise UnsupportedModel(f"{model}: `batch: {batch}` is supported for ONNX models only")
    from toolchain.frontend.onnx_canonical import read_onnx

    m = read_onnx(model)  # the file as written, cached: the frontend reads it next
    consts = {i.name for i in m.graph.initializer}
    shapes = dict(input_shapes)
    for inp in m.graph.input:
        if inp.name in consts:
            continue
        dims = shapes.get(inp.name) or tuple(d.dim_value if d.HasField("dim_value") else 0
                                              for d in inp.type.tensor_type.shape.dim)
        if not dims or dims[0] not in (0, 1, batch):
            raise InputError(f"{model}: input {inp.name!r} has shape {list(dims)}; `batch: {batch}` needs a "
                             "leading batch axis of 1")
        if any(d <= 0 for d in dims[1:]):
            raise InputError(f"{model}: input {inp.name!r} has a dynamic dimension {list(dims)}; "
                             f"set `input_shapes: {{{inp.name}: [...]}}` in the YAML")
        shapes[inp.name] = (batch, *dims[1:])
    return shapes


def declared_batch(model: Path) -> int:
    """The batch axis the ONNX model declares for its first input (0: dynamic)."""
    from toolchain.frontend.onnx_canonical import read_onnx

    m = read_onnx(model)  # the file as written, cached: the frontend reads it next
    consts = {i.name for i in m.graph.initializer}
    inp = next(i for i in m.graph.input if i.name not in consts)
    dims = inp.type.tensor_type.shape.dim
    return dims[0].dim_value if dims and dims[0].HasField("dim_value") else 0


def tensor_layout(graph, name: str) -> str:
    """The memory layout of an activation tensor: graph.meta["layouts"] (set by passes/select_layout),
    else NHWC for 4-D tensors and "-" for others (no spatial layout). A model input in NCHW (ONNX),
    which the graph transposes first, is reported as NCHW."""
    shape = graph.t(name).shape
    if name in graph.inputs and len(shape) == 4:
        readers = [n for n in graph.nodes if name in n.inputs]
        if readers and all(getattr(n.attrs, "perm", None) in ((0, 2, 3, 1), [0, 2, 3, 1]) for n in readers):
            return "NCHW"
    layouts = graph.meta.get("layouts") or {}
    return layouts.get(name, "NHWC" if len(shape) == 4 else "-")


def batch_fields(build, report: dict) -> dict:
    """report.json additions: batch, instructions per inference (total / batch) and the layout of
    every activation tensor (in kernel-call order of their producers)."""
    g, batch = build.graph_s8, build.config.batch
    total = report.get("total_instructions")
    layouts = {name: tensor_layout(g, name) for name in g.inputs}
    for node in g.nodes:
        layouts.update({o: tensor_layout(g, o) for o in node.outputs})
    return {"batch": batch, "instructions_per_inference": None if total is None else total / batch,
            "layouts": layouts}
