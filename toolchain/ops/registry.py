"""Op registry: op kinds, the OpDef contract every op module fulfils, kernel variants.

Each op module (toolchain/ops/<op>.py) defines one OpDef subclass and registers it with
`@register("X", "DisplayName")`, which also declares the kind `OpKind.X`; toolchain/ops/__init__.py
imports every module of the package, and ISA modules (toolchain/isa/) attach their kernel variants
with `add_variants`. The frontend, interpreter, quantizer, lowering and codegen look ops up in
REGISTRY. No if-chains over op kinds anywhere else, and no hand-kept op list.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from toolchain.ir import Graph, Node, QuantParams


def _load_ops() -> None:
    """Import every op module (toolchain/ops/__init__.py discovers them): done on the first look-up of
    an op kind, so a module that names OpKind.X at import time needs no import list of its own."""
    importlib.import_module("toolchain.ops")


class _OpKindType(type):
    """OpKind's class behaviour: `OpKind.CONV2D` looks a registered kind up by name; iteration lists
    every registered kind in name order (deterministic)."""

    def __getattr__(cls, name: str) -> "OpKind":
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in cls._members:
            _load_ops()
        try:
            return cls._members[name]
        except KeyError:
            raise AttributeError(f"no op kind {name!r} is registered (an op module declares it with "
                                 f"@register({name!r}, ...))") from None

    def __iter__(cls):
        _load_ops()
        return iter(sorted(cls._members.values(), key=lambda k: k.name))

    def __len__(cls) -> int:
        _load_ops()
        return len(cls._members)


class OpKind(metaclass=_OpKindType):
    """One op kind of the IR: `name` (UPPER_SNAKE, e.g. CONV2D) and `value` (the kind's display name,
    TFLite's where one exists, e.g. "Conv2D"; ONNX names map onto them in the frontend).

    There is no hand-kept list: each op module declares its kinds with `@register(NAME, value)`;
    `OpKind.NAME` then returns the one instance (compared by identity, hashable, picklable)."""

    __slots__ = ("name", "value")
    _members: ClassVar[dict[str, "OpKind"]] = {}

    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value

    @classmethod
    def declare(cls, name: str, value: str) -> "OpKind":
        """The kind `name`, created on first declaration; a second declaration must agree."""
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            raise ValueError(f"op kind name {name!r} must be UPPER_SNAKE")
        kind = cls._members.get(name)
        if kind is None:
            clash = next((k for k in cls._members.values() if k.value == value), None)
            if clash is not None:
                raise ValueError(f"op kind value {value!r} is already {clash!r}")
            kind = cls._members[name] = cls(name, value)
        elif kind.value != value:
            raise ValueError(f"{kind!r} is declared as {kind.value!r}, not {value!r}")
        return kind

    def __repr__(self) -> str:
        return f"OpKind.{self.name}"

    def __reduce__(self) -> tuple:
        return (_kind_by_name, (self.name,))


def _kind_by_name(name: str) -> OpKind:
    return getattr(OpKind, name)


class Unsupported(Exception):
    """A node the compiler cannot handle; the message names the node, the op and the reason."""


@dataclass(frozen=True)
class CArg:
    """One argument of a kernel call, C-ready once codegen resolves names.

    kind: "int" (a literal), "real" (a float32 literal, e.g. a Quantize's scale), "act" (an activation
    tensor in the arena, by tensor name), "const" (a constant tensor, by name), "array" (a derived constant array such as per-channel
    multipliers or a look-up table: `value` is the numpy array, emitted as int8 / int16 / uint16 when
    it has that dtype and as int32 otherwise (codegen.context.array_ctype), `name` its suffix), "null".
    """

    kind: str
    value: Any = None
    name: str = ""
    # "array" only: (int8 weight bytes, int32 bias bytes) of the node's constant inputs that the
    # array leaves out (output channels proven constant, packing.pack_sparse_gemm_blob), so that
    # codegen.context.weights_breakdown counts them as not emitted
    skipped: tuple[int, int] = (0, 0)

    @staticmethod
    def lit(value: int) -> "CArg":
        """An integer literal argument."""
        return CArg("int", int(value))


@dataclass(frozen=True)
class KernelVariant:
    """One C implementation of an op for one ISA folder of c_templates/kernels/."""

    name: str
    isa: str
    template: str
    function: str
    applies: Callable[[Node, Graph], bool] = lambda node, graph: True
    scratch_bytes: Callable[[Node, Graph], int] = lambda node, graph: 0
    # The variant's own argument list when it differs from OpDef.kernel_args (e.g. weights
    # re-packed offline into the order the kernel reads them); None = the op's kernel_args.
    args: Callable[[Node, Graph], list["CArg"]] | None = None
    # Extra headers (paths under c_templates/kernels/) the kernel includes, copied into OUT/lib.
    headers: tuple[str, ...] = ()
    # Input positions the kernel may overwrite with its output (output == input pointer is
    # allowed, e.g. elementwise loops); the memory planner uses it when that input dies here.
    inplace_inputs: tuple[int, ...] = ()
    # Board features (boards.yaml isa_features, e.g. "dotprod") the kernel needs beyond its ISA
    # folder; lower.select_kernels skips the variant on boards lacking any of them.
    requires: frozenset[str] = frozenset()
    # What `requires` buys, in the user's words, for the kernel_reason of a board that lacks it
    # ("needs MVE float for onnxruntime's float32 requantization"); None: the features are named.
    requires_why: str | None = None
    # Activation layouts (NHWC, NCHW, CHWN) the kernel reads and writes; lower.select_kernels only
    # chooses it for nodes whose output has one of them (graph.meta["layouts"], default NHWC).
    layouts: frozenset[str] = frozenset({"NHWC"})
    # Why the variant does not apply to a node, in the user's words ("weights hold -128", "channels
    # not a multiple of 4"), for report.json's per-op `kernel_reason` and the terminal; None when it
    # applies or has no reason to give. Called only for variants that were not chosen.
    why_not: Callable[[Node, Graph], str | None] | None = None
    # The activation type the kernel computes in: "s8" (int8, every kernel but the 16x8 ones) or
    # "s16" (int16 activations, int8 weights: TFLite 16x8). register / add_variants make `applies`
    # refuse nodes of the other type (kernel_dtype), so no int8 kernel ever runs an int16 node.
    dtype: str = "s8"
    # Knobs of this kernel beyond its template (e.g. a blocking: (("block_m", 4),)), sorted by name; a
    # variant per setting is one more candidate of `edgecc tune` (toolchain.tuning), told apart by
    # candidate_id. Today no kernel has any.
    tunables: tuple[tuple[str, Any], ...] = ()

    @property
    def candidate_id(self) -> str:
        """The variant's id in a tuning cache: "<isa>/<C function>", plus "[knob=value,...]" when it has
        tunables (e.g. "dsp/ecc_dsp_conv_1x1_s8[block_m=4]"). Stable across runs (no addresses, no order)."""
        knobs = ",".join(f"{k}={v}" for k, v in sorted(self.tunables))
        return f"{self.isa}/{self.function}" + (f"[{knobs}]" if knobs else "")


def kernel_dtype(node: Node, graph: Graph) -> str:
    """"s16" for a node reading or writing an int16 activation (16x8), else "s8"."""
    from toolchain.ops.quant16 import is_s16

    return "s16" if is_s16(node, graph) else "s8"


def _dtype_guarded(v: KernelVariant) -> KernelVariant:
    """`v` applying only to nodes of its activation type. Its why_not for a node of the other type:
    an int8 kernel names the missing 16x8 kernel (the reason where the ISA folder has none for the op);
    a 16x8 kernel gives none for an int8 node (not a candidate: the int8 kernels of its folder speak)."""
    if getattr(v.applies, "dtype_guard", False):
        return v
    inner_applies, inner_why = v.applies, v.why_not

    def applies(node: Node, graph: Graph) -> bool:
        return kernel_dtype(node, graph) == v.dtype and inner_applies(node, graph)

    def why_not(node: Node, graph: Graph) -> str | None:
        if kernel_dtype(node, graph) != v.dtype:
            return "no kernel for int16 activations (16x8) yet" if v.dtype == "s8" else None
        return inner_why(node, graph) if inner_why else None

    applies.dtype_guard = True  # type: ignore[attr-defined]
    for attr in ("tflm_only",):  # lower.kernel_reasons reads these marks off `applies`
        if getattr(inner_applies, attr, False):
            setattr(applies, attr, True)
    return replace(v, applies=applies, why_not=why_not)


@dataclass(frozen=True)
class Cost:
    """Static cost of one op: multiply-accumulates and bytes moved (weights, activations)."""

    macs: int
    weight_bytes: int
    act_read_bytes: int
    act_write_bytes: int


class OpDef:
    """The contract of one op kind. Subclasses override what applies to them."""

    kind: ClassVar[OpKind]
    is_view: ClassVar[bool] = False  # output is the input's bytes reinterpreted (Reshape)
    # Ops with int8 weights (input 1) and an int32 bias (input 2): the weights' output-channel axis, so
    # quantize.bias_fit can bound the int32 accumulator per channel; None for every other op.
    weight_out_axis: ClassVar[int | None] = None
    # Whether the op's int8 arithmetic takes per-tensor weights with a zero point (filter_offset)
    weight_zero_point: ClassVar[bool] = False
    variants: ClassVar[Sequence[KernelVariant]] = ()
    # reference_f32 takes B samples stacked on axis 0 (every activation [B, *shape[1:]] where the
    # graph says [1, *shape[1:]]) and gives each sample exactly its one-sample result, bit for bit
    # (same numpy calls per sample); toolchain.interpret.interpret_each then runs many at once.
    stacks_samples: ClassVar[bool] = False
    # the same for reference_s8 on int8 activations (integer arithmetic: exact whatever the rows)
    stacks_samples_int8: ClassVar[bool] = False
    # output_qparams returns one quantization whatever range calibration observed (the input's, or a
    # fixed one): calibration keeps only the extremes of the output (quantize.calibrate)
    ignores_observed_range: ClassVar[bool] = False

    def infer_shapes(self, node: Node, graph: Graph) -> list[tuple[int, ...]]:
        """Output shapes from input shapes and attrs."""
        raise NotImplementedError

    def reference_f32(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        """Float semantics (numpy) of the node on float inputs."""
        raise NotImplementedError

    def stacks_samples_f32(self, node: Node, graph: Graph) -> bool:
        """Whether reference_f32 may run this node on stacked samples (see stacks_samples)."""
        return self.stacks_samples

    def stacks_samples_s8(self, node: Node, graph: Graph) -> bool:
        """Whether reference_s8 may run this node (int8 output) on stacked samples
        (stacks_samples_int8; the same conditions on the graph as stacks_samples_f32)."""
        return self.stacks_samples_int8 and self.stacks_samples_f32(node, graph)

    def output_qparams(self, node: Node, graph: Graph, observed: QuantParams) -> QuantParams:
        """Quantization of the op's output given the calibrated one (ops may force their own)."""
        return observed

    def quantize_constants(self, node: Node, graph: Graph) -> Graph:
        """Convert the node's float constant inputs to int8/int32 (inputs' qparams are known)."""
        return graph

    def reference_s8(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        """Bit-exact int8 semantics (TFLite int8 spec, TFLM reference kernels)."""
        raise NotImplementedError

    def reference_s16(self, node: Node, graph: Graph, ins: list[np.ndarray]) -> list[np.ndarray]:
        """Bit-exact semantics of a node with int16 activations (TFLite 16x8 spec, TFLM reference
        kernels); only the ops the TFLite frontend maps in 16x8 have one (see quant16.py)."""
        raise NotImplementedError(f"{self.kind.value}: no int16 (16x8) reference")

    def kernel_args(self, node: Node, graph: Graph) -> list[CArg]:
        """Arguments of the C kernel call after the scratch pointer, in the kernel's order."""
        raise NotImplementedError

    def isa_why_not(self, node: Node, graph: Graph) -> str | None:
        """Why no ISA variant (toolchain/isa/) may run this node, in the user's words, whatever the
        variant's own predicate says (e.g. "weights have a zero point": only the portable kernels take
        one); None when the variants decide for themselves."""
        return None

    def cost(self, node: Node, graph: Graph) -> Cost:
        ins = [graph.t(i) for i in node.inputs if i]
        act_in = sum(t.nbytes for t in ins if not t.is_const)
        w = sum(t.nbytes for t in ins if t.is_const)
        out = sum(graph.t(o).nbytes for o in node.outputs)
        return Cost(0, w, act_in, out)


REGISTRY: dict[OpKind, OpDef] = {}


def register(name: str, value: str) -> Callable[[type[OpDef]], type[OpDef]]:
    """Class decorator: declare op kind `name` (UPPER_SNAKE) with display name `value`, instantiate
    the OpDef subclass and file it under that kind. The op module is the only place a kind is named."""

    def deco(cls: type[OpDef]) -> type[OpDef]:
        kind = OpKind.declare(name, value)
        if kind in REGISTRY:
            raise ValueError(f"{kind!r} is registered twice ({type(REGISTRY[kind]).__name__}, {cls.__name__})")
        cls.kind = kind
        cls.variants = tuple(_dtype_guarded(v) for v in cls.variants)
        REGISTRY[kind] = cls()
        return cls

    return deco


def add_variants(kind: OpKind, *variants: KernelVariant) -> None:
    """Attach ISA kernel variants (toolchain/isa/) to a registered op. Within one ISA folder the
    variants keep the order given (lowering takes the first that applies); the op module's own
    (portable) variants are not affected."""
    op = REGISTRY[kind]
    op.variants = (*op.variants, *(_dtype_guarded(_guarded(op, v)) for v in variants))


def _guarded(op: OpDef, v: KernelVariant) -> KernelVariant:
    """`v` stepping aside wherever `op.isa_why_not` gives a reason (its predicate and why_not first ask it)."""
    def applies(node: Node, graph: Graph) -> bool:
        return op.isa_why_not(node, graph) is None and v.applies(node, graph)

    def why_not(node: Node, graph: Graph) -> str | None:
        return op.isa_why_not(node, graph) or (v.why_not(node, graph) if v.why_not else None)

    return replace(v, applies=applies, why_not=why_not)


def opdef(node: Node) -> OpDef:
    """The OpDef of a node's op kind."""
    return REGISTRY[node.op]


def portable(op: str, function: str | None = None, **kw: Any) -> KernelVariant:
    """The portable C variant of an op (c_templates/kernels/portable/<op>_s8.c.j2)."""
    return KernelVariant("portable", "portable", f"portable/{op}_s8.c.j2", function or f"ecc_{op}_s8", **kw)


def portable_s16(op: str, function: str | None = None, **kw: Any) -> KernelVariant:
    """The portable C variant of an op in 16x8 (c_templates/kernels/portable/<op>_s16.c.j2): int16
    activations, int8 weights, int64 biases; chosen only for nodes with int16 activations. The
    kernel may include ecc_fixed_point_s16.h (the 64-bit requantization), shipped with it."""
    headers = ("portable/ecc_fixed_point_s16.h", *kw.pop("headers", ()))
    return KernelVariant("portable_s16", "portable", f"portable/{op}_s16.c.j2", function or f"ecc_{op}_s16",
                         dtype="s16", headers=headers, **kw)


def tflm_only(applies: Callable[[Node, Graph], bool]) -> Callable[[Node, Graph], bool]:
    """`applies` restricted to graphs with rounding "tflm": the ISA kernels (dsp, helium, neon) round
    as TFLM does only, so under `rounding: onnx` lowering falls back to the portable `_onnx` twins."""
    from toolchain.ops.fixed_point import graph_rounding

    def only_tflm(node: Node, graph: Graph) -> bool:
        return graph_rounding(graph) == "tflm" and applies(node, graph)

    only_tflm.tflm_only = True  # type: ignore[attr-defined]  # lower.kernel_reasons: "rounding onnx: no <isa> twin"
    return only_tflm


def rounding_twins(variant: KernelVariant, **onnx_kw: Any) -> tuple[KernelVariant, KernelVariant]:
    """(onnx twin, variant) for a portable kernel whose output rounding depends on the model's
    `rounding`: the twin `portable_onnx` calls `<function>_onnx` (the same template renders both, see
    c_templates/kernels/portable/ecc_fixed_point.h) and applies only under rounding "onnx"; the given
    variant only under "tflm". `onnx_kw` overrides fields of the twin (e.g. its argument list)."""
    from toolchain.ops.fixed_point import graph_rounding

    def mode_is(mode: str, applies: Callable[[Node, Graph], bool]) -> Callable[[Node, Graph], bool]:
        return lambda node, graph: graph_rounding(graph) == mode and applies(node, graph)

    twin = replace(variant, name=f"{variant.name}_onnx", function=f"{variant.function}_onnx",
                   applies=mode_is("onnx", variant.applies), **onnx_kw)
    return twin, replace(variant, applies=mode_is("tflm", variant.applies))
