"""The whole compiler as one function of named steps (architecture P1): a float ONNX model and
calibration data (or an int8 .tflite / quantized ONNX model, which keeps its own quantization) in,
the model library (OUT/lib) and a linked test firmware (OUT/fw) out.

Running, verifying and reporting are in toolchain.runner; the CLI calls both.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import toolchain.isa  # noqa: F401 - registers every op and its ISA kernel variants
from quantize import quantize
from quantize.bias_fit import NOTES_KEY, accumulator_risks
from quantize.dequantize import dequantize_graph
from quantize.equalize import equalize
from quantize.precision import precision_meta
from quantize.precision_search import Search
from quantize.zero_point_split import split_zero_point_channels
from targets import Target, TimeSource
from targets.build import BuildResult, Footprint, build_firmware, check_fits
from toolchain import __version__
from toolchain.codegen.context import BoardFlags, ModelContext, build_context
from toolchain.codegen.emit import emit_harness, emit_library
from toolchain.codegen.libnames import LibNames
from toolchain.batch import batched_input_shapes
from toolchain.config import Config, rounding_of
from toolchain.data import load_data
from toolchain.errors import InputError
from toolchain.frontend.tflite import load_tflite
from toolchain.io_dtypes import to_model_dtype
from toolchain.ir import Graph
from toolchain.ir.check_finite import check_finite_graph, check_given
from toolchain.lower import lowering_target, scratch_sizes, select_kernels
from toolchain.memory import GUARD_BYTES, MemoryPlan, inplace_inputs, plan_memory
from toolchain.ops.fixed_point import graph_rounding, rounding_mode
from toolchain.ops.registry import KernelVariant
from toolchain.placement import RegionSpec
from toolchain.passes import run_passes
from toolchain.passes.fold_constant_channels import fold_constant_channels
from toolchain.passes.select_layout import select_layout
from toolchain.passes.set_io_dtype import set_io_dtype
from toolchain.progress import show_notes, step
from toolchain.schedule import order_for_memory
from toolchain.tuning import kernel_choice


@dataclass(frozen=True)
class Build:
    """Everything one compile produced; seconds in `python_s` / `gcc_s`."""

    config: Config
    target: Target
    graph_f32: Graph
    graph_s8: Graph
    variants: dict[str, KernelVariant]
    plan: MemoryPlan
    context: ModelContext
    lib_dir: Path
    fw_dir: Path
    firmware: BuildResult
    calibration_samples: int
    python_s: float
    gcc_s: float


def model_stamp(cfg: Config, target: Target) -> str:
    """The header stamp of every generated file: generator version, model name and hash, board."""
    digest = hashlib.sha256(Path(cfg.model).read_bytes()).hexdigest()[:16]
    return f"edgecc {__version__} | model {Path(cfg.model).name} sha256:{digest} | board {target.name}"


@dataclass(frozen=True)
class Imported:
    """The board-independent half of a compile (import, passes, quantization): the float graph
    (the numeric reference) and the int8 graph. A sweep makes it once and reuses it per board."""

    graph_f32: Graph
    graph_s8: Graph
    calibration_samples: int
    python_s: float
    # graph_s8 with the recomputed depthwise channels of quantize.zero_point_split as depthwise layers
    # over doubled rows (zero_point_halves.rows_fix_nodes), for the boards whose depthwise kernel packs
    # several pixels per vector (Helium); None where that form changes nothing
    graph_s8_rows: Graph | None = None

    def int8_graph(self, target: Target) -> Graph:
        """The int8 graph to compile for `target` (after lowering.lowering_target): graph_s8_rows
        when the board's first kernel preference is Helium and it exists, else graph_s8. Both
        compute the same int32 sums (quantize.zero_point_halves); measured on the MobileNetV2 U8U8
        QDQ file, the rows form costs fewer instructions on the Cortex-M55 and more on the
        Cortex-M4 (DSP) and AArch64 (NEON) depthwise kernels."""
        prefs = [isa.value for isa in target.kernel_preference]
        return self.graph_s8_rows if self.graph_s8_rows is not None and prefs[:1] == ["helium"] else self.graph_s8


def import_model(cfg: Config, target: Target | None = None) -> Imported:
    """Steps 1-3 of compile_model: the model file -> float IR -> int8 IR. The board (`target`; None:
    the first of cfg.board) matters only to `precision: auto`, whose budgets are its arena and cost.

    Raises InputError / UnsupportedModel for a bad model or data, among them non-finite numbers:
    constants as loaded, after folding, activations while calibrating, and the int8 graph's scales.
    """
    # NaN / inf (or finite weights that overflow float32 once folded) make numpy warn on stderr in the
    # frontends, passes and calibration before a check refuses them in one line: no warnings beside it
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return _import_model(cfg, target)


def _import_model(cfg: Config, target: Target | None) -> Imported:
    t0 = time.monotonic()
    nhwc_io = cfg.io_layout == "NHWC"  # ONNX: 4-D inputs / outputs NHWC, no Transpose at the edges
    if Path(cfg.model).suffix.lower() != ".tflite":  # onnx costs ~0.7 s to import: only for ONNX files
        from toolchain.frontend.onnx import load_onnx
        from toolchain.frontend.onnx_canonical import canonical_onnx
        from toolchain.frontend.onnx_qdq import is_quantized_onnx, load_qdq
    if cfg.precision != "int8" and (Path(cfg.model).suffix.lower() == ".tflite" or is_quantized_onnx(cfg.model)):
        raise InputError(f"{cfg.model}: precision: {cfg.precision} chooses the activation types of edgecc's own "
                         "quantization (float models); a quantized model keeps its own: remove `precision`")
    if Path(cfg.model).suffix.lower() == ".tflite":
        batched_input_shapes(cfg.model, cfg.input_shapes, cfg.batch)  # batch > 1: not for .tflite (yet)
        qgraph = load_tflite(cfg.model)                               # int8 .tflite: keep the file's own quantization
        qgraph = replace(qgraph, meta={**qgraph.meta, "precision": precision_meta(qgraph, "model")})  # (16x8 too)
        graph, n_calib = dequantize_graph(qgraph), 0                  # its float twin (dequantized weights) as reference
    elif is_quantized_onnx(cfg.model):
        shapes = batched_input_shapes(cfg.model, cfg.input_shapes, cfg.batch)  # `batch: N`: N inferences per run
        qdq = load_qdq(cfg.model, shapes, nhwc_io)                    # QDQ / QLinear ONNX -> float core + the model's scales
        check_finite_graph(qdq.graph, cfg.model)                      # finite weights before passes fold them
        check_given(qdq.given, qdq.given_consts, qdq.graph, cfg.model)  # and the model's own scales / zero points
        show_notes(canonical_onnx(cfg.model, shapes).notes)           # what canonicalisation changed (one line each)
        graph = run_passes(qdq.graph)                                 # the same float passes
        check_finite_graph(graph, cfg.model, after="folding constants and BatchNorm")
        calib = load_data(cfg.calibration, graph, cfg.preprocess) if cfg.calibration else None  # optional
        qgraph = quantize(graph, calib, cfg.calibration_method, given=qdq.given, given_consts=qdq.given_consts)
        n_calib = qgraph.meta["calibration_samples"]                  # ^ the model's quantization kept, weights bit for bit
    else:
        shapes = batched_input_shapes(cfg.model, cfg.input_shapes, cfg.batch)  # `batch: N`: N inferences per run
        graph = load_onnx(cfg.model, shapes, nhwc_io)                 # ONNX -> IR, NHWC activations (and I/O: io_layout)
        check_finite_graph(graph, cfg.model)                          # NaN / inf weights: refused, not a "PASS"
        show_notes(canonical_onnx(cfg.model, shapes).notes)           # what canonicalisation changed (one line each)
        graph = run_passes(graph)                                     # fold constants/BatchNorm, fuse Relu/Clip, drop no-op transposes
        check_finite_graph(graph, cfg.model, after="folding constants and BatchNorm")  # large weights can overflow
        calib_path = cfg.calibration or cfg.verify
        if calib_path is None:
            raise InputError(f"{cfg.source or 'command line'}: a float model needs calibration data; pass --calibration DATA")
        calib = load_data(calib_path, graph, cfg.preprocess)          # real data through the preprocess block
        qgraph = quantize(graph, calib, cfg.calibration_method,       # PTQ (TFLite int8 spec, 16x8 where `precision`
                          precision=cfg.precision,                    # says so), calibrated ranges; precision auto
                          search=precision_search(cfg, target))       # judges 16x8 moves on the board's arena / cost
        if qgraph.meta.get("equalized"):                              # `auto` chose cross-layer equalisation: the int8
            graph = equalize(graph)                                   # graph approximates the equalised float graph
        n_calib = len(next(iter(calib.values())))
    qgraph = set_io_dtype(qgraph, cfg.io_dtype, str(cfg.source or "command line"))  # `io_dtype`: the API's I/O type
    rounding, why = rounding_of(cfg)                                  # onnx for a QDQ / QLinear model, or the YAML's
    qgraph = fold_constant_channels(replace(qgraph, meta={**qgraph.meta, "rounding": rounding}))  # channels constant
                                                                      # for every input (proved in the model's rounding):
                                                                      # folded into the next layers' biases, not computed
    rows = split_zero_point_channels(qgraph, depthwise_rows=True)    # the same, depthwise fix-ups on doubled rows (Helium)
    qgraph = split_zero_point_channels(qgraph)                       # weight zero points: the ISA kernels + exact fix-up
    if not qgraph.nodes:  # e.g. x -> Identity -> y: the library would be a copy loop, the harness nothing to time
        raise InputError(f"{cfg.model}: the model computes nothing (no operation is left once Identity / Dropout "
                         "and constants are removed); nothing to compile")
    check_finite_graph(qgraph, cfg.model)                             # the int8 graph's scales and constants, whatever made them
    notes = (*qgraph.meta.get(NOTES_KEY, ()), *accumulator_risks(qgraph))  # refitted weight scales; a model's own
    show_notes(notes)                                                 # int32 bias whose accumulator can wrap (kept)
    meta = {"rounding": rounding, "rounding_why": why, NOTES_KEY: notes}
    qgraph = replace(qgraph, meta={**qgraph.meta, **meta})
    rows = None if len(rows.nodes) == len(qgraph.nodes) else replace(rows, meta={**rows.meta, **meta})
    return Imported(graph, qgraph, n_calib, time.monotonic() - t0, rows)


def compile_model(cfg: Config, target: Target, out_dir: Path, *, profile: bool,
                  imported: Imported | None = None, pick: Any = None) -> Build:
    """Import, optimize, quantize, plan, emit and build one model for one board into out_dir
    (`imported`: the board-independent half made before, e.g. by a sweep over boards; `pick`: a
    tuning round's kernel per node, toolchain.tuning.kernel_choice).

    Raises InputError / UnsupportedModel for bad input, targets.BuildError when the board's
    compiler or linker fails (e.g. a region overflow).
    """
    front = imported or import_model(cfg, target)                     # steps 1-3: import, passes, quantize
    t0 = time.monotonic()
    lowered = lowering_target(target, cfg.kernels)                   # `kernels: portable`: portable C only
    graph, qgraph = front.graph_f32, front.int8_graph(lowered)        # the zero-point fix-ups' form for this board
    qgraph, variants, plan = plan_graph(qgraph, cfg, target, lowered, pick)  # layouts, kernels, order, arena
    weight_bytes = sum(t.nbytes for t in qgraph.tensors.values() if t.is_const)
    check_fits(target, Footprint(weights=weight_bytes, arena=plan.arena_bytes,  # fail before any C is compiled
                                 arena_parts=dict(plan.region_bytes) or None))
    with rounding_mode(graph_rounding(qgraph)):                       # argument values (clamp bounds) round as the model
        ctx = build_context(qgraph, plan, variants, model_stamp(cfg, target), cfg.weights_section,
                            LibNames.of(cfg.name), cfg.weights_format)  # `name:` prefixes symbols, macros, files;
                                                                      # big weights as weights.bin + weights.S
    lib_dir, fw_dir = out_dir / "lib", out_dir / "fw"
    flags = BoardFlags.of(target.name, target.compiler, target.cflags)  # exported by edgecc.mk / .cmake
    lib_sources = emit_library(ctx, lib_dir, flags)                   # OUT/lib: the deployable library
    harness = emit_harness(ctx, fw_dir, target.run.time_source.value, cfg.repeats, cfg.warmup)  # OUT/fw: test harness
    t1 = time.monotonic()
    defines = ([f"{ctx.names.macro}_PROFILE"] if profile else []) + debug_defines(ctx.names)
    with step(f"{target.name}: compile and link"):
        fw = build_firmware(target, [harness], [lib_dir], fw_dir, defines=defines,
                            lib_sources=lib_sources, weights_section=cfg.weights_section)
    t2 = time.monotonic()
    return Build(cfg, target, graph, qgraph, variants, plan, ctx, lib_dir, fw_dir, fw, front.calibration_samples,
                 front.python_s + t1 - t0, t2 - t1)


def plan_graph(qgraph: Graph, cfg: Config, target: Target,
               lowered: Target | None = None, pick: Any = None) -> tuple[Graph, dict[str, KernelVariant], MemoryPlan]:
    """The board's form of a quantized graph: layouts (select_layout), one kernel variant per op (the
    static choice, or the tuned one: cfg.tuning / `pick`, toolchain.tuning.kernel_choice; where each
    came from in graph.meta["kernel_sources"]), the node order with the smallest live peak and the
    arena plan (debug_guards: a guard after every buffer). `lowered`: lowering_target(target,
    cfg.kernels), computed when None."""
    lowered = lowered or lowering_target(target, cfg.kernels)
    prefs = [isa.value for isa in lowered.kernel_preference]
    qgraph = select_layout(qgraph, lowered)                           # NHWC or CHWN per op for this board (+ relayouts)
    variants = select_kernels(qgraph, prefs, target.isa_features, cfg.optimize)  # one kernel variant per op for this board
    cache = cfg.tuning if cfg.optimize == "speed" else None           # tuning measures speed: not under ram
    variants, sources = kernel_choice(qgraph, variants, prefs, target.isa_features, target.name,  # `tuning:` /
                                      cache, pick)                    # a tune round: the measured kernels
    qgraph = replace(qgraph, meta={**qgraph.meta, "kernel_sources": sources})
    scratch, inplace = scratch_sizes(qgraph, variants), inplace_inputs(variants)
    qgraph = order_for_memory(qgraph, scratch, target.buffer_alignment, inplace)  # order with the smallest live peak
    weight_bytes = sum(t.nbytes for t in qgraph.tensors.values() if t.is_const)
    regions = arena_regions(target, weight_bytes, harness_bytes(qgraph, target, cfg), cfg.debug_guards)  # by speed
    plan = plan_memory(qgraph, scratch, target.buffer_alignment, inplace=inplace,  # one static arena at the live bound
                       guard_bytes=GUARD_BYTES if cfg.debug_guards else 0,  # debug_guards: a guard after every buffer
                       regions=regions)                           # several arena regions: each part planned alone
    return qgraph, variants, plan


def precision_search(cfg: Config, target: Target | None) -> Search | None:
    """What `precision: auto` measures candidates with (quantize.precision_search.Search), for the board
    `target` (None: the first board of cfg.board): the planner's arena and the estimated instructions
    per inference (estimate_instructions) of plan_graph's form, and the isolated error per op
    (profiler.numerics.op_numerics). None for another precision."""
    if cfg.precision != "auto":
        return None
    from profiler.numerics import op_numerics
    from quantize.precision_search import DEFAULT_AGREEMENT, DEFAULT_SQNR_DB, Target as Goal
    from targets import list_targets, load_target

    if target is None:
        name = cfg.board.split(",")[0].strip()
        target = list_targets()[0] if name == "all" else load_target(name)

    def measure(qgraph: Graph) -> tuple[int, float]:
        g, variants, plan = plan_graph(qgraph, cfg, target)
        return plan.arena_bytes, float(estimate_instructions(g, variants))

    def isolated(graph_f32: Graph, qgraph: Graph, data: dict, data_q: dict) -> dict[str, float | None]:
        n = len(next(iter(data.values())))
        ops = op_numerics(graph_f32, qgraph, data, data_q, max_samples=n)["ops"]
        return {k: v["sqnr_db_isolated"] for k, v in ops.items()}

    want = cfg.precision_target
    goal = Goal(want.get("agreement", DEFAULT_AGREEMENT), want.get("sqnr_db", DEFAULT_SQNR_DB))
    return Search(measure, isolated, goal, cfg.max_arena_bytes, cfg.max_cost_ratio,
                  f"estimated instructions on {target.name} (per-ISA rates per MAC and byte, no run)")


RAM_MARGIN = 4096  # bytes of .data/.bss kept free beside the arena in the `ram` region: libc, start-up, harness


def region_specs(target: Target, weight_bytes: int, ram_bytes: int = 0) -> list[RegionSpec] | None:
    """The board's arena regions (main first) with the bytes free for the arena in each: its size less
    the stack, heap and `ram_bytes` + RAM_MARGIN of .data/.bss (the `ram` region; they are only known
    once linked, the linker names an overflow) and the weights (the `weights` region). None for a
    board with one arena region."""
    mem = target.memory
    if len(mem.arenas) < 2:
        return None
    reserved = {mem.ram: mem.stack_size + mem.heap_size + ram_bytes + RAM_MARGIN}
    reserved[mem.weights] = reserved.get(mem.weights, 0) + weight_bytes
    return [RegionSpec(n, max(mem.region(n).size - reserved.get(n, 0), 0), mem.region(n).wait_states)
            for n in mem.arenas]


def harness_bytes(graph: Graph, target: Target, cfg: Config) -> int:
    """Static RAM of the test harness (c_templates/main.c.j2): a copy of every graph input and output,
    and with a measured timer the per-op times of the timed repeats (bytes)."""
    io = sum(graph.t(t).nbytes for t in (*graph.inputs, *graph.outputs))
    timed = 8 * cfg.repeats * (len(graph.nodes) + 1) if target.run.time_source is not TimeSource.PLUGIN else 0
    return io + timed


def arena_regions(target: Target, weight_bytes: int, ram_bytes: int, debug_guards: bool) -> list[RegionSpec] | None:
    """The regions to spread the arena over (region_specs), or None: one arena
    region, or a debug_guards build (its guards index one arena: the board's main arena region, said
    in a note)."""
    specs = region_specs(target, weight_bytes, ram_bytes)
    if specs is not None and debug_guards:
        show_notes([f"debug_guards: the arena is planned in {target.memory.arena} alone, not over "
                    f"{', '.join(target.memory.arenas)} (guards check one arena)"])
        return None
    return specs


def debug_defines(names: LibNames = LibNames()) -> list[str]:
    """Test-only knobs from the environment: EDGECC_DEBUG_FAULT_AT_OP=k makes the test harness
    trap when op k starts, to exercise the fault path (exit 3 naming the op);
    EDGECC_DEBUG_OVERRUN_AT_OP=k makes op k write one byte past its output in a debug_guards build
    (the guard path: exit 3, fault kind guard naming op k); EDGECC_DEBUG_HANG_AT_OP=k makes the
    harness spin forever when op k starts (the timeout path: exit 3, fault kind timeout naming op k).
    The overrun knob is the library's (`names`' macro prefix), the other two the harness's (ECC_)."""
    out = []
    for knob in ("FAULT_AT_OP", "OVERRUN_AT_OP", "HANG_AT_OP"):
        op = os.environ.get(f"EDGECC_DEBUG_{knob}")
        if op and op.lstrip("-").isdigit():
            out.append(f"{names.macro if knob == 'OVERRUN_AT_OP' else 'ECC'}_DEBUG_{knob}={int(op)}")
    return out


