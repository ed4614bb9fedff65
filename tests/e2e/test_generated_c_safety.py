"""Model-controlled strings cannot inject code into the generated library (reviewer finding: an ONNX
input named `x */ static volatile int ... = 42; /* ` used to compile into lib/model.c).

A Conv + Relu model whose tensor, node and file names carry comment terminators, newlines, quotes,
backslashes, `??/` trigraphs and non-ASCII is built and run on the host, with and without debug
guards (which put node names into C string literals). It must run bit-exact; the names must appear
in the sources only in their escaped form (c_comment / c_string of toolchain/codegen/filters.py);
what the compiler sees after removing comments must hold none of the injected text, and the model's
object file no injected symbol."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from e2e_helpers import finish

INPUT = "x */ static volatile int injected_by_model __attribute__((used, unused)) = 42; /* "
OUTPUT = 'y\n#error injected_newline\n"q\\ ??/\n/* \u00e9 \u2713\t*/ int injected_output = 1; //'
NODE = "conv */ int injected_node = 7; /* ??/"
MID = 'mid"*/ int injected_mid; /*'
WEIGHT = "w */ int injected_w = 3; /*"
WORD = re.compile(r"(?<![A-Za-z0-9_])injected")  # what the names inject starts with it, standalone
# a file name cannot hold "/", but a newline ends a `#` comment of edgecc.mk / edgecc.cmake
FILE = "m\nint injected_file = 1;\n??= \u00e9\\.onnx"


def _model(path: Path) -> None:
    from onnx import TensorProto, checker, helper, numpy_helper, save

    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.5, (4, 1, 3, 3)).astype(np.float32)
    b = rng.normal(0, 0.1, (4,)).astype(np.float32)
    nodes = [helper.make_node("Conv", [INPUT, WEIGHT, "b"], [MID], name=NODE, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", [MID], [OUTPUT], name="relu\n#define ecc_model_run injected_define")]
    graph = helper.make_graph(nodes, "g */ int injected_graph; /*",
                              [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [1, 1, 6, 6])],
                              [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, 4, 6, 6])],
                              [numpy_helper.from_array(w, WEIGHT), numpy_helper.from_array(b, "b")],
                              doc_string="*/ int injected_doc; /*")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              doc_string="*/ int injected_model_doc; /*")
    model.ir_version = 8
    checker.check_model(model)
    save(model, str(path))


@pytest.fixture(scope="module", params=[(False, "c"), (True, "c"), (False, "blob")],
                ids=["release", "debug_guards", "weights_blob"])
def injected(request, tmp_path_factory, edgecc, need_board):
    need_board("host")
    d = tmp_path_factory.mktemp("inject")
    _model(d / FILE)
    np.save(d / "data.npy", np.random.default_rng(1).normal(0, 1, (8, 1, 6, 6)).astype(np.float32))
    cfg = {"model": FILE, "board": "host", "calibration": "data.npy", "preprocess": {"layout": "NCHW"},
           "out": "out", "debug_guards": request.param[0], "weights_format": request.param[1]}
    (d / "p.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    job = finish(edgecc("run", d / "p.yaml", "--quiet"), d / "out")
    assert job.code == 0, f"exit {job.code}: {job.err}"
    return job


def test_injection_model_runs_bit_exact_on_host(injected):
    v = injected.report["verification"]
    assert v["bit_exact"] is True and v["samples"] == 8


def test_names_appear_escaped_in_comments(injected):
    lib = injected.out / "lib"
    model_h = (lib / "model.h").read_text(encoding="ascii")  # ASCII only: non-ASCII became '?'
    assert ('/* input0: tensor "x *\\/ static volatile int injected_by_model __attribute__((used, unused)) = 42; '
            '/\\* ", int8 [1, 1, 6, 6], real') in model_h
    out = 'y?#error injected_newline?"q\\ ?\\?/?/\\* ? ?\\?*\\/ int injected_output = 1; //_nchw'
    assert f'/* output0: tensor "{out}", int8 [1, 4, 6, 6], real' in model_h
    model_c = (lib / "model.c").read_text(encoding="ascii")
    # kernel calls are named after the tensor they write (the frontend's node names)
    assert '    /* op 0: mid"*\\/ int injected_mid; /\\* (Conv2D) */\n' in model_c
    assert f"    /* op 1: {out} (Transpose) */\n" in model_c
    stamp = "model m?int injected_file = 1;?\\?\\?= ?\\.onnx sha256:"
    for name in ("model.c", "model.h", _weights_source(lib), "weights.h", "ecc_kernels.h"):
        assert stamp in (lib / name).read_text(encoding="ascii").splitlines()[0], name
    for name in ("edgecc.mk", "edgecc.cmake"):
        first = (lib / name).read_text(encoding="ascii").splitlines()[0]
        assert first.startswith("# edgecc ") and stamp in first, name


def test_guard_names_are_escaped_string_literals(injected):
    model_c = (injected.out / "lib" / "model.c").read_text(encoding="ascii")
    guarded = "guards" in injected.report["memory"]
    assert ("ECC_NUM_GUARDS" in model_c) == guarded  # only debug builds hold names as literals
    if not guarded:
        return
    assert '    "mid\\"*/ int injected_mid; /*",\n' in model_c
    assert '    "y?#error injected_newline?\\"q\\\\ \\?\\?/?/* ?' in model_c


def test_compiler_sees_no_injected_code(injected):
    """Comments removed as the compiler's preprocessor removes them (-std=c99: trigraphs on): an
    identifier starting with 'injected' may survive only inside the guard builds' string literals."""
    lib = injected.out / "lib"
    for src in sorted(lib.glob("*.[chS]")):  # weights.S: through the assembler's preprocessor
        mode = ["-x", "assembler-with-cpp"] if src.suffix == ".S" else ["-std=c99", "-fpreprocessed", "-dD"]
        p = subprocess.run(["gcc", *mode, "-E", "-P", src.name], cwd=lib, capture_output=True, text=True, check=True)
        for line in p.stdout.splitlines():
            if WORD.search(line):  # inside a C name (ecc_w_mid____int_injected_mid___w) is harmless
                assert src.name == "model.c" and line.strip().startswith('"') and line.strip().endswith('",'), \
                    f"{src.name}: injected text outside comments: {line!r}"


