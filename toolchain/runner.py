"""Run a built firmware on its board, verify every output bit for bit against the numpy integer
(int8, 16x8) interpreter, compare with the float model (onnxruntime), and assemble the report.

Exit statuses decided here: 0 pass, 1 verification mismatch (with the interpreter, or for a
.tflite model under `rounding: tflm` with TFLM) or a failed YAML gate (min_top1_agreement /
min_sqnr_db), 3 guest fault, timeout or crash.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from profiler.cycles import cycle_fields, region_accesses
from profiler.memory_plot import plot_memory
from profiler.numerics import MAX_SAMPLES, op_numerics
from profiler.qdq_reference import is_qdq, ort_tensors
from profiler.regions import placement_section, regions_section
from profiler.parse import MARK_SYMBOLS, ProfileError, from_harness, from_marks
from profiler.report import build_report
from targets import TimeSource
from targets.qemu import function_at, run_firmware
from targets.target import CYCLE_CLASSES
from toolchain import __version__
from toolchain.batch import batch_fields, declared_batch, tensor_layout
from toolchain.codegen.context import weights_breakdown
from toolchain.config import Config
from toolchain.data import SATURATION_LIMIT, input_saturation, load_data, quantize_inputs
from toolchain.errors import InputError
from toolchain.frontend.onnx_qdq_ort import lsb_agreement, run_onnxruntime
from toolchain.interpret import interpret_each
from toolchain.io_dtypes import from_model_dtype, io_dtype, quantized_dtype
from toolchain.io_layout import from_file_layout, to_file_layout
from toolchain.ir import DType, Graph
from toolchain.lower import kernel_reasons, lowering_target
from toolchain.memory import PLANNERS, live_bound
from toolchain.ops.fixed_point import graph_rounding
from toolchain.ops.registry import kernel_dtype, opdef
from toolchain.output_figures import output_figures
from toolchain.pipeline import Build, expected_instructions, write_inputs
from toolchain.progress import warning
from toolchain.split_verify import chunk_bounds, run_chunks
from toolchain.tflm_oracle import tflm_verification

REFERENCE = "edgecc numpy int8 interpreter (TFLite int8 reference semantics, double rounding)"
REFERENCE_16X8 = ("edgecc numpy integer interpreter (TFLite int8 and 16x8 reference semantics: TFLM's int8 and int16 "
                  "kernels, double rounding)")  # a graph with int16 activations (precision int16 / auto, 16x8 .tflite)
REFERENCE_ONNX = ("edgecc numpy int8 interpreter (onnxruntime's arithmetic: Conv / FC requantized in float32 "
                  "as its QLinearConv / QLinearMatMul / QGemm, other output roundings once, ties to even)")


@dataclass(frozen=True)
class Outcome:
    """The report document and the exit status it implies."""

    report: dict[str, Any]
    exit_code: int
    log: str


def float_reference(build: Build, data: dict[str, np.ndarray], data_s8: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Float outputs per output [S, *shape]: onnxruntime on the float ONNX model (on a quantized
    ONNX model: its float simulation of QDQ), or for an int8 model (.tflite) our interpreter on
    its float twin (dequantized weights, float math). An onnxruntime failure (a model it cannot
    load or run) is an InputError (exit 2) naming the model and ORT's first line, not a traceback."""
    if build.graph_f32.meta.get("dequantized"):
        return _float_reference(build, data, data_s8)
    try:
        return _float_reference(build, data, data_s8)
    except Exception as e:  # onnxruntime raises its own Fail / InvalidGraph / RuntimeException types
        first = (str(e).strip().splitlines() or [""])[0]
        first = first if len(first) <= 240 else "..." + first[-240:]  # ORT's reason ends the line
        raise InputError(f"{build.config.model}: onnxruntime failed computing the float reference "
                         f"({type(e).__name__}: {first}); check the model runs in onnxruntime") from None


