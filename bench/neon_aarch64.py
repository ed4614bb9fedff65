"""NEON kernels on AArch64 (issue 6): exact instructions per inference of MLPerf Tiny ResNet-8 and
VWW on `aarch64` (Neoverse-N1, Armv8.2 + dotprod) and `aarch64-v80` (Cortex-A53, Armv8.0), with the
portable kernels only and with the neon variants, per op and per op kind (MACs per instruction);
batched inference (`batch: 8`) with every activation in NHWC against the layouts the layout pass
chooses (CHWN where it pays); and per layer shape, the NHWC kernels against the CHWN ones.

Every model job is a real compile + QEMU run + bit-exact verification (8 verification samples,
the YAML's full calibration set); figures are sample 0 (one batch), per inference = total / batch.

    .venv/bin/python bench/neon_aarch64.py            # ~5 min on 2 cores
    .venv/bin/python bench/neon_aarch64.py --render   # rewrite the .md from the .json
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.common import RESULTS, header  # noqa: E402

DATA = REPO.parent / "shared" / "data"
MODELS = {"ic_resnet8_float": REPO / "tests" / "models" / "ic_resnet8_float.yaml",
          "vww_mobilenet_float": REPO / "tests" / "models" / "vww_mobilenet_float.yaml"}
BOARDS = ("aarch64", "aarch64-v80")
JSON, MD = RESULTS / "neon_aarch64.json", RESULTS / "neon_aarch64.md"


def _verify_subset(model: str, tmp: Path, n: int) -> Path:
    if model.startswith("ic_resnet8"):
        path = tmp / f"cifar{n}.npz"
        np.savez(path, images=np.load(DATA / "cifar10_calib_200.npz")["images"][:n])
        return path
    folder = tmp / f"vww{n}"
    folder.mkdir(exist_ok=True)
    for f in sorted(p for p in (DATA / "vww_calib").iterdir() if p.suffix.lower() == ".jpg")[:n]:
        if not (folder / f.name).exists():
            (folder / f.name).symlink_to(f.resolve())
    return folder


@contextlib.contextmanager
def _nhwc_only():
    """Compile with the layout pass switched off (every activation NHWC)."""
    import toolchain.pipeline as pipeline

    saved = pipeline.select_layout
    pipeline.select_layout = lambda graph, target: graph
    try:
        yield
    finally:
        pipeline.select_layout = saved


def _job(cfg, target, imported, out: Path, label: str) -> dict[str, Any]:
    from toolchain.pipeline import compile_model
    from toolchain.runner import run_and_verify

    t0 = time.monotonic()
    build = compile_model(cfg, target, out, profile=True, imported=imported)
    r = run_and_verify(build).report
    ops = [{k: o.get(k) for k in ("name", "op_type", "kernel", "layout", "macs", "instructions")} for o in r["ops"]]
    kinds: dict[str, list[int]] = {}
    for o in ops:
        k = kinds.setdefault(o["op_type"], [0, 0])
        k[0] += o["macs"] or 0
        k[1] += o["instructions"] or 0
    return {"config": label, "board": target.name, "batch": cfg.batch, "status": r["status"],
            "bit_exact": r["verification"]["bit_exact"], "total_instructions": r["total_instructions"],
            "per_inference": r["total_instructions"] / cfg.batch,
            "macs_per_instruction": {k: (m / i if i else None) for k, (m, i) in kinds.items() if m},
            "relayouts": sum(o["op_type"] == "Relayout" for o in ops), "ops": ops,
            "seconds": round(time.monotonic() - t0, 1)}


def model_jobs(tmp: Path) -> list[dict[str, Any]]:
    from targets import load_target
    from targets.target import ISA
    from toolchain.config import load_config
    from toolchain.pipeline import import_model

    rows = []
    for model, yaml in MODELS.items():
        for batch in (1, 8):
            verify = _verify_subset(model, tmp, 8 * batch)
            cfg = load_config(yaml, {"verify": str(verify), "batch": batch})
            imported = import_model(cfg)
            for board in BOARDS:
                target = load_target(board)
                jobs = ([("portable", dataclasses.replace(target, kernel_preference=(ISA.PORTABLE,)), False),
                         ("neon", target, False)] if batch == 1 else
                        [("neon NHWC only", target, True), ("neon layouts chosen", target, False)])
                for label, tgt, nhwc in jobs:
                    with _nhwc_only() if nhwc else contextlib.nullcontext():
                        row = _job(cfg, tgt, imported, tmp / f"{model}_{board}_{batch}_{len(rows)}", label)
                    row["model"] = model
                    rows.append(row)
                    print(f"{model:22s} {board:12s} b{batch} {label:20s} {row['per_inference']:>13,.0f} "
                          f"{'bit-exact' if row['bit_exact'] else 'MISMATCH'} ({row['seconds']} s)", flush=True)
    return rows


def layer_jobs(tmp: Path) -> list[dict[str, Any]]:
    """Per layer shape (MLPerf Tiny), batch 8: the NHWC neon kernels against the CHWN ones, through
    the kernel test harness (tests/kernels), counted by the TCG plugin."""
    sys.path.insert(0, str(REPO / "tests" / "kernels"))
    import neon_cases as nc
    import neon_harness
    from dsp_harness import case
    from toolchain.isa import neon_chwn
    from toolchain.ops import conv2d, depthwise_conv2d
    from toolchain.ops.common import Window

    rng = np.random.default_rng(0)
    n = 8
    cases, info = [], []
    layers = [("ResNet-8 conv 1 (3->16, 3x3)", 32, 32, 3, 16, 3, 1, 1), ("ResNet-8 conv 2 (16->16, 3x3)", 32, 32, 16, 16, 3, 1, 1),
              ("ResNet-8 conv (16->32, 3x3/2)", 32, 32, 16, 32, 3, 2, 1), ("ResNet-8 conv (64->64, 3x3)", 8, 8, 64, 64, 3, 1, 1),
              ("ResNet-8 1x1/2 (16->32)", 32, 32, 16, 32, 1, 2, 0), ("VWW conv 1 (3->8, 3x3/2)", 96, 96, 3, 8, 3, 2, 1),
              ("VWW pw (8->16)", 48, 48, 8, 16, 1, 1, 0), ("VWW pw (32->32)", 24, 24, 32, 32, 1, 1, 0),
              ("VWW pw (128->128)", 6, 6, 128, 128, 1, 1, 0)]
    for name, h, w_, cin, cout, k, s, p in layers:
        x = rng.integers(-128, 128, (n, h, w_, cin), dtype=np.int8)
        w = rng.integers(-127, 128, (cout, k, k, cin), dtype=np.int8)
        b = rng.integers(-5000, 5000, cout).astype(np.int32)
        mult, shift = nc._requant(rng, cout, 80.0 * np.sqrt(k * k * cin) * 60)
        pads = (0, 0, p, p) if s == 2 else (p, p, p, p)
        kw = dict(stride=(s, s), pad=pads[:2], dilation=(1, 1), out_hw=Window((k, k), (s, s), (1, 1), pads).out_hw(h, w_),
                  input_offset=128, output_offset=-128, out_mult=mult, out_shift=shift, act_min=-128, act_max=127)
        y = conv2d.conv2d_s8(x, w, b, **kw)
        for c in nc.conv_cases(name, x, w, b, kw, y):
            if "nopair" not in c.function:
                cases.append(c)
                info.append((name, c.function[9:-3], y.size * k * k * cin))
        args = neon_chwn.conv2d_chwn_plan(kw, x.shape, w, b, y.shape)
        cases.append(case(name, "ecc_neon_conv2d_chwn_s8", args, {"input": nc.chwn(x)}, "output", 0, nc.chwn(y)))
        info.append((name, "conv2d_chwn", y.size * k * k * cin))
    for name, h, c, s in (("VWW dw (8 ch)", 48, 8, 1), ("VWW dw (16 ch, /2)", 48, 16, 2), ("VWW dw (64 ch)", 12, 64, 1),
                          ("VWW dw (128 ch)", 6, 128, 1)):
        x = rng.integers(-128, 128, (n, h, h, c), dtype=np.int8)
        w = rng.integers(-127, 128, (1, 3, 3, c), dtype=np.int8)
        b = rng.integers(-5000, 5000, c).astype(np.int32)
        mult, shift = nc._requant(rng, c, 80.0 * 3 * 60)
        pads = (0, 0, 1, 1) if s == 2 else (1, 1, 1, 1)
        kw = dict(stride=(s, s), pad=pads[:2], dilation=(1, 1), out_hw=Window((3, 3), (s, s), (1, 1), pads).out_hw(h, h),
                  depth_multiplier=1, input_offset=128, output_offset=-128, out_mult=mult, out_shift=shift,
                  act_min=-128, act_max=127)
        y = depthwise_conv2d.depthwise_conv2d_s8(x, w, b, **kw)
        for cc in nc.depthwise_cases(name, x, w, b, kw, y):
            if "nopair" not in cc.function:
                cases.append(cc)
                info.append((name, cc.function[9:-3], y.size * 9))
        args = neon_chwn.depthwise_chwn_plan(kw, x.shape, w, b, y.shape)
        cases.append(case(name, "ecc_neon_depthwise_conv2d_chwn_s8", args, {"input": nc.chwn(x)}, "output", 18, nc.chwn(y)))
        info.append((name, "depthwise_conv2d_chwn", y.size * 9))
    board = "aarch64"
    res, counts = neon_harness.run(board, neon_harness.build(board, tmp / "layers"), cases, tmp / "layers" / "run")
    rows = []
    for (name, kernel, macs), c, (rc, guards, got), insns in zip(info, cases, res, counts):
        rows.append({"layer": name, "kernel": kernel, "macs": macs, "instructions": insns,
                     "macs_per_instruction": macs / insns, "bit_exact": rc == 0 and guards and got == c.expected})
    return rows


def render(doc: dict[str, Any]) -> str:
    rows = doc["models"]
    out = ["# NEON kernels on AArch64 (issue 6)", "",
           f"Measured {doc['header'].get('date_utc', '?')} on commit {doc['header'].get('edgecc', {}).get('git_commit', '?')} "
           f"({doc['header'].get('edgecc', {}).get('measured', '?')}); "
           "exact retired guest instructions from the QEMU TCG plugin (sample 0, per inference = total / batch); "
           "every job bit-exact against the numpy interpreter. Regenerate: `python bench/neon_aarch64.py`.", ""]
    out += ["## Instructions per inference, batch 1", "",
            "| model | board | portable | neon | speed-up | Conv2D MACs/insn | DepthwiseConv2D MACs/insn |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for model in MODELS:
        for board in BOARDS:
            p = next(r for r in rows if r["model"] == model and r["board"] == board and r["config"] == "portable")
            n = next(r for r in rows if r["model"] == model and r["board"] == board and r["config"] == "neon")
            mpi = n["macs_per_instruction"]
            dw = f"{mpi['DepthwiseConv2D']:.2f}" if "DepthwiseConv2D" in mpi else "-"
            out.append(f"| {model} | {board} | {p['per_inference']:,.0f} | {n['per_inference']:,.0f} | "
                       f"{p['per_inference'] / n['per_inference']:.1f}x | {mpi['Conv2D']:.2f} | {dw} |")
    for model in MODELS:
        out += ["", f"## {model}: per op, batch 1 (instructions)", "",
                "| # | op | MACs | portable | aarch64 neon | kernel | aarch64-v80 neon | kernel |", "|---|---|---:|---:|---:|---|---:|---|"]
        p = next(r for r in rows if r["model"] == model and r["board"] == "aarch64" and r["config"] == "portable")
        a = next(r for r in rows if r["model"] == model and r["board"] == "aarch64" and r["config"] == "neon")
        v = next(r for r in rows if r["model"] == model and r["board"] == "aarch64-v80" and r["config"] == "neon")
        for i, (po, ao, vo) in enumerate(zip(p["ops"], a["ops"], v["ops"])):
            out.append(f"| {i} | {po['op_type']} | {po['macs']:,} | {po['instructions']:,} | {ao['instructions']:,} | "
                       f"{ao['kernel']} | {vo['instructions']:,} | {vo['kernel']} |")
    out += ["", "## Batched inference (`batch: 8`): NHWC everywhere vs the layouts the pass chooses", "",
            "Per inference = one run of a batch of 8 / 8. CHWN kernels vectorise across the batch (Armv8.0 "
            "instructions, both boards); relayouts use neon/relayout.", "",
            "| model | board | batch-1 neon | batch 8, NHWC only | batch 8, layouts chosen | CHWN ops | relayouts |",
            "|---|---|---:|---:|---:|---|---:|"]
    for model in MODELS:
        for board in BOARDS:
            b1 = next(r for r in rows if r["model"] == model and r["board"] == board and r["config"] == "neon")
            nh = next(r for r in rows if r["model"] == model and r["board"] == board and r["config"] == "neon NHWC only")
            au = next(r for r in rows if r["model"] == model and r["board"] == board and r["config"] == "neon layouts chosen")
            chwn = [o["op_type"] for o in au["ops"] if o["layout"] == "CHWN" and o["op_type"] != "Relayout"]
            out.append(f"| {model} | {board} | {b1['per_inference']:,.0f} | {nh['per_inference']:,.0f} | "
                       f"{au['per_inference']:,.0f} | {', '.join(chwn) or '-'} | {au['relayouts']} |")
    out += ["", "## Per layer: NHWC kernels vs CHWN, batch 8 (`aarch64`; the non-`dot` kernels run on both boards)", "",
            "| layer | kernel | MACs/insn |", "|---|---|---:|"]
    for r in doc["layers"]:
        out.append(f"| {r['layer']} | {r['kernel']} | {r['macs_per_instruction']:.2f} |")
    out += ["", FINDING, ""]
    return "\n".join(out)


FINDING = """**When CHWN beats NHWC** (the tables above; the layout pass uses a cost model fitted to the
same kernels). With the Armv8.2 dot product (`aarch64`), the NHWC SDOT GEMMs (5-10 MACs per
instruction on the 3x3 and wide pointwise layers) beat every CHWN convolution (SMLAL by element over
8 batch lanes: 1.3-3.2); CHWN only edges ahead on the stride-2 RGB stem (3 input channels: 1.49 vs
1.41), not enough to pay two relayouts, so the pass keeps ResNet-8 and VWW in NHWC there. On Armv8.0
(`aarch64-v80`) the NHWC GEMM has no SDOT and CHWN wins the RGB stems by 20-45 % (1.56 vs 1.28,
1.49 vs 1.02) and the 8-channel pointwise layer slightly: the pass runs the stem convolution in CHWN
(the model-input transpose writes CHWN directly, one relayout after the stem) and saves 0.9 % of
ResNet-8 and 3.1 % of VWW per inference. The NHWC depthwise kernels beat the CHWN one at every
MLPerf Tiny width (8-128 channels). CHWN pays most where the NHWC vector kernels have no path at
all: depthwise convolutions and pooling over channel counts that are not a multiple of 8 run
portable in NHWC but vectorised across the batch in CHWN (tests/unit/passes/test_select_layout.py:
a 12-channel model runs its whole 4-D chain in CHWN on `aarch64`)."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the .json only")
    args = ap.parse_args()
    if args.render:
        MD.write_text(render(json.loads(JSON.read_text())))
        return 0
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="edgecc-neon-bench-") as tmp:
        models = model_jobs(Path(tmp))
        layers = layer_jobs(Path(tmp))
    doc = {"header": header(1, load), "models": models, "layers": layers, "finding": FINDING}
    JSON.write_text(json.dumps(doc, indent=1) + "\n")
    MD.write_text(render(doc))
    bad = [r for r in models if not r["bit_exact"]] + [r for r in layers if not r["bit_exact"]]
    print(f"wrote {JSON} and {MD}; {len(bad)} not bit-exact")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
