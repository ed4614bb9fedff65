"""The library's name (issue 15 item 1, toolchain/codegen/libnames.py): `name:` / `--name` checked
as written, and what it renames. The compiled side is tests/kernels/test_kernel_names.py (every
kernel of every ISA) and tests/e2e/test_firmware_two_models.py (two libraries in one image)."""
from __future__ import annotations

import doctest

import pytest

import toolchain.codegen.libnames as libnames
from toolchain.codegen.libnames import LibNames, name_problem
from toolchain.config import load_config
from toolchain.errors import InputError


def test_doctests():
    res = doctest.testmod(libnames, verbose=False)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize("value", ["kws", "cmd2", "a", "x" * 32])
def test_good_names(value):
    assert name_problem(value) is None
    assert LibNames.of(value) == LibNames(value, True)


# an underscore would let `kws` and `kws_big` define the same symbol (kws_big_model_run against a
# kws_big_... kernel of `kws`), upper case would clash with the macros, and the rest is not C
@pytest.mark.parametrize("value", ["kws_small", "Kws", "2kws", "_kws", "kws-1", "k ws", "", "x" * 33, "é", 7, None])
def test_bad_names(value):
    assert name_problem(value) is not None


def test_the_default_keeps_todays_names():
    n = LibNames.of(None)
    assert (n.prefix, n.macro, n.named) == ("ecc", "ECC", False)
    text = '#include "ecc_dsp.h"\nint ecc_add_s8(void); /* ECC_OK, EDGECC_SRCS */\n'
    assert n.rename(text) == text
    assert [n.file(f) for f in ("model.h", "weights.c", "ecc_kernels.h", "ecc_portable_add_s8.c")] == \
        ["model.h", "weights.c", "ecc_kernels.h", "ecc_portable_add_s8.c"]
    assert (n.arena_section, n.make_prefix, n.cmake_target) == (".bss.ecc_arena", "EDGECC", "edgecc_model")


def test_a_name_renames_symbols_macros_files_and_build_variables():
    n = LibNames.of("kws")
    text = ('#include "ecc_dsp.h"\n#ifndef ECC_DSP_H\nstatic int ecc_dsp_q(void);\n'
            'int ecc_neon_##name##_onnx(void); /* ECC_OK; EDGECC_DEBUG and decc_x stay */\n')
    assert n.rename(text) == ('#include "kws_dsp.h"\n#ifndef KWS_DSP_H\nstatic int kws_dsp_q(void);\n'
                              'int kws_neon_##name##_onnx(void); /* KWS_OK; EDGECC_DEBUG and decc_x stay */\n')
    assert [n.file(f) for f in ("model.h", "model.c", "weights.h", "weights.c", "ecc_kernels.h",
                                "ecc_dsp_conv2d_s8.c", "edgecc.mk")] == \
        ["kws_model.h", "kws_model.c", "kws_weights.h", "kws_weights.c", "kws_kernels.h", "kws_dsp_conv2d_s8.c",
         "edgecc.mk"]
    assert (n.arena_section, n.make_prefix, n.cmake_target) == (".bss.kws_arena", "KWS", "kws_model")
    with pytest.raises(ValueError, match="lower-case letters and digits"):
        LibNames.of("Kws")


def test_name_in_the_yaml_and_on_the_command_line(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("model: m.onnx\nname: kws\n")
    assert load_config(p, {}).name == "kws"
    assert load_config(p, {"name": "cmd"}).name == "cmd"  # the flag wins
    p.write_text("model: m.onnx\n")
    assert load_config(p, {}).name is None
    p.write_text("model: m.onnx\nname: kws_small\n")
    with pytest.raises(InputError) as e:
        load_config(p, {})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p)) and "`name`" in msg and "no underscore" in msg, msg
    with pytest.raises(InputError, match=r"^command line --name: `name` must be a library name: .*'K-1'"):
        load_config(None, {"model": "m.onnx", "name": "K-1"})


def test_a_bad_name_is_exit_2_and_nothing_written(edgecc, tmp_path):
    out = tmp_path / "out"
    res = edgecc("build", "--model", tmp_path / "m.onnx", "--name", "Kws", "--out", out)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert res.err.strip().startswith("edgecc: error: command line --name: `name` must be a library name"), res.err
    assert len(res.err.strip().splitlines()) == 1 and not out.exists()
