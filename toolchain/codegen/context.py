"""View objects handed to the templates: every field is C-ready (identifiers, literals, offsets),
so templates only loop and print (architecture P14)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolchain.codegen.cnames import CNames
from toolchain.codegen.filters import c_float, c_int, c_string  # noqa: F401 (c_string: re-exported)
from toolchain.codegen.libnames import LibNames
from toolchain.codegen.weights_blob import resolve_format
from toolchain.io_dtypes import io_ctype, io_qparams
from toolchain.ir import Graph, QuantParams
from toolchain.memory import MemoryPlan
from toolchain.ops.registry import KernelVariant, opdef


@dataclass(frozen=True)
class ConstArray:
    """A constant array in the weights section: symbol, C element type, values."""

    symbol: str
    ctype: str
    values: np.ndarray
    # what the bytes are (weights_breakdown): "tensor" (a constant of the graph as it is),
    # "requantization" (a separate per-channel multiplier or shift array) or "derived" (re-packed
    # weights, folded biases, requantization records, padding: the kernel's own layout)
    role: str = "tensor"
    # (int8 weight bytes, int32 bias bytes) of the model's parameters this array leaves out (CArg.skipped)
    skipped: tuple[int, int] = (0, 0)

    @property
    def size(self) -> int:
        return int(self.values.size)

    @property
    def nbytes(self) -> int:
        """Bytes of the array in the weights section (alignment padding not included)."""
        return int(np.asarray(self.values).nbytes)


@dataclass(frozen=True)
class KernelCall:
    """One kernel invocation in model.c, in execution order."""

    index: int
    name: str
    op_type: str
    function: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class IOView:
    """A graph input or output: the run() parameter, its arena offset and its quantization (int8, or
    uint8 as the model declares it: model.c converts at the copy, toolchain.io_dtypes), or the C
    element type of a float32 edge (a Quantize / Dequantize inside the model)."""

    param: str
    tensor: str
    offset: int
    size: int
    shape: tuple[int, ...]
    scale: float
    zero_point: int
    ctype: str = "int8_t"
    base: str = "a"  # the C pointer of its arena part (MemoryPlan.base_of)

    @property
    def count_suffix(self) -> str:
        """Divides the byte size into an element count in C ("" for int8)."""
        return "" if self.ctype in ("int8_t", "uint8_t") else f" / sizeof({self.ctype})"


@dataclass(frozen=True)
class GuardView:
    """A debug guard (debug_guards: true): `nbytes` pattern bytes at arena `offset`, right after
    buffer `name` (a C string literal), checked after every kernel call from `first` to `last`."""

    name: str
    offset: int
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True)
class BoardFlags:
    """The board's compiler and flags as OUT/lib/edgecc.mk / edgecc.cmake export them (boards.yaml
    toolchain.cflags): `arch` the machine flags (-mcpu, -mfpu, -mfloat-abi, -mthumb, -march: every -m
    flag), `defines` the -D flags, `opt` the optimisation level the report was measured with."""

    board: str = ""
    compiler: str = "cc"
    arch: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    opt: tuple[str, ...] = ()

    @staticmethod
    def of(board: str, compiler: str, cflags: tuple[str, ...]) -> "BoardFlags":
        """Split a board's cflags (the rest, -g and warnings, is the user's business)."""
        def pick(prefix: str) -> tuple[str, ...]:
            return tuple(f for f in cflags if f.startswith(prefix))

        return BoardFlags(board, compiler, pick("-m"), pick("-D"), pick("-O"))


# C feature macros per ISA folder (KernelVariant.isa) and per `requires` feature, for the guard every
# ISA kernel file starts with (c_templates/kernels/isa_guard.j2 spells the tests and the messages)
ISA_FEATURES = {"dsp": "dsp", "helium": "mve", "neon": "neon"}


def kernel_features(variants: dict[str, KernelVariant]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(template, sorted ISA features its chosen variants need) per ISA kernel template (portable
    ones need none): the folder's own feature plus every chosen variant's `requires`."""
    need: dict[str, set[str]] = {}
    for v in variants.values():
        if v.isa in ISA_FEATURES:
            need.setdefault(v.template, {ISA_FEATURES[v.isa]}).update(v.requires)
    return tuple((t, tuple(sorted(f))) for t, f in sorted(need.items()))


@dataclass(frozen=True)
class ArenaView:
    """An arena part beside the main one (several arena regions): the static array `symbol`
    (`<name>_arena_<REGION>`) of `size` bytes in section `section` (`.bss.<name>_arena.<REGION>`, the
    linker script puts it in its region), seen as `base` in <name>_model_run, its size as macro
    `macro` (`<NAME>_ARENA_<REGION>_SIZE`) in model.h."""

    region: str
    symbol: str
    base: str
    size: int
    section: str
    macro: str