# Guest instructions per MAC and per activation byte (read + written) of one op, by kernel ISA folder,
# plus a fixed cost per op: fitted to the per-op counts of the MLPerf Tiny int8 models (ResNet-8, DS-CNN,
# MobileNet VWW, autoencoder) on mps2-an386, mps3-an547 and aarch64, portable kernels forced too; a
# whole model's estimate is 0.6x..1.25x its count. The portable kernels are the worst case (~10/MAC).
_INSNS_PER_MAC_BYTE = {"portable": (10.0, 8.0), "dsp": (1.2, 4.0), "helium": (0.2, 2.0), "neon": (0.2, 2.0)}
_INSNS_PER_OP = 2000
_INSNS_STARTUP = 2_000_000  # C start-up, semihosting file opens, model init


def expected_instructions(build: Build, samples: int) -> dict[str, int]:
    """Estimated guest instructions of a whole run (for its timeout), per kernel ISA folder: each op's
    MACs and activation bytes at its kernel's ISA rates, times the inferences of the run (samples,
    plus one profiled rerun of sample 0 on plugin boards, or the warm-up and timed repeats of sample 0
    on timer boards)."""
    if build.target.run.time_source is TimeSource.PLUGIN:
        inferences = samples + 1
    else:
        inferences = samples + build.config.warmup + 2 * build.config.repeats
    out = {isa: n * inferences for isa, n in instructions_per_isa(build.graph_s8, build.variants).items()}
    out["portable"] = out.get("portable", 0) + _INSNS_STARTUP
    return out


