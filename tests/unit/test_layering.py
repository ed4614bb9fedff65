"""Layering (architecture §3.2): walk every module's imports with ast (module level and inside
functions) and assert nothing imports upward."""
import ast
from functools import cache
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("toolchain", "quantize", "targets", "profiler")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            out[_module_name(p)] = p
    return out


@cache
def imports_of(mod: str) -> frozenset[str]:
    """Every project module `mod` imports (absolute and relative, at any nesting level)."""
    path = modules()[mod]
    tree = ast.parse(path.read_text(), str(path))
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            found.add(src)
            found.update(f"{src}.{a.name}" for a in node.names)  # `from pkg import submodule`
    return frozenset(m for m in found if m in modules())


def _is(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


def importers_of(prefix: str) -> set[str]:
    return {m for m in modules() if any(_is(i, prefix) for i in imports_of(m)) and not _is(m, prefix)}


def violations(sources: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for m in modules():
        if _is(m, sources):
            for i in sorted(imports_of(m)):
                if any(_is(i, f) for f in forbidden):
                    bad.append(f"{m} imports {i}")
    return bad


def test_the_walker_sees_imports():
    assert "toolchain.ir.graph" in imports_of("toolchain.ir")
    assert "toolchain.ops.registry" in imports_of("toolchain.ops.conv2d")
    assert "toolchain.pipeline" in imports_of("toolchain")           # a lazy, function-level import
    assert "toolchain.ops.add" in imports_of("toolchain.isa.dsp")      # `from toolchain.ops import add, ...`
    assert len(modules()) > 30


def test_targets_target_is_pure_data():
    assert violations("targets.target", ("toolchain", "quantize", "profiler")) == []


def test_targets_never_import_toolchain():
    assert violations("targets", ("toolchain", "quantize", "profiler")) == []


def test_ir_imports_nothing_above_it():
    assert violations("toolchain.ir", ("toolchain.ops", "toolchain.passes", "toolchain.interpret", "toolchain.frontend",
                                       "toolchain.lower", "toolchain.memory", "toolchain.codegen", "toolchain.pipeline",
                                       "toolchain.runner", "toolchain.cli", "quantize", "targets", "profiler")) == []


def test_ir_graph_and_types_import_nothing_above_them():
    for m in ("toolchain.ir.graph", "toolchain.ir.types"):
        assert {i for i in imports_of(m) if not _is(i, "toolchain.ir")} == set(), m


def test_ops_import_nothing_above_them():
    assert violations("toolchain.ops", ("toolchain.isa", "toolchain.passes", "toolchain.interpret", "toolchain.frontend", "quantize",
                                        "toolchain.lower", "toolchain.memory", "toolchain.codegen",
                                        "toolchain.pipeline", "toolchain.runner", "toolchain.cli", "targets",
                                        "profiler")) == []


def test_interpret_and_passes_import_nothing_above_them():
    for src in ("toolchain.interpret", "toolchain.passes"):
        assert violations(src, ("quantize", "toolchain.lower", "toolchain.memory", "toolchain.codegen",
                                "toolchain.frontend", "toolchain.pipeline", "toolchain.runner", "toolchain.cli",
                                "targets", "profiler")) == []


def test_quantize_imports_nothing_above_it():
    assert violations("quantize", ("toolchain.codegen", "toolchain.pipeline", "toolchain.cli", "toolchain.runner",
                                   "toolchain.lower", "toolchain.memory", "targets", "profiler")) == []


def test_lower_memory_codegen_import_nothing_above_them():
    for src in ("toolchain.lower", "toolchain.memory", "toolchain.codegen"):
        assert violations(src, ("toolchain.pipeline", "toolchain.runner", "toolchain.cli", "targets", "profiler",
                                "quantize")) == []


def test_profiler_imports_no_pipeline_or_targets():
    assert violations("profiler", ("toolchain.pipeline", "toolchain.runner", "toolchain.cli", "targets",
                                   "quantize")) == []


# the drivers: the pipeline, the runner and split verification, the CLI, the sweep units and executors, the tuner
TOP = {"toolchain.pipeline", "toolchain.runner", "toolchain.cli", "toolchain.units", "toolchain.executors",
       "toolchain.split_verify", "toolchain.tune"}


def test_only_the_top_imports_profiler():
    assert importers_of("profiler") <= TOP


def test_only_the_top_imports_build_and_qemu():
    users = {m for m in importers_of("targets.build") | importers_of("targets.qemu") if not _is(m, "targets")}
    assert users <= TOP


def test_nobody_imports_the_top_but_the_top():
    for top in ("toolchain.pipeline", "toolchain.runner", "toolchain.cli"):
        # the package facade toolchain/__init__.py re-exports compile_model lazily
        assert importers_of(top) <= TOP | {"toolchain"}, top


def test_no_import_circle_among_ops():
    """Issue 11: the op modules form no import circle (the package facade, which imports them all by
    discovery, is left out), and neither do the ISA plan modules."""
    for pkg in ("toolchain.ops", "toolchain.isa"):
        mods = {m for m in modules() if m.startswith(pkg + ".")}
        edges = {m: {i for i in imports_of(m) if i in mods} for m in mods}
        state: dict[str, int] = {}

        def visit(m: str, path: list[str]) -> list[str] | None:
            state[m] = 1
            for i in sorted(edges[m]):
                if state.get(i) == 1:
                    return [*path, m, i]
                if i not in state and (cycle := visit(i, [*path, m])):
                    return cycle
            state[m] = 2
            return None

        for m in sorted(mods):
            if m not in state:
                cycle = visit(m, [])
                assert cycle is None, " -> ".join(cycle)


def _private_uses(mod: str) -> list[str]:
    """`from X import _name` and `alias._name` where X / alias is another project module."""
    tree = ast.parse(modules()[mod].read_text())
    bad, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module in modules() and node.module != mod:
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    bad.append(f"{mod}: from {node.module} import {a.name}")
                if f"{node.module}.{a.name}" in modules():
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules() and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{mod}: {aliases[node.value.id]}.{node.attr}")
    return bad


def test_nothing_imports_another_modules_private_names():
    assert [b for m in sorted(modules()) for b in _private_uses(m)] == []