@dataclass(frozen=True)
class ModelContext:
    """Everything the model library templates need."""

    stamp: str
    arena_bytes: int
    alignment: int
    weights_section: str
    inputs: tuple[IOView, ...]
    outputs: tuple[IOView, ...]
    calls: tuple[KernelCall, ...]
    consts: tuple[ConstArray, ...]
    kernel_templates: tuple[str, ...]
    kernel_headers: tuple[str, ...] = ()
    guards: tuple[GuardView, ...] = ()  # debug guards, empty unless debug_guards: true
    guard_op_names: tuple[str, ...] = ()  # with guards: every kernel call's node name as a C literal
    guard_output_ends: tuple[int, ...] = ()  # with guards: arena offset just past each call's first output
    arenas: tuple[ArenaView, ...] = ()  # the arena parts in other regions than the main one (several regions)
    main_region: str | None = None  # the main arena's region when the arena spans several
    names: LibNames = LibNames()  # the library's prefix and file names (`name:`; `ecc` and today's files without)
    kernel_features: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ISA kernel template -> features it needs
    weights_format: str = "c"  # c: weights.c; blob: weights.S + weights.bin (codegen.weights_blob; never "auto")

    @property
    def weights_source(self) -> str:
        """The library's source file of the constant arrays: weights.c, or weights.S (blob), as named."""
        return self.names.file("weights.S" if self.weights_format == "blob" else "weights.c")

    @property
    def kernel_header_names(self) -> tuple[str, ...]:
        """File names of the extra kernel headers, as the library ships them and model.c includes them."""
        return tuple(self.names.file(h.rsplit("/", 1)[-1]) for h in self.kernel_headers)

    @property
    def run_params(self) -> str:
        """The I/O parameters of `<name>_model_run`: `const int8_t *input0, int8_t *output0`."""
        ins = [f"const {io.ctype} *{io.param}" for io in self.inputs]
        return ", ".join(ins + [f"{io.ctype} *{io.param}" for io in self.outputs])

    @property
    def run_args(self) -> str:
        """The same parameters passed on: `input0, output0`."""
        return ", ".join(io.param for io in (*self.inputs, *self.outputs))


REQUANT_ARRAYS = ("mult", "shift")  # CArg names of the separate per-channel requantization arrays


def weights_breakdown(graph: Graph, ctx: ModelContext) -> dict[str, int]:
    """Bytes of the weights section by what they hold, from the emitted arrays (alignment padding
    between arrays not included: the linker map's section size minus the sum of these).

    weights / biases: the model's own parameters, the constant int8 / int32 or int64 (16x8; other dtypes: other)
    tensors the kernels read, as the source model (or our quantizer) stores them, whether emitted
    as they are or inside a re-packed array; requantization: the separate per-channel multiplier
    and shift arrays; packing: the rest of the re-packed arrays (requantization records inside
    packed blobs, folded biases beyond the source ones, zero padding), i.e. emitted bytes minus the
    three above. Source: ctx.consts and graph_s8's constants. The parameters of output channels
    proven constant that a kernel does not store (ConstArray.skipped) are left out of weights /
    biases and counted under "skipped" instead, which is not part of the section (profiler.report
    weight_fields adds it back to the model's own weights), with the bytes of the channels
    passes/fold_constant_channels removed from the graph (graph.meta["weights_dropped_bytes"])."""
    used = {i for n in graph.nodes if not opdef(n).is_view for i in n.inputs if i}
    params = [t for t in graph.tensors.values() if t.is_const and t.name in used]
    skipped = [sum(c.skipped[i] for c in ctx.consts) for i in (0, 1)]
    out = {"weights": sum(t.nbytes for t in params if t.dtype.c == "int8_t") - skipped[0],
           "biases": sum(t.nbytes for t in params if t.dtype.c in ("int32_t", "int64_t")) - skipped[1]}
    out["other"] = sum(t.nbytes for t in params) - out["weights"] - out["biases"] - sum(skipped)
    out["requantization"] = sum(c.nbytes for c in ctx.consts if c.role == "requantization")
    out["packing"] = sum(c.nbytes for c in ctx.consts) - sum(out.values())
    dropped = sum(graph.meta.get("weights_dropped_bytes", (0, 0)))  # passes/fold_constant_channels: removed
    if any(skipped) or dropped:                                      # from the graph, so not in `params` either
        out["skipped"] = sum(skipped) + dropped
    return out


def _tensor_ref(arg, graph: Graph, plan: MemoryPlan, wnames: CNames, consts: dict[str, ConstArray]) -> str:
    """C expression of an "act" (arena offset) or "const" (weights symbol) kernel argument."""
    if arg.kind == "act":
        t = graph.t(arg.value)
        base = f"({plan.base_of(arg.value)} + {plan.offset_of(arg.value)})"
        return base if t.dtype.c == "int8_t" else f"(({t.dtype.c} *){base})"
    t = graph.t(arg.value)
    sym = wnames(arg.value)
    consts.setdefault(sym, ConstArray(sym, t.dtype.c, t.data))
    return sym


