"""Shared by tests/e2e and tests/golden: tool gating (skip locally, FAIL when CI=true) and the
`edgecc` command line run in-process (fast; an escaping exception is recorded as the traceback
the console script would print)."""
from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(REPO)]:  # before tests/ (on sys.path for this file), whose targets/ would shadow ours
    sys.path.insert(0, str(REPO))


def _need_board(name: str) -> None:
    """Skip the calling test when `name`'s compiler/QEMU are missing; fail instead under CI=true."""
    from targets import load_target
    from targets.toolchain_check import missing_tools

    missing = missing_tools(load_target(name))
    if missing:
        msg = f"board {name}: missing tools: {', '.join(missing)}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " (CI=true: tools are required)")
        pytest.skip(msg)


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str | Path) -> CliResult:
    """`edgecc ARGS...` in-process: exit status, stdout, stderr."""
    from toolchain.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse usage errors
            code = e.code if isinstance(e.code, int) else 2
        except Exception:  # what the console script would show: a traceback and exit 1
            traceback.print_exc()
            code = 1
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def need_board():
    """need_board(name): skip when the board's compiler/QEMU are missing (fail when CI=true)."""
    return _need_board


@pytest.fixture(scope="session")
def edgecc():
    """The in-process `edgecc` runner: edgecc("run", yaml, "--out", d) -> CliResult."""
    return run_cli


# ---- the `qemu` marker (`pytest -m "not qemu"` is the quick loop) -----------------------------------
# Applied at collection, not by hand: a test is marked when a board that runs under QEMU is named by
# its parameters, by the code of the test, of its fixtures, or of the tests/ helpers they call (a
# string constant, a default argument, or a module-level constant such as BOARD = "mps3-an547"). A
# test that runs QEMU without naming a board (e.g. the digits YAML's own board) carries the mark in
# its file. When a run deselects `qemu`, an unmarked test that launches QEMU fails, naming the fix.

_TESTS = Path(__file__).resolve().parent


def _qemu_boards() -> frozenset[str]:
    from targets import list_targets
    from targets.target import RunKind

    return frozenset(t.name for t in list_targets() if t.run.kind is not RunKind.NATIVE)


def _names_board(value: object, boards: frozenset[str]) -> bool:
    """True if `value` (a str, possibly "a,b", or a list/tuple/set/dict of them) names a board."""
    if isinstance(value, str):
        return len(value) < 200 and any(part.strip() in boards for part in value.split(","))
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_names_board(v, boards) for v in value)
    if isinstance(value, dict):
        return any(_names_board(k, boards) or _names_board(v, boards) for k, v in value.items())
    return False


def _codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_consts"):
            yield from _codes(c)


def _in_tests(obj: object) -> bool:
    """Whether function or module `obj` is defined under tests/."""
    file = getattr(getattr(obj, "__code__", None), "co_filename", None) or getattr(obj, "__file__", None) or ""
    return str(file).startswith(str(_TESTS))


def _code_names_board(fn, boards: frozenset[str], memo: dict, depth: int = 3) -> bool:
    """Whether function `fn` (or a tests/ function it calls by global name, `depth` levels down)
    names a board of `boards` in its constants, defaults or the module-level values it reads."""
    import inspect

    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    if code in memo:
        return memo[code]
    memo[code] = False  # recursion guard
    found = _names_board(getattr(fn, "__defaults__", None) or (), boards) or \
        _names_board(list((getattr(fn, "__kwdefaults__", None) or {}).values()), boards)
    g = getattr(fn, "__globals__", {})
    for c in _codes(code):
        if found:
            break
        found = any(_names_board(k, boards) for k in c.co_consts if isinstance(k, (str, tuple, frozenset)))
        # globals it reads, and attributes it reads of tests/ helper modules (helium_harness.BOARD)
        helpers = [m for m in (g.get(n) for n in c.co_names) if inspect.ismodule(m) and _in_tests(m)]
        values = [g.get(n) for n in c.co_names] + [getattr(m, n, None) for m in helpers for n in c.co_names]
        for v in values:
            if found:
                break
            found = _names_board(v, boards) or (depth > 0 and inspect.isfunction(v) and _in_tests(v)
                                                and _code_names_board(v, boards, memo, depth - 1))
    memo[code] = found
    return found


def _needs_qemu(item: pytest.Item, boards: frozenset[str], memo: dict) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and _names_board(list(callspec.params.values()), boards):
        return True
    fn = getattr(item, "function", None)
    if fn is not None and _code_names_board(fn, boards, memo):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        if _in_tests(defs[-1].func) and _code_names_board(defs[-1].func, boards, memo):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    boards, memo = _qemu_boards(), {}
    for item in items:
        if item.get_closest_marker("qemu") is None and _needs_qemu(item, boards, memo):
            item.add_marker(pytest.mark.qemu)


def _qemu_deselected(config: pytest.Config) -> bool:
    """Whether -m deselects a test marked only `qemu` (e.g. -m "not qemu")."""
    expr = config.getoption("markexpr", "") or ""
    if not expr:
        return False
    try:
        from _pytest.mark.expression import Expression

        return not Expression.compile(expr).evaluate(lambda name, **kw: name == "qemu")
    except Exception:  # a private API: fall back to the plain spelling
        return "notqemu" in expr.replace(" ", "")


_RUNNING: list[pytest.Item] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _RUNNING.append(item)
    try:
        return (yield)
    finally:
        _RUNNING.pop()


def pytest_configure(config: pytest.Config) -> None:
    if not _qemu_deselected(config):
        return
    import targets.procs as procs

    spawned = procs.spawned

    def guarded(cmd, *args, **kwargs):
        if Path(str(cmd[0])).name.startswith("qemu") and _RUNNING and _RUNNING[-1].get_closest_marker("qemu") is None:
            pytest.fail(f"{_RUNNING[-1].nodeid} runs QEMU ({Path(str(cmd[0])).name}) but is not marked qemu: "
                        "name its board in the test or add @pytest.mark.qemu (tests/conftest.py)", pytrace=False)
        return spawned(cmd, *args, **kwargs)

    procs.spawned = guarded
