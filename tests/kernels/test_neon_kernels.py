"""Every neon kernel entry point is bit-exact with the reference under qemu-aarch64, on `aarch64`
(Neoverse-N1: Armv8.2 + dotprod, every entry point) and `aarch64-v80` (Cortex-A53: Armv8.0, a
program without any dotprod code): one test program per board runs all cases (CMSIS-NN
conformance sets of the families the neon kernels implement + seeded random cases, incl. BL-04
-128 weights and -128 activations against +-127 weights), fed through a file; outputs, return
codes and guard bytes after every output and scratch buffer (scratch_bytes is exact) come back in
another. See neon_harness.py and neon_cases.py."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import neon_cases
import neon_harness

SETS = neon_cases.conformance_sets()
CASES = ([c for fam, name in SETS for c in neon_cases.conformance_cases(fam, name)] + neon_cases.random_cases()
         + neon_cases.chwn_cases())


def _board_cases(board: str) -> list:
    dot = board == "aarch64"
    return [c for c in CASES if dot or "_dot_" not in c.function]



_RESULTS: dict[str, tuple] = {}


@pytest.fixture(scope="session")
def results(tmp_path_factory, need_board):
    """board -> (per-case (rc, guards intact, output), program ELF), one build and one QEMU run per board."""
    def get(board: str):
        if board not in _RESULTS:
            need_board(board)
            out = tmp_path_factory.mktemp(f"neon_{board}")
            elf = neon_harness.build(board, out)
            _RESULTS[board] = (neon_harness.run(board, elf, _board_cases(board), out / "run")[0], elf)
        return _RESULTS[board]
    return get


def test_boards_match_the_harness():
    """aarch64 declares dotprod, aarch64-v80 does not (the harness leaves `_dot` kernels out there)."""
    assert neon_harness.board_has_dotprod("aarch64") and not neon_harness.board_has_dotprod("aarch64-v80")


def test_cases_cover_every_entry_point():
    """Each neon entry point of ecc_neon_kernels.h is exercised by at least one case (the rounding
    "onnx" twins by test_neon_onnx_rounding.py)."""
    used = {c.function for c in CASES}
    tflm = {f for f in neon_harness.prototypes() if not f.endswith("_onnx")}
    assert tflm <= used, tflm - used


@pytest.mark.parametrize("family,name", SETS, ids=[s for _, s in SETS])
def test_conformance_set_has_a_neon_kernel(family, name):
    """Every conformance set of the conv and fully connected families runs on at least one neon entry
    point (grouped convolution excepted); depthwise and pooling sets need in_c % 8 == 0 (and a depth
    multiplier of 1), add its shift ranges."""
    cases = neon_cases.conformance_cases(family, name)
    d = dict(np.load(neon_cases.CONF / f"{name}.npz"))
    if family == "grouped_conv" and d["weights"].shape[3] != d["input"].shape[3]:
        assert not cases
        pytest.skip("grouped convolution: portable only")
    if family in ("depthwise_conv", "avgpool", "maxpool") and not cases:
        c = d["input"].shape[3]
        assert c % 8 or (family == "depthwise_conv" and d["weights"].shape[3] != c), name
        pytest.skip(f"{c} input channels (or a depth multiplier): portable only")
    assert cases, f"{name}: no neon entry point accepts this conformance set"
    if family in ("conv", "conv_1x1", "conv_1xn", "grouped_conv", "fully_connected"):
        assert any("_dot_" in c.function for c in cases), name


@pytest.mark.parametrize("board", neon_harness.BOARDS)
def test_neon_bit_exact(results, board):
    """All cases of the board, bit for bit (one assertion per board listing every failing case)."""
    res, _ = results(board)
    cases = _board_cases(board)
    assert len(res) == len(cases)
    bad = []
    for c, (rc, guards, got) in zip(cases, res):
        exp = np.frombuffer(c.expected, np.int8)
        out = np.frombuffer(got, np.int8)
        if rc != 0:
            bad.append(f"{c.name}: {c.function} returned {rc}")
        elif not guards:
            bad.append(f"{c.name}: {c.function} wrote past its output or its scratch")
        elif out.size != exp.size or np.any(out != exp):
            i = int(np.flatnonzero(out != exp)[0]) if out.size == exp.size else -1
            bad.append(f"{c.name}: {c.function}: {int(np.sum(out != exp)) if i >= 0 else 'size'} outputs differ, "
                       f"first at {i}: got {out[i] if i >= 0 else '-'}, want {exp[i] if i >= 0 else '-'}")
    assert not bad, f"{len(bad)}/{len(cases)} cases fail on {board}:\n" + "\n".join(bad[:30])


def test_every_case_ran_on_both_paths():
    """The random cases reach each family on the Armv8.0 kernels and (for GEMMs) on the dotprod ones,
    including the -128-weight cases (j == 2 in neon_cases: one -128, which no int16 lane pairs with
    another, so the pairing kernels take them too, exactly)."""
    m128 = [c for c in CASES if c.name.startswith("rand_") and c.name.split("-")[0].endswith("_2")]
    fams = {c.function for c in m128}
    for fn in ("ecc_neon_conv2d_nopair_s8", "ecc_neon_conv2d_dot_s8", "ecc_neon_fully_connected_nopair_s8",
               "ecc_neon_fully_connected_dot_s8", "ecc_neon_depthwise_conv2d_3x3_nopair_s8", "ecc_neon_conv2d_s8",
               "ecc_neon_fully_connected_s8", "ecc_neon_depthwise_conv2d_3x3_s8"):
        assert fn in fams, fn


def test_minus_128_weights_reject_the_pairing_kernels():
    """BL-04: the Armv8.0 entry points that pair two products in an int16 lane see the actual weights
    and refuse two -128 in one lane (a single -128 is exact: (-128)(-128) + (-128) w' fits int16); the
    `_nopair` twins and the SDOT kernels (32-bit products) take the same call."""
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 5, 5, 16), dtype=np.int8)
    w = rng.integers(-127, 128, (4, 3, 3, 16), dtype=np.int8)
    k = dict(stride=(1, 1), pad=(1, 1), dilation=(1, 1), out_hw=(5, 5), input_offset=128, output_offset=-128,
             out_mult=np.full(4, 1 << 30), out_shift=np.full(4, -12), act_min=-128, act_max=127)
    y = np.zeros((1, 5, 5, 4), np.int8)
    funcs = {c.function for c in neon_cases.conv_cases("ok", x, w, None, k, y)}
    assert {"ecc_neon_conv2d_s8", "ecc_neon_conv2d_nopair_s8", "ecc_neon_conv2d_dot_s8"} <= funcs
    w[2, 1, 1, 3] = -128
    assert "ecc_neon_conv2d_s8" in {c.function for c in neon_cases.conv_cases("one", x, w, None, k, y)}
    w[2, 1, 1, 11] = -128  # k 67 and 75 of row 2: one lane of the 16-k chunk 64..79
    funcs = {c.function for c in neon_cases.conv_cases("m128", x, w, None, k, y)}
    assert "ecc_neon_conv2d_s8" not in funcs and {"ecc_neon_conv2d_nopair_s8", "ecc_neon_conv2d_dot_s8"} <= funcs
    wd = rng.integers(-127, 128, (1, 3, 3, 16), dtype=np.int8)
    kd = {**k, "depth_multiplier": 1, "out_mult": np.full(16, 1 << 30), "out_shift": np.full(16, -12)}
    yd = np.zeros((1, 5, 5, 16), np.int8)
    assert "ecc_neon_depthwise_conv2d_3x3_s8" in {c.function for c in neon_cases.depthwise_cases("ok", x, wd, None, kd, yd)}
    wd[0, 0, 2, 5] = -128
    assert "ecc_neon_depthwise_conv2d_3x3_s8" in {c.function for c in neon_cases.depthwise_cases("one", x, wd, None,
                                                                                                kd, yd)}
    wd[0, 1, 0, 5] = -128  # taps 2 and 3 of channel 5 share a lane
    funcs = {c.function for c in neon_cases.depthwise_cases("m128", x, wd, None, kd, yd)}
    assert not {"ecc_neon_depthwise_conv2d_3x3_s8", "ecc_neon_depthwise_conv2d_s8"} & funcs
    assert "ecc_neon_depthwise_conv2d_3x3_nopair_s8" in funcs
    wf = rng.integers(-127, 128, (3, 16), dtype=np.int8)
    kf = dict(input_offset=1, filter_offset=0, output_offset=0, out_mult=[1 << 30], out_shift=[-10], act_min=-128,
              act_max=127)
    wf[1, [1, 9]] = -128
    funcs = {c.function for c in neon_cases.fc_cases("m128", x[0, 0, :1], wf, None, kf, np.zeros((1, 3), np.int8))}
    assert funcs == {"ecc_neon_fully_connected_nopair_s8", "ecc_neon_fully_connected_dot_s8"}


def test_v80_program_has_no_dotprod_instruction(results):
    """Pitfall 12: the Armv8.0 board's program holds no SDOT anywhere (it runs on a Cortex-A53)."""
    _, elf = results("aarch64-v80")
    dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    assert "sdot" not in dis and "udot" not in dis
    _, elf = results("aarch64")
    dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    assert "sdot" in dis


def test_kernels_have_no_static_data(results, tmp_path_factory):
    """Kernels keep state in the arena scratch only: no .data/.bss in any neon kernel object."""
    results("aarch64")
    objs = sorted(tmp_path_factory.getbasetemp().glob("neon_aarch64*/fw/obj/*ecc_neon_*.o"))
    assert objs
    for o in objs:
        syms = subprocess.run(["aarch64-linux-gnu-nm", str(o)], capture_output=True, text=True, check=True).stdout
        assert not [ln for ln in syms.splitlines() if ln.split()[-2:-1] and ln.split()[-2] in "bBdDCgGsS"], o.name