def array_ctype(values: np.ndarray) -> tuple[str, type]:
    """(C type, numpy type) of a derived constant array (CArg "array"): int8 (weights re-packed
    offline, int8 tables), int16 / uint16 (the 16x8 look-up tables) as they are, anything else int32."""
    for np_type, ctype in ((np.int8, "int8_t"), (np.int16, "int16_t"), (np.uint16, "uint16_t")):
        if values.dtype == np_type:
            return ctype, np_type
    return "int32_t", np.int32


def build_context(graph: Graph, plan: MemoryPlan, variants: dict[str, KernelVariant], stamp: str,
                  weights_section: str = ".weights", names: LibNames = LibNames(),
                  weights_format: str = "c") -> ModelContext:
    """Resolve every kernel argument to C: arena offsets, constant symbols, literals; every symbol
    with the library's prefix (`names`). `weights_format` (c, blob or auto: blob above
    codegen.weights_blob.BLOB_MIN_BYTES of arrays) is how the library ships the constant arrays."""
    wnames = CNames(f"{names.prefix}_w_")
    pnames = CNames(f"{names.prefix}_p_")  # derived arrays get their own namespace: no clash with tensor names
    consts: dict[str, ConstArray] = {}
    calls = []
    for node in graph.nodes:
        op = opdef(node)
        if op.is_view:
            continue
        variant = variants[node.name]
        scratch_key = f"scratch:{node.name}"
        args = [f"({plan.base_of_buffer(scratch_key)} + {plan.offsets[scratch_key]})" if scratch_key in plan.offsets
                else "NULL"]
        for arg in (variant.args or op.kernel_args)(node, graph):
            if arg.kind == "int":
                args.append(c_int(arg.value))
            elif arg.kind == "real":  # a float32 parameter (the float edge kernels: single precision)
                args.append(c_float(arg.value))
            elif arg.kind in ("act", "const"):
                args.append(_tensor_ref(arg, graph, plan, wnames, consts))
            elif arg.kind == "ptrs":  # an array of tensor pointers, as a C99 compound literal
                refs = ", ".join(_tensor_ref(a, graph, plan, wnames, consts) for a in arg.value)
                ctype = graph.t(arg.value[0].value).dtype.c if arg.value else "int8_t"  # int16: 16x8 Concat
                args.append(f"(const {ctype} *const[]){{{refs}}}")
            elif arg.kind == "array":
                sym = pnames(f"{node.name}_{arg.name}")
                values = np.asarray(arg.value)
                ctype, ntype = array_ctype(values)
                role = "requantization" if arg.name in REQUANT_ARRAYS else "derived"
                consts.setdefault(sym, ConstArray(sym, ctype, values.astype(ntype), role, tuple(arg.skipped)))
                args.append(sym)
            else:
                args.append("NULL")
        calls.append(KernelCall(len(calls), node.name, node.op.value, names.rename(variant.function), tuple(args)))
    ionames = CNames("")
    ios = []
    for tensors, kind in ((graph.inputs, "input"), (graph.outputs, "output")):
        views = []
        for i, name in enumerate(tensors):
            t = graph.t(name)
            q = io_qparams(graph, name) or QuantParams.per_tensor(1.0, 0)   # float32 edges carry real values
            views.append(IOView(ionames(f"{kind}{i}"), name, plan.offset_of(name), t.nbytes, t.shape,
                                q.s, q.zp, io_ctype(graph, name), plan.base_of(name)))
        ios.append(tuple(views))
    templates = tuple(sorted({v.template for v in variants.values()}))
    headers = tuple(sorted({h for v in variants.values() for h in v.headers}))
    guards = tuple(GuardView(c_string(*g[:1]), *g[1:]) for g in plan.guards())
    kernels = [n for n in graph.nodes if not opdef(n).is_view] if guards else []
    arenas = tuple(ArenaView(r, f"{names.prefix}_arena_{r}", f"a_{r}", n, f"{names.arena_section}.{r}",
                             f"{names.macro}_ARENA_{r.upper()}_SIZE")
                   for r, n in plan.region_bytes.items() if r != plan.main_region and n)
    # a main arena part left empty by the placement still needs a (non-zero) C array
    main_bytes = max(plan.main_bytes, plan.alignment) if plan.region_bytes else plan.arena_bytes
    return ModelContext(stamp, main_bytes, plan.alignment, weights_section, ios[0], ios[1], tuple(calls),
                        tuple(consts.values()), templates, headers, guards,
                        tuple(c_string(n.name) for n in kernels),
                        tuple(plan.offset_of(n.outputs[0]) + graph.t(n.outputs[0]).nbytes for n in kernels),
                        arenas, plan.main_region, names, kernel_features(variants),
                        resolve_format(weights_format, sum(c.nbytes for c in consts.values())))