def _float_reference(build: Build, data: dict[str, np.ndarray], data_s8: dict[str, np.ndarray]) -> list[np.ndarray]:
    g = build.graph_f32
    if g.meta.get("format") == "onnx-qdq":
        return run_onnxruntime(build.config.model, build.graph_s8, data, data_s8)
    if g.meta.get("dequantized"):
        runs = [env for _, env in interpret_each(g, data)]  # (stacked where the graph allows: the same values)
        return [np.stack([r[o] for r in runs]) for o in g.outputs]
    model = build.config.model
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    n = len(next(iter(data.values())))
    data = {k: to_file_layout(g, k, v) for k, v in data.items()}  # io_layout: NHWC: ORT reads the file's NCHW
    if build.config.batch > 1 and declared_batch(model) == 1:  # `batch: N` on a batch-1 model: row by row
        runs = [[np.concatenate(o) for o in zip(*(sess.run(None, {k: v[i][b:b + 1] for k, v in data.items()})
                                                 for b in range(build.config.batch)))] for i in range(n)]
    else:
        runs = [sess.run(None, {k: v[i] for k, v in data.items()}) for i in range(n)]
    return [from_file_layout(g, o, np.stack([r[j] for r in runs])) for j, o in enumerate(g.outputs)]


def has_int16(g: Graph) -> bool:
    """Whether a quantized graph has int16 activations (16x8 ops)."""
    return any(t.dtype == DType.INT16 and not t.is_const for t in g.tensors.values())


def static_ops(build: Build) -> list[dict[str, Any]]:
    """One entry per executed op (views excluded), in kernel-call order."""
    g = build.graph_s8
    prefs = [isa.value for isa in lowering_target(build.target, build.config.kernels).kernel_preference]
    reasons = kernel_reasons(g, build.variants, prefs, build.target.isa_features)
    sources = g.meta.get("kernel_sources") or {}  # toolchain.tuning: "tuned" where a tuning cache chose
    for name, src in sources.items():
        if src == "tuned" and reasons.get(name):  # a faster ISA's kernel applied: the measurement overruled it
            reasons[name] = "tuned: measured faster on this board than the static choice (edgecc tune)"
    ops = []
    for node in g.nodes:
        op = opdef(node)
        if op.is_view:
            continue
        c = op.cost(node, g)
        skipped = int(g.meta.get("macs_skipped", {}).get(node.name, 0))  # passes.fold_constant_channels
        ops.append({"index": len(ops), "name": node.name, "op_type": node.op.value,
                    "precision": "int16" if kernel_dtype(node, g) == "s16" else "int8",  # 16x8 kernel or not
                    "kernel": build.variants[node.name].name, "kernel_reason": reasons[node.name],
                    "kernel_source": sources.get(node.name, "static"),
                    "output_shape": list(g.t(node.outputs[0]).shape),
                    "macs": c.macs + skipped, "macs_live": c.macs, "macs_skipped": skipped,
                    "weight_bytes": c.weight_bytes, "act_read_bytes": c.act_read_bytes,
                    "act_write_bytes": c.act_write_bytes, "layout": tensor_layout(g, node.outputs[0])})
    return ops