def test_model_object_has_no_injected_symbol(injected):
    objs = sorted((injected.out / "fw" / "obj").glob("*model.o"))
    assert len(objs) == 1
    syms = subprocess.run(["nm", str(objs[0])], capture_output=True, text=True, check=True).stdout
    assert "ecc_model_run" in syms and "ecc_arena" in syms
    assert [s for s in syms.split() if WORD.search(s)] == [], syms
    (weights,) = (injected.out / "fw" / "obj").glob("*_weights.o")
    syms = subprocess.run(["nm", str(weights)], capture_output=True, text=True, check=True).stdout
    assert " R ecc_w_mid____int_injected_mid_____w\n" in syms  # named after its consumer's output, as a C name
    assert [s for s in syms.split() if WORD.search(s)] == [], syms


def test_make_fragment_still_parses(injected, tmp_path):
    """A name ending in a backslash would continue the stamp's `#` comment over the next line."""
    if shutil.which("make") is None:
        pytest.skip("make missing")
    lib = injected.out / "lib"
    (tmp_path / "Makefile").write_text(f"include {lib}/edgecc.mk\nshow:\n\t@echo $(EDGECC_SRCS)\n")
    out = subprocess.run(["make", "-s", "show"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.split()[:2] == [f"{lib}/model.c", f"{lib}/{_weights_source(lib)}"]


def _weights_source(lib: Path) -> str:
    """weights.S when the library ships its weights as data (weights_format: blob), else weights.c."""
    return "weights.S" if (lib / "weights.S").is_file() else "weights.c"
