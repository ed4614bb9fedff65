"""Every portable kernel template renders and compiles warning-free for the host, Cortex-M4 and
AArch64, with no .data/.bss (no statics or globals), alone and concatenated into one file."""
import os
import shutil
import subprocess

import pytest

import ecc_kernel_harness as harness

M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
TOOLCHAINS = {
    "host": ("gcc", [], "size", "nm"),
    "cortex-m4": ("arm-none-eabi-gcc", M4_FLAGS, "arm-none-eabi-size", "arm-none-eabi-nm"),
    "aarch64": ("aarch64-linux-gnu-gcc", [], "aarch64-linux-gnu-size", "aarch64-linux-gnu-nm"),
}
DATA_SYMBOL_TYPES = set("bBdDCgGsS")     # nm: .bss/.data (and small/common variants)


def _toolchain(name):
    cc, flags, size, nm = TOOLCHAINS[name]
    missing = [t for t in (cc, size, nm) if shutil.which(t) is None]
    if missing:
        msg = f"{name} toolchain missing: {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return cc, flags, size, nm


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    out = tmp_path_factory.mktemp("ecc_xc_src")
    return out, dict(zip(harness.OPS, harness.write_sources(out)))


def _compile(cc, flags, src, obj, inc):
    cmd = [cc, "-O2", "-c", *flags, *harness.WARN_FLAGS, "-I", str(inc), str(src), "-o", str(obj)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and not res.stderr.strip(), f"{' '.join(cmd)}\n{res.stderr}"


def _no_data(size, nm, obj):
    res = subprocess.run([size, str(obj)], capture_output=True, text=True, check=True)
    text, data, bss = (int(v) for v in res.stdout.splitlines()[1].split()[:3])
    assert text > 0
    assert (data, bss) == (0, 0), f"{obj.name}: .data={data} .bss={bss}"
    syms = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout.split("\n")
    bad = [s for s in syms if len(s.split()) >= 2 and s.split()[-2] in DATA_SYMBOL_TYPES]
    assert not bad, f"{obj.name}: data/bss symbols {bad}"


def test_every_op_has_a_template():
    for op in harness.OPS:
        assert (harness.PORTABLE_DIR / f"{op}.c.j2").is_file()
        text = harness.render(op)
        assert '#include "ecc_kernels.h"' in text and '#include "ecc_fixed_point.h"' in text
        assert f"int ecc_{op}(" in text


@pytest.mark.parametrize("target", list(TOOLCHAINS))
@pytest.mark.parametrize("op", harness.OPS)
def test_template_compiles(sources, tmp_path, target, op):
    cc, flags, size, nm = _toolchain(target)
    out, srcs = sources
    obj = tmp_path / f"{op}.o"
    _compile(cc, flags, srcs[op], obj, out)
    _no_data(size, nm, obj)


@pytest.mark.parametrize("target", list(TOOLCHAINS))
def test_concatenated_kernels_compile(sources, tmp_path, target):
    """The code generator may ship all rendered kernels as one translation unit."""
    cc, flags, size, nm = _toolchain(target)
    out, srcs = sources
    one = out / f"ecc_all_kernels_{target}.c"
    one.write_text("".join(srcs[op].read_text() for op in harness.OPS))
    obj = tmp_path / "all.o"
    _compile(cc, flags, one, obj, out)
    _no_data(size, nm, obj)


def test_prototypes_header_is_self_contained(tmp_path):
    cc, flags, _, _ = _toolchain("cortex-m4")
    src = tmp_path / "proto.c"
    src.write_text('#include "ecc_kernels.h"\n#include "ecc_kernels.h"\nint ecc_proto_probe(void);\n'
                   'int ecc_proto_probe(void) { return ECC_OK; }\n')
    from toolchain.codegen.emit import write_kernel_headers

    write_kernel_headers(tmp_path)
    _compile(cc, flags, src, tmp_path / "proto.o", tmp_path)