def memory_section(build: Build, stack: tuple[int, int] | None = None,
                   accesses: Mapping[str, int] | None = None) -> dict[str, Any]:
    """report.memory: arena, live-set bound, TFLM's greedy-by-size and the naive sum on the same
    buffers (with debug guards: the guarded buffers, plus the arena's end guard), every buffer's
    placement, the model library's RAM (arena + data + bss + its -fstack-usage stack), the test
    firmware's RAM total, the library's stack need (-fstack-usage) and the firmware's measured
    stack high-water mark (`stack`: (bytes used, bytes painted) from the run, None if not measured).
    Also draws the timeline as OUT/memory.png."""
    plan = build.plan
    buffers, a, end = plan.planned_buffers(), plan.alignment, plan.end_guard_bytes

    def arena(planner: str, bs=buffers) -> int:
        offsets = PLANNERS[planner](bs, a)
        return -(-max((offsets[b.name] + b.size for b in bs), default=0) // a) * a

    section = {"arena_bytes": plan.arena_bytes, "lower_bound_bytes": live_bound(buffers, a) + end,
               "greedy_by_size_bytes": arena("greedy_by_size") + end, "naive_bytes": arena("naive") + end,
               "planner": plan.planner, "alignment": a,
               "buffers": [{"name": b.name, "offset": plan.offsets[b.name], "size": b.size, "first_op": b.first,
                            "last_op": b.last, "tensors": plan.tensors_of(b.name),
                            "region": plan.region_of.get(b.name, build.target.memory.arena)} for b in plan.buffers]}
    section["regions"] = regions_section(build.target, build.plan, build.firmware.lib.weights, accesses)
    section["placement"] = placement_section(build.target, build.plan, build.graph_s8)
    if plan.guard_bytes:  # the debug build's guards and what they cost against the same buffers unguarded
        bare = list(plan.buffers)
        bare_arena = arena("best", bare)
        guards = plan.guards()
        section["guards"] = {"enabled": True, "min_bytes": plan.guard_bytes, "count": len(guards),
                             "bytes": sum(g[2] for g in guards), "arena_without_guards_bytes": bare_arena,
                             "cost_bytes": plan.arena_bytes - bare_arena}
    fw, mem = build.firmware, build.target.memory
    section["ram_total_bytes"] = (plan.arena_bytes + fw.lib.data + fw.lib.bss
                                  + mem.stack_size + mem.heap_size)  # the test firmware's, harness reserves included
    section["ram_total_stack_figure"] = "stack_size"  # the board's reserved stack, not a measured need
    section["stack_size_bytes"] = mem.stack_size
    frames = dict(getattr(fw, "lib_stack", None) or {})
    if frames:  # <name>_model_run (or _run_ctx) calls the kernels, a kernel may call one out-of-line helper
        # (the shared 2x3 GEMM pass, im2col, row widening), helpers are leaves: the three largest frames
        p = build.context.names.prefix
        top = max(frames.pop(f"{p}_model_run", 0), frames.pop(f"{p}_model_run_ctx", 0))
        entry = {c.function for c in build.context.calls}
        kernels = [v for f, v in frames.items() if f in entry]
        helpers = [v for f, v in frames.items() if f not in entry]
        section["lib_stack_bytes"] = top + max(kernels, default=0) + max(helpers, default=0)
    else:
        section["lib_stack_bytes"] = None
    # What a user linking OUT/lib into their own firmware reserves for the model: no harness, heap
    # or board stack_size, only the library's own RAM and the stack its calls need (-fstack-usage).
    section["library_ram_bytes"] = (plan.arena_bytes + fw.lib.data + fw.lib.bss
                                    + (section["lib_stack_bytes"] or 0))
    section["library_ram_stack_figure"] = "fstack_usage" if section["lib_stack_bytes"] is not None else "none"
    section["stack_high_water_bytes"] = stack[0] if stack else None  # measured: painted stack, harness included
    section["stack_high_water_board"] = build.target.name if stack else None
    section["stack_painted_bytes"] = stack[1] if stack else None
    ops = [n.name for n in build.graph_s8.nodes if not opdef(n).is_view]
    section["timeline_png"] = plot_memory(section, ops, build.lib_dir.parent / "memory.png").name
    return section


def _verification(build: Build, got: list[np.ndarray] | None, expected: list[np.ndarray],
                  floats: list[np.ndarray], samples: int, data_name: str,
                  ort_default: list[np.ndarray] | None = None) -> dict[str, Any]:
    g = build.graph_s8
    ref = REFERENCE_ONNX if graph_rounding(g) == "onnx" else REFERENCE_16X8 if has_int16(g) else REFERENCE
    if g.meta.get("rounding_why"):  # which rounding is in effect and why (the YAML, or the model's kind)
        ref = f"{ref[:-1]}; rounding: {graph_rounding(g)}, {g.meta['rounding_why']})"
    v: dict[str, Any] = {"reference": ref, "data": data_name, "samples": samples, "bit_exact": False,
                         "mismatches": None,
                         "float_reference": ("edgecc float interpreter of the dequantized "
                                             f"{'graph' if has_int16(g) else 'int8 graph'}")
                         if build.graph_f32.meta.get("dequantized") else "onnxruntime (float model)"}
    qdq = build.graph_f32.meta.get("format") == "onnx-qdq"
    outputs = output_figures(g, got, expected, floats, samples, qdq)
    if got is not None:
        diffs = [np.argwhere(a != b) for a, b in zip(got, expected, strict=True)]
        count = int(sum(len(d) for d in diffs))
        v["bit_exact"] = count == 0
        if count:
            k = next(i for i, d in enumerate(diffs) if len(d))
            first = diffs[k][0]
            v["mismatches"] = {"count": count, "output": g.outputs[k], "first_sample": int(first[0]),
                               "first_index": [int(i) for i in first[1:]],
                               "max_abs_diff_lsb": max(o["max_abs_diff_lsb"] for o in outputs)}
    if qdq:  # ORT's float simulation of the QDQ model, in LSB
        v["float_reference"] = "onnxruntime (the quantized ONNX model, QDQ executed as float simulation)"
        grids = [g.t(o).quant for o in g.outputs]
        v["ort_max_abs_diff_lsb"], v["ort_exact_fraction"] = lsb_agreement(got or expected, floats, grids)
        if ort_default is not None:  # ORT's default session: its fused integer QLinear kernels
            v["ort_default_max_abs_diff_lsb"], v["ort_default_exact_fraction"] = lsb_agreement(
                got or expected, ort_default, grids)
    # the whole-run figures are output 0's (`outputs` has every output's); index_agreement: over all
    # int32 index outputs (ARG_MAX), None without any
    v["top1_agreement"], v["sqnr_db"] = outputs[0]["top1_agreement"], outputs[0]["sqnr_db"]
    v["sqnr_db_per_output"] = {o["name"]: o["sqnr_db"] for o in outputs}
    pairs = [(f, e) for f, e, o in zip(floats, expected, outputs, strict=True) if o["index_agreement"] is not None]
    v["index_agreement"] = float(np.mean(np.concatenate([(np.asarray(f).reshape(-1) == e.reshape(-1))
                                                         for f, e in pairs]))) if pairs else None
    v["outputs"] = outputs
    return v


def _input_saturation(data: dict[str, np.ndarray], q: dict[str, np.ndarray], build: Build,
                      data_name: str) -> tuple[dict[str, Any], list[str]]:
    """report.json's verification.input_saturation (toolchain.data.input_saturation) and a short line
    per input where more than SATURATION_LIMIT of the values saturate (for gates_failed); each such
    input is also printed as a one-line warning with the input's real range."""
    sat, g = input_saturation(data, q, build.graph_s8), build.graph_s8
    lines = []
    for name, frac in sat["per_input"].items():
        if frac > SATURATION_LIMIT:
            qp, info = g.t(name).quant, np.iinfo(q[name].dtype)
            lo, hi = (info.min - qp.zp) * qp.s, (info.max - qp.zp) * qp.s
            lines.append(f"{frac:.1%} of input {name!r} values saturate when quantized (more than "
                         f"{SATURATION_LIMIT:.0%})")
            warning(f"{data_name}: {lines[-1][:-1]}: outside the input's real range [{lo:.4g}, {hi:.4g}]); check "
                    f"the data's scale (float data are real values, preprocess applied; data of the input's "
                    f"{quantized_dtype(g, name)} dtype are quantized values)")
    return sat, lines


def _ort_anchors(build: Build, data: dict[str, np.ndarray], q: dict[str, np.ndarray],
                 samples: int) -> list[dict[str, np.ndarray]]:
    """onnxruntime's tensor values of a quantized ONNX model for the per-op reference
    (profiler.qdq_reference.ort_tensors); [] for other models, or when onnxruntime cannot run the
    model (float_reference then says so in one line; the per-op figures use our interpreter alone)."""
    if not is_qdq(build.graph_f32):
        return []
    names = [n for n, t in build.graph_f32.tensors.items() if not t.is_const]
    try:
        return ort_tensors(build.config.model, build.graph_s8, names, data, q, samples)
    except Exception:  # noqa: BLE001 - onnx / onnxruntime raise their own types; the reference falls back
        return []


def verification_data(cfg: Config, graph_f32: Graph, graph_s8: Graph) -> dict[str, np.ndarray]:
    """The verification DATA (`verify`, else `calibration`) through the preprocess block, per graph
    input [S, *shape] float32, or the model's own int8/uint8 values for data of that dtype. Read
    before anything is built, so bad DATA is refused (InputError naming the file) at no build's cost."""
    data_path = cfg.verify or cfg.calibration
    if data_path is None:  # a quantized model (.tflite, QDQ ONNX) builds without data, but runs need samples
        raise InputError(f"{cfg.source or 'command line'}: `edgecc run` needs verification data; pass --verify DATA")
    return load_data(data_path, graph_f32, cfg.preprocess, quantized=graph_s8)


def _ort_default_session(build: Build, data: dict[str, np.ndarray], q: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """A quantized ONNX model's outputs from onnxruntime with its default session options (fused
    integer QLinear kernels), the second ORT figure; None for other models or when that session fails
    (the float-simulation figure, whose failure is an error, stays)."""
    if build.graph_f32.meta.get("format") != "onnx-qdq":
        return None
    try:
        return run_onnxruntime(build.config.model, build.graph_s8, data, q, optimized=True)
    except Exception:  # noqa: BLE001 - ORT raises its own types; the figure is then absent
        return None


def _accesses(log: Any, slow: list) -> dict[str, int] | None:
    """Data accesses per region with wait states over one inference of sample 0 (the run marks of the
    plugin log), or None when not counted."""
    per = region_accesses(log.marks, log.mark_classes, len(CYCLE_CLASSES)) if slow else None
    return None if per is None else {r.name: n for r, n in zip(slow, per, strict=True)}


def run_and_verify(build: Build, data: dict[str, np.ndarray] | None = None, jobs: int = 1,
                   board_run: Any = None) -> Outcome:
    """Run the firmware on all verification samples `data` (from `verification_data`, read now if
    None; one run, or with `verify_chunk` one run per chunk of samples, `jobs` at once:
    toolchain.split_verify, each chunk run by `board_run`, default run_firmware; the Ray executor's
    runs them as Ray tasks), verify, and build the report."""
    cfg, g, target = build.config, build.graph_s8, build.target
    if data is None:
        data = verification_data(cfg, build.graph_f32, g)
    q = quantize_inputs(data, g)
    saturation, saturated = _input_saturation(data, q, build, str(cfg.verify or cfg.calibration))
    samples = write_inputs(build.fw_dir / "inputs.bin", q, g)
    out_file = build.fw_dir / "outputs.bin"
    out_file.unlink(missing_ok=True)
    timeout = target.run_timeout_s(expected_instructions(build, samples))
    bounds = chunk_bounds(samples, cfg.verify_chunk)
    with ThreadPoolExecutor(max_workers=1) as pool:  # the board runs while Python computes the references
        # regions with wait states: the plugin counts data accesses to each (cycle estimate, memory.regions)
        slow = [r for r in target.memory.regions if r.wait_states] if target.cycle_costs is not None else []
        run_kw = {"marks": MARK_SYMBOLS, "classes": target.cycle_costs is not None,
                  "regions": [(r.address, r.end) for r in slow]}
        if len(bounds) == 1:
            pending = pool.submit(run_firmware, target, build.firmware.elf, cwd=build.fw_dir, timeout_s=timeout,
                                  **run_kw)
        else:  # split verification: the same firmware on slices of the samples, outputs joined in order
            pending = pool.submit(run_chunks, build, q, bounds, jobs, board_run or run_firmware,
                                  lambda n: target.run_timeout_s(expected_instructions(build, n)), **run_kw)
        # every sample's int8 values, several samples per numpy call where the graph allows (the same values);
        # the first MAX_SAMPLES keep every tensor for the per-op numerics
        runs = [env if i < MAX_SAMPLES else {o: env[o] for o in g.outputs}
                for i, env in interpret_each(g, {k: v[:samples] for k, v in q.items()}, keep_all=True)]
        expected = [np.stack([r[o] for r in runs]) for o in g.outputs]
        numerics = op_numerics(build.graph_f32, g, data, q, int8_envs=runs[:MAX_SAMPLES],  # per-op error vs float
                               anchors=_ort_anchors(build, data, q, min(samples, MAX_SAMPLES)))
        floats = float_reference(build, data, q)
        ort_default = _ort_default_session(build, data, q)
        log = pending.result()
        if len(bounds) > 1:
            log, timeout = log
    # paths relative to fw/: the build folder is renamed to OUT once the run is over
    command = " ".join(log.command).replace(str(build.fw_dir.resolve()), ".")
    log_text = f"(cd fw && {command})\n--- stdout\n{log.stdout}--- stderr\n{log.stderr}"
    (build.fw_dir / "run.log").write_text(log_text, encoding="utf-8")
    ops = static_ops(build)
    status, fault, got, costs = "pass", None, None, None
    if log.timed_out or log.fault is not None or log.returncode != 0 or "ECC_DONE" not in log.stdout:
        status = "timeout" if log.timed_out else "fault"
        fault = log.fault.as_dict() if log.fault else {"reason": "TIMEOUT" if log.timed_out else
                                                       f"EXIT {log.returncode}", "op": -1,
                                                       "kind": "timeout" if log.timed_out else "exit"}
        if log.timed_out:  # log.fault is the timeout itself, naming the op the guest was in
            fault["timeout_s"] = round(timeout, 1)
        if fault.get("pc") is not None:
            fault["function"] = function_at(target, build.firmware.elf, int(fault["pc"]))
        op = int(fault.get("op", -1))
        fault["op_name"] = ops[op]["name"] if 0 <= op < len(ops) else None
    else:
        raw = np.fromfile(out_file, np.uint8) if out_file.is_file() else np.zeros(0, np.uint8)
        sizes = [g.t(o).nbytes for o in g.outputs]  # int8, or float32 after a Dequantize
        if raw.size != samples * sum(sizes):
            status, fault = "fault", {"reason": f"outputs.bin has {raw.size} bytes, expected {samples * sum(sizes)}",
                                      "op": -1, "op_name": None}
        else:
            per = raw.reshape(samples, sum(sizes))
            got, at = [], 0
            for o, s in zip(g.outputs, sizes, strict=True):
                t = g.t(o)  # the board writes the model's own dtype (uint8 outputs: toolchain.io_dtypes)
                raw_o = np.ascontiguousarray(per[:, at:at + s]).view(io_dtype(g, o)).reshape((samples, *t.shape))
                got.append(from_model_dtype(g, o, raw_o))
                at += s
        try:
            n_ops = len(ops)
            ticks = target.run.insns_per_tick if target.run.time_source is TimeSource.SYSTICK else None
            costs = from_marks(log.marks, n_ops) if target.run.time_source is TimeSource.PLUGIN \
                else from_harness(log.stdout, n_ops, insns_per_tick=ticks)
        except ProfileError as e:
            status, fault = "fault", {"reason": f"profile: {e}", "op": e.op,
                                      "op_name": ops[e.op]["name"] if 0 <= e.op < len(ops) else None}
    verification = _verification(build, got, expected, floats, samples, str(cfg.verify or cfg.calibration),
                                 ort_default)
    verification["input_saturation"] = saturation
    if build.graph_f32.meta.get("format") == "tflite":  # TFLM on the same samples: where, not only whether
        verification.update(tflm_verification(g, Path(cfg.model), q, got, data))
    if status == "pass" and not verification["bit_exact"]:
        status = "mismatch"
    if status == "pass" and graph_rounding(g) == "tflm" and verification.get("tflm_bit_exact") is False:
        status = "mismatch"  # a .tflite model promises TFLM's arithmetic: differing from TFLM is a failure
    gates = []
    for key, bound, what, fmt, unit in (("top1_agreement", cfg.min_top1_agreement, "top-1 agreement", ".4f", ""),
                                        ("sqnr_db", cfg.min_sqnr_db, "SQNR", ".2f", " dB")):
        value = verification.get(key)
        if bound is None:
            continue
        if value is None:  # e.g. index outputs (ARG_MAX): the figure is undefined, so the gate cannot pass
            gates.append(f"{what} is not defined for this model's outputs (gate {bound}); remove the gate")
        elif value < bound:
            gates.append(f"{what} {value:{fmt}}{unit} < {bound}")
    if cfg.min_sqnr_db is not None:  # an SQNR gate cannot vouch for data that the input grid clipped
        gates += [f"input saturation: {line}" for line in saturated]
    verification["gates_failed"] = gates
    if status == "pass" and gates:
        status = "gate"
    fw = build.firmware
    report = build_report(
        model=str(cfg.model), model_sha256=hashlib.sha256(Path(cfg.model).read_bytes()).hexdigest(),
        board=target.name, costs=costs, ops=ops,
        memory=memory_section(build, getattr(log, "stack", None), _accesses(log, slow)),
        lib_sections={k: getattr(fw.lib, k) for k in ("text", "rodata", "weights", "data", "bss")},
        harness_bytes=fw.harness.flash, verification=verification, status=status, fault=fault, numerics=numerics,
        timings={"build_python": round(build.python_s, 3), "build_gcc": round(build.gcc_s, 3), "run": round(log.wall_s, 3)},
        generator=f"edgecc {__version__}", weights=weights_breakdown(g, build.context), graph=g)
    report.update(batch_fields(build, report))  # `batch: N`: per-inference figures; every tensor's layout
    costs = None if target.cycle_costs is None else ([target.cycle_costs[c] for c in CYCLE_CLASSES]
                                                     + [r.wait_states for r in slow])  # + data accesses x wait states
    report.update(cycle_fields(report, log.marks, log.mark_classes, costs,  # estimated cycles (issue 6 point 5)
                               wait_states=bool(slow)))
    code = {"pass": 0, "mismatch": 1, "gate": 1}.get(status, 3)
    return Outcome(report, code, log_text)