def instructions_per_isa(g: Graph, variants: dict[str, KernelVariant]) -> dict[str, int]:
    """Estimated guest instructions of one inference per kernel ISA folder: each op's MACs and
    activation bytes at its kernel's ISA rates (_INSNS_PER_MAC_BYTE) plus a fixed cost per op."""
    from toolchain.ops.registry import opdef

    per: dict[str, int] = {}
    for n in g.nodes:
        op = opdef(n)
        if op.is_view:
            continue
        c = op.cost(n, g)
        isa = variants[n.name].isa
        mac, byte = _INSNS_PER_MAC_BYTE.get(isa, _INSNS_PER_MAC_BYTE["portable"])
        per[isa] = per.get(isa, 0) + int(c.macs * mac + (c.act_read_bytes + c.act_write_bytes) * byte + _INSNS_PER_OP)
    return per


def estimate_instructions(g: Graph, variants: dict[str, KernelVariant]) -> int:
    """Estimated guest instructions of one inference of `g` with `variants` (instructions_per_isa summed)."""
    return sum(instructions_per_isa(g, variants).values())


def write_inputs(path: Path, data_s8: dict[str, np.ndarray], graph: Graph) -> int:
    """Write inputs.bin: for each sample, each graph input's bytes in input order, in the model's own
    dtype (int8; uint8 for a uint8 input: toolchain.io_dtypes). Returns S."""
    n = len(next(iter(data_s8.values())))
    with path.open("wb") as f:
        for i in range(n):
            for name in graph.inputs:
                f.write(np.ascontiguousarray(to_model_dtype(graph, name, data_s8[name][i])).tobytes())
    return n
